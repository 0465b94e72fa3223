package pipeline

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/git-agentmine/git-agentmine/board"
	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/sessions"
	"github.com/git-agentmine/git-agentmine/status"
	"github.com/git-agentmine/git-agentmine/tasks"
	"github.com/git-agentmine/git-agentmine/worker"
)

// ErrNoPlanner is what Hooks.Plan returns when no planner agent is
// defined: the goal then gets a worker, as any task does.
var ErrNoPlanner = errors.New("no planner agent is defined")

// HeldError is the refusal to start a run whose targets another live
// run of this clone holds: two runs never start attempts of one task.
type HeldError struct {
	// Name is the run refused; Other the live run holding the tasks.
	Name, Other string
	// Pid is the other run's supervisor.
	Pid int
	// Tasks are the shared targets (canonical ids).
	Tasks []string
}

func (e *HeldError) Error() string {
	ids := shortAll(e.Tasks)
	if len(ids) > 3 {
		ids = append(ids[:3], fmt.Sprintf("and %d more", len(ids)-3))
	}
	return fmt.Sprintf("run %s would run %s that run %s (pid %d) is running: %s", e.Name,
		map[bool]string{true: "a task", false: "tasks"}[len(e.Tasks) == 1], e.Other, e.Pid, strings.Join(ids, ", "))
}

// refuseHeld refuses a run named name over targets when another live
// run of this clone shares a target. self is the run's own record once it
// is written: then only runs recorded before it count (of two runs started
// at once, the later one gives way); nil counts every live run.
func refuseHeld(ctx context.Context, st *gitstore.Store, name string, targets []string, self *Record) error {
	runs, err := List(ctx, st)
	if err != nil {
		return err
	}
	for _, r := range runs {
		if r.Name == name || r.Ended != nil || !r.Alive() {
			continue
		}
		if self != nil && !(r.Started.Before(self.Started) || r.Started.Equal(self.Started) && r.Name < self.Name) {
			continue
		}
		var common []string
		for _, id := range targets {
			if slices.Contains(r.Targets, id) {
				common = append(common, id)
			}
		}
		if len(common) == 0 {
			continue
		}
		return exitcode.New(exitcode.State, &HeldError{Name: name, Other: r.Name, Pid: r.Supervisor.Pid, Tasks: common}, "")
	}
	return nil
}

// named resolves the task prefixes given on the command line.
func named(b *board.Board, prefixes []string) []string {
	var out []string
	for _, p := range prefixes {
		if id, err := b.Tasks.Resolve(p); err == nil && !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}

// isGoal reports whether a target is a goal, which the planner splits
// before any worker runs on it: a task of type epic, a task with
// acceptance criteria and no parent (a task a plan created is never
// planned again by itself), or a task named to run --plan.
func (s *Supervisor) isGoal(t tasks.Task, id string) bool {
	switch {
	case t.Type == tasks.TypeEpic:
		return true
	case s.rec.Plan && slices.Contains(s.rec.Named, id):
		return true
	}
	return len(t.Acceptance) > 0 && t.Parent == ""
}

// planFirst hands a goal that has no children and that no worker has
// touched to the planner (once per run), and reports whether the target
// needs nothing more from this look. The children the plan creates join
// the run's targets and start at the next look. A planner that gives no
// valid plan is retried with backoff (not an attempt), and after
// maxInfraRetries the goal is exhausted.
func (s *Supervisor) planFirst(ctx context.Context, b *board.Board, ts taskState, now time.Time, p *stepPlan) bool {
	id := ts.id
	if s.hooks.Plan == nil || s.noted["plan:"+id] || ts.res.Status != status.Open || !s.isGoal(ts.task, id) {
		return false
	}
	for _, r := range b.SessionsOf(id) {
		if r.Session.IsAttempt() {
			s.noted["plan:"+id] = true
			return false // worked on already: it is not planned now
		}
	}
	children, err := s.hooks.Plan(ctx, id)
	switch {
	case errors.Is(err, ErrNoPlanner):
		s.noted["plan:"+id] = true
		return false
	case err != nil && ctx.Err() != nil:
		fmt.Fprintf(s.log, "%s task %s: planning interrupted\n", time.Now().Format("15:04:05"), short(id))
		return true
	case err != nil:
		if s.planFails == nil {
			s.planFails = map[string]int{}
		}
		s.planFails[id]++
		n := s.planFails[id]
		fmt.Fprintf(s.log, "%s task %s: planning failed: %v\n", time.Now().Format("15:04:05"), short(id), err)
		if n >= maxInfraRetries {
			s.exhaust(ctx, b, ts, fmt.Sprintf("the planner gave no plan (%d tries): %s", n, firstLine(err.Error())))
			return true
		}
		s.notBefore[id] = now.Add(s.o.Backoff << (n - 1))
		p.next = earliest(p.next, s.notBefore[id])
		return true
	}
	s.noted["plan:"+id] = true
	s.emit(Event{Event: EvPlanned, Task: id, Title: ts.task.Title, Reason: fmt.Sprintf("%d child task(s)", len(children))})
	if len(children) == 0 {
		return false // nothing was created: a worker does it
	}
	s.addTargets(ctx, children, "run targets grew by a plan")
	p.progressed = true
	return true
}

// waitsForRole reports whether a planner or reviewer works on the target
// now (its status is planning or reviewing): one that a supervisor before
// a restart started, or a person. The run waits for its answer, which it
// records itself, rather than starting a second one or a worker; the run
// looks again at the next poll.
func (s *Supervisor) waitsForRole(ts taskState, now time.Time, p *stepPlan) bool {
	if ts.res.Status != status.Planning && ts.res.Status != status.Reviewing {
		return false
	}
	if key := "role:" + ts.res.Reason; !s.announced[key] {
		s.announced[key] = true
		fmt.Fprintf(s.log, "%s task %s: waiting for its answer: %s\n", time.Now().Format("15:04:05"), short(ts.id), ts.res.Reason)
	}
	p.next = earliest(p.next, now.Add(s.o.Poll))
	return true
}

// replannedAbout reports whether a planner run answered (or is answering)
// the NG or failures of session about: one planner per decision, also
// across restarts.
func replannedAbout(b *board.Board, task, about string) bool {
	for _, r := range b.SessionsOf(task) {
		if r.Session.Role == sessions.RolePlanner && r.Session.Reviews == about {
			return true
		}
	}
	return false
}

// replanFailures is the NG table of seed 003 for failed attempts: after
// ReplanAfter attempts in a row failed (DoD, tests, scope, exit) since the
// task's last replan, the planner is asked before the next one, as after a
// reviewer's NG. It reports whether the task was split.
func (s *Supervisor) replanFailures(ctx context.Context, b *board.Board, ts taskState, loops int) bool {
	n, l := s.rec.ReplanAfter, ts.latest
	if n <= 0 || l == nil || l.Session.ID != ts.res.Session || loops >= s.maxLoops(ts.task) {
		return false
	}
	var last time.Time // the start of the task's latest replan
	for _, r := range b.SessionsOf(ts.id) {
		if r.Session.Role == sessions.RolePlanner && r.Session.Reviews != "" && r.Session.Started.After(last) {
			last = r.Session.Started
		}
	}
	failed := 0
	for _, a := range ts.attempts {
		if a.Session.Started.After(last) {
			failed++
		}
	}
	if failed < n {
		return false
	}
	why := fmt.Sprintf("%d failed attempts", failed)
	return s.replan(ctx, b, ts, l, why, []string{fmt.Sprintf("%d attempts in a row failed; the last: %s", failed, ts.res.Reason)})
}

// growTargets makes every descendant of a target that is not cancelled a
// target: the children of a plan or replan (this supervisor's, or one's
// before a restart), or of a person's split during the run.
func (s *Supervisor) growTargets(ctx context.Context, b *board.Board) {
	seen := map[string]bool{}
	for _, id := range s.rec.Targets {
		seen[id] = true
	}
	var add []string
	var walk func(id string)
	walk = func(id string) {
		for _, c := range b.Tasks.Children(id) {
			if seen[c] || b.Status[c].Status == status.Cancelled {
				continue
			}
			seen[c] = true
			add = append(add, c)
			walk(c)
		}
	}
	for _, id := range s.rec.Targets {
		walk(id)
	}
	if len(add) > 0 {
		s.addTargets(ctx, add, "run targets grew by children")
	}
}

// addTargets records ids as targets of the run.
func (s *Supervisor) addTargets(ctx context.Context, ids []string, msg string) {
	rec, err := update(ctx, s.st, s.rec.Name, msg, func(r *Record) error {
		for _, c := range ids {
			if !slices.Contains(r.Targets, c) {
				r.Targets = append(r.Targets, c)
			}
		}
		sort.Strings(r.Targets)
		return nil
	})
	if err != nil {
		fmt.Fprintf(s.log, "%s recording new targets: %v\n", time.Now().Format("15:04:05"), err)
		return
	}
	s.rec.Targets = rec.Targets
}

// RefuseHeld is the check Start makes before it records a run, for a
// caller that starts the run's supervisor in the background: it refuses
// targets that another live run of this clone holds.
func RefuseHeld(ctx context.Context, env *worker.Env, o Options) error {
	b, err := board.Load(ctx, env.St, env.Cfg.Base)
	if err != nil {
		return err
	}
	targets, err := resolveTargets(b, o.Targets)
	if err != nil {
		return err
	}
	return refuseHeld(ctx, env.St, o.Name, targets, nil)
}
