// Package board owns the facts a task's status is computed from: every
// task and session read in one batch, whether each session is still
// running (liveness, judged only where this repository has the right to
// judge it), its recorded outcome, and whether its work reached the base.
// It resolves statuses from them with the status package and resolves a
// task's sessions, latest last.
package board

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/sessions"
	"github.com/git-agentmine/git-agentmine/status"
	"github.com/git-agentmine/git-agentmine/tasks"
)

// Board is every task and session with their statuses, read in one batch.
type Board struct {
	Tasks    *tasks.Board
	Sessions []sessions.Record
	Facts    status.Facts
	Status   map[string]status.Result
	// Here is where liveness was judged from.
	Here Here
	// TaskProblems and SessionProblems are refs that could not be read; the
	// rest of the board is still whole.
	TaskProblems    []error
	SessionProblems []error
	// Partial is set on a board from LoadStatus: Sessions holds only the
	// running sessions, and Usage and Finished hold, per task, what all of
	// them would give: the usage its sessions reported (nil entries are
	// absent) and when the last of them finished.
	Partial  bool
	Usage    map[string]*sessions.Usage
	Finished map[string]time.Time
}

// Load reads every task and every session (the two reads run at the same
// time) and derives statuses. defaultBase is the base for sessions that
// recorded none.
func Load(ctx context.Context, st *gitstore.Store, defaultBase string) (*Board, error) {
	return load(ctx, st, defaultBase, sessions.LoadAll)
}

// LoadSummary is Load with session summaries (sessions.Record.Summary,
// served from a checked local cache) instead of whole session records:
// the same statuses, counts and running sessions at a fraction of the
// cost, for callers that derive statuses or list tasks and never print a
// session's own document (its command, scope, artifacts or passing
// verdicts).
func LoadSummary(ctx context.Context, st *gitstore.Store, defaultBase string) (*Board, error) {
	return load(ctx, st, defaultBase, sessions.LoadSummaries)
}

func load(ctx context.Context, st *gitstore.Store, defaultBase string,
	loadSessions func(context.Context, *gitstore.Store) ([]sessions.Record, []error, error)) (*Board, error) {
	var recs []sessions.Record
	var problems []error
	tb, err := alongTasks(ctx, st, func() (err error) {
		recs, problems, err = loadSessions(ctx, st)
		return err
	})
	if err != nil {
		return nil, err
	}
	here := HereOf(st)
	if err := Settle(ctx, st, recs, here, time.Now()); err != nil {
		return nil, err
	}
	facts, err := Gather(ctx, st, tb, recs, defaultBase, here)
	if err != nil {
		return nil, err
	}
	return &Board{Tasks: tb, Sessions: recs, Facts: facts, Status: status.Resolve(tb, facts), Here: here,
		TaskProblems: tb.Problems, SessionProblems: problems}, nil
}

// alongTasks reads every task while f reads the sessions, and returns the
// tasks once both are done (the tasks' error first).
func alongTasks(ctx context.Context, st *gitstore.Store, f func() error) (*tasks.Board, error) {
	var tb *tasks.Board
	var terr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		tb, terr = tasks.Load(ctx, st)
	}()
	err := f()
	<-done
	if terr != nil {
		return nil, terr
	}
	return tb, err
}

// StatusGCPercent is the garbage collection target (debug.SetGCPercent)
// for a process that reads the whole board once and prints it (status):
// what it keeps is small next to what it allocates decoding summaries, so
// at Go's default of 100 the heap runs up to twice its live size between
// collections. 10,000 tasks and 30,000 sessions, status --json, nine runs
// each, alternating: at 100 a peak of 57.9-60.5 MB and 0.31-0.34 s; at 50
// 53.9 MB and 0.31-0.34 s.
const StatusGCPercent = 50

// LoadStatus is LoadSummary for the board's counts and lists (the status
// document): every task's status from every session, the running sessions,
// and per task the usage its sessions reported and when the last of them
// finished (Partial). It keeps one fact per attempt rather than a record
// per session: with 30,000 sessions the records were half of what
// LoadSummary holds.
func LoadStatus(ctx context.Context, st *gitstore.Store, defaultBase string) (*Board, error) {
	var set *sessions.SummarySet
	var problems []error
	tb, err := alongTasks(ctx, st, func() (err error) {
		set, problems, err = sessions.OpenSummaries(ctx, st)
		return err
	})
	if err != nil {
		return nil, err
	}
	here := HereOf(st)
	now := time.Now()
	b := &Board{Tasks: tb, Here: here, TaskProblems: tb.Problems, SessionProblems: problems, Partial: true,
		Usage: map[string]*sessions.Usage{}, Finished: map[string]time.Time{}}
	// One array of attempts (and of the tasks they belong to), grouped by
	// task afterwards, as Gather does: no slice grown per task.
	n := set.SizeHint()
	var roles status.Facts // the live planner and reviewer runs
	attempts := make([]status.Attempt, 0, n)
	taskOf := make([]string, 0, n)
	tips := make([]tipFact, 0, n)
	// add takes in one record whose liveness is judged (Settle).
	add := func(r *sessions.Record, slot int) {
		s := &r.Session
		if o := r.Outcome; o != nil {
			if o.Usage != nil {
				b.Usage[s.Task] = sessions.AddTo(b.Usage[s.Task], o.Usage)
			}
			if o.Finished.After(b.Finished[s.Task]) {
				b.Finished[s.Task] = o.Finished
			}
		}
		if r.Live {
			b.Sessions = append(b.Sessions, *r)
		}
		if !s.IsAttempt() {
			if r.Live || answering(r, here, now) {
				addRole(&roles, r)
			}
			return
		}
		if t, ok := tipOf(r); ok {
			tips = append(tips, t)
		}
		attempts[slot] = attemptOf(r, here, now)
	}
	// Records that look lost are kept aside (with their attempt's slot)
	// and settled after the walk, in one batch.
	var lost []*sessions.Record
	var lostSlot []int
	walked := set.Each(func(r *sessions.Record) {
		slot := -1
		if r.Session.IsAttempt() {
			slot = len(attempts)
			attempts = append(attempts, status.Attempt{})
			taskOf = append(taskOf, r.Session.Task)
		}
		if judge(r, here, now) {
			c := *r // r is overwritten for the next record
			lost = append(lost, &c)
			lostSlot = append(lostSlot, slot)
			return
		}
		add(r, slot)
	})
	if !walked {
		// A cached summary that does not decode, or a cache file that did
		// not check out: the slow, whole way.
		return load(ctx, st, defaultBase, sessions.LoadSummaries)
	}
	if err := settleLost(ctx, st, lost); err != nil {
		return nil, err
	}
	for i, r := range lost {
		add(r, lostSlot[i])
	}
	merged, err := mergedTips(ctx, st, tb, tips, defaultBase)
	if err != nil {
		return nil, err
	}
	for i := range attempts {
		attempts[i].Merged = attempts[i].Ended && merged[attempts[i].Session]
	}
	// Group the attempts by task in place (each task's in their order),
	// and hand each task its run of the array.
	order := make([]int, len(attempts))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool { return taskOf[order[i]] < taskOf[order[j]] })
	permute(attempts, taskOf, order)
	facts := status.Facts{Attempts: map[string][]status.Attempt{}, Roles: roles.Roles}
	for i := 0; i < len(attempts); {
		j := i
		for j < len(attempts) && taskOf[j] == taskOf[i] {
			j++
		}
		facts.Attempts[taskOf[i]] = attempts[i:j:j]
		i = j
	}
	b.Facts = facts
	b.Status = status.Resolve(tb, facts)
	return b, nil
}

// permute reorders attempts and taskOf so that position i holds what was
// at order[i], in place (following each cycle of the permutation).
func permute(attempts []status.Attempt, taskOf []string, order []int) {
	done := make([]bool, len(order))
	for start := range order {
		if done[start] || order[start] == start {
			continue
		}
		a, t := attempts[start], taskOf[start]
		i := start
		for {
			next := order[i]
			done[i] = true
			if next == start {
				attempts[i], taskOf[i] = a, t
				break
			}
			attempts[i], taskOf[i] = attempts[next], taskOf[next]
			i = next
		}
	}
}

// LoadTask is Load for one task: the task prefix names (any unique
// prefix), its blockers and its parent (tasks.LoadNear), and the sessions
// of the task and of its blockers (sessions.OfTasks, whole records, found
// through an index while the session refs have not changed since it was
// written), without reading the rest of the board's sessions. The
// descendants of the task and of its blockers are found through the child
// index of the tasks (withDescendants; the whole task list while the task
// refs changed since it was made), and their sessions are read too: a
// goal's status rolls up from them. The statuses of the task, its blockers and their descendants are
// those Load would give; no other status is resolved. It returns the
// task's id.
func LoadTask(ctx context.Context, st *gitstore.Store, defaultBase, prefix string) (*Board, string, error) {
	// Without an index of the sessions by task (reads sent to git, say),
	// one for-each-ref lists the task refs near prefix, the session refs
	// and the notes ref: one snapshot, one git process fewer.
	stamp, _ := st.RefsStamp(sessions.Kind.RefPrefix())
	indexed := stamp != ""
	var refs, commits []string
	if near := tasks.NearPatterns(prefix); near != nil {
		if !indexed {
			near = append(near, sessions.TipPatterns()...)
		}
		var err error
		if refs, commits, err = st.TipList(ctx, near...); err != nil {
			return nil, "", err
		}
	}
	tb, id, err := tasks.LoadNear(ctx, st, prefix, refs, commits)
	if err != nil {
		return nil, "", err
	}
	judged := []string{id}
	for _, bl := range tb.Tasks[id].Task.BlockedBy {
		if _, ok := tb.Tasks[bl]; ok {
			judged = append(judged, bl)
		}
	}
	// A goal's status rolls up from its children's: the child index, or
	// the whole task list, says which tasks name the task, or a blocker,
	// as their parent.
	if tb, judged, err = withDescendants(ctx, st, tb, judged); err != nil {
		return nil, "", err
	}
	var recs []sessions.Record
	var problems []error
	if indexed {
		recs, problems, err = sessions.OfTasks(ctx, st, judged)
	} else {
		recs, problems, err = sessions.OfTasksIn(ctx, st, judged, refs, commits)
	}
	if err != nil {
		return nil, "", err
	}
	here := HereOf(st)
	if err := Settle(ctx, st, recs, here, time.Now()); err != nil {
		return nil, "", err
	}
	facts, err := Gather(ctx, st, tb, recs, defaultBase, here)
	if err != nil {
		return nil, "", err
	}
	all := status.Resolve(tb, facts)
	resolved := make(map[string]status.Result, len(judged))
	for _, j := range judged {
		resolved[j] = all[j]
	}
	return &Board{Tasks: tb, Sessions: recs, Facts: facts, Status: resolved, Here: here,
		TaskProblems: tb.Problems, SessionProblems: problems}, id, nil
}

// withDescendants adds to near every descendant of the judged tasks, and
// returns judged with them: their sessions decide a goal's roll-up. While
// the task refs are as they were when the child index was made (tasks'
// DescendantsIndexed), the index names them and only they (and the ids
// beside them, for their short forms) are read; each must name as its
// parent what the index says, or the index is not used. Otherwise the
// whole task list says which tasks name one as their parent (a document
// is decoded only when its bytes mention an id looked for), and the index
// is made again from it.
func withDescendants(ctx context.Context, st *gitstore.Store, near *tasks.Board, judged []string) (*tasks.Board, []string, error) {
	tok := st.DropToken()
	stamp, settled := tasks.ChildStamp(st)
	if parentOf, ok := tasks.DescendantsIndexed(st, stamp, judged); ok {
		out, ok, err := descendantsRead(ctx, st, near, judged, parentOf)
		if err != nil || ok {
			return near, out, err
		}
	}
	docs, _, err := st.List(ctx, tasks.Kind)
	if err != nil {
		return nil, nil, fmt.Errorf("listing the children of %s: %w", near.ShortID(judged[0]), err)
	}
	if settled {
		// Only if no task ref moved while they were listed.
		if again, _ := tasks.ChildStamp(st); again == stamp {
			tasks.WriteChildIndex(st, docs, stamp, tok)
		}
	}
	out := slices.Clone(judged)
	seen := map[string]bool{}
	for _, j := range judged {
		seen[j] = true
	}
	for wave := judged; len(wave) > 0; {
		var next []string
		for _, d := range docs {
			if seen[d.ID] || !mentionsAny(d.Data, wave) {
				continue
			}
			t, err := tasks.Decode(d.Data)
			if err != nil || !slices.Contains(wave, t.Parent) {
				continue
			}
			t.ID = d.ID
			seen[d.ID] = true
			near.Tasks[d.ID] = tasks.Entry{Task: t, Commit: d.Commit}
			next = append(next, d.ID)
		}
		out = append(out, next...)
		wave = next
	}
	if len(out) > len(judged) {
		ids := make([]string, 0, len(docs))
		for _, d := range docs {
			ids = append(ids, d.ID)
		}
		addDescendants(near, ids)
	}
	return near, out, nil
}

// descendantsRead reads the descendants the child index named (parentOf:
// each with its parent) and the documents beside them, and adds them to
// near; ok is false, and near unchanged, when one does not read or does
// not name that parent (the index is wrong: the whole list decides).
func descendantsRead(ctx context.Context, st *gitstore.Store, near *tasks.Board, judged []string, parentOf map[string]string) ([]string, bool, error) {
	if len(parentOf) == 0 {
		return judged, true, nil
	}
	kids := make([]string, 0, len(parentOf))
	for c := range parentOf {
		kids = append(kids, c)
	}
	sort.Strings(kids)
	docs, _, err := st.ListNear(ctx, tasks.Kind, kids)
	if err != nil {
		return nil, false, fmt.Errorf("reading the children of %s: %w", near.ShortID(judged[0]), err)
	}
	found := make(map[string]tasks.Entry, len(kids))
	ids := make([]string, 0, len(docs))
	for _, d := range docs {
		ids = append(ids, d.ID)
		p, ok := parentOf[d.ID]
		if !ok {
			continue
		}
		t, err := tasks.Decode(d.Data)
		if err != nil || t.Parent != p {
			return nil, false, nil
		}
		t.ID = d.ID
		found[d.ID] = tasks.Entry{Task: t, Commit: d.Commit}
	}
	if len(found) != len(kids) {
		return nil, false, nil
	}
	for id, e := range found {
		near.Tasks[id] = e
	}
	addDescendants(near, ids)
	return append(slices.Clone(judged), kids...), true, nil
}

// addDescendants sorts near's ids again once descendants were added to its
// tasks, and indexes ids (the documents read besides near's own) for short
// forms as on the whole board.
func addDescendants(near *tasks.Board, ids []string) {
	near.IDs = near.IDs[:0]
	for id := range near.Tasks {
		near.IDs = append(near.IDs, id)
	}
	sort.Strings(near.IDs)
	all := slices.Clone(near.All)
	all = append(all, ids...)
	near.Index = gitstore.NewIndex(tasks.Kind, all, near.Problems)
}

// mentionsAny reports whether data holds any of ids.
func mentionsAny(data []byte, ids []string) bool {
	for _, id := range ids {
		if bytes.Contains(data, []byte(id)) {
			return true
		}
	}
	return false
}

// Session reads one session (any unique id prefix) with its outcome, as
// sessions.Get does, and judges once whether it still runs (Settle).
func Session(ctx context.Context, st *gitstore.Store, prefix string) (sessions.Record, error) {
	rec, err := sessions.Get(ctx, st, prefix)
	if err != nil {
		return rec, err
	}
	recs := []sessions.Record{rec}
	if err := Settle(ctx, st, recs, HereOf(st), time.Now()); err != nil {
		return rec, err
	}
	return recs[0], nil
}

// Merged reports whether the session's work reached its base (a commit
// beyond its base commit whose tip is an ancestor of the base branch).
func (b *Board) Merged(r sessions.Record) bool {
	for _, a := range b.Facts.Attempts[r.Session.Task] {
		if a.Session == r.Session.ID {
			return a.Merged
		}
	}
	return false
}

// SessionsOf returns the task's sessions, oldest first.
func (b *Board) SessionsOf(taskID string) []sessions.Record {
	var out []sessions.Record
	for _, r := range b.Sessions {
		if r.Session.Task == taskID {
			out = append(out, r)
		}
	}
	sortRecords(out)
	return out
}

// Latest returns the task's latest attempt (a worker's session; planner
// and reviewer runs are not attempts); ok is false when it has none.
func (b *Board) Latest(taskID string) (rec sessions.Record, ok bool) {
	ss := b.SessionsOf(taskID)
	for i := len(ss) - 1; i >= 0; i-- {
		if ss[i].Session.IsAttempt() {
			return ss[i], true
		}
	}
	return sessions.Record{}, false
}

// CancelledBlockers returns the blockers of the task that are cancelled,
// in the order of its waiting list: the task waits on them forever until
// someone removes them from it or reopens them. nil when there are none.
func (b *Board) CancelledBlockers(taskID string) []string {
	var out []string
	for _, bl := range b.Status[taskID].Waiting {
		if r, ok := b.Status[bl]; ok && r.Status == status.Cancelled {
			out = append(out, bl)
		}
	}
	return out
}
