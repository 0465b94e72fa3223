// Package tasknote owns the Task Note (seed 004): the record of how a task
// went, written when it is done or has used up its attempts. It holds the
// task's header (id, title, start, end, final state), a summary, the
// description, the acceptance criteria checked or not, one row per attempt
// (session, agent, exit, DoD, scope, review, duration, usage) and the final
// diff stat. The note is stored as one JSON line on the task's creation
// commit in agentmine's notes ref, so it syncs with the outcomes; it is
// rendered as Markdown when shown.
package tasknote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/git-agentmine/git-agentmine/bestof"
	"github.com/git-agentmine/git-agentmine/board"
	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/sessions"
	"github.com/git-agentmine/git-agentmine/tasks"
	"github.com/git-agentmine/git-agentmine/verify"
)

// Version is the schema version of a stored Task Note (its "task_note"
// key; note lines without it are not Task Notes).
const Version = 1

// Note is a Task Note.
type Note struct {
	// TaskNote is Version.
	TaskNote int    `json:"task_note"`
	Task     string `json:"task"`
	ShortID  string `json:"short_id"`
	Title    string `json:"title"`
	// Started is the start of the first attempt (the task's creation when
	// it had none); Finished the end of the last one.
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	// State is the final state: the task's status, or "exhausted" when the
	// supervisor gave up on it.
	State string `json:"state"`
	// Reason is the fact behind State.
	Reason      string      `json:"reason"`
	Summary     string      `json:"summary"`
	Description string      `json:"description"`
	Criteria    []Criterion `json:"criteria"`
	Attempts    []Attempt   `json:"attempts"`
	// Runs counts the planner and reviewer runs about the task; Calls
	// lists them (seed 004's "Meta calls"), oldest first.
	Runs  int    `json:"planner_reviewer_runs"`
	Calls []Call `json:"meta_calls"`
	// Usage sums what every session of the task (planner and reviewer runs
	// included) reported; nil when none reported any.
	Usage *sessions.Usage `json:"usage,omitempty"`
	// BestOf lists the task's best-of rounds (run --best-of): each round's
	// attempts compared, and which was chosen and why.
	BestOf []bestof.Round `json:"best_of,omitempty"`
	// DiffStat is `git diff --stat` from the base commit to the tip of the
	// session that decided the state ("" when it made no commit).
	DiffStat string `json:"diff_stat"`
	// Written is when the note was written, and by whom.
	Written time.Time `json:"written"`
	By      string    `json:"written_by"`
}

// Criterion is one acceptance criterion and whether it was found met.
type Criterion struct {
	ID   string `json:"id"`
	Text string `json:"text"`
	Met  bool   `json:"met"`
}

// Attempt is one worker session of the task.
type Attempt struct {
	// Task is the child the attempt was of, in the note of a goal (a task
	// with children); absent in the note of a task without children.
	Task     string    `json:"task,omitempty"`
	Session  string    `json:"session"`
	Agent    string    `json:"agent"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished,omitzero"`
	// Seconds is the run's duration (0 while it has no outcome).
	Seconds  float64 `json:"seconds"`
	ExitCode *int    `json:"exit_code"`
	Signal   string  `json:"signal,omitempty"`
	TimedOut bool    `json:"timed_out"`
	// DoD is passed, failed, timeout, skipped or "" (not run).
	DoD string `json:"dod"`
	// Scope is "valid", "invalid" or "" (not verified).
	Scope string `json:"scope"`
	// Review is OK, NG or "" (not reviewed), with the reviewer and reasons.
	Review        string          `json:"review"`
	Reviewer      string          `json:"reviewer,omitempty"`
	ReviewReasons []string        `json:"review_reasons,omitempty"`
	Reason        string          `json:"reason,omitempty"`
	Usage         *sessions.Usage `json:"usage,omitempty"`
}

// Call is one planner or reviewer run about the task.
type Call struct {
	Session string    `json:"session"`
	Role    string    `json:"role"`
	Agent   string    `json:"agent"`
	Started time.Time `json:"started"`
	// Seconds is the run's duration (0 while it has no outcome).
	Seconds  float64 `json:"seconds"`
	ExitCode *int    `json:"exit_code"`
	// Reviews is the session a reviewer reviewed, Verdict the verdict it
	// recorded there ("" when it recorded none: no answer).
	Reviews string `json:"reviews,omitempty"`
	Verdict string `json:"verdict,omitempty"`
}

// Options adjust a note being built.
type Options struct {
	// State overrides the final state (the supervisor's "exhausted");
	// Reason goes with it.
	State, Reason string
	// Summary replaces the generated summary.
	Summary string
	// By names the writer ("agentmine run"); default "agentmine".
	By string
}

// Build gathers the Task Note of task id (canonical) from a loaded board.
func Build(ctx context.Context, st *gitstore.Store, b *board.Board, id string, o Options) (Note, error) {
	e, ok := b.Tasks.Tasks[id]
	if !ok {
		return Note{}, exitcode.New(exitcode.NotFound, fmt.Errorf("building the task note: no task %s", id), "")
	}
	t := e.Task
	res := b.Status[id]
	n := Note{TaskNote: Version, Task: id, ShortID: b.Tasks.ShortID(id), Title: t.Title, State: string(res.Status),
		Reason: res.Reason, Description: t.Description, Started: t.Created.Time, By: o.By}
	if o.State != "" {
		n.State, n.Reason = o.State, o.Reason
	}
	if n.By == "" {
		n.By = "agentmine"
	}
	var decider *sessions.Record
	var lastReview *sessions.Review
	var calls []Call
	reviewBy := map[string]string{} // reviewer session -> verdict it recorded
	first := true
	goal := res.Children != nil
	for _, r := range sessionsOf(b, id, goal) {
		if r.Outcome != nil {
			n.Usage = sessions.AddTo(n.Usage, r.Outcome.Usage)
		}
		if !r.Session.IsAttempt() {
			n.Runs++
			calls = append(calls, callOf(r))
			continue
		}
		if first {
			n.Started, first = r.Session.Started, false
		}
		a := attemptOf(b, id, r)
		if r.Outcome != nil && r.Outcome.Finished.After(n.Finished) {
			n.Finished = r.Outcome.Finished
		}
		if rv := r.Review; rv != nil {
			a.Review, a.Reviewer, a.ReviewReasons = rv.Verdict, rv.Agent, rv.Reasons
			lastReview = rv
			reviewBy[rv.Reviewer] = rv.Verdict
		}
		n.Attempts = append(n.Attempts, a)
		rc := r
		if res.Session == r.Session.ID || decider == nil || res.Session == "" {
			decider = &rc
		}
	}
	for i := range calls {
		calls[i].Verdict = reviewBy[calls[i].Session]
	}
	if goal {
		// Its children's reviews judged their own criteria, and their
		// diffs are theirs: neither speaks for the goal's.
		decider, lastReview = nil, nil
	}
	n.Calls = calls
	if n.Calls == nil {
		n.Calls = []Call{}
	}
	if n.Finished.IsZero() {
		n.Finished = time.Now().UTC()
	}
	if lastReview != nil && decider != nil && decider.Review != lastReview {
		lastReview = nil // a later attempt decides, and it was not reviewed
	}
	n.Criteria = criteria(t.Acceptance, lastReview)
	if decider != nil && decider.Outcome != nil && decider.Outcome.Tip != "" && decider.Outcome.Tip != decider.Session.BaseCommit {
		stat, err := st.Git().Run(ctx, "diff", "--stat=100", decider.Session.BaseCommit, decider.Outcome.Tip, "--")
		if err == nil {
			n.DiffStat = strings.TrimRight(string(stat), "\n")
		}
	}
	if !goal {
		rounds, _, err := bestof.Get(ctx, st, id)
		if err != nil {
			return Note{}, err
		}
		n.BestOf = rounds.Rounds
	}
	n.Summary = o.Summary
	if n.Summary == "" {
		n.Summary = summarize(n)
	}
	n.Written = time.Now().UTC()
	return n, nil
}

// callOf is a reviewer's or planner's run of the task.
func callOf(r sessions.Record) Call {
	c := Call{Session: r.Session.ID, Role: r.Session.Role, Agent: r.Session.Agent, Started: r.Session.Started, Reviews: r.Session.Reviews}
	if out := r.Outcome; out != nil {
		code := out.ExitCode
		c.ExitCode = &code
		c.Seconds = out.Finished.Sub(r.Session.Started).Round(10 * time.Millisecond).Seconds()
	}
	return c
}

// attemptOf is a worker's attempt at task id (or, for a goal, at one of
// its descendants), as its outcome tells it; the review is added by Build.
func attemptOf(b *board.Board, id string, r sessions.Record) Attempt {
	a := Attempt{Session: r.Session.ID, Agent: r.Session.Agent, Started: r.Session.Started}
	if r.Session.Task != id {
		a.Task = b.Tasks.ShortID(r.Session.Task)
	}
	out := r.Outcome
	if out == nil {
		return a
	}
	code := out.ExitCode
	a.ExitCode, a.Signal, a.TimedOut, a.Reason, a.Usage = &code, out.Signal, out.TimedOut, out.Reason, out.Usage
	a.Finished = out.Finished
	a.Seconds = out.Finished.Sub(r.Session.Started).Round(10 * time.Millisecond).Seconds()
	v := verify.Summarize(out)
	a.DoD = v.DoD
	if v.Verified {
		a.Scope = "invalid"
		if v.ScopeValid {
			a.Scope = "valid"
		}
	}
	if a.Reason == "" {
		a.Reason = v.Explained
	}
	return a
}

// criteria lists the acceptance criteria, each met as the review that
// decides the task (nil: none) says: by the ids it names, else all when
// it is OK.
func criteria(acceptance []string, rv *sessions.Review) []Criterion {
	met := func(i int) bool { return false }
	if rv != nil {
		switch {
		case rv.Met != nil:
			met = func(i int) bool { return slices.Contains(rv.Met, tasks.CriterionID(i)) }
		case rv.OK():
			met = func(int) bool { return true }
		}
	}
	var out []Criterion
	for i, c := range acceptance {
		out = append(out, Criterion{ID: tasks.CriterionID(i), Text: c, Met: met(i)})
	}
	return out
}

// sessionsOf returns the sessions of task id, oldest first; for a goal,
// those of all its descendants too: a goal's note sums its children's
// attempts and usage.
func sessionsOf(b *board.Board, id string, goal bool) []sessions.Record {
	if !goal {
		return b.SessionsOf(id)
	}
	kids := map[string][]string{}
	for _, cid := range b.Tasks.IDs {
		if p := b.Tasks.Tasks[cid].Task.Parent; p != "" {
			kids[p] = append(kids[p], cid)
		}
	}
	in := map[string]bool{id: true}
	for queue := []string{id}; len(queue) > 0; queue = queue[1:] {
		for _, k := range kids[queue[0]] {
			if !in[k] {
				in[k] = true
				queue = append(queue, k)
			}
		}
	}
	var out []sessions.Record
	for _, r := range b.Sessions {
		if in[r.Session.Task] {
			out = append(out, r)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].Session.Started.Equal(out[j].Session.Started) {
			return out[i].Session.Started.Before(out[j].Session.Started)
		}
		return out[i].Session.ID < out[j].Session.ID
	})
	return out
}

// summarize writes the generated summary: the state, how many attempts it
// took, the reviews and the fact behind the state.
func summarize(n Note) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Task %s ended %s after %d attempt%s", n.ShortID, n.State, len(n.Attempts), plural(len(n.Attempts)))
	ng, ok := 0, 0
	for _, a := range n.Attempts {
		switch a.Review {
		case sessions.VerdictNG:
			ng++
		case sessions.VerdictOK:
			ok++
		}
	}
	if ng+ok > 0 {
		fmt.Fprintf(&b, " (reviews: %d OK, %d NG)", ok, ng)
	}
	if n.Reason != "" {
		fmt.Fprintf(&b, ": %s", n.Reason)
	}
	b.WriteString(".")
	met := 0
	for _, c := range n.Criteria {
		if c.Met {
			met++
		}
	}
	if len(n.Criteria) > 0 {
		fmt.Fprintf(&b, " %d of %d acceptance criteria met.", met, len(n.Criteria))
	}
	return b.String()
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// Write stores the note as a line on the task's creation commit in
// agentmine's notes ref. Writing again adds a newer note; Read returns the
// latest.
func Write(ctx context.Context, st *gitstore.Store, n Note) error {
	n.TaskNote = Version
	line, err := json.Marshal(n)
	if err != nil {
		return err
	}
	root, err := st.Root(ctx, tasks.Kind, n.Task)
	if err != nil {
		return fmt.Errorf("writing the task note of %s: %w", n.ShortID, err)
	}
	if err := st.AppendNote(ctx, root, line); err != nil {
		return fmt.Errorf("writing the task note of %s: %w", n.ShortID, err)
	}
	return nil
}

// WriteFor builds the Task Note of task id (any unique prefix) from the
// current state and writes it: what the supervisor calls when a task is
// done or exhausted.
func WriteFor(ctx context.Context, st *gitstore.Store, defaultBase, id string, o Options) (Note, error) {
	b, err := board.Load(ctx, st, defaultBase)
	if err != nil {
		return Note{}, err
	}
	tid, err := b.Tasks.Resolve(id)
	if err != nil {
		return Note{}, err
	}
	n, err := Build(ctx, st, b, tid, o)
	if err != nil {
		return Note{}, err
	}
	return n, Write(ctx, st, n)
}

// ErrNone means the task has no Task Note yet.
var ErrNone = errors.New("no task note")

// Read returns the latest Task Note of task id (canonical), or an error
// matching ErrNone (exit code NotFound) when none was written.
func Read(ctx context.Context, st *gitstore.Store, id string) (Note, error) {
	root, err := st.Root(ctx, tasks.Kind, id)
	if err != nil {
		return Note{}, err
	}
	notes, err := st.ReadNotes(ctx, []string{root})
	if err != nil {
		return Note{}, err
	}
	var all []Note
	for _, l := range notes[root] {
		var n Note
		if json.Unmarshal([]byte(l), &n) == nil && n.TaskNote >= 1 && n.TaskNote <= Version && n.Task == id {
			all = append(all, n)
		}
	}
	if len(all) == 0 {
		return Note{}, exitcode.New(exitcode.NotFound, fmt.Errorf("task %s has %w yet", id[:8], ErrNone), "")
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].Written.Before(all[j].Written) })
	return all[len(all)-1], nil
}
