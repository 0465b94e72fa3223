package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/git-agentmine/git-agentmine/agents"
	"github.com/git-agentmine/git-agentmine/bestof"
	"github.com/git-agentmine/git-agentmine/board"
	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/launch"
	"github.com/git-agentmine/git-agentmine/merge"
	"github.com/git-agentmine/git-agentmine/output"
	"github.com/git-agentmine/git-agentmine/roles"
	"github.com/git-agentmine/git-agentmine/sessions"
	"github.com/git-agentmine/git-agentmine/status"
	"github.com/git-agentmine/git-agentmine/tasknote"
	"github.com/git-agentmine/git-agentmine/tasks"
	"github.com/git-agentmine/git-agentmine/worker"
)

// Verdict is a reviewer's answer about one session.
type Verdict struct {
	// Verdict is "OK" or "NG".
	Verdict  string
	Reasons  []string
	FollowUp string
	Reviewer string
}

// Hooks connect the loop to the reviewer and the Task Note writer; a nil
// hook is skipped.
type Hooks struct {
	// Review runs the reviewer on a session that passed DoD and scope and
	// records its verdict. An error for which Retryable is true is retried
	// with backoff (at most 3 times) and is not an attempt.
	Review func(ctx context.Context, rec sessions.Record) (Verdict, error)
	// Retryable reports whether a review error is an infrastructure error.
	Retryable func(err error) bool
	// Replan hands a task reviewed NG (or failed ReplanAfter times) back
	// to a planner, when one is configured, and returns the ids of the
	// child tasks it created; about is the attempt whose NG or failure it
	// answers (recorded on the planner's session). ErrNoPlanner when no
	// planner is defined: the next attempt comes with the reasons.
	Replan func(ctx context.Context, taskID, about string, reasons []string) ([]string, error)
	// Plan hands a goal without children to a planner before any attempt
	// and returns the ids of the children it created; ErrNoPlanner when
	// no planner is defined (the goal then gets a worker, as any task).
	Plan func(ctx context.Context, taskID string) ([]string, error)
	// Note writes the Task Note of a task that is done, or exhausted (why
	// is then the reason).
	Note func(ctx context.Context, taskID, exhausted string) error
	// Compare has the reviewer choose among the attempts of a best-of
	// round that passed (bestof.go); errors as for Review.
	Compare func(ctx context.Context, cands []Candidate) (Comparison, error)
}

// DefaultHooks connects the loop to the reviewer, planner and Task Note of
// env's repository. Reviewers and planners run in a process of their own,
// self(args...) (this program with those arguments): a process that
// supervises an agent run ends, when the run is over, every descendant in
// another session that started meanwhile (launch.Reaper), and the workers'
// detached supervisors are the loop's descendants.
func DefaultHooks(env *worker.Env, self func(args ...string) []string) Hooks {
	return Hooks{
		Review: func(ctx context.Context, rec sessions.Record) (Verdict, error) {
			code, msg, err := runSelf(ctx, env, self("review", rec.Session.ID))
			if err != nil {
				return Verdict{}, err
			}
			if code != 0 && code != exitcode.Failed {
				err := fmt.Errorf("reviewing session %s: %s", short(rec.Session.ID), msg)
				switch code {
				case exitcode.Usage, exitcode.Config, exitcode.NotFound:
					return Verdict{}, exitcode.New(code, err, "")
				}
				return Verdict{}, &infraError{err}
			}
			got, err := sessions.Get(ctx, env.St, rec.Session.ID)
			if err != nil {
				return Verdict{}, err
			}
			if got.Review == nil {
				return Verdict{}, &infraError{fmt.Errorf("reviewing session %s: no verdict was recorded (exit %d: %s)", short(rec.Session.ID), code, msg)}
			}
			r := got.Review
			return Verdict{Verdict: r.Verdict, Reasons: r.Reasons, FollowUp: r.FollowUp, Reviewer: r.Agent}, nil
		},
		Retryable: func(err error) bool {
			var ie *infraError
			return errors.As(err, &ie)
		},
		Plan: func(ctx context.Context, taskID string) ([]string, error) {
			if _, err := roles.PickAgent(env.Top, agents.RolePlanner, ""); err != nil {
				return nil, ErrNoPlanner
			}
			code, out, err := runSelf(ctx, env, self("run", "replan", "--plan", taskID))
			if err != nil {
				return nil, err
			}
			if code != 0 {
				return nil, fmt.Errorf("planning task %s: %s", short(taskID), out)
			}
			return strings.Fields(out), nil
		},
		Replan: func(ctx context.Context, taskID, about string, reasons []string) ([]string, error) {
			if _, err := roles.PickAgent(env.Top, agents.RolePlanner, ""); err != nil {
				return nil, ErrNoPlanner // a new attempt with the reasons
			}
			args := []string{"run", "replan", taskID, "--about", about}
			for _, r := range reasons {
				args = append(args, "--reason", r)
			}
			code, out, err := runSelf(ctx, env, self(args...))
			if err != nil {
				return nil, err
			}
			if code != 0 {
				return nil, fmt.Errorf("replanning task %s: %s", short(taskID), out)
			}
			return strings.Fields(out), nil
		},
		Compare: func(ctx context.Context, cands []Candidate) (Comparison, error) {
			return compareSelf(ctx, env, self, cands)
		},
		Note: func(ctx context.Context, taskID, exhausted string) error {
			o := tasknote.Options{By: "agentmine run"}
			if exhausted != "" {
				o.State, o.Reason = "exhausted", exhausted
			}
			_, err := tasknote.WriteFor(ctx, env.St, env.Cfg.Base, taskID, o)
			return err
		},
	}
}

// infraError is a reviewer or planner run that produced no answer: retried
// with backoff.
type infraError struct{ err error }

func (e *infraError) Error() string { return e.err.Error() }
func (e *infraError) Unwrap() error { return e.err }

// runSelf runs argv in the repository and returns its exit code and, on
// success its stdout, else the first line of its stderr (without
// "error: "). The process writes to files, not to pipes of this one: a
// planner or reviewer outlives a supervisor killed meanwhile (kill -9)
// and still records its answer, which a pipe with no reader would stop
// (SIGPIPE) before it did.
func runSelf(ctx context.Context, env *worker.Env, argv []string) (int, string, error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = env.Top
	out, err := os.CreateTemp("", "agentmine-out-*")
	if err != nil {
		return 0, "", fmt.Errorf("running %s: %w", filepath.Base(argv[0]), err)
	}
	defer os.Remove(out.Name())
	defer out.Close()
	errf, err := os.CreateTemp("", "agentmine-err-*")
	if err != nil {
		return 0, "", fmt.Errorf("running %s: %w", filepath.Base(argv[0]), err)
	}
	defer os.Remove(errf.Name())
	defer errf.Close()
	cmd.Stdout, cmd.Stderr = out, errf
	err = cmd.Run()
	read := func(f *os.File) string {
		data, _ := os.ReadFile(f.Name())
		return string(data)
	}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return ee.ExitCode(), strings.TrimPrefix(firstLine(read(errf)), "error: "), nil
	case err != nil:
		return 0, "", fmt.Errorf("running %s: %w", filepath.Base(argv[0]), err)
	}
	return 0, strings.TrimSpace(read(out)), nil
}

// IsWorkerSession reports whether a session is a worker's attempt (planner
// and reviewer runs are sessions too, but never attempts).
func IsWorkerSession(s sessions.Session) bool { return s.IsAttempt() }

// StopOrphan stops the running workers of a run whose supervisor is gone
// (SIGTERM to their session supervisors, as worker stop does), waits for
// them, and records the run as stopped. It returns how many it stopped.
func StopOrphan(ctx context.Context, env *worker.Env, r Record) (int, error) {
	b, err := board.Load(ctx, env.St, env.Cfg.Base)
	if err != nil {
		return 0, err
	}
	var ids []string
	for _, id := range r.Targets {
		for _, rec := range b.SessionsOf(id) {
			s := rec.Session
			if !board.LiveNow(rec, b.Here) || s.Mode == sessions.ModeManual || !b.Here.Judges(s) || s.Pid <= 0 {
				continue
			}
			if err := syscall.Kill(s.Pid, syscall.SIGTERM); err == nil {
				ids = append(ids, s.ID)
			}
		}
	}
	if len(ids) > 0 {
		wctx, cancel := context.WithTimeout(ctx, env.Cfg.Grace+60*time.Second)
		defer cancel()
		if _, err := env.Wait(wctx, ids); err != nil {
			return len(ids), fmt.Errorf("waiting for the stopped workers: %w", err)
		}
	}
	reason := "stopped"
	if cur, err := Get(ctx, env.St, r.Name); err == nil && cur.StopRequested != nil {
		reason = "stopped by " + cur.StopRequested.Author
		if cur.StopRequested.Reason != "" {
			reason += ": " + cur.StopRequested.Reason
		}
	}
	_, err = MarkEnded(ctx, env.St, r.Name, End{Time: time.Now().UTC(), Result: "stopped", Reason: reason, Total: len(r.Targets)})
	return len(ids), err
}

// maxInfraRetries bounds the retries of start failures and reviewer
// infrastructure errors of one task; they are not attempts.
const maxInfraRetries = 3

// Supervisor runs one run's loop.
type Supervisor struct {
	env    *worker.Env
	st     *gitstore.Store
	o      Options
	hooks  Hooks
	rec    Record
	budget Budget
	log    io.WriteCloser

	// What this process has seen; all of it can be recomputed from refs
	// after a restart, except the in-memory counts of failures that left
	// no session behind.
	live        map[string]sessions.Record // sessions live at the last look
	prepFails   map[string]int             // task -> failed preparations (no session recorded)
	busyFails   map[string]int             // task -> claims a listed remote did not answer (claimBusy)
	reviewFails map[string]int             // session -> reviewer infrastructure errors
	notBefore   map[string]time.Time       // task -> earliest next start/review (backoff)
	conflicts   map[string][]string        // session -> paths its merge conflicted in
	claimed     map[string]string          // task -> why another clone holds it
	noted       map[string]bool            // task -> Task Note written
	announced   map[string]bool            // session -> started event sent
	stopReason  string
	budgetStop  string
	interrupted bool
	mergeFails  map[string]int // task -> merges refused for other reasons than conflicts
	// waits maps a task whose passing session cannot be merged because of
	// the person's checkout to why: never an attempt, retried at every look.
	waits map[string]mergeWait
	// warned is set once Options.Warn was given a start's warning.
	warned bool
	// setupFails maps a task whose start failed for a setup reason (a
	// client that cannot start, an invalid agent, a failing worktree
	// setup), and every other target of the same agent, to why: never an
	// attempt, never exhausted; they are left alone for the rest of the
	// run. started counts the starts that got a session.
	setupFails map[string]error
	started    int
	// starting holds the tasks whose start is under way; startDone
	// receives their results, and wake is poked with each (startAll).
	starting  map[string]bool
	startDone chan startResult
	wake      *waker
	// bo holds the best-of rounds (bestof.go).
	bo roundState
	// overlaps maps a target held back at the last start by a declared
	// path overlap (overlap.go) to why, so that the log says it once.
	overlaps map[string]Overlap
	// planFails counts the planner runs on a goal that gave no plan
	// (plan.go); nil until the first.
	planFails map[string]int
	// claimRemote is where this run's starts claim their tasks ("" for
	// nowhere); spread orders its ties when it claims (fleet.go).
	claimRemote string
	spread      string
}

// mergeWait is why a passing session waits to be merged: the person's
// checkout has uncommitted changes where the merge writes, or (at level
// none) changed during the session's run and a person must accept that.
type mergeWait struct {
	why        string
	acceptMain bool
}

// checkoutWait reports whether a merge was refused because of the person's
// main checkout rather than the work, and why: a merge.CheckoutError (the
// person's uncommitted files are where the merge writes, or a merge of
// theirs is under way) and a main checkout changed during the run are
// such refusals. Neither is an attempt: nothing changed, so the merge is
// simply tried again.
func checkoutWait(err error) (mergeWait, bool) {
	var me *merge.MainCheckoutError
	if errors.As(err, &me) {
		return mergeWait{why: firstLine(err.Error()), acceptMain: true}, true
	}
	var ce *merge.CheckoutError
	if errors.As(err, &ce) {
		return mergeWait{why: firstLine(err.Error())}, true
	}
	return mergeWait{}, false
}

// Start creates the run (or takes over the run of that name when its
// supervisor died) and returns its supervisor, ready for Loop.
func Start(ctx context.Context, env *worker.Env, o Options, hooks Hooks) (*Supervisor, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	budget, _ := ParseBudget(o.Budget)
	st := env.St
	if err := st.RequireCommits(ctx); err != nil {
		return nil, err
	}
	b, err := board.Load(ctx, st, env.Cfg.Base)
	if err != nil {
		return nil, err
	}
	logDir, err := st.LocalDir("logs")
	if err != nil {
		return nil, err
	}
	repo, _ := sessions.RepoID(st)
	pid := os.Getpid()
	pstart, _ := launch.StartTime(pid)
	now := gitstore.Stamp(st).Time
	sup := Holder{Host: sessions.Host(), Repo: repo, Pid: pid, PidStart: pstart, Since: now}
	s := &Supervisor{env: env, st: st, o: o, hooks: hooks, budget: budget,
		live: map[string]sessions.Record{}, prepFails: map[string]int{}, busyFails: map[string]int{}, reviewFails: map[string]int{},
		notBefore: map[string]time.Time{}, conflicts: map[string][]string{}, claimed: map[string]string{},
		noted: map[string]bool{}, announced: map[string]bool{}, mergeFails: map[string]int{}, waits: map[string]mergeWait{},
		setupFails: map[string]error{}, starting: map[string]bool{}}
	s.claimRemote = env.ClaimRemote()
	s.spread = spreadKey(s.claimRemote, b.Here)

	old, err := Get(ctx, st, o.Name)
	exists := err == nil
	if err != nil && exitcode.Of(err) != exitcode.NotFound {
		return nil, err
	}
	if exists && (old.Ended == nil || continues(b, old, o)) {
		err = s.resume(ctx, old, sup)
	} else {
		err = s.begin(ctx, b, sup, filepath.Join(logDir, "run-"+o.Name+".log"), exists)
	}
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(s.rec.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening the run log: %w", err)
	}
	s.log = f
	if s.rec.Resumed > 0 && s.rec.Supervisor.Pid == pid {
		fmt.Fprintf(s.log, "%s resumed by pid %d (take-over %d)\n", now.Local().Format("15:04:05"), pid, s.rec.Resumed)
	}
	return s, nil
}

// resume takes over the recorded run old, unless its supervisor still
// lives, runs on another host, or another run holds its targets.
func (s *Supervisor) resume(ctx context.Context, old Record, sup Holder) error {
	o := s.o
	if old.Ended == nil && old.Alive() && old.Supervisor.Pid != sup.Pid {
		return exitcode.New(exitcode.State, &RunningError{Name: o.Name, Pid: old.Supervisor.Pid, Host: old.Supervisor.Host}, "")
	}
	if old.Supervisor.Host != sup.Host && old.Supervisor.Host != "" {
		return exitcode.New(exitcode.State, fmt.Errorf("run %s is supervised on another host (%s)", o.Name, old.Supervisor.Host), "")
	}
	if err := refuseHeld(ctx, s.st, o.Name, old.Targets, nil); err != nil {
		return err
	}
	return s.takeOver(ctx, sup)
}

// begin records a new run (or a new start of an ended one, when exists)
// over the resolved targets, logging to log, and gives way if another run
// that started at the same moment holds one of them.
func (s *Supervisor) begin(ctx context.Context, b *board.Board, sup Holder, log string, exists bool) error {
	o, st, now := s.o, s.st, sup.Since
	targets, err := resolveTargets(b, o.Targets)
	if err != nil {
		return err
	}
	if err := refuseHeld(ctx, st, o.Name, targets, nil); err != nil {
		return err
	}
	if err := checkAgents(s.env, o.Agents); err != nil {
		return err
	}
	rec := Record{V: SchemaVersion, Name: o.Name, Targets: targets, Parallel: o.Parallel, MaxLoops: o.MaxLoops,
		Review: o.Review, Merge: o.Merge, Budget: o.Budget, BestOf: o.BestOf, Agents: o.Agents, Started: now, Supervisor: sup,
		Log: log, Plan: o.Plan, ReplanAfter: o.ReplanAfter}
	if o.Plan {
		rec.Named = named(b, o.Targets)
	}
	if o.Deadline > 0 {
		d := now.Add(o.Deadline)
		rec.Deadline = &d
	}
	if exists {
		_, _, err = st.Update(ctx, Kind, o.Name, func(cur gitstore.Doc) (gitstore.Change, error) {
			r, err := decode(cur.Data)
			if err != nil {
				return gitstore.Change{}, err
			}
			if r.Ended == nil {
				return gitstore.Change{}, exitcode.New(exitcode.State, fmt.Errorf("run %s was started meanwhile", o.Name), "")
			}
			return gitstore.Change{Data: rec.encode(), Message: "run started again: " + o.Name}, nil
		})
	} else {
		_, err = st.Create(ctx, Kind, o.Name, gitstore.Change{Data: rec.encode(), Message: "run started: " + o.Name})
	}
	if err != nil {
		if errors.Is(err, gitstore.ErrConflict) {
			return exitcode.New(exitcode.State, fmt.Errorf("run %s was started by another process meanwhile", o.Name), "")
		}
		return fmt.Errorf("recording run %s: %w", o.Name, err)
	}
	s.rec = rec
	// Checked again now that this run is recorded: of two runs that
	// started at once, the later one gives way.
	if err := refuseHeld(ctx, st, o.Name, targets, &rec); err != nil {
		_, _ = MarkEnded(context.WithoutCancel(ctx), st, o.Name, End{Time: time.Now().UTC(), Result: "stopped",
			Reason: firstLine(err.Error()), Total: len(targets)})
		return err
	}
	return nil
}

// takeOver continues the run of s's name (a dead supervisor's run, or an
// interrupted one) with sup as its supervisor: same targets and settings,
// attempts counted on.
func (s *Supervisor) takeOver(ctx context.Context, sup Holder) error {
	name, pid := s.o.Name, sup.Pid
	rec, err := update(ctx, s.st, name, "run resumed", func(r *Record) error {
		if r.Ended != nil && r.Ended.Reason != Interrupted || r.Ended == nil && r.Alive() && r.Supervisor.Pid != pid {
			return exitcode.New(exitcode.State, fmt.Errorf("run %s changed while taking it over", name), "try again")
		}
		r.Ended, r.StopRequested = nil, nil
		r.Supervisor = sup
		r.Resumed++
		return nil
	})
	if err != nil {
		return err
	}
	s.rec = rec
	s.o.Parallel, s.o.MaxLoops, s.o.Review, s.o.Merge = rec.Parallel, rec.MaxLoops, rec.Review, rec.Merge
	s.o.BestOf, s.o.Agents = rec.BestOf, rec.Agents
	s.budget, _ = ParseBudget(rec.Budget)
	return nil
}

// Record returns the run document as this supervisor holds it.
func (s *Supervisor) Record() Record { return s.rec }

// resolveTargets resolves the given prefixes and adds their descendants;
// none means every task that is not done or cancelled.
func resolveTargets(b *board.Board, prefixes []string) ([]string, error) {
	seen := map[string]bool{}
	var out []string
	var add func(id string)
	add = func(id string) {
		if seen[id] {
			return
		}
		seen[id] = true
		out = append(out, id)
		for _, c := range b.Tasks.Children(id) {
			// A cancelled child is out of its goal's roll-up: no target.
			if b.Status[c].Status != status.Cancelled {
				add(c)
			}
		}
	}
	if len(prefixes) == 0 {
		for _, id := range b.Tasks.IDs {
			switch b.Status[id].Status {
			case status.Done, status.Cancelled:
				continue
			}
			add(id)
		}
		if len(out) == 0 {
			return nil, exitcode.New(exitcode.State, ErrNothingToRun, "")
		}
	}
	for _, p := range prefixes {
		id, err := b.Tasks.Resolve(p)
		if err != nil {
			return nil, err
		}
		add(id)
	}
	// A task split into children (a goal a planner split) is settled by
	// them: only leaves get workers.
	out = slices.DeleteFunc(out, func(id string) bool { return len(b.Tasks.Children(id)) > 0 })
	if len(out) == 0 {
		return nil, exitcode.New(exitcode.State, errors.New("nothing to run: the targets have no tasks without children"), "")
	}
	sort.Strings(out)
	return out, nil
}

// taskState is what the loop knows of one target at one look.
type taskState struct {
	id       string
	task     tasks.Task
	res      status.Result
	attempts []sessions.Record // worker attempts in this run (start failures excluded)
	starts   int               // start failures since the last real attempt
	lastFail *sessions.Record  // the latest start failure
	latest   *sessions.Record  // the latest attempt
	// winner is the session of a best-of round chosen to be merged ("":
	// the latest attempt is).
	winner string
	// stopped is the latest session when it was stopped (IsStopped) after
	// the latest attempt: not an attempt.
	stopped *sessions.Record
}

// IsStartFailure reports whether a session never got its worker started:
// not an attempt. Either its start failed and said so (a client that is
// not installed, a supervisor that could not start: exit 127 with no
// worker), or it is lost before any supervisor sealed it (the process that
// prepared it died before handing it on, as a run's supervisor killed in
// the middle of a start does), judged at now from here.
func IsStartFailure(r sessions.Record, here board.Here, now time.Time) bool {
	if r.Session.WorkerPid != 0 {
		return false
	}
	if r.Outcome != nil {
		return r.Outcome.ExitCode == 127
	}
	if r.Session.Seal != nil || !IsWorkerSession(r.Session) {
		return false
	}
	_, lost := board.Liveness(r, here, now)
	return lost
}

// startFailedAt is when a start failure happened, for the backoff: when
// its outcome was recorded, or, for a session lost before it was sealed,
// when it was prepared.
func startFailedAt(r sessions.Record) time.Time {
	if r.Outcome != nil {
		return r.Outcome.Finished
	}
	return r.Session.Started
}

// startFailure is a start failure's reason.
func startFailure(r sessions.Record) string {
	if r.Outcome != nil {
		return r.Outcome.Reason
	}
	return "session " + short(r.Session.ID) + " was lost before its worker started"
}

func (s *Supervisor) stateOf(b *board.Board, id string) taskState {
	ts := taskState{id: id, task: b.Tasks.Tasks[id].Task, res: b.Status[id]}
	cutoff := s.rec.Started
	if r := ts.task.Reopened; r != nil && r.Time.After(cutoff) {
		cutoff = r.Time
	}
	now := time.Now()
	for _, r := range b.SessionsOf(id) {
		if r.Session.Started.Before(cutoff) {
			continue
		}
		if !IsWorkerSession(r.Session) {
			continue
		}
		r := r
		if IsStartFailure(r, b.Here, now) {
			ts.starts++
			ts.lastFail = &r
			continue
		}
		if IsStopped(r) || r.Outcome.RateLimited() {
			// Stopped, or refused by a rate limit: not an attempt.
			ts.stopped = &r
			continue
		}
		ts.starts, ts.lastFail, ts.stopped = 0, nil, nil
		ts.attempts = append(ts.attempts, r)
		ts.latest = &ts.attempts[len(ts.attempts)-1]
	}
	return ts
}

// Loop runs the run to its end and returns its summary. A cancelled ctx
// (Ctrl-C) stops the workers the run started and records why.
func (s *Supervisor) Loop(ctx context.Context) (Summary, error) {
	defer s.log.Close()
	w := newWaker()
	defer w.close()
	s.wake = w
	s.startDone = make(chan startResult, max(s.rec.Parallel, 1)+1)
	var gc gcTuner
	defer gc.restore()
	var b *board.Board
	for {
		// An exit until now is seen by this look.
		w.takeExited()
		// The starts that ended are taken before the board is read, so
		// that the board shows every session they recorded.
		s.takeStarts(context.WithoutCancel(ctx), b)
		var err error
		b, err = s.load(context.WithoutCancel(ctx))
		if err != nil {
			return Summary{}, err
		}
		gc.fit(b)
		if rec, err := Get(context.WithoutCancel(ctx), s.st, s.rec.Name); err == nil {
			if rec.StopRequested != nil && s.stopReason == "" {
				s.stopReason = "stopped by " + rec.StopRequested.Author
				if rec.StopRequested.Reason != "" {
					s.stopReason += ": " + rec.StopRequested.Reason
				}
			}
			if rec.Supervisor.Pid != s.rec.Supervisor.Pid || rec.Supervisor.PidStart != s.rec.Supervisor.PidStart {
				return Summary{}, exitcode.New(exitcode.State, fmt.Errorf("run %s was taken over by pid %d", s.rec.Name, rec.Supervisor.Pid), "")
			}
		}
		if ctx.Err() != nil && s.stopReason == "" {
			s.noteInterrupt(context.WithoutCancel(ctx))
		}
		// Children that a plan or replan created (by this supervisor or
		// one before it) are targets of this run.
		s.growTargets(context.WithoutCancel(ctx), b)
		if s.rec.Deadline != nil && time.Now().After(*s.rec.Deadline) && s.stopReason == "" {
			s.stopReason = "deadline reached"
		}
		next, _, done := s.step(ctx, b)
		if done {
			sum, err := s.finish(context.WithoutCancel(ctx))
			if err == nil {
				// Every start failed for one setup reason: say it, with
				// its hint and exit code.
				err = s.setupStop()
			}
			return sum, err
		}
		// Sleep until a worker's supervisor exits (those started by this
		// look included), a backoff ends, or the poll passes (sessions
		// judged elsewhere, a run stop).
		s.watchLive(w, b)
		cancelled := ctx.Done()
		if s.stopReason != "" {
			cancelled = nil // stopping already: wait for the workers to end
		}
		s.sleep(context.WithoutCancel(ctx), w, b, nextWake(next, s.o.Poll), cancelled)
	}
}

// sleep waits for the next look: until a watched supervisor exits, a
// backoff ends, the poll (d) passes or cancelled is closed. A start that
// ends meanwhile and got its session started changes nothing a look acts
// on (the session takes the slot its start held), so it is taken here and
// its supervisor watched, without reading the board again; a start that
// failed, an exit, and any start while the run stops (the look after it
// stops the new session) end the sleep.
func (s *Supervisor) sleep(ctx context.Context, w *waker, b *board.Board, d time.Duration, cancelled <-chan struct{}) {
	until := time.Now().Add(d)
	if dl := s.rec.Deadline; dl != nil && dl.Before(until) {
		until = *dl
	}
	for w.sleep(time.Until(until), cancelled) && !w.takeExited() && s.stopReason == "" {
		if !s.takeStarts(ctx, b) {
			return
		}
		s.watchLive(w, b)
	}
}

// watchLive has w watch the detached supervisors of the sessions running
// on this host (s.live: the ones seen running and the ones this look
// started).
func (s *Supervisor) watchLive(w *waker, b *board.Board) {
	for _, r := range s.live {
		x := r.Session
		if !b.Here.Judges(x) {
			continue
		}
		pid, start := x.Pid, x.PidStart
		if x.Mode == sessions.ModeDetach && x.Seal == nil && !launch.Alive(pid, start) {
			// Until its supervisor seals it, a session adopted after a
			// take-over may name the process that prepared it, gone now:
			// watch the supervisor started for it (as board.Liveness finds
			// it), else a gone pid would wake the loop at every look.
			if p, ok := launch.WithLastArg(x.ID); ok {
				pid, start = p.Pid, p.Start
			}
		}
		w.watch(pid, start)
	}
}

// noteInterrupt records why the run's context ended: a stop when run stop
// recorded one (it records it before its SIGTERM arrives), else an
// interruption (Ctrl-C, SIGTERM, a hang-up), which the next run of the
// same name continues.
func (s *Supervisor) noteInterrupt(ctx context.Context) {
	if rec, err := Get(ctx, s.st, s.rec.Name); err == nil && rec.StopRequested != nil {
		s.stopReason = "stopped by " + rec.StopRequested.Author
		if rec.StopRequested.Reason != "" {
			s.stopReason += ": " + rec.StopRequested.Reason
		}
		return
	}
	s.stopReason, s.interrupted = Interrupted, true
}

// load reads the board. A session read without an outcome whose supervisor
// exited before its liveness was checked looks lost although its outcome
// was written in between: when a target has a lost session, the board is
// read once more, after the exit, so only truly lost sessions stay lost.
func (s *Supervisor) load(ctx context.Context) (*board.Board, error) {
	for try := 0; ; try++ {
		b, err := board.Load(ctx, s.st, s.env.Cfg.Base)
		if err != nil || try == 3 || !s.suspectLost(b) {
			return b, err
		}
		if try > 0 {
			// Seen rarely under load: the outcome becomes visible a
			// moment after the supervisor's exit.
			time.Sleep(250 * time.Millisecond)
		}
	}
}

// suspectLost reports whether a session that was live at the last look
// now looks lost.
func (s *Supervisor) suspectLost(b *board.Board) bool {
	for _, id := range s.rec.Targets {
		for _, a := range b.Facts.Attempts[id] {
			if _, seen := s.live[a.Session]; a.Lost && seen {
				return true
			}
		}
	}
	return false
}

func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

// order lists the targets by priority (highest first), then creation; a
// run that claims on a remote orders the targets of one priority by its
// own spread instead (fleet.go).
func (s *Supervisor) order(b *board.Board) []string {
	rank := func(p string) int { return slices.Index(tasks.Priorities, p) }
	ids := slices.Clone(s.rec.Targets)
	ids = slices.DeleteFunc(ids, func(id string) bool { _, ok := b.Tasks.Tasks[id]; return !ok })
	var spread map[string]uint64
	if s.spread != "" {
		spread = make(map[string]uint64, len(ids))
		for _, id := range ids {
			spread[id] = spreadRank(s.spread, id)
		}
	}
	sort.SliceStable(ids, func(i, j int) bool {
		a, c := b.Tasks.Tasks[ids[i]].Task, b.Tasks.Tasks[ids[j]].Task
		if rank(a.Priority) != rank(c.Priority) {
			return rank(a.Priority) > rank(c.Priority)
		}
		if spread != nil && spread[ids[i]] != spread[ids[j]] {
			return spread[ids[i]] < spread[ids[j]]
		}
		return a.Created.Time.Before(c.Created.Time)
	})
	return ids
}

type startReq struct {
	ts taskState
	fb *Feedback
	// k is the attempts to start at once (a best-of round), 1 or less: one.
	k int
	// loop is the number of the attempt (or round) being started.
	loop int
	// unseen says a listing of the claim remote just now held no claim
	// on the task (fleet.go).
	unseen bool
	// waitClaim says a claim the remote does not answer makes the start
	// wait for a later look instead of running without a claim
	// (worker.RunOptions.ClaimRequired): set until the task's claims went
	// unanswered maxClaimBusy times in a row.
	waitClaim bool
}

// startResult is what one start gave, handed to the loop's goroutine.
type startResult struct {
	req  startReq
	rec  sessions.Record
	ev   Event
	err  error // from the preparation: no session was recorded
	ok   bool
	note string // a warning of the start (Prepared.ClaimNote)
	// round is the task's best-of record after a round was recorded;
	// siblings are the results of the round's other attempts.
	round    *bestof.Record
	siblings []startResult
}

// startAll starts the sessions, each in a goroutine of its own (through
// the same code as `worker run --exec --detach`, claims included), and
// returns at once: the loop goes on watching the workers already running
// while these start, and each start's end wakes it (takeStarts). A task
// with a start under way is settled until its result is taken.
func (s *Supervisor) startAll(ctx context.Context, b *board.Board, reqs []startReq) {
	// A start runs to its end even when the run is interrupted meanwhile:
	// cut short, it would fail for the interruption's sake ("context
	// canceled", a base that "is not a commit") and count against the task.
	// The next look stops what started.
	sctx := context.WithoutCancel(ctx)
	for _, r := range reqs {
		s.starting[r.ts.id] = true
		s.rounds(ctx, r.ts.id) // read here: the goroutine does not touch the cache
		s.bo.k[r.ts.id] = r.k
		go func() {
			res := startResult{req: r}
			if r.k > 1 {
				res = s.startRound(sctx, r)
			} else {
				res.rec, res.ev, res.ok, res.err = s.start(sctx, r, &res.note)
			}
			s.startDone <- res
			s.wake.poke()
		}()
	}
}

// takeStarts applies the results of the starts that ended since the last
// look, in the loop's goroutine. b is the board of the look that started
// them (prepFailed reads nothing else from it). It reports whether every
// start it took got its session started (a best-of round never counts).
func (s *Supervisor) takeStarts(ctx context.Context, b *board.Board) bool {
	all := true
	for {
		var r startResult
		select {
		case r = <-s.startDone:
		default:
			return all
		}
		// A best-of round held K slots while it started, which its
		// sessions may not all fill: a look follows it.
		all = all && r.ok && r.req.k <= 1
		delete(s.starting, r.req.ts.id)
		delete(s.bo.k, r.req.ts.id)
		if r.round != nil {
			s.bo.records[r.req.ts.id] = *r.round
		}
		for _, sib := range r.siblings {
			if sib.ok {
				s.started++
				s.live[sib.rec.Session.ID] = sib.rec
				s.emit(sib.ev)
			}
		}
		if r.note != "" && !s.warned {
			s.warned = true
			if s.o.Warn != nil {
				s.o.Warn(r.note)
			}
		}
		switch {
		case r.err != nil:
			s.prepFailed(ctx, b, r.req.ts, r.err)
		case r.ok:
			s.started++
			delete(s.prepFails, r.req.ts.id)
			delete(s.busyFails, r.req.ts.id)
			delete(s.setupFails, r.req.ts.id) // it started after all
			s.live[r.rec.Session.ID] = r.rec
			s.emit(r.ev)
		}
	}
}

// start prepares a session and hands it to a detached supervisor. It
// changes nothing of the loop's state (it runs next to other starts).
func (s *Supervisor) start(ctx context.Context, r startReq, note *string) (sessions.Record, Event, bool, error) {
	id := r.ts.id
	o := worker.RunOptions{Task: id, Exec: true, Detach: true, Replace: true, ClaimUnseen: r.unseen, ClaimRequired: r.waitClaim}
	if r.fb != nil {
		o.Feedback = r.fb.Text()
	}
	p, err := s.env.Prepare(ctx, o)
	if err != nil {
		return sessions.Record{}, Event{}, false, err
	}
	return s.launch(ctx, r, p, note)
}

// launch hands a prepared session to a detached supervisor.
func (s *Supervisor) launch(ctx context.Context, r startReq, p *worker.Prepared, note *string) (sessions.Record, Event, bool, error) {
	id := r.ts.id
	attempt := r.loop
	ev := Event{Event: EvStarted, Task: id, Title: r.ts.task.Title, Session: p.Rec.Session.ID, Attempt: attempt, MaxLoops: s.maxLoops(r.ts.task)}
	if r.fb != nil && attempt > 1 {
		ev.Event = EvRetried
		ev.Reason = r.fb.StatusReason
	}
	if p.ClaimNote != "" {
		fmt.Fprintf(s.log, "%s task %s: %s\n", time.Now().Format("15:04:05"), short(id), p.ClaimNote)
		*note = p.ClaimNote
	}
	pid, err := s.env.StartDetached(ctx, p, s.o.Supervisor(p.Rec.Session.ID))
	if err != nil {
		// The session has a failed outcome (exit 127): a start failure,
		// retried with backoff.
		fmt.Fprintf(s.log, "%s task %s: %v\n", time.Now().Format("15:04:05"), short(id), err)
		return sessions.Record{}, Event{}, false, nil
	}
	// The loop watches this supervisor from now on: its exit wakes the
	// loop (watchLive), with no look at the refs in between.
	rec := p.Rec
	rec.Session.Pid = pid
	rec.Session.PidStart, _ = launch.StartTime(pid)
	return rec, ev, true, nil
}

// prepFailed handles a preparation that recorded no session.
func (s *Supervisor) prepFailed(ctx context.Context, b *board.Board, ts taskState, err error) {
	id := ts.id
	fmt.Fprintf(s.log, "%s task %s: %v\n", time.Now().Format("15:04:05"), short(id), err)
	if errors.Is(err, worker.ErrClaimed) {
		s.claimed[id] = firstLine(err.Error())
		return
	}
	if errors.Is(err, worker.ErrClaimBusy) {
		s.claimBusy(ts)
		return
	}
	var re *worker.RefusedError
	if errors.As(err, &re) && (errors.Is(err, worker.ErrRunning) || errors.Is(err, worker.ErrStarting)) {
		return // another process is on it: look again later
	}
	if IsSetupFailure(err) {
		s.setAside(b, id, err)
		return
	}
	s.prepFails[id]++
	if s.prepFails[id] >= maxInfraRetries {
		s.exhaust(context.WithoutCancel(ctx), b, ts, fmt.Sprintf("could not prepare a worker %d times: %s", s.prepFails[id], firstLine(err.Error())))
		return
	}
	s.notBefore[id] = time.Now().Add(s.o.Backoff << (s.prepFails[id] - 1))
}

// IsSetupFailure reports whether a start failed for a setup reason rather
// than for anything of the task: a client that cannot start, an agent or
// configuration that does not validate, a worktree setup that failed.
func IsSetupFailure(err error) bool {
	if errors.Is(err, worker.ErrSetup) {
		return true
	}
	switch exitcode.Of(err) {
	case exitcode.Config, exitcode.NotFound, exitcode.Usage:
		return true
	}
	return false
}

// setupKey is what makes two setup failures the same reason: the command
// and exit code of a failed worktree setup, else the message's first line.
func setupKey(err error) string {
	var se *worker.SetupError
	if errors.As(err, &se) {
		return fmt.Sprintf("setup %q exit %d", se.Command, se.Exit)
	}
	return firstLine(err.Error())
}

// setAside leaves a task whose start failed for a setup reason alone for
// the rest of the run (not an attempt, stored nowhere), with every other
// target of the same agent that is not running: their starts would fail
// alike, so the run does not try them one by one.
func (s *Supervisor) setAside(b *board.Board, id string, err error) {
	s.setupFails[id] = err
	agent := s.agentOf(b, id)
	if agent == "" {
		return
	}
	running := map[string]bool{}
	for _, r := range s.live {
		running[r.Session.Task] = true
	}
	for _, other := range s.rec.Targets {
		if _, done := s.setupFails[other]; done || running[other] || b.Status[other].Status == status.InProgress {
			continue
		}
		if s.agentOf(b, other) == agent {
			s.setupFails[other] = err
		}
	}
}

// agentOf names the agent a start of the task would use, "" when none
// resolves.
func (s *Supervisor) agentOf(b *board.Board, id string) string {
	t, ok := b.Tasks.Tasks[id]
	if !ok {
		return ""
	}
	a, err := s.env.ResolveAgent("", t.Task)
	if err != nil {
		return ""
	}
	return a.Name
}

// setupStop returns why the run could start nothing, nil when it could:
// no start of it got a session and every one failed for the same setup
// reason. It wraps that reason, with its hint and exit code.
func (s *Supervisor) setupStop() error {
	if s.started > 0 || len(s.setupFails) == 0 {
		return nil
	}
	key := ""
	var first error
	for _, err := range s.setupFails {
		k := setupKey(err)
		if key != "" && k != key {
			return nil
		}
		key, first = k, err
	}
	return fmt.Errorf("run stopped: every start failed: %w", first)
}

// review runs the reviewer on the task's latest session, which passed its
// facts; the verdict is recorded on the session by the hook. It reports
// whether a verdict was recorded. Infrastructure errors are retried with
// backoff, at most maxInfraRetries times; then the task is exhausted.
func (s *Supervisor) review(ctx context.Context, b *board.Board, ts taskState) bool {
	rec := *ts.latest
	v, err := s.hooks.Review(ctx, rec)
	if err != nil && ctx.Err() != nil {
		// Interrupted: not the reviewer's failure; reviewed again later.
		fmt.Fprintf(s.log, "%s task %s: review of session %s interrupted\n", time.Now().Format("15:04:05"), short(ts.id), short(rec.Session.ID))
		return false
	}
	if err != nil {
		sid := rec.Session.ID
		s.reviewFails[sid]++
		fmt.Fprintf(s.log, "%s task %s: review of session %s failed: %v\n", time.Now().Format("15:04:05"), short(ts.id), short(sid), err)
		if s.hooks.Retryable != nil && !s.hooks.Retryable(err) || s.reviewFails[sid] >= maxInfraRetries {
			s.exhaust(context.WithoutCancel(ctx), b, ts, fmt.Sprintf("the review of session %s could not run (%d tries): %s", short(sid), s.reviewFails[sid], firstLine(err.Error())))
			return false
		}
		s.notBefore[ts.id] = time.Now().Add(s.o.Backoff << (s.reviewFails[sid] - 1))
		return false
	}
	s.emit(Event{Event: EvReviewed, Task: ts.id, Title: ts.task.Title, Session: rec.Session.ID, Verdict: v.Verdict,
		Reason: strings.Join(v.Reasons, "; "), Running: len(s.live)})
	return true
}

// replan hands an NG'd task back to the planner when one is configured
// (seed 003: the instructions may be at fault): it may rewrite the task or
// split it; children it creates join the run's targets. Once per reviewed
// session; a planner that fails leaves the task as it was. It reports
// whether the task was split.
func (s *Supervisor) replan(ctx context.Context, b *board.Board, ts taskState, l *sessions.Record, after string, reasons []string) bool {
	if s.hooks.Replan == nil || s.noted["replan:"+l.Session.ID] {
		return false
	}
	s.noted["replan:"+l.Session.ID] = true
	if replannedAbout(b, ts.id, l.Session.ID) {
		return false // a planner answered it already (a supervisor before a restart)
	}
	children, err := s.hooks.Replan(ctx, ts.id, l.Session.ID, reasons)
	if errors.Is(err, ErrNoPlanner) {
		return false
	}
	if err != nil {
		fmt.Fprintf(s.log, "%s task %s: replan: %v\n", time.Now().Format("15:04:05"), short(ts.id), err)
		return false
	}
	fmt.Fprintf(s.log, "%s task %s: replanned after %s (%d new child task(s))\n", time.Now().Format("15:04:05"), short(ts.id), after, len(children))
	if len(children) == 0 {
		return false
	}
	rec, err := update(ctx, s.st, s.rec.Name, "run targets grew by a replan", func(r *Record) error {
		for _, c := range children {
			if !slices.Contains(r.Targets, c) {
				r.Targets = append(r.Targets, c)
			}
		}
		sort.Strings(r.Targets)
		return nil
	})
	if err == nil {
		s.rec.Targets = rec.Targets
	}
	return true
}

// merge lands the task's latest session. It returns the conflicting paths
// on a conflict (nil on other refusals).
func (s *Supervisor) merge(ctx context.Context, b *board.Board, ts taskState) (conflicts []string, merged bool) {
	// A skipped DoD here means the task and its agent configure none: the
	// run never skips one itself.
	res, err := merge.Task(ctx, s.st, s.env.Cfg.Base, ts.id, merge.Options{AllowSkipped: true, Session: ts.winner})
	if err != nil {
		var ce *merge.ConflictError
		if errors.As(err, &ce) {
			s.conflicts[ts.latest.Session.ID] = ce.Paths
			fmt.Fprintf(s.log, "%s task %s: %v\n", time.Now().Format("15:04:05"), short(ts.id), err)
			return ce.Paths, false
		}
		if why, ok := checkoutWait(err); ok {
			// The person's checkout, not the work: wait, never an attempt.
			if s.waits[ts.id] != why {
				fmt.Fprintf(s.log, "%s task %s: passed, waiting to be merged: %s\n", time.Now().Format("15:04:05"), short(ts.id), why.why)
			}
			s.waits[ts.id] = why
			return nil, false
		}
		delete(s.waits, ts.id)
		fmt.Fprintf(s.log, "%s task %s: not merged: %v\n", time.Now().Format("15:04:05"), short(ts.id), err)
		s.mergeFails[ts.id]++
		if s.mergeFails[ts.id] >= maxInfraRetries {
			s.exhaust(ctx, b, ts, "could not merge: "+firstLine(err.Error()))
			return nil, false
		}
		s.notBefore[ts.id] = time.Now().Add(s.o.Backoff << (s.mergeFails[ts.id] - 1))
		return nil, false
	}
	delete(s.waits, ts.id)
	for _, w := range res.Finished {
		fmt.Fprintf(s.log, "%s task %s: finished updating the checkout in %s, which an interrupted merge had left behind\n", time.Now().Format("15:04:05"), short(ts.id), w)
	}
	s.emit(Event{Event: EvMerged, Task: ts.id, Title: ts.task.Title, Session: res.Session, Commit: res.Commit, Status: string(status.Done), Running: len(s.live)})
	// The worktree is no longer needed, its branch is merged, and the
	// attempts it superseded are no longer needed either.
	s.cleanUp(ctx, b, ts.id)
	return nil, true
}

// maxLoops is the most attempts t gets in this run: its own max_loops,
// else the run's --max-loops.
func (s *Supervisor) maxLoops(t tasks.Task) int {
	if t.MaxLoops > 0 {
		return t.MaxLoops
	}
	return s.rec.MaxLoops
}

// exhaust records the exhausted fact and tells.
func (s *Supervisor) exhaust(ctx context.Context, b *board.Board, ts taskState, why string) {
	if _, _, err := tasks.Exhaust(ctx, s.st, ts.id, why); err != nil {
		fmt.Fprintf(s.log, "%s task %s: recording exhausted: %v\n", time.Now().Format("15:04:05"), short(ts.id), err)
		return
	}
	s.emit(Event{Event: EvExhausted, Task: ts.id, Title: ts.task.Title, Attempt: s.loops(ctx, ts), MaxLoops: s.maxLoops(ts.task),
		Status: string(status.Failed), Reason: why, Running: len(s.live)})
	s.writeNote(ctx, ts.id, why)
}

func (s *Supervisor) writeNote(ctx context.Context, id, exhausted string) {
	if s.hooks.Note == nil || s.noted[id] {
		return
	}
	s.noted[id] = true
	if err := s.hooks.Note(ctx, id, exhausted); err != nil {
		fmt.Fprintf(s.log, "%s task %s: writing the Task Note: %v\n", time.Now().Format("15:04:05"), short(id), err)
	}
}

// stopAll sends SIGTERM to the supervisors of the running sessions that
// this clone judges (as worker stop does); their outcomes record the stop.
func (s *Supervisor) stopAll(ctx context.Context, b *board.Board, running []sessions.Record) {
	for _, r := range running {
		sess := r.Session
		if sess.Mode == sessions.ModeManual || !b.Here.Judges(sess) || sess.Pid <= 0 {
			continue
		}
		if s.announced["stop:"+sess.ID] || s.starting[sess.Task] {
			continue // stopped already, or still starting: the look after its start stops it
		}
		s.announced["stop:"+sess.ID] = true
		fmt.Fprintf(s.log, "%s stopping session %s of task %s (%s)\n", time.Now().Format("15:04:05"), short(sess.ID), short(sess.Task), s.stopReason)
		_ = syscall.Kill(sess.Pid, syscall.SIGTERM)
	}
}

// finish records how the run ended and returns the summary.
func (s *Supervisor) finish(ctx context.Context) (Summary, error) {
	b, err := s.load(ctx)
	if err != nil {
		return Summary{}, err
	}
	sum := Summary{Run: s.rec.Name, Usage: UsageOf(b, s.rec)}
	approved := 0 // waiting tasks a reviewer approved, when the run reviews
	for _, id := range s.order(b) {
		if len(b.Tasks.Children(id)) > 0 {
			continue // split by a replan: its children count instead
		}
		t, ok := s.taskSummary(ctx, b, id, &sum)
		if ok {
			approved++
		}
		sum.Tasks = append(sum.Tasks, t)
	}
	sum.Result, sum.Reason = s.result(sum, approved)
	if _, err := MarkEnded(ctx, s.st, s.rec.Name, End{Time: time.Now().UTC(), Result: sum.Result, Reason: sum.Reason,
		Done: sum.Done, Total: sum.Total}); err != nil {
		return sum, err
	}
	s.emit(Event{Event: EvFinished, Summary: &sum})
	return sum, nil
}

// taskSummary is one target's line of the summary, counted in sum. It
// reports whether the target waits to be merged with a reviewer's OK (or
// without one, when the run does not review).
func (s *Supervisor) taskSummary(ctx context.Context, b *board.Board, id string, sum *Summary) (TaskSummary, bool) {
	sum.Total++
	ts := s.stateOf(b, id)
	res := b.Status[id]
	t := TaskSummary{ID: id, Title: ts.task.Title, Status: string(res.Status), Reason: res.Reason, Attempts: s.loops(ctx, ts),
		MaxLoops: s.maxLoops(ts.task)}
	sum.Attempts += len(ts.attempts)
	if approved, ok := s.winnerWaits(ctx, b, ts, &t); ok {
		sum.Waiting++
		return t, approved
	}
	switch {
	case res.Status == status.Done:
		sum.Done++
	case res.Status == status.Cancelled:
		sum.Cancelled++
	case ts.interrupted():
		sum.Interrupted++
		t.Status, t.Reason = Interrupted, "its session was stopped before it finished; not an attempt"
	case res.Status == status.Review:
		sum.Waiting++
		t.Reason = "passed, waiting to be merged"
		if w, ok := s.waits[id]; ok {
			t.Reason += ": " + w.why
			t.AcceptMainChanges = w.acceptMain
		}
		rec, ok := b.Latest(id)
		return t, !s.rec.Review || ok && rec.Review != nil && rec.Review.OK()
	case res.Status == status.Open && len(ts.attempts) == 0:
		sum.NotStarted++
		if why, ok := s.claimed[id]; ok {
			t.Reason = why
		} else if c := b.CancelledBlockers(id); len(c) > 0 {
			t.BlockedByCancelled = c
			t.Reason = "never started: blocked by cancelled " + strings.Join(shortAll(c), ", ") + ", which will never be done"
		} else if err, ok := s.setupFails[id]; ok {
			t.Reason = "cannot start: " + firstLine(err.Error()) + "; not an attempt"
		} else if res.Blocked {
			t.Reason = "never started: blocked by " + strings.Join(shortAll(res.Waiting), ", ")
		}
	default:
		sum.Failed++
	}
	return t, false
}

// result is how the run ended and why: done when every target is done;
// passed when the run does not merge and every target passed (approved,
// when it reviews) and waits to be merged; stopped after a stop or an
// interruption; else failed.
func (s *Supervisor) result(sum Summary, approved int) (string, string) {
	reason := s.stopReason
	if reason == "" && sum.Done < sum.Total {
		reason = s.budgetStop
	}
	waiting := ""
	if sum.Waiting > 0 {
		waiting = fmt.Sprintf("%d passed, waiting to be merged", sum.Waiting)
		if !s.rec.Merge {
			waiting += " (this run was not asked to merge)"
		} else if n := len(s.waits); n > 0 {
			waiting += fmt.Sprintf(" (%d because of the main checkout)", n)
		}
	}
	switch {
	case sum.Done == sum.Total:
		return "done", reason
	case s.stopReason != "" && !strings.HasPrefix(s.stopReason, "budget"):
		return "stopped", reason
	case reason == "" && !s.rec.Merge && sum.Waiting > 0 && sum.Done+sum.Waiting == sum.Total && approved == sum.Waiting:
		return "passed", waiting
	}
	if reason == "" {
		reason = waiting
	}
	return "failed", reason
}

// Interrupted reports whether the run ended because its context was
// cancelled (Ctrl-C).
func (s *Supervisor) Interrupted() bool { return s.interrupted }

func shortAll(ids []string) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = short(id)
	}
	return out
}

func (s *Supervisor) emit(e Event) {
	e.V = output.SchemaVersion
	e.Run = s.rec.Name
	if e.Time.IsZero() {
		e.Time = time.Now().UTC()
	}
	if e.Event != EvFinished && e.Running == 0 {
		e.Running = len(s.live)
	}
	fmt.Fprintln(s.log, e.Line())
	if s.o.Events != nil {
		s.o.Events(e)
	}
}
