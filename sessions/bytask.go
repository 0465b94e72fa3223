package sessions

import (
	"context"
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

// OfTasks returns the summaries (Record.Summary) of the sessions of the
// given tasks, sorted by id, reading only those sessions: one for-each-ref
// of the session refs and the task index, then the documents and notes of
// the sessions found (and the documents of sessions new to the index, to
// learn their task) in batches. Problems are sessions that could not be
// read; like LoadSummaries it reports those of the whole board only when
// it had to read the whole board.
func OfTasks(ctx context.Context, st *gitstore.Store, taskIDs []string) ([]Record, []error, error) {
	idx := st.ReadSummariesOf(Kind, taskIndex)
	tips, err := st.Tips(ctx, Kind.RefPrefix(), gitstore.NotesRef)
	if err != nil {
		return nil, nil, err
	}
	notesAt := tips[gitstore.NotesRef]
	if notesAt == "" {
		notesAt = gitstore.NoNotes
	}
	delete(tips, gitstore.NotesRef)
	if len(tips) == 0 {
		return nil, nil, nil
	}
	ids := make([]string, 0, len(tips))
	for ref := range tips {
		ids = append(ids, strings.TrimPrefix(ref, Kind.RefPrefix()))
	}
	sort.Strings(ids)
	taskOf, fresh, ok := indexTasks(ctx, st, idx, ids, tips)
	if !ok {
		return ofTasksFromAll(ctx, st, idx, taskIDs)
	}
	want := make(map[string]bool, len(taskIDs))
	for _, t := range taskIDs {
		want[t] = true
	}
	var todo []int
	for i, id := range ids {
		if want[taskOf[id]] {
			todo = append(todo, i)
		}
	}
	recs := make([]Record, len(ids))
	if err := readStale(ctx, st, ids, tips, notesAt, recs, todo); err != nil {
		// a session that does not read cleanly: the whole board reports it
		return ofTasksFromAll(ctx, st, idx, taskIDs)
	}
	if fresh {
		writeTaskIndex(st, idx, ids, tips, taskOf)
	}
	var out []Record
	for _, i := range todo {
		if want[recs[i].Session.Task] {
			out = append(out, recs[i])
		}
	}
	return out, nil, nil
}

// indexTasks maps every session id to its task from the index, reading from
// git (their documents at the listed tips, one cat-file) the sessions the
// index lacks or has at another tip. fresh reports whether the index must
// be written back; ok is false when that is most of a large board, or a
// document does not read (the caller then reads the whole board).
func indexTasks(ctx context.Context, st *gitstore.Store, idx gitstore.Summaries, ids []string, tips map[string]string) (taskOf map[string]string, fresh, ok bool) {
	taskOf = make(map[string]string, len(ids))
	var missing []string
	for _, id := range ids {
		if e, hit := idx.Entries[id]; hit && e.Commit == tips[Kind.Ref(id)] {
			taskOf[id] = string(e.Data)
			continue
		}
		missing = append(missing, id)
	}
	if len(missing) == 0 {
		return taskOf, len(idx.Entries) != len(ids), true
	}
	if len(missing) > 1000 && len(missing) > len(ids)/2 {
		return nil, false, false
	}
	names := make([]string, len(missing))
	for i, id := range missing {
		names[i] = tips[Kind.Ref(id)] + ":" + Kind.File
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
	for i, id := range missing {
		if objs[i].Missing || objs[i].Type != "blob" {
			return nil, false, false
		}
		s, err := Decode(objs[i].Data)
		if err != nil {
			return nil, false, false
		}
		taskOf[id] = s.Task
	}
	return taskOf, true, true
}

// ofTasksFromAll answers OfTasks from every session's summary, and writes
// the task index from them.
func ofTasksFromAll(ctx context.Context, st *gitstore.Store, idx gitstore.Summaries, taskIDs []string) ([]Record, []error, error) {
	all, problems, err := LoadSummaries(ctx, st)
	if err != nil {
		return nil, nil, err
	}
	want := make(map[string]bool, len(taskIDs))
	for _, t := range taskIDs {
		want[t] = true
	}
	var out []Record
	if len(problems) == 0 {
		entries := make([]gitstore.Doc, 0, len(all))
		for _, r := range all {
			entries = append(entries, gitstore.Doc{ID: r.Session.ID, Commit: r.Commit, Data: []byte(r.Session.Task)})
		}
		st.WriteSummariesOf(Kind, taskIndex, idx, "tasks", entries)
	}
	for _, r := range all {
		if want[r.Session.Task] {
			out = append(out, r)
		}
	}
	return out, problems, nil
}

// writeTaskIndex writes the task index of the sessions ids (sorted) at tips.
func writeTaskIndex(st *gitstore.Store, idx gitstore.Summaries, ids []string, tips map[string]string, taskOf map[string]string) {
	entries := make([]gitstore.Doc, 0, len(ids))
	for _, id := range ids {
		entries = append(entries, gitstore.Doc{ID: id, Commit: tips[Kind.Ref(id)], Data: []byte(taskOf[id])})
	}
	st.WriteSummariesOf(Kind, taskIndex, idx, "tasks", entries)
}
