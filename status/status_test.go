package status

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/git-agentmine/git-agentmine/tasks"
)

const taskID = "7a5c7a5c7a5c7a5c7a5c"

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// at is t0 plus n minutes.
func at(n int) time.Time { return t0.Add(time.Duration(n) * time.Minute) }

// attempt builds an attempt of session s started at minute n.
func attempt(s string, n int, set func(*Attempt)) Attempt {
	a := Attempt{Session: s + "0000000000000000", Started: at(n)}
	if set != nil {
		set(&a)
	}
	return a
}

func ended(exit int, dod string, scopeValid bool) func(*Attempt) {
	return func(a *Attempt) {
		a.Ended, a.ExitCode, a.DoD, a.Verified, a.ScopeValid = true, exit, dod, true, scopeValid
	}
}

func fact(n int, reason string) *tasks.Fact {
	return &tasks.Fact{Time: at(n), Author: "ada", Reason: reason}
}

// TestResolveOwnStatus walks every row of the priority table of design §4
// (cancelled > tainted > done > in_progress > review / dod_failed / failed
// of the latest session > open), and the facts that decide between them.
func TestResolveOwnStatus(t *testing.T) {
	passed := ended(0, "passed", true)
	cases := []struct {
		name      string
		task      tasks.Task
		attempts  []Attempt
		want      Status
		session   string // short id of the deciding session; unchecked when ""
		reasonHas string
	}{
		{name: "no session yet", want: Open, reasonHas: "no session yet"},
		{name: "exhausted: failed with the reason although the last attempt is in review",
			task:     tasks.Task{Exhausted: fact(5, "2 of 2 attempts used")},
			attempts: []Attempt{attempt("a1", 1, passed)}, want: Failed, reasonHas: "exhausted: 2 of 2 attempts used"},
		{name: "exhausted but merged meanwhile is done", task: tasks.Task{Exhausted: fact(5, "")},
			attempts: []Attempt{attempt("a1", 1, func(a *Attempt) { passed(a); a.Merged = true })}, want: Done},
		{name: "exhausted, then a live session", task: tasks.Task{Exhausted: fact(5, "")},
			attempts: []Attempt{attempt("a1", 6, func(a *Attempt) { a.Live = true })}, want: InProgress},
		{name: "cancelled", task: tasks.Task{Cancelled: fact(1, "not needed")}, want: Cancelled,
			reasonHas: "cancelled by ada at 2026-01-02T03:05:05Z: not needed"},
		{name: "cancelled beats done", task: tasks.Task{Cancelled: fact(9, "")},
			attempts: []Attempt{attempt("a1", 1, func(a *Attempt) { passed(a); a.Merged = true })},
			want:     Cancelled, reasonHas: "cancelled by ada"},
		{name: "done: a session reached the base",
			attempts: []Attempt{attempt("a1", 1, func(a *Attempt) { passed(a); a.Merged = true })},
			want:     Done, session: "a1000000", reasonHas: "session a1000000 reached the base"},
		{name: "done beats a live and a later failed session",
			attempts: []Attempt{
				attempt("a1", 1, func(a *Attempt) { passed(a); a.Merged = true }),
				attempt("a2", 2, func(a *Attempt) { a.Live = true }),
				attempt("a3", 3, ended(1, "", true)),
			},
			want: Done, session: "a1000000"},
		{name: "done survives a reopen", task: tasks.Task{Reopened: fact(5, "")},
			attempts: []Attempt{attempt("a1", 1, func(a *Attempt) { passed(a); a.Merged = true })},
			want:     Done, session: "a1000000"},
		{name: "tainted: reached the base with a broken scope",
			attempts: []Attempt{attempt("a1", 1, func(a *Attempt) {
				ended(0, "passed", false)(a)
				a.Merged, a.Reason = true, "ref-changed refs/heads/main (+1 more)"
			})},
			want: Tainted, session: "a1000000",
			reasonHas: "session a1000000 reached the base without a valid verdict: ref-changed refs/heads/main (+1 more)"},
		{name: "tainted beats work that reached the base properly",
			attempts: []Attempt{
				attempt("a1", 1, func(a *Attempt) { passed(a); a.Merged = true }),
				attempt("a2", 2, func(a *Attempt) { ended(0, "failed", false)(a); a.Merged = true }),
			},
			want: Tainted, session: "a2000000"},
		{name: "cancelled beats tainted", task: tasks.Task{Cancelled: fact(9, "")},
			attempts: []Attempt{attempt("a1", 1, func(a *Attempt) { ended(0, "passed", false)(a); a.Merged = true })},
			want:     Cancelled},
		{name: "a reopen after the taint clears it", task: tasks.Task{Reopened: fact(5, "looked at main")},
			attempts: []Attempt{attempt("a1", 1, func(a *Attempt) { ended(0, "passed", false)(a); a.Merged = true })},
			want:     Open, reasonHas: "reopened by ada"},
		{name: "reached the base with only accepted main-checkout changes is done",
			attempts: []Attempt{attempt("a1", 1, func(a *Attempt) {
				ended(0, "passed", false)(a)
				a.Merged, a.Acceptable = true, true
			})},
			want: Done, session: "a1000000"},
		{name: "reached the base with a failed DoD but a valid scope is done",
			attempts: []Attempt{attempt("a1", 1, func(a *Attempt) { ended(0, "failed", true)(a); a.Merged = true })},
			want:     Done, session: "a1000000"},
		{name: "reached the base without any scope verdict is done",
			attempts: []Attempt{attempt("a1", 1, func(a *Attempt) { a.Ended, a.Merged = true, true })},
			want:     Done},
		{name: "in progress: a live session",
			attempts: []Attempt{attempt("a1", 1, func(a *Attempt) { a.Live = true })},
			want:     InProgress, session: "a1000000", reasonHas: "is running"},
		{name: "a live session beats a later failed one",
			attempts: []Attempt{
				attempt("a1", 1, func(a *Attempt) { a.Live = true }),
				attempt("a2", 2, ended(1, "", true)),
			},
			want: InProgress, session: "a1000000"},
		{name: "review: exit 0, DoD passed, scope valid, not merged",
			attempts: []Attempt{attempt("a1", 1, passed)},
			want:     Review, session: "a1000000", reasonHas: "exited 0, DoD passed, not merged yet"},
		{name: "review: DoD skipped",
			attempts: []Attempt{attempt("a1", 1, ended(0, "skipped", true))},
			want:     Review, reasonHas: "DoD skipped"},
		{name: "review: DoD not run",
			attempts: []Attempt{attempt("a1", 1, ended(0, "", true))},
			want:     Review, reasonHas: "DoD not run"},
		{name: "review: no scope verdict is not a broken scope",
			attempts: []Attempt{attempt("a1", 1, func(a *Attempt) { a.Ended, a.DoD = true, "passed" })},
			want:     Review},
		{name: "dod_failed: DoD failed",
			attempts: []Attempt{attempt("a1", 1, func(a *Attempt) { ended(0, "failed", true)(a); a.Reason = "DoD `go test` exited 1" })},
			want:     DoDFailed, session: "a1000000", reasonHas: "session a1000000 DoD failed: DoD `go test` exited 1"},
		{name: "dod_failed: DoD timed out",
			attempts: []Attempt{attempt("a1", 1, ended(0, "timeout", true))},
			want:     DoDFailed, reasonHas: "DoD timeout"},
		{name: "dod_failed: scope broken although DoD passed",
			attempts: []Attempt{attempt("a1", 1, func(a *Attempt) { ended(0, "passed", false)(a); a.Reason = "write-outside-scope docs/x" })},
			want:     DoDFailed, reasonHas: "broke its scope: write-outside-scope docs/x (only the scope failed: DoD passed)"},
		{name: "dod_failed: scope broken and DoD failed",
			attempts: []Attempt{attempt("a1", 1, func(a *Attempt) { ended(0, "failed", false)(a); a.Reason = "write-outside-scope docs/x" })},
			want:     DoDFailed, reasonHas: "broke its scope and its DoD failed: write-outside-scope docs/x"},
		{name: "failed: exited non-zero",
			attempts: []Attempt{attempt("a1", 1, func(a *Attempt) { ended(2, "skipped", true)(a); a.Reason = "rate limited" })},
			want:     Failed, session: "a1000000", reasonHas: "session a1000000 exited 2: rate limited"},
		{name: "failed: a non-zero exit beats a broken scope",
			attempts: []Attempt{attempt("a1", 1, ended(1, "failed", false))},
			want:     Failed, reasonHas: "exited 1"},
		{name: "failed: killed by a signal",
			attempts: []Attempt{attempt("a1", 1, func(a *Attempt) { ended(143, "", true)(a); a.Signal = "SIGTERM" })},
			want:     Failed, reasonHas: "ended by SIGTERM"},
		{name: "open: its only session was stopped (not an attempt)",
			attempts: []Attempt{attempt("a1", 1, func(a *Attempt) { ended(143, "", true)(a); a.Signal, a.Reason = "SIGTERM", "stopped" })},
			want:     Open, reasonHas: "session a1000000 was stopped before it finished (stopped): not an attempt"},
		{name: "open: its only session was refused by a rate limit (not an attempt)",
			attempts: []Attempt{attempt("a1", 1, func(a *Attempt) { ended(1, "", true)(a); a.RateLimited, a.Reason = true, "rate limited: quota" })},
			want:     Open, reasonHas: "session a1000000 was refused by a limit (rate limited: quota): not an attempt"},
		{name: "dod_failed: a rate limit after a failed attempt leaves its verdict",
			attempts: []Attempt{attempt("a1", 1, ended(0, "failed", true)),
				attempt("a2", 2, func(a *Attempt) { ended(1, "", true)(a); a.RateLimited, a.Reason = true, "rate limited: quota" })},
			want: DoDFailed, session: "a1000000", reasonHas: "DoD failed"},
		{name: "dod_failed: a stop after a failed attempt leaves its verdict",
			attempts: []Attempt{attempt("a1", 1, ended(0, "failed", true)),
				attempt("a2", 2, func(a *Attempt) { ended(143, "", true)(a); a.Signal, a.Reason = "SIGTERM", "interrupted" })},
			want: DoDFailed, session: "a1000000", reasonHas: "DoD failed"},
		{name: "review: a stop before the worker started after a passing attempt",
			attempts: []Attempt{attempt("a1", 1, ended(0, "passed", true)),
				attempt("a2", 2, func(a *Attempt) {
					ended(143, "", true)(a)
					a.Signal, a.Reason = "SIGTERM", "stopped before the worker started"
				})},
			want: Review, session: "a1000000"},
		{name: "failed: a stalled worker stopped is a verdict",
			attempts: []Attempt{attempt("a1", 1, func(a *Attempt) {
				ended(143, "", true)(a)
				a.Signal, a.Reason = "SIGTERM", "stalled: no output and no new commit for 60s"
			})},
			want: Failed, reasonHas: "stalled"},
		{name: "failed: timed out",
			attempts: []Attempt{attempt("a1", 1, func(a *Attempt) { ended(124, "", true)(a); a.TimedOut = true; a.Signal = "SIGTERM" })},
			want:     Failed, reasonHas: "timed out"},
		{name: "failed: lost",
			attempts: []Attempt{attempt("a1", 1, func(a *Attempt) { a.Lost = true })},
			want:     Failed, session: "a1000000", reasonHas: "was lost (process gone, no outcome)"},
		{name: "dod_failed: a forged outcome line, however good the verdict looks",
			attempts: []Attempt{attempt("a1", 1, func(a *Attempt) { passed(a); a.Forged = "forged outcome line (x)" })},
			want:     DoDFailed, session: "a1000000", reasonHas: "session a1000000: forged outcome line (x)"},
		{name: "failed: a non-zero exit beats a forged line",
			attempts: []Attempt{attempt("a1", 1, func(a *Attempt) {
				ended(1, "", true)(a)
				a.Forged = "forged outcome line (x)"
				a.Reason = "forged outcome line (x); boom"
			})},
			want: Failed, session: "a1000000", reasonHas: "exited 1: forged outcome line (x); boom"},
		{name: "failed: lost with only forged lines says so",
			attempts: []Attempt{attempt("a1", 1, func(a *Attempt) { a.Lost = true; a.Forged = "forged outcome line (x)" })},
			want:     Failed, session: "a1000000", reasonHas: "was lost (process gone, no outcome): forged outcome line (x)"},
		{name: "the latest session decides: failed after review",
			attempts: []Attempt{attempt("a2", 2, ended(1, "", true)), attempt("a1", 1, passed)},
			want:     Failed, session: "a2000000"},
		{name: "the latest session decides: review after failed",
			attempts: []Attempt{attempt("a2", 2, passed), attempt("a1", 1, ended(1, "", true))},
			want:     Review, session: "a2000000"},
		{name: "open: reopened after failure", task: tasks.Task{Reopened: fact(5, "try again")},
			attempts: []Attempt{attempt("a1", 1, ended(1, "", true))},
			want:     Open, reasonHas: "reopened by ada"},
		{name: "open: reopened after cancel", task: tasks.Task{Reopened: fact(5, "")},
			want: Open, reasonHas: "reopened by ada"},
		{name: "a session after the reopen decides", task: tasks.Task{Reopened: fact(5, "")},
			attempts: []Attempt{attempt("a1", 1, ended(1, "", true)), attempt("a2", 6, passed)},
			want:     Review, session: "a2000000"},
		{name: "a session live at the reopen's instant counts", task: tasks.Task{Reopened: fact(5, "")},
			attempts: []Attempt{attempt("a1", 5, func(a *Attempt) { a.Live = true })},
			want:     InProgress, session: "a1000000"},
		{name: "a session ended at the reopen's instant does not", task: tasks.Task{Reopened: fact(5, "")},
			attempts: []Attempt{attempt("a1", 5, ended(1, "", true))},
			want:     Open},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			task := c.task
			task.ID = taskID
			b := &tasks.Board{Tasks: map[string]tasks.Entry{taskID: {Task: task}}}
			r := Resolve(b, Facts{Attempts: map[string][]Attempt{taskID: c.attempts}})[taskID]
			if r.Status != c.want {
				t.Fatalf("status %s (%s), want %s", r.Status, r.Reason, c.want)
			}
			if !strings.Contains(r.Reason, c.reasonHas) {
				t.Errorf("reason %q, want it to contain %q", r.Reason, c.reasonHas)
			}
			if got := short(r.Session); c.session != "" && got != c.session {
				t.Errorf("deciding session %q, want %q", got, c.session)
			}
			if (c.want == Open || c.want == Cancelled) && r.Session != "" {
				t.Errorf("%s decided by session %q, want none", c.want, r.Session)
			}
			if r.Blocked || r.Ready != (c.want == Open) {
				t.Errorf("no blockers: blocked %v ready %v", r.Blocked, r.Ready)
			}
		})
	}
}

// TestResolveBlockedReady: a task is blocked while any blocker is not done
// (a cancelled or unknown blocker counts as not done), and ready only when
// open and not blocked.
func TestResolveBlockedReady(t *testing.T) {
	const (
		done      = "d0d0d0d0d0d0d0d0d0d0"
		open      = "0be00be00be00be00be0"
		cancelled = "ca0ca0ca0ca0ca0ca0ca"
		failed    = "fa1fa1fa1fa1fa1fa1fa"
		tainted   = "7a17a17a17a17a17a17a"
		missing   = "99999999999999999999"
	)
	merged := attempt("m1", 1, func(a *Attempt) { ended(0, "passed", true)(a); a.Merged = true })
	cases := []struct {
		name     string
		blockers []string
		own      []Attempt
		want     Status
		blocked  bool
		ready    bool
		waiting  []string
	}{
		{name: "no blockers", want: Open, ready: true},
		{name: "every blocker done", blockers: []string{done}, want: Open, ready: true},
		{name: "an open blocker", blockers: []string{done, open}, want: Open, blocked: true, waiting: []string{open}},
		{name: "a failed blocker", blockers: []string{failed}, want: Open, blocked: true, waiting: []string{failed}},
		{name: "a cancelled blocker is not done", blockers: []string{cancelled}, want: Open, blocked: true, waiting: []string{cancelled}},
		{name: "a tainted blocker is not done", blockers: []string{done, tainted}, want: Open, blocked: true, waiting: []string{tainted}},
		{name: "an unknown blocker is not done", blockers: []string{missing}, want: Open, blocked: true, waiting: []string{missing}},
		{name: "waiting is sorted", blockers: []string{open, failed, cancelled}, want: Open, blocked: true,
			waiting: []string{open, cancelled, failed}},
		{name: "blocked keeps its own status", blockers: []string{open},
			own: []Attempt{attempt("a1", 1, ended(1, "", true))}, want: Failed, blocked: true, waiting: []string{open}},
		{name: "not open is never ready", blockers: []string{done},
			own: []Attempt{attempt("a1", 1, func(a *Attempt) { a.Live = true })}, want: InProgress},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := &tasks.Board{Tasks: map[string]tasks.Entry{
				taskID:    {Task: tasks.Task{ID: taskID, BlockedBy: c.blockers}},
				done:      {Task: tasks.Task{ID: done}},
				open:      {Task: tasks.Task{ID: open}},
				cancelled: {Task: tasks.Task{ID: cancelled, Cancelled: fact(1, "")}},
				failed:    {Task: tasks.Task{ID: failed}},
				tainted:   {Task: tasks.Task{ID: tainted}},
			}}
			f := Facts{Attempts: map[string][]Attempt{
				taskID:  c.own,
				done:    {merged},
				failed:  {attempt("f1", 1, ended(1, "", true))},
				tainted: {attempt("t1", 1, func(a *Attempt) { ended(0, "passed", false)(a); a.Merged = true })},
			}}
			res := Resolve(b, f)
			r := res[taskID]
			if r.Status != c.want || r.Blocked != c.blocked || r.Ready != c.ready || !reflect.DeepEqual(r.Waiting, c.waiting) {
				t.Errorf("got %s blocked %v ready %v waiting %v; want %s blocked %v ready %v waiting %v",
					r.Status, r.Blocked, r.Ready, r.Waiting, c.want, c.blocked, c.ready, c.waiting)
			}
			// The blockers themselves resolve as the facts say.
			for id, want := range map[string]Status{done: Done, open: Open, cancelled: Cancelled, failed: Failed, tainted: Tainted} {
				if got := res[id].Status; got != want {
					t.Errorf("blocker %s: %s, want %s", id[:4], got, want)
				}
			}
		})
	}
}

// TestResolveRollUp: a task with children takes its status from theirs,
// never from its own sessions: done when every child not cancelled is done
// and one is, failed naming an exhausted child, in progress with n/m
// otherwise; never open, so never ready; goals of goals roll up too, and a
// task blocked on a goal waits until the goal is done by roll-up.
func TestResolveRollUp(t *testing.T) {
	const (
		goal  = "90a190a190a190a190a1"
		sub   = "5b0a5b0a5b0a5b0a5b0a"
		c1    = "c1c1c1c1c1c1c1c1c1c1"
		c2    = "c2c2c2c2c2c2c2c2c2c2"
		c3    = "c3c3c3c3c3c3c3c3c3c3"
		after = "af7eaf7eaf7eaf7eaf7e"
	)
	merged := attempt("m1", 1, func(a *Attempt) { ended(0, "passed", true)(a); a.Merged = true })
	live := attempt("l1", 2, func(a *Attempt) { a.Live = true })
	type kid struct {
		task     tasks.Task
		attempts []Attempt
	}
	cases := []struct {
		name      string
		goalOwn   tasks.Task
		goalTries []Attempt
		kids      map[string]kid
		want      Status
		done, tot int
		reasonHas string
	}{
		{name: "every child done", kids: map[string]kid{c1: {attempts: []Attempt{merged}}, c2: {attempts: []Attempt{merged}}},
			want: Done, done: 2, tot: 2, reasonHas: "2/2"},
		{name: "a cancelled child is left out", kids: map[string]kid{c1: {attempts: []Attempt{merged}}, c2: {task: tasks.Task{Cancelled: fact(1, "")}}},
			want: Done, done: 1, tot: 1},
		{name: "every child cancelled is not done", kids: map[string]kid{c1: {task: tasks.Task{Cancelled: fact(1, "")}}},
			want: InProgress, done: 0, tot: 0, reasonHas: "every child is cancelled"},
		{name: "children not started: in progress, not open", kids: map[string]kid{c1: {}, c2: {attempts: []Attempt{merged}}},
			want: InProgress, done: 1, tot: 2, reasonHas: "1/2 children done"},
		{name: "a child running", kids: map[string]kid{c1: {attempts: []Attempt{live}}}, want: InProgress, done: 0, tot: 1},
		{name: "an exhausted child fails the goal, named", kids: map[string]kid{c1: {attempts: []Attempt{merged}},
			c3: {task: tasks.Task{Exhausted: fact(3, "3 of 3 attempts used")}}},
			want: Failed, done: 1, tot: 2, reasonHas: "child c3c3c3c3 exhausted"},
		{name: "a failed attempt that is not exhaustion is still in progress",
			kids: map[string]kid{c1: {attempts: []Attempt{attempt("f1", 1, ended(1, "", true))}}}, want: InProgress, done: 0, tot: 1},
		{name: "the goal's own merged session does not make it done", goalTries: []Attempt{merged},
			kids: map[string]kid{c1: {}}, want: InProgress, done: 0, tot: 1},
		{name: "the goal's own live session does not either", goalTries: []Attempt{live},
			kids: map[string]kid{c1: {attempts: []Attempt{merged}}}, want: Done, done: 1, tot: 1},
		{name: "a cancelled goal stays cancelled", goalOwn: tasks.Task{Cancelled: fact(1, "")},
			kids: map[string]kid{c1: {attempts: []Attempt{merged}}}, want: Cancelled},
		{name: "a goal of goals: done when its sub-goal is done", kids: map[string]kid{sub: {}, c1: {task: tasks.Task{Parent: sub}, attempts: []Attempt{merged}}},
			want: Done, done: 1, tot: 1},
		{name: "a goal of goals: failed when its sub-goal failed", kids: map[string]kid{sub: {}, c3: {task: tasks.Task{Parent: sub, Exhausted: fact(3, "")}}},
			want: Failed, done: 0, tot: 1, reasonHas: "child 5b0a5b0a exhausted"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := c.goalOwn
			g.ID = goal
			b := &tasks.Board{Tasks: map[string]tasks.Entry{goal: {Task: g},
				after: {Task: tasks.Task{ID: after, BlockedBy: []string{goal}}}}}
			f := Facts{Attempts: map[string][]Attempt{goal: c.goalTries}}
			for id, k := range c.kids {
				k.task.ID = id
				if k.task.Parent == "" {
					k.task.Parent = goal
				}
				b.Tasks[id] = tasks.Entry{Task: k.task}
				f.Attempts[id] = k.attempts
			}
			res := Resolve(b, f)
			r := res[goal]
			if r.Status != c.want {
				t.Fatalf("goal %s (%s), want %s", r.Status, r.Reason, c.want)
			}
			if r.Ready {
				t.Errorf("a goal is ready: %+v", r)
			}
			if !strings.Contains(r.Reason, c.reasonHas) {
				t.Errorf("reason %q, want it to contain %q", r.Reason, c.reasonHas)
			}
			if c.want != Cancelled && (r.Children == nil || r.Children.Done != c.done || r.Children.Total != c.tot) {
				t.Errorf("children %+v, want %d/%d", r.Children, c.done, c.tot)
			}
			if a := res[after]; a.Blocked != (c.want != Done) {
				t.Errorf("task blocked on the goal: blocked %v with goal %s", a.Blocked, r.Status)
			}
			for id := range c.kids {
				if res[id].Children != nil && id != sub {
					t.Errorf("leaf %s has a roll-up", id)
				}
			}
		})
	}
}

// TestResolvePlanningReviewing: a live planner or reviewer session of a
// task makes it planning or reviewing (never ready), naming the session;
// a settled task, or one a worker runs on, keeps its status.
func TestResolvePlanningReviewing(t *testing.T) {
	passed := ended(0, "passed", true)
	planner := RoleRun{Role: "planner", Agent: "plan", Session: "p1p1p1p1p1p1"}
	reviewer := RoleRun{Role: "reviewer", Agent: "rev", Session: "r1r1r1r1r1r1"}
	cases := []struct {
		name     string
		task     tasks.Task
		attempts []Attempt
		role     RoleRun
		want     Status
	}{
		{name: "a goal being planned", role: planner, want: Planning},
		{name: "a passed attempt being reviewed", attempts: []Attempt{attempt("a1", 1, passed)}, role: reviewer, want: Reviewing},
		{name: "a failed attempt being replanned", attempts: []Attempt{attempt("a1", 1, ended(1, "", true))}, role: planner, want: Planning},
		{name: "a worker runs", attempts: []Attempt{attempt("a1", 1, func(a *Attempt) { a.Live = true })}, role: planner, want: InProgress},
		{name: "exhausted", task: tasks.Task{Exhausted: fact(5, "")}, role: planner, want: Failed},
		{name: "cancelled", task: tasks.Task{Cancelled: fact(1, "")}, role: reviewer, want: Cancelled},
		{name: "done", attempts: []Attempt{attempt("a1", 1, func(a *Attempt) { passed(a); a.Merged = true })}, role: reviewer, want: Done},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := &tasks.Board{Tasks: map[string]tasks.Entry{taskID: {Task: c.task}}}
			f := Facts{Attempts: map[string][]Attempt{taskID: c.attempts}, Roles: map[string]RoleRun{taskID: c.role}}
			r := Resolve(b, f)[taskID]
			if r.Status != c.want {
				t.Fatalf("status %s (%s), want %s", r.Status, r.Reason, c.want)
			}
			if r.Ready {
				t.Errorf("%s task is ready", r.Status)
			}
			if c.want == Planning || c.want == Reviewing {
				if want := c.role.Role + " " + c.role.Agent + " (session " + c.role.Session[:8] + ") is running"; r.Reason != want {
					t.Errorf("reason %q, want %q", r.Reason, want)
				}
			}
			without := Resolve(b, Facts{Attempts: map[string][]Attempt{taskID: c.attempts}})[taskID]
			if (c.want == Planning || c.want == Reviewing) == (without.Status == r.Status) {
				t.Errorf("without the live %s: %s, with it: %s", c.role.Role, without.Status, r.Status)
			}
		})
	}
}
