// Package board owns the facts a task's status is computed from: every
// task and session read in one batch, whether each session is still
// running (liveness, judged only where this repository has the right to
// judge it), its recorded outcome, and whether its work reached the base.
// It resolves statuses from them with the status package and resolves a
// task's sessions, latest last.
package board

import (
	"context"

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
	var tb *tasks.Board
	var terr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		tb, terr = tasks.Load(ctx, st)
	}()
	recs, problems, err := loadSessions(ctx, st)
	<-done
	if terr != nil {
		return nil, terr
	}
	if err != nil {
		return nil, err
	}
	here := HereOf(st)
	facts, err := Gather(ctx, st, tb, recs, defaultBase, here)
	if err != nil {
		return nil, err
	}
	return &Board{Tasks: tb, Sessions: recs, Facts: facts, Status: status.Resolve(tb, facts), Here: here,
		TaskProblems: tb.Problems, SessionProblems: problems}, nil
}

// LoadTask is Load for one task: the task prefix names (any unique
// prefix), its blockers and its parent (tasks.LoadNear), and the sessions
// of the task and of its blockers (sessions.OfTasks, whole records, found
// through an index while the session refs have not changed since it was
// written), without reading the rest of the board. The statuses of the task and of its
// blockers are those Load would give; no other status is resolved. It
// returns the task's id.
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
