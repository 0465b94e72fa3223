// Package status owns the status resolver: a task's status is derived from
// facts every time it is asked for (design §4), never stored. The resolver
// works on facts gathered in batches for all tasks at once; it runs no git
// process per task.
package status

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/git-agentmine/git-agentmine/sessions"
	"github.com/git-agentmine/git-agentmine/tasks"
)

// Status is a derived task status.
type Status string

// The statuses, in the priority order of design §4 (Tainted added above
// Done: a session whose work reached the base with a broken scope verdict
// must never read as done).
const (
	Cancelled Status = "cancelled"
	// Tainted: some session's commits reached the base although its scope
	// verdict has violations (a worker that moved the base, or re-pointed
	// its task's base at its own branch, or work merged by hand past a
	// broken verdict). It is not done: blocked tasks keep waiting.
	Tainted    Status = "tainted"
	Done       Status = "done"
	InProgress Status = "in_progress"
	// Planning: a planner agent is working on the task (planning a goal,
	// or replanning after a review NG or failed attempts); derived from
	// its live planner session.
	Planning Status = "planning"
	// Reviewing: a reviewer agent is judging the task's latest attempt;
	// derived from its live reviewer session.
	Reviewing Status = "reviewing"
	Review    Status = "review"
	DoDFailed Status = "dod_failed"
	Failed    Status = "failed"
	Open      Status = "open"
)

// All lists every status, for validation and board ordering.
var All = []Status{Open, Planning, InProgress, Reviewing, Review, DoDFailed, Failed, Tainted, Done, Cancelled}

// Valid reports whether s names a status (or one of the derived filters
// "ready" and "blocked").
func Valid(s string) bool {
	if s == "ready" || s == "blocked" {
		return true
	}
	for _, x := range All {
		if string(x) == s {
			return true
		}
	}
	return false
}

// Attempt is what is known about one session of a task, gathered by the
// caller in batch (sessions, their outcome notes, and reachability of their
// tips from the base).
type Attempt struct {
	Session string
	Started time.Time
	// Live: the session is running or prepared and not ended.
	Live bool
	// Lost: the session has no outcome and can no longer be running.
	Lost bool
	// Ended: an outcome was recorded.
	Ended    bool
	ExitCode int
	Signal   string
	TimedOut bool
	// DoD is "passed", "failed", "timeout", "skipped" or "" (not run).
	DoD string
	// ScopeValid is false when verification found violations.
	ScopeValid bool
	// Verified is true when a scope verdict exists.
	Verified bool
	// Acceptable: the scope verdict is invalid only through violations a
	// person may accept when merging (main-checkout changes). Such work
	// that reached the base was merged by someone who took them on, so it
	// is done, not tainted.
	Acceptable bool
	// Merged: the session produced at least one commit and its tip is an
	// ancestor of the base.
	Merged bool
	// Reason is a short text explaining a failure (client's own words, the
	// first violation, the failing DoD command).
	Reason string
	// Review is the verdict of the session's review ("OK", "NG"), "" when
	// it was not reviewed; Reviewer names who reviewed and ReviewReasons
	// say why.
	Review        string
	Reviewer      string
	ReviewReasons []string
	// RateLimited: the client reported that a rate or usage limit refused
	// it (sessions.Outcome.RateLimit). Like a stop, it says nothing about
	// the work: not an attempt.
	RateLimited bool
	// Forged names outcome lines of the session that its supervisor did
	// not write (sessions.ForgedReason); "" when there are none. They are
	// never the verdict: a session that exited 0 with one is dod_failed.
	Forged string
}

// broken reports whether the attempt's scope verdict has violations that no
// one accepted: such work reaching the base makes the task tainted.
func (a Attempt) broken() bool { return a.Verified && !a.ScopeValid && !a.Acceptable }

// Facts holds every task's attempts, keyed by canonical task id, and the
// planner or reviewer runs live now, keyed by the task they are about.
type Facts struct {
	Attempts map[string][]Attempt
	Roles    map[string]RoleRun
}

// RoleRun is a planner's or reviewer's run that is live now: while it
// runs, its task's status says so (Planning, Reviewing).
type RoleRun struct {
	// Role is "planner" or "reviewer".
	Role    string
	Agent   string
	Session string
}

// Result is the resolved status of one task and why.
type Result struct {
	Status Status `json:"status"`
	// Reason names the fact that decided the status.
	Reason string `json:"reason"`
	// Blocked is true when some blocker is not done.
	Blocked bool `json:"blocked"`
	// Ready is open and not blocked.
	Ready bool `json:"ready"`
	// Waiting lists the blockers that are not done.
	Waiting []string `json:"waiting_on,omitempty"`
	// Session is the session that decided the status, if any.
	Session string `json:"session,omitempty"`
	// Children is the roll-up of a task with children (a goal): its status
	// is derived from theirs, never from its own sessions. Nil for a task
	// without children.
	Children *Progress `json:"children,omitempty"`
}

// Progress counts a goal's children: Done of Total, where Total leaves out
// the cancelled ones; Failed names the children that used up their
// attempts (or are goals that failed).
type Progress struct {
	Done   int      `json:"done"`
	Total  int      `json:"total"`
	Failed []string `json:"failed,omitempty"`
}

// Resolve derives the status of every task on the board.
func Resolve(b *tasks.Board, f Facts) map[string]Result {
	// One pass over the board: each task's own result, ready when open (a
	// task without blockers is never blocked), and which tasks have
	// children or blockers. Only those are gone through again, once the
	// goals are rolled up: the board of 100,000 tasks was walked three
	// times, on one core, before a list could print.
	out := make(map[string]Result, len(b.Tasks))
	children := map[string][]string{}
	var waiting []string
	for id, e := range b.Tasks {
		r := own(e.Task, f.Attempts[id])
		if rr, ok := f.Roles[id]; ok {
			r = withRole(e.Task, r, rr)
		}
		r.Ready = r.Status == Open
		out[id] = r
		if p := e.Task.Parent; p != "" && p != id {
			if _, ok := b.Tasks[p]; ok {
				children[p] = append(children[p], id)
			}
		}
		if len(e.Task.BlockedBy) > 0 {
			waiting = append(waiting, id)
		}
	}
	rollUp(b, children, out)
	// A goal's status is its children's now; a task with blockers waits
	// on those not done.
	settle := func(id string) {
		r := out[id]
		r.Waiting = nil
		for _, bl := range b.Tasks[id].Task.BlockedBy {
			if br, ok := out[bl]; !ok || br.Status != Done {
				r.Waiting = append(r.Waiting, bl)
			}
		}
		sort.Strings(r.Waiting)
		r.Blocked = len(r.Waiting) > 0
		r.Ready = r.Status == Open && !r.Blocked
		out[id] = r
	}
	for id := range children {
		settle(id)
	}
	for _, id := range waiting {
		settle(id)
	}
	return out
}

// withRole is r while a planner or reviewer works on the task: planning
// or reviewing, unless the task is settled (cancelled, tainted, done,
// exhausted) or a worker runs on it.
func withRole(t tasks.Task, r Result, rr RoleRun) Result {
	switch {
	case r.Status == Cancelled, r.Status == Tainted, r.Status == Done, r.Status == InProgress,
		t.Exhausted != nil:
		return r
	}
	st := Reviewing
	if rr.Role == sessions.RolePlanner {
		st = Planning
	}
	// Session stays the attempt that decided before (the one reviewed).
	return Result{Status: st, Reason: rr.Role + " " + rr.Agent + " (session " + short(rr.Session) + ") is running", Session: r.Session}
}

// rollUp replaces the status of every task with children on the board by
// the roll-up of its children's (design: goals roll up): cancelled or
// tainted by its own facts stays so; otherwise failed when a child is
// exhausted (naming it), done when every child that is not cancelled is
// done and at least one is, in progress otherwise. A goal is never open,
// so never ready, and its own sessions never decide it. children maps
// each task with children on the board to their ids.
func rollUp(b *tasks.Board, children map[string][]string, out map[string]Result) {
	state := map[string]int{} // 1 visiting, 2 rolled up
	var roll func(id string)
	roll = func(id string) {
		kids := children[id]
		if state[id] != 0 || len(kids) == 0 {
			return
		}
		state[id] = 1
		sort.Strings(kids)
		for _, k := range kids {
			roll(k)
		}
		state[id] = 2
		if r := out[id]; r.Status == Cancelled || r.Status == Tainted {
			return
		}
		out[id] = goalOf(b, kids, out)
	}
	for id := range children {
		roll(id)
	}
}

// goalOf derives a goal's result from its children's resolved results.
func goalOf(b *tasks.Board, kids []string, out map[string]Result) Result {
	p := &Progress{}
	for _, k := range kids {
		r := out[k]
		switch {
		case r.Status == Cancelled:
			continue
		case r.Status == Done:
			p.Done++
		case r.Status == Failed && (b.Tasks[k].Task.Exhausted != nil || r.Children != nil):
			p.Failed = append(p.Failed, k)
		}
		p.Total++
	}
	counted := fmt.Sprintf("%d/%d children done", p.Done, p.Total)
	switch {
	case len(p.Failed) > 0:
		names := make([]string, len(p.Failed))
		for i, k := range p.Failed {
			names[i] = short(k)
		}
		return Result{Status: Failed, Reason: "child " + strings.Join(names, ", ") + " exhausted (" + counted + ")", Children: p}
	case p.Total == 0:
		return Result{Status: InProgress, Reason: "every child is cancelled", Children: p}
	case p.Done == p.Total:
		return Result{Status: Done, Reason: "every child is done (" + counted + ")", Children: p}
	}
	return Result{Status: InProgress, Reason: counted, Children: p}
}

// own resolves a task's status from its own facts (blockers aside).
func own(t tasks.Task, attempts []Attempt) Result {
	if t.Cancelled != nil {
		reason := "cancelled by " + t.Cancelled.Author + " at " + t.Cancelled.Time.Format(time.RFC3339)
		if t.Cancelled.Reason != "" {
			reason += ": " + t.Cancelled.Reason
		}
		return Result{Status: Cancelled, Reason: reason}
	}
	// Attempts since the last reopen; without one, all of them, shared
	// with the caller's facts (read, never changed here).
	current := attempts
	if t.Reopened != nil {
		current = nil
		for _, a := range attempts {
			if a.Started.After(t.Reopened.Time) || a.Started.Equal(t.Reopened.Time) && a.Live {
				current = append(current, a)
			}
		}
	}
	// Work that reached the base past a broken scope verdict outranks any
	// work that reached it properly, until someone reopens the task (an
	// explicit decision, after looking at the base); it never makes the
	// task done, reopened or not.
	for _, a := range current {
		if a.Merged && a.broken() {
			return Result{Status: Tainted, Reason: withReason("session "+short(a.Session)+" reached the base without a valid verdict", a.Reason), Session: a.Session}
		}
	}
	for _, a := range attempts {
		if a.Merged && !a.broken() {
			return Result{Status: Done, Reason: "session " + short(a.Session) + " reached the base", Session: a.Session}
		}
	}
	for _, a := range current {
		if a.Live {
			return Result{Status: InProgress, Reason: "session " + short(a.Session) + " is running", Session: a.Session}
		}
	}
	if t.Exhausted != nil {
		// Only a reopen (which clears the fact) lets the task run again.
		return Result{Status: Failed, Reason: withReason("exhausted", t.Exhausted.Reason)}
	}
	judged, stopped := withoutStops(current)
	switch {
	case len(judged) > 0:
		return verdictOf(latestOf(judged))
	case stopped != nil && stopped.RateLimited:
		return Result{Status: Open, Reason: "session " + short(stopped.Session) + " was refused by a limit (" + stopped.Reason + "): not an attempt"}
	case stopped != nil:
		return Result{Status: Open, Reason: "session " + short(stopped.Session) + " was stopped before it finished (" + stopped.Reason + "): not an attempt"}
	case t.Reopened != nil:
		return Result{Status: Open, Reason: "reopened by " + t.Reopened.Author}
	}
	return Result{Status: Open, Reason: "no session yet"}
}

// withoutStops leaves out the attempts that were stopped from outside
// (sessions.IsStop) or refused by a rate limit: neither said anything
// about the work, so the latest attempt that was neither decides. stopped
// is the latest one left out, nil when none was.
func withoutStops(current []Attempt) (judged []Attempt, stopped *Attempt) {
	notWork := func(a Attempt) bool { return a.RateLimited || sessions.IsStop(a.Signal, a.Reason, a.TimedOut) }
	if !slices.ContainsFunc(current, notWork) {
		return current, nil // shared, as the caller's facts are: read only
	}
	var stops []Attempt
	for _, a := range current {
		if notWork(a) {
			stops = append(stops, a)
		} else {
			judged = append(judged, a)
		}
	}
	if len(stops) > 0 {
		stopped = latestOf(stops)
	}
	return judged, stopped
}

// verdictOf is the status the latest attempt a, which ended or was lost,
// gives its task.
func verdictOf(a *Attempt) Result {
	s := short(a.Session)
	switch {
	case a.Lost:
		return Result{Status: Failed, Reason: withReason("session "+s+" was lost (process gone, no outcome)", a.Forged), Session: a.Session}
	case a.TimedOut:
		return Result{Status: Failed, Reason: withReason("session "+s+" timed out", a.Forged), Session: a.Session}
	case a.Signal != "":
		return Result{Status: Failed, Reason: withReason("session "+s+" ended by "+a.Signal, a.Reason), Session: a.Session}
	case a.ExitCode != 0:
		return Result{Status: Failed, Reason: withReason(fmt.Sprintf("session %s exited %d", s, a.ExitCode), a.Reason), Session: a.Session}
	case a.Forged != "":
		return Result{Status: DoDFailed, Reason: "session " + s + ": " + a.Forged, Session: a.Session}
	case a.Verified && !a.ScopeValid && (a.DoD == "failed" || a.DoD == "timeout"):
		return Result{Status: DoDFailed, Reason: withReason("session "+s+" broke its scope and its DoD "+a.DoD, a.Reason), Session: a.Session}
	case a.Verified && !a.ScopeValid:
		return Result{Status: DoDFailed, Reason: withReason("session "+s+" broke its scope", a.Reason) + " (only the scope failed: DoD " + orNotRun(a.DoD) + ")", Session: a.Session}
	case a.DoD == "failed" || a.DoD == "timeout":
		return Result{Status: DoDFailed, Reason: withReason("session "+s+" DoD "+a.DoD, a.Reason), Session: a.Session}
	}
	dod := a.DoD
	if dod == "" {
		dod = "not run"
	}
	switch a.Review {
	case "NG":
		return Result{Status: DoDFailed, Reason: withReason("session "+s+" reviewed NG by "+a.Reviewer, strings.Join(a.ReviewReasons, "; ")), Session: a.Session}
	case "OK":
		return Result{Status: Review, Reason: "session " + s + " exited 0, DoD " + dod + ", reviewed OK by " + a.Reviewer + ", not merged yet", Session: a.Session}
	}
	return Result{Status: Review, Reason: "session " + s + " exited 0, DoD " + dod + ", not merged yet", Session: a.Session}
}

// latestOf is the latest of attempts (not empty): the last of those
// started latest, as the last of a stable sort by start time would be.
func latestOf(attempts []Attempt) *Attempt {
	latest := 0
	for i := range attempts {
		if !attempts[i].Started.Before(attempts[latest].Started) {
			latest = i
		}
	}
	return &attempts[latest]
}

func orNotRun(dod string) string {
	if dod == "" {
		return "not run"
	}
	return dod
}

func withReason(s, reason string) string {
	if reason == "" {
		return s
	}
	return s + ": " + reason
}

func short(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}
