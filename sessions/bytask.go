package sessions

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/git-agentmine/git-agentmine/gitstore"
)

// The task index is a second local summary of the sessions (gitstore's
// summary cache, named taskIndex): each session's task, keyed by the
// session ref's tip. With it, the sessions of one task are found from one
// for-each-ref of the session refs and a small file, and only those
// sessions are read, instead of every session on the board. Like every
// cache it is checked, never trusted: an entry counts only when its tip is
// the ref's tip, a session is read from git whole before it is used (and
// dropped if it does not name the task after all), and a session missing
// from the index or moved since is looked up in git.

// taskIndex names the task index among the sessions' summaries.
const taskIndex = "by-task"

// OfTasks returns the whole records (documents and outcomes) of the
// sessions of the given tasks, sorted by id, reading only those sessions.
// While the session refs are as they were when the task-keyed index was
// last written (their stamp, gitstore's RefsStamp), the index names them
// outright, in a few reads whatever the number of sessions; otherwise it is
// OfTasksIn over one listing of every session ref, which writes the index
// again. Each session found is read from git whole, and dropped if it does
// not name its task after all.
func OfTasks(ctx context.Context, st *gitstore.Store, taskIDs []string) ([]Record, []error, error) {
	tok := st.DropToken()
	stamp, settled := st.RefsStamp(Kind.RefPrefix())
	if recs, ok := ofTasksIndexed(ctx, st, taskIDs, stamp); ok {
		return recs, nil, nil
	}
	refs, commits, err := st.TipList(ctx, TipPatterns()...)
	if err != nil {
		return nil, nil, err
	}
	recs, problems, all, err := ofTasksIn(ctx, st, taskIDs, refs, commits)
	if err == nil && all != nil && settled {
		// Only if no session ref moved while they were listed.
		if again, _ := st.RefsStamp(Kind.RefPrefix()); again == stamp {
			writeTaskKeyed(st, all, stamp, tok)
		}
	}
	return recs, problems, err
}

// taskKeyed names the task-keyed index among the sessions' summaries:
// "<task> <session> <tip>" records sorted by task (gitstore's sorted index,
// which checks every record it reads), made under a stamp of the session
// refs.
const taskKeyed = "task-keyed"

// ofTasksIndexed reads the sessions of the tasks through the task-keyed
// index made under stamp; ok is false when there is none, or a session it
// names does not read as named.
func ofTasksIndexed(ctx context.Context, st *gitstore.Store, taskIDs []string, stamp string) ([]Record, bool) {
	if stamp == "" {
		return nil, false
	}
	var ids []string
	tips := map[string]string{}
	hexLen := 0
	for _, t := range taskIDs {
		recs, ok := st.LookupSortedIndex(Kind, taskKeyed, stamp, t)
		if !ok {
			return nil, false
		}
		for _, r := range recs {
			f := strings.Fields(r)
			if len(f) != 3 || f[0] != t || !gitstore.ValidID(f[1]) || len(f[1]) != gitstore.IDLen {
				return nil, false
			}
			if hexLen == 0 {
				hexLen = len(f[2])
			}
			if len(f[2]) != hexLen || !isHex(f[2]) {
				return nil, false
			}
			ids = append(ids, f[1])
			tips[Kind.Ref(f[1])] = f[2]
		}
	}
	if len(ids) == 0 {
		return nil, true
	}
	sort.Strings(ids)
	_, notes, err := st.TipList(ctx, gitstore.NotesRef)
	if err != nil {
		return nil, false
	}
	notesAt := gitstore.NoNotes
	if len(notes) == 1 {
		notesAt = notes[0]
	}
	recs := make([]Record, len(ids))
	todo := make([]int, len(ids))
	for i := range todo {
		todo[i] = i
	}
	if err := readStale(ctx, st, ids, tips, notesAt, recs, todo, true); err != nil {
		return nil, false
	}
	want := make(map[string]bool, len(taskIDs))
	for _, t := range taskIDs {
		want[t] = true
	}
	for _, r := range recs {
		if !want[r.Session.Task] {
			return nil, false // the index is wrong about this session
		}
	}
	return recs, true
}

// writeTaskKeyed writes the task-keyed index of every session (ids sorted,
// at tipOf, of taskOf) under stamp.
func writeTaskKeyed(st *gitstore.Store, all *taskMap, stamp string, tok gitstore.DropToken) {
	records := make([]string, 0, len(all.ids))
	for i, id := range all.ids {
		if !gitstore.ValidID(all.taskOf[i]) || len(all.taskOf[i]) != gitstore.IDLen {
			return // a session without a task of the usual form: no index
		}
		records = append(records, all.taskOf[i]+" "+id+" "+all.tipOf[i]+"\n")
	}
	sort.Strings(records)
	st.WriteSortedIndex(Kind, taskKeyed, stamp, records, tok)
}

// taskMap is the task of every session, as ofTasksIn learned it.
type taskMap struct{ ids, tipOf, taskOf []string }

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// TipPatterns are the refs OfTasks lists: every session ref and the notes
// ref.
func TipPatterns() []string { return []string{Kind.RefPrefix(), gitstore.NotesRef} }

// OfTasksIn is OfTasks with the listing already made (refs and commits as
// gitstore's TipList gives them, holding at least TipPatterns; other refs
// are ignored), so that a caller can list them together with other refs
// in one for-each-ref.
func OfTasksIn(ctx context.Context, st *gitstore.Store, taskIDs []string, refs, commits []string) ([]Record, []error, error) {
	recs, problems, _, err := ofTasksIn(ctx, st, taskIDs, refs, commits)
	return recs, problems, err
}

// ofTasksIn is OfTasksIn, also returning the task of every session when it
// learned them all cleanly (nil otherwise).
func ofTasksIn(ctx context.Context, st *gitstore.Store, taskIDs []string, refs, commits []string) ([]Record, []error, *taskMap, error) {
	idx, list := st.ReadSummaryListOf(Kind, taskIndex)
	notesAt := gitstore.NoNotes
	ids := make([]string, 0, len(refs))
	tipOf := make([]string, 0, len(refs))
	for i, ref := range refs {
		if ref == gitstore.NotesRef {
			notesAt = commits[i]
			continue
		}
		if id, ok := strings.CutPrefix(ref, Kind.RefPrefix()); ok {
			ids, tipOf = append(ids, id), append(tipOf, commits[i])
		}
	}
	if len(ids) == 0 {
		return nil, nil, &taskMap{}, nil
	}
	want := make(map[string]bool, len(taskIDs))
	for _, t := range taskIDs {
		want[t] = true
	}
	var problems []error
	taskOf, fresh, ok := indexTasks(ctx, st, list, ids, tipOf)
	var recs []Record
	for {
		if !ok {
			var err error
			if taskOf, problems, err = tasksFromAll(ctx, st, idx, ids); err != nil {
				return nil, nil, nil, err
			}
		}
		var todoIDs []string
		tips := map[string]string{}
		for i, id := range ids {
			if want[taskOf[i]] {
				todoIDs = append(todoIDs, id)
				tips[Kind.Ref(id)] = tipOf[i]
			}
		}
		recs = make([]Record, len(todoIDs))
		todo := make([]int, len(todoIDs))
		for i := range todo {
			todo[i] = i
		}
		err := readStale(ctx, st, todoIDs, tips, notesAt, recs, todo, true)
		if err == nil {
			break
		}
		if !ok {
			return nil, nil, nil, fmt.Errorf("reading the sessions of task %s: %w", taskIDs[0], err)
		}
		// A session that does not read: the whole board reports it as a
		// problem and leaves it out.
		ok = false
	}
	if ok && fresh {
		writeTaskIndex(st, idx, ids, tipOf, taskOf)
	}
	var out []Record
	for _, r := range recs {
		if want[r.Session.Task] {
			out = append(out, r)
		}
	}
	var all *taskMap
	if len(problems) == 0 {
		all = &taskMap{ids: ids, tipOf: tipOf, taskOf: taskOf}
	}
	return out, problems, all, nil
}

// indexTasks returns the task of each session ids[i] (sorted, at commit
// tipOf[i]) from the index (a list sorted by id as written, walked beside
// ids; an entry out of order only reads as missing), reading
// from git (their documents at the listed tips, one cat-file) the sessions
// the index lacks or has at another tip. fresh reports whether the index
// must be written back; ok is false when that is most of a large board, or
// a document does not read (the caller then reads the whole board).
func indexTasks(ctx context.Context, st *gitstore.Store, list []gitstore.SummaryEntry, ids, tipOf []string) (taskOf []string, fresh, ok bool) {
	taskOf = make([]string, len(ids))
	var missing []int
	j := 0
	for i, id := range ids {
		for j < len(list) && list[j].ID < id {
			j++
		}
		if j < len(list) && list[j].ID == id && list[j].Commit == tipOf[i] &&
			(j+1 == len(list) || list[j+1].ID != id) {
			taskOf[i] = list[j].Data
			continue
		}
		missing = append(missing, i)
	}
	if len(missing) == 0 {
		return taskOf, len(list) != len(ids), true
	}
	if len(missing) > 1000 && len(missing) > len(ids)/2 {
		return nil, false, false
	}
	names := make([]string, len(missing))
	for k, i := range missing {
		names[k] = tipOf[i] + ":" + Kind.File
	}
	b, err := st.OpenBatch(ctx)
	if err != nil {
		return nil, false, false
	}
	objs, err := b.ReadMany(names)
	b.Close()
	if err != nil {
		return nil, false, false
	}
	for k, i := range missing {
		if objs[k].Missing || objs[k].Type != "blob" {
			return nil, false, false
		}
		s, err := Decode(objs[k].Data)
		if err != nil {
			return nil, false, false
		}
		taskOf[i] = s.Task
	}
	return taskOf, true, true
}

// tasksFromAll returns the task of each session ids[i] from every session's
// summary (LoadSummaries; a session it could not read has none), and writes
// the task index from them when all read cleanly.
func tasksFromAll(ctx context.Context, st *gitstore.Store, idx gitstore.Summaries, ids []string) ([]string, []error, error) {
	all, problems, err := LoadSummaries(ctx, st)
	if err != nil {
		return nil, nil, err
	}
	byID := make(map[string]string, len(all))
	entries := make([]gitstore.Doc, 0, len(all))
	for _, r := range all {
		byID[r.Session.ID] = r.Session.Task
		entries = append(entries, gitstore.Doc{ID: r.Session.ID, Commit: r.Commit, Data: []byte(r.Session.Task)})
	}
	if len(problems) == 0 {
		st.WriteSummariesOf(Kind, taskIndex, idx, "tasks", entries)
	}
	taskOf := make([]string, len(ids))
	for i, id := range ids {
		taskOf[i] = byID[id]
	}
	return taskOf, problems, nil
}

// writeTaskIndex writes the task index of the sessions ids (sorted) at
// commits tipOf.
func writeTaskIndex(st *gitstore.Store, idx gitstore.Summaries, ids, tipOf, taskOf []string) {
	entries := make([]gitstore.Doc, len(ids))
	for i, id := range ids {
		entries[i] = gitstore.Doc{ID: id, Commit: tipOf[i], Data: []byte(taskOf[i])}
	}
	st.WriteSummariesOf(Kind, taskIndex, idx, "tasks", entries)
}
