package contract

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/git-agentmine/git-agentmine/board"
	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/launch"
	"github.com/git-agentmine/git-agentmine/memory"
	"github.com/git-agentmine/git-agentmine/output"
	"github.com/git-agentmine/git-agentmine/sessions"
	"github.com/git-agentmine/git-agentmine/status"
	"github.com/git-agentmine/git-agentmine/tasks"
	"github.com/git-agentmine/git-agentmine/verify"
)

// NewTask is the document of task id of the board, as task list prints
// it: without the latest session and the usage (see NewTaskDetail).
func NewTask(b *board.Board, id string) TaskJSON {
	e := b.Tasks.Tasks[id]
	t := e.Task
	r := b.Status[id]
	return TaskJSON{V: output.SchemaVersion, ID: id, ShortID: b.Tasks.ShortID(id), Title: t.Title,
		Status: string(r.Status), StatusReason: r.Reason, Blocked: r.Blocked, Ready: r.Ready,
		WaitingOn: nonNil(r.Waiting), BlockedByCancelled: b.CancelledBlockers(id), Description: t.Description, Type: t.Type, Priority: t.Priority,
		Parent: t.Parent, BlockedBy: nonNil(t.BlockedBy), Labels: nonNil(t.Labels), Assignee: t.Assignee,
		DoD: nonNil(t.DoD), Base: t.Base, Acceptance: nonNil(t.Acceptance), Created: t.Created, Updated: t.Updated,
		Cancelled: t.Cancelled, Reopened: t.Reopened, Exhausted: t.Exhausted, Commit: e.Commit, Session: r.Session, Criteria: criteria(t),
		MaxLoops: t.MaxLoops, Paths: t.Paths, BestOf: t.BestOf, Children: r.Children}
}

func criteria(t tasks.Task) []Criterion {
	out := make([]Criterion, len(t.Acceptance))
	for i, c := range t.Acceptance {
		out[i] = Criterion{ID: tasks.CriterionID(i), Text: c}
	}
	return out
}

// NewTaskDetail is the document of task id as task show prints it: the
// task with its latest session and the usage all its sessions reported.
func NewTaskDetail(b *board.Board, id string, now time.Time) TaskJSON {
	j := NewTask(b, id)
	j.Extra = LatestSession(b.Sessions, id, b.Here, now)
	j.Usage = TaskUsage(b.Sessions, id)
	for _, r := range b.Sessions {
		if r.Session.ID == j.Session {
			j.Review = r.Review
		}
	}
	return j
}

// TaskUsage sums the usage the task's sessions reported (nil if none did).
func TaskUsage(recs []sessions.Record, id string) *sessions.Usage {
	var sum *sessions.Usage
	for i := range recs {
		r := &recs[i]
		if r.Session.Task == id && r.Outcome != nil {
			sum = sessions.AddTo(sum, r.Outcome.Usage)
		}
	}
	return sum
}

// usageByTask is TaskUsage of every task at once, for a document that
// lists many tasks: one pass over the sessions instead of one per task.
func usageByTask(recs []sessions.Record) map[string]*sessions.Usage {
	out := map[string]*sessions.Usage{}
	for i := range recs {
		r := &recs[i]
		if r.Outcome == nil || r.Outcome.Usage == nil {
			continue
		}
		out[r.Session.Task] = sessions.AddTo(out[r.Session.Task], r.Outcome.Usage)
	}
	return out
}

// LatestSession is the document of the task's latest session (by start
// time), nil when it has none.
func LatestSession(recs []sessions.Record, id string, here board.Here, now time.Time) *SessionJSON {
	var best *sessions.Record
	for i := range recs {
		r := &recs[i]
		if r.Session.Task != id || !r.Session.IsAttempt() {
			continue
		}
		if best == nil || r.Session.Started.After(best.Session.Started) {
			best = r
		}
	}
	if best == nil {
		return nil
	}
	j := NewSession(*best, here, now, 0)
	return &j
}

// SessionState names whether a session runs, as judged from here at now:
// "running", "lost" (no outcome and no live process) or "ended".
func SessionState(r sessions.Record, here board.Here, now time.Time) string {
	live, lost := board.Liveness(r, here, now)
	switch {
	case live:
		return "running"
	case lost:
		return "lost"
	}
	return "ended"
}

// NewSession is the document of a session, with the last tail lines of
// its log when tail > 0.
func NewSession(r sessions.Record, here board.Here, now time.Time, tail int) SessionJSON {
	s := r.Session
	j := SessionJSON{V: output.SchemaVersion, ID: s.ID, ShortID: s.ID[:8], Task: s.Task, Agent: s.Agent, Client: s.Client,
		Version: s.ClientVersion, Mode: s.Mode, Branch: s.Branch, BaseRef: s.BaseRef, Base: s.BaseCommit, Worktree: s.Worktree, Host: s.Host,
		Pid: s.Pid, Started: s.Started, Timeout: s.Timeout, State: SessionState(r, here, now), Log: s.Log, Outcome: r.Outcome,
		Sealed: s.Seal != nil, Forged: r.Forged, WorkerPid: s.WorkerPid, Isolation: s.Isolation, Role: s.Role, Reviews: s.Reviews,
		Review: r.Review, ForgedReviews: r.ForgedReviews}
	end := now
	if r.Outcome != nil {
		end = r.Outcome.Finished
	}
	j.Elapsed = end.Sub(s.Started).Round(time.Second).Seconds()
	if tail > 0 {
		j.Tail, _ = launch.Tail(s.Log, tail)
	}
	return j
}

// Verdict names what a session means for its task, in the words worker
// wait and session list use: "running", "review", "dod_failed (…)" (a
// failed DoD or scope, or a review that said NG),
// "failed (…)", "tainted (…)" or "done (merged)". state is SessionState's answer; merged
// says the session's work reached the base.
func Verdict(r sessions.Record, state string, merged bool) string {
	o := r.Outcome
	if o == nil {
		if state == "lost" {
			return "failed (lost)"
		}
		return "running"
	}
	v := verify.ParseVerdicts(o)
	switch {
	case o.TimedOut:
		return "failed (timeout)"
	case o.Signal != "":
		return "failed (" + o.Signal + ")"
	case o.ExitCode != 0:
		return fmt.Sprintf("failed (exit %d)", o.ExitCode)
	case merged && v.HasScope && !v.Scope.Valid:
		return "tainted (merged without a valid verdict)"
	case merged:
		return "done (merged)"
	case v.Failed() != "":
		return "dod_failed (" + v.Failed() + ")"
	case r.Review != nil && !r.Review.OK():
		return "dod_failed (reviewed NG by " + r.Review.Agent + ")"
	}
	return "review"
}

// NewRun is the document of a prepared session, before any outcome.
// promptFile is the prompt the worker reads ("" when not known).
func NewRun(s sessions.Session, promptFile string) RunJSON {
	return RunJSON{V: output.SchemaVersion, Session: s.ID, Task: s.Task, Agent: s.Agent, Client: s.Client,
		Branch: s.Branch, Worktree: s.Worktree, Prompt: promptFile, Command: s.Command, Mode: s.Mode, Log: s.Log,
		Isolation: s.Isolation}
}

// NewBoard is the board document: the count of tasks per status, the
// ready and blocked counts, the running sessions (with their last log
// line), the review queue and the failures most recently finished first
// (at most failures of them). b may be a whole board or a partial one
// (board.LoadStatus).
func NewBoard(b *board.Board, failures int, now time.Time) BoardJSON {
	j := BoardJSON{V: output.SchemaVersion, Counts: map[string]int{}, Running: []SessionJSON{}, Review: []TaskJSON{}, Failures: []TaskJSON{}}
	for _, s := range status.All {
		j.Counts[string(s)] = 0
	}
	var failed []string
	usage := b.Usage
	if !b.Partial {
		usage = usageByTask(b.Sessions)
	}
	for _, id := range b.Tasks.IDs {
		r := b.Status[id]
		j.Counts[string(r.Status)]++
		if r.Ready {
			j.Ready++
		}
		if r.Blocked && r.Status == status.Open {
			j.Blocked++
		}
		switch r.Status {
		case status.Review, status.Reviewing:
			tj := NewTask(b, id)
			tj.Usage = usage[id]
			j.Review = append(j.Review, tj)
		case status.Failed, status.DoDFailed, status.Tainted:
			failed = append(failed, id)
		}
	}
	finished := b.Finished
	if !b.Partial {
		finished = map[string]time.Time{}
		for i := range b.Sessions {
			s := &b.Sessions[i]
			if s.Outcome != nil && s.Outcome.Finished.After(finished[s.Session.Task]) {
				finished[s.Session.Task] = s.Outcome.Finished
			}
		}
	}
	sort.SliceStable(failed, func(i, k int) bool { return finished[failed[i]].After(finished[failed[k]]) })
	if len(failed) > failures {
		failed = failed[:failures]
	}
	for _, id := range failed {
		tj := NewTask(b, id)
		tj.Usage = usage[id]
		j.Failures = append(j.Failures, tj)
	}
	for i := range b.Sessions {
		if live, _ := board.Liveness(b.Sessions[i], b.Here, now); live {
			j.Running = append(j.Running, NewSession(b.Sessions[i], b.Here, now, 1))
		}
	}
	return j
}

// NewMemory is the document of memory id of the bank.
func NewMemory(b *memory.Bank, id string) MemoryJSON {
	e := b.Memories[id]
	m := e.Memory
	name, _ := memory.FileName(m)
	return MemoryJSON{V: output.SchemaVersion, ID: id, ShortID: b.ShortID(id), Category: m.Category, Title: m.Title,
		Summary: m.Summary, Content: m.Content, Status: m.Status, Tags: nonNil(m.Tags), Task: m.Task,
		Path: memory.SnapshotDir + "/" + name, Created: m.Created, Updated: m.Updated, Commit: e.Commit}
}

// Ready returns the ids task ready lists: open tasks whose blockers are
// all done, highest priority first (ties keep id order).
func Ready(b *board.Board) []string {
	// Each task's priority is looked up once: a stable sort looking up
	// both tasks' for every comparison was over three million map lookups
	// for 100,000 ready tasks. When they differ, the ids are regrouped by
	// priority, highest first, each group in id order (what that sort
	// gave); when they are all the same, as they often are, the ids are
	// in order already and no second array is made.
	var ids []string
	var ranks []int8 // a byte each: what is live while the list prints
	mixed := false
	for _, id := range b.Tasks.IDs {
		if b.Status[id].Ready {
			r := int8(priorityRank(b.Tasks.Tasks[id].Task.Priority))
			mixed = mixed || len(ranks) > 0 && r != ranks[0]
			ids = append(ids, id)
			ranks = append(ranks, r)
		}
	}
	if !mixed {
		return ids
	}
	out := make([]string, 0, len(ids))
	for r := int8(len(tasks.Priorities) - 1); r >= -1; r-- {
		for i, id := range ids {
			if ranks[i] == r {
				out = append(out, id)
			}
		}
	}
	return out
}

func priorityRank(p string) int {
	for i, x := range tasks.Priorities {
		if x == p {
			return i
		}
	}
	return -1
}

// TaskFilter is what task list selects by; empty fields select everything.
type TaskFilter struct {
	// Status is a derived status, or "ready" or "blocked".
	Status   string
	Type     string
	Priority string
	Label    string
	Assignee string
	// Parent is a task id or unique prefix: only its children.
	Parent string
	// HideClosed leaves out done and cancelled tasks unless Status asks
	// for them (the table's default; --json lists them).
	HideClosed bool
}

// Check validates the filter's values without reading anything, so that
// a bad value is refused before the board is loaded.
func (f TaskFilter) Check() error {
	if f.Status != "" && !status.Valid(f.Status) {
		return exitcode.New(exitcode.Usage, fmt.Errorf("unknown status %q", f.Status), "use one of: "+strings.Join(StatusNames(), ", "))
	}
	if f.Type != "" {
		if err := tasks.ValidateType(f.Type); err != nil {
			return err
		}
	}
	if f.Priority != "" {
		if err := tasks.ValidatePriority(f.Priority); err != nil {
			return err
		}
	}
	return nil
}

// StatusNames lists what a filter's Status accepts: every derived status,
// then ready and blocked.
func StatusNames() []string {
	var out []string
	for _, s := range status.All {
		out = append(out, string(s))
	}
	return append(out, "ready", "blocked")
}

// Select returns the ids of the board's tasks the filter selects, in id
// order.
func (f TaskFilter) Select(b *board.Board) ([]string, error) {
	if err := f.Check(); err != nil {
		return nil, err
	}
	if f == (TaskFilter{}) {
		// Every task: no map lookups (two for each of 100,000 tasks
		// were a tenth of a second, on one core, before the output).
		return slices.Clone(b.Tasks.IDs), nil
	}
	parent := ""
	if f.Parent != "" {
		var err error
		if parent, err = b.Tasks.Resolve(f.Parent); err != nil {
			return nil, err
		}
	}
	var ids []string
	for _, id := range b.Tasks.IDs {
		t := b.Tasks.Tasks[id].Task
		r := b.Status[id]
		switch {
		case f.Status == "ready" && !r.Ready,
			f.Status == "blocked" && !r.Blocked,
			f.Status != "" && f.Status != "ready" && f.Status != "blocked" && string(r.Status) != f.Status,
			f.Status == "" && f.HideClosed && (r.Status == status.Done || r.Status == status.Cancelled),
			f.Type != "" && t.Type != f.Type,
			f.Priority != "" && t.Priority != f.Priority,
			f.Label != "" && !contains(t.Labels, f.Label),
			f.Assignee != "" && t.Assignee != f.Assignee,
			parent != "" && t.Parent != parent:
			continue
		}
		ids = append(ids, id)
	}
	return ids, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
