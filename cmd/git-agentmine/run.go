package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/git-agentmine/git-agentmine/agents"
	"github.com/git-agentmine/git-agentmine/board"
	"github.com/git-agentmine/git-agentmine/cmd/internal/serverargs"
	"github.com/git-agentmine/git-agentmine/contract"
	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/launch"
	"github.com/git-agentmine/git-agentmine/output"
	"github.com/git-agentmine/git-agentmine/pipeline"
	"github.com/git-agentmine/git-agentmine/roles"
	"github.com/git-agentmine/git-agentmine/status"
	"github.com/git-agentmine/git-agentmine/worker"
)

// RunCmd is `run`: the supervisor loop, and its status and stop.
type RunCmd struct {
	Start   RunStartCmd   `cmd:"" default:"withargs" help:"Run ready tasks in parallel until every target is done, failed or exhausted (the default subcommand: git agentmine run [<task> ...]; see also run status, run stop)."`
	Status  RunStatusCmd  `cmd:"" help:"Show runs: progress, attempts, running workers and the log."`
	Stop    RunStopCmd    `cmd:"" help:"Stop a run and the workers it started, recording why."`
	Replan  RunReplanCmd  `cmd:"" hidden:"" help:"Give a task reviewed NG back to the planner (the run supervisor's helper)."`
	Compare RunCompareCmd `cmd:"" hidden:"" help:"Have the reviewer choose among the attempts of a best-of round (the run supervisor's helper)."`
}

// RunReplanCmd is the hidden `run replan TASK --reason R... [--about
// SESSION]`, or `run replan TASK --plan` for a goal's first plan: the run
// supervisor runs planners in a process of their own (see
// pipeline.DefaultHooks). It prints the ids of the children created.
type RunReplanCmd struct {
	Task    string   `arg:""`
	Reasons []string `name:"reason" sep:"none"`
	About   string   `name:"about"`
	Plan    bool     `name:"plan"`
}

// Run replans the task (plans it, with --plan).
func (c *RunReplanCmd) Run(a *App) error {
	env, err := workerEnv(a, nil)
	if err != nil {
		return err
	}
	var p roles.Planned
	if c.Plan {
		p, err = roles.Plan(a.Ctx, env, c.Task, roles.PlanOptions{})
	} else {
		p, err = roles.Replan(a.Ctx, env, c.Task, c.Reasons, roles.PlanOptions{About: c.About})
	}
	if err != nil {
		return err
	}
	for _, t := range p.Created {
		a.P.Printf("%s\n", t.ID)
	}
	return nil
}

// RunCompareCmd is the hidden `run compare N:SESSION...`: the run
// supervisor has the reviewer choose among the attempts of a best-of round
// in a process of its own (see pipeline.DefaultHooks). It prints the
// answer as one JSON object.
type RunCompareCmd struct {
	Attempts []string `arg:"" name:"attempt" help:"N:SESSION, the attempt's number in its round and its session."`
}

// Run compares the attempts.
func (c *RunCompareCmd) Run(a *App) error {
	env, err := workerEnv(a, nil)
	if err != nil {
		return err
	}
	var cands []roles.Candidate
	for _, x := range c.Attempts {
		n, sid, ok := strings.Cut(x, ":")
		num, err := strconv.Atoi(n)
		if !ok || err != nil || num < 1 {
			return exitcode.New(exitcode.Usage, fmt.Errorf("invalid attempt %q: want N:SESSION", x), "")
		}
		cands = append(cands, roles.Candidate{Number: num, Session: sid})
	}
	r, err := roles.Compare(a.Ctx, env, cands, roles.ReviewOptions{})
	if err != nil {
		return err
	}
	return a.P.PrintJSON(pipeline.Comparison{Choice: r.Choice.Choice, Session: r.Session, Reasons: r.Choice.Reasons,
		FollowUp: r.Choice.FollowUp, Agent: r.Agent})
}

// RunStartCmd is `run [TASK...]`. Deadline, Budget and Name are pointers:
// given empty or zero, they are refused rather than read as not given.
type RunStartCmd struct {
	Tasks       []string       `arg:"" optional:"" name:"task" help:"Target tasks (with their descendants); default: every task not done or cancelled."`
	Parallel    *int           `short:"j" placeholder:"N" help:"Workers running at once (default: the max_workers setting)."`
	MaxLoops    *int           `name:"max-loops" placeholder:"N" help:"Attempts per task before it is exhausted (default 3)."`
	Plan        bool           `help:"Have the planner split each named task that has no children before any worker runs (tasks of type epic, and tasks with acceptance criteria and no parent, are planned without it)."`
	ReplanAfter *int           `name:"replan-after" placeholder:"N" help:"Ask the planner before the next attempt after N failed attempts of a task in a row; 0 never (default: the replan_after setting, 2)."`
	Review      bool           `help:"Have the reviewer agent judge every session that passed DoD and scope."`
	Merge       bool           `help:"Merge passing sessions into the base, one at a time."`
	Deadline    *time.Duration `placeholder:"DURATION" help:"Stop the run and its workers after this long: 90, 90s, 30m."`
	Detach      bool           `short:"D" help:"Run the supervisor in the background and return at once."`
	Budget      *string        `placeholder:"N" help:"Start no new attempt once the run's sessions used N tokens (or $N of cost)."`
	Name        *string        `placeholder:"NAME" help:"Name of the run (default \"default\"); a killed run is resumed by starting it again."`
	BestOf      int            `name:"best-of" placeholder:"K" help:"Start K attempts of each task at once; merge one that passed (the reviewer's choice with --review, else the smallest diff)."`
	Agents      []string       `name:"agents" placeholder:"A,B,..." help:"Agents of the K attempts of a best-of round, in turn (default: each task's agent); alone, sets --best-of to their number."`
}

// flags checks the flags that need no repository and returns the options
// they give.
func (c *RunStartCmd) flags() (pipeline.Options, error) {
	o := pipeline.Options{Targets: c.Tasks, MaxLoops: pipeline.DefaultMaxLoops, Review: c.Review, Merge: c.Merge, Plan: c.Plan}
	if c.Name != nil {
		if err := pipeline.ValidateName(*c.Name); err != nil {
			return o, err
		}
		o.Name = *c.Name
	}
	if c.Deadline != nil {
		if *c.Deadline <= 0 {
			return o, exitcode.New(exitcode.Usage, fmt.Errorf("invalid --deadline %s: want a positive duration", *c.Deadline), "leave --deadline out for a run without one")
		}
		o.Deadline = *c.Deadline
	}
	if c.Budget != nil {
		if strings.TrimSpace(*c.Budget) == "" {
			return o, exitcode.New(exitcode.Usage, fmt.Errorf("invalid --budget %q: want a token count or $N, more than 0", *c.Budget), "leave --budget out for a run without one")
		}
		if _, err := pipeline.ParseBudget(*c.Budget); err != nil {
			return o, err
		}
		o.Budget = *c.Budget
	}
	if c.MaxLoops != nil {
		o.MaxLoops = *c.MaxLoops
	}
	o.BestOf, o.Agents = c.BestOf, c.Agents
	return o, nil
}

// Run validates the flags, then runs the loop here or in the background.
func (c *RunStartCmd) Run(a *App) error {
	o, err := c.flags()
	if err != nil {
		return err
	}
	env, err := workerEnv(a, nil)
	if err != nil {
		return err
	}
	o.Parallel = env.Cfg.MaxWorkers
	if c.Parallel != nil {
		o.Parallel = *c.Parallel
	}
	o.ReplanAfter = env.Cfg.ReplanAfter
	if c.ReplanAfter != nil {
		o.ReplanAfter = *c.ReplanAfter
	}
	o.Supervisor = func(session string) []string { return supervisorArgv(a.Args0, env.Top, session) }
	if o.Poll, err = runPoll(); err != nil {
		return err
	}
	check := o
	if err := check.Validate(); err != nil {
		return err
	}
	if c.Review {
		if _, err := roles.PickAgent(env.Top, agents.RoleReviewer, ""); err != nil {
			return fmt.Errorf("run --review: %w", err)
		}
	}
	if c.Detach {
		return c.detach(a, env, check)
	}
	ctx, stop := signalContext(a.Ctx)
	defer stop()
	render := newRunRenderer(a)
	o.Events = render.event
	o.Warn = render.warn
	sup, err := pipeline.Start(ctx, env, o, pipeline.DefaultHooks(env, func(args ...string) []string {
		return append([]string{a.Args0, "-C", env.Top}, args...)
	}))
	if err != nil {
		return err
	}
	if h := serverargs.ShareHint(env.UnsharedRemote()); h != "" && !a.G.JSON {
		a.P.Notef("hint: %s\n", h)
	}
	render.begin(sup.Record())
	sum, err := sup.Loop(ctx)
	render.end()
	if err != nil {
		return err
	}
	if !a.G.JSON && !a.G.Quiet {
		printSummary(a, sum, sup.Record())
	}
	switch {
	case sum.Result == "done", sum.Result == "passed":
		return nil
	case sup.Interrupted():
		return silentError{exitcode.Interrupted}
	}
	return silentError{exitcode.Failed}
}

// runPollEnv sets how long the run's loop sleeps at most without looking
// (pipeline.Options.Poll); the end of a worker the run started wakes it
// anyway.
const runPollEnv = "AGENTMINE_RUN_POLL"

// runPoll reads runPollEnv: a Go duration, or nothing for the default.
func runPoll() (time.Duration, error) {
	v := os.Getenv(runPollEnv)
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, exitcode.New(exitcode.Usage, fmt.Errorf("invalid %s %q: want a positive duration such as 2s", runPollEnv, v), "")
	}
	return d, nil
}

// detach starts this program again in the background as the run's
// supervisor, with the same choices, and waits until it has recorded the
// run.
func (c *RunStartCmd) detach(a *App, env *worker.Env, o pipeline.Options) error {
	argv := []string{a.Args0, "-C", env.Top, "run", "start", "--name", o.Name, "--parallel", strconv.Itoa(o.Parallel),
		"--max-loops", strconv.Itoa(o.MaxLoops)}
	argv = append(argv, "--replan-after", strconv.Itoa(o.ReplanAfter))
	if o.Plan {
		argv = append(argv, "--plan")
	}
	if o.Review {
		argv = append(argv, "--review")
	}
	if o.Merge {
		argv = append(argv, "--merge")
	}
	if o.Deadline > 0 {
		argv = append(argv, "--deadline", o.Deadline.String())
	}
	if o.Budget != "" {
		argv = append(argv, "--budget", o.Budget)
	}
	if o.BestOf > 1 {
		argv = append(argv, "--best-of", strconv.Itoa(o.BestOf))
	}
	if len(o.Agents) > 0 {
		argv = append(argv, "--agents", strings.Join(o.Agents, ","))
	}
	argv = append(argv, "--")
	argv = append(argv, o.Targets...)
	st := env.St
	before, _ := pipeline.Get(a.Ctx, st, o.Name)
	if before.Name != "" && before.Ended == nil && before.Alive() {
		return exitcode.New(exitcode.State, fmt.Errorf("run %s is already running (pid %d on %s)", o.Name, before.Supervisor.Pid, before.Supervisor.Host), "")
	}
	if err := pipeline.RefuseHeld(a.Ctx, env, o); err != nil {
		return err
	}
	logDir, err := st.LocalDir("logs")
	if err != nil {
		return err
	}
	out := logDir + "/run-" + o.Name + ".out"
	pid, pstart, err := launch.Detach(a.Ctx, argv, env.Top, nil, out)
	if err != nil {
		return fmt.Errorf("starting the run's supervisor: %w", err)
	}
	// Wait until the supervisor has recorded the run (or died saying why).
	deadline := time.Now().Add(30 * time.Second)
	for {
		r, err := pipeline.Get(a.Ctx, st, o.Name)
		if err == nil && r.Supervisor.Pid == pid {
			if a.G.JSON {
				return a.P.PrintJSON(newRunStatus(r, nil))
			}
			if a.G.Quiet {
				a.P.Printf("%s\n", r.Name)
				return nil
			}
			a.P.Printf("run %s running in the background (pid %d); log %s\n", r.Name, pid, r.Log)
			a.P.Printf("watch it with: git agentmine run status %s\n", r.Name)
			return nil
		}
		if !launch.Alive(pid, pstart) || time.Now().After(deadline) {
			msg, _ := os.ReadFile(out)
			return fmt.Errorf("the run's supervisor did not start: %s", firstLine(strings.TrimPrefix(string(msg), "error: ")))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// runRenderer shows a run's events: JSON lines, plain lines, or (on a
// terminal) lines above a live status line of the running workers.
type runRenderer struct {
	a       *App
	mu      sync.Mutex
	live    bool
	started time.Time
	running map[string]string // session -> "task title"
	counts  map[string]int
	stop    chan struct{}
	drawn   bool
}

func newRunRenderer(a *App) *runRenderer {
	r := &runRenderer{a: a, running: map[string]string{}, counts: map[string]int{}, stop: make(chan struct{})}
	r.live = !a.G.JSON && !a.G.Quiet && output.IsTerminal(a.P.Out)
	return r
}

func (r *runRenderer) begin(rec pipeline.Record) {
	r.started = time.Now()
	if !r.a.G.JSON && !r.a.G.Quiet {
		what := "started"
		if rec.Resumed > 0 {
			what = "resumed"
		}
		each := fmt.Sprintf("at most %d attempt(s) each", rec.MaxLoops)
		if rec.BestOf > 1 {
			each = fmt.Sprintf("at most %d round(s) of %d attempts each", rec.MaxLoops, rec.BestOf)
		}
		r.a.P.Notef("run %s %s: %d target(s), %d at a time, %s; log %s\n",
			rec.Name, what, len(rec.Targets), rec.Parallel, each, rec.Log)
	}
	if r.live {
		go func() {
			t := time.NewTicker(time.Second)
			defer t.Stop()
			for {
				select {
				case <-r.stop:
					return
				case <-t.C:
					r.mu.Lock()
					r.redraw()
					r.mu.Unlock()
				}
			}
		}()
	}
}

func (r *runRenderer) end() {
	close(r.stop)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.clear()
}

func (r *runRenderer) event(e pipeline.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch e.Event {
	case pipeline.EvStarted, pipeline.EvRetried:
		r.running[e.Session] = short8(e.Task) + " " + e.Title
	case pipeline.EvEnded:
		delete(r.running, e.Session)
	}
	r.counts[e.Event]++
	switch {
	case r.a.G.JSON:
		b, _ := json.Marshal(e)
		r.a.P.Printf("%s\n", b)
	case r.a.G.Quiet:
	case e.Event == pipeline.EvFinished:
	default:
		r.clear()
		r.a.P.Printf("%s\n", r.paint(e))
		r.redraw()
	}
}

// warn prints a warning of the run (once per run: Options.Warn) on
// stderr, under the live status line.
func (r *runRenderer) warn(w string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.clear()
	r.a.P.Warnf("%s", w)
	r.redraw()
}

func (r *runRenderer) paint(e pipeline.Event) string {
	line := e.Line()
	color := ""
	switch e.Event {
	case pipeline.EvMerged:
		color = output.Green
	case pipeline.EvExhausted:
		color = output.Red
	case pipeline.EvRetried:
		color = output.Yellow
	case pipeline.EvEnded:
		color = statusColor(status.Status(e.Status))
	}
	return r.a.P.Paint(color, line)
}

// clear erases the live status line.
func (r *runRenderer) clear() {
	if r.live && r.drawn {
		r.a.P.Printf("\r\x1b[2K")
		r.drawn = false
	}
}

// redraw prints the live status line: elapsed time, counts, and the
// running workers.
func (r *runRenderer) redraw() {
	if !r.live {
		return
	}
	r.clear()
	var names []string
	for _, n := range r.running {
		names = append(names, n)
	}
	line := fmt.Sprintf("[%s] %d running, %d merged, %d retried, %d exhausted",
		time.Since(r.started).Round(time.Second), len(r.running), r.counts[pipeline.EvMerged], r.counts[pipeline.EvRetried], r.counts[pipeline.EvExhausted])
	if len(names) > 0 {
		line += ": " + strings.Join(names, " | ")
	}
	if len(line) > 160 {
		line = line[:157] + "..."
	}
	r.a.P.Printf("%s", r.a.P.Paint(output.Gray, line))
	r.drawn = true
}

func short8(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// printSummary prints how the run ended: one line per target.
func printSummary(a *App, s pipeline.Summary, rec pipeline.Record) {
	a.P.Printf("run %s %s: %d of %d done", s.Run, s.Result, s.Done, s.Total)
	if s.Failed > 0 {
		a.P.Printf(", %d failed", s.Failed)
	}
	if s.NotStarted > 0 {
		a.P.Printf(", %d never started", s.NotStarted)
	}
	if s.Waiting > 0 {
		a.P.Printf(", %d waiting to be merged", s.Waiting)
	}
	if s.Interrupted > 0 {
		a.P.Printf(", %d interrupted", s.Interrupted)
	}
	a.P.Printf(", %d attempt(s)", s.Attempts)
	if s.Reason != "" {
		a.P.Printf(" — %s", s.Reason)
	}
	a.P.Printf("\n")
	a.P.Printf("usage: %s\n", s.Usage)
	t := a.P.NewTable("TASK", "STATUS", "ATTEMPTS", "TITLE", "REASON")
	for _, x := range s.Tasks {
		t.ColorRow([]string{"", statusColor(status.Status(x.Status))}, short8(x.ID), x.Status, fmt.Sprintf("%d/%d", x.Attempts, cmp.Or(x.MaxLoops, rec.MaxLoops)), x.Title, x.Reason)
	}
	t.Flush()
	printWaiting(a, s)
	for _, x := range s.Tasks {
		if len(x.BlockedByCancelled) > 0 {
			a.P.Notef("hint: task %s waits on a cancelled task: %s\n", short8(x.ID), unblockHint(short8(x.ID), shortAll8(x.BlockedByCancelled)))
		}
	}
}

func shortAll8(ids []string) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = short8(id)
	}
	return out
}

// printWaiting lists, after a run's summary, what waits to be merged with
// the command that merges it, and how to continue an interrupted run.
func printWaiting(a *App, s pipeline.Summary) {
	for _, x := range s.Tasks {
		if x.Status != string(status.Review) {
			continue
		}
		cmd := "git agentmine merge " + short8(x.ID)
		if x.AcceptMainChanges {
			cmd += " --accept-main-changes (if you made the main checkout's changes yourself)"
		}
		a.P.Printf("waiting to be merged: %s %s — merge with: %s\n", short8(x.ID), x.Title, cmd)
	}
	if s.Interrupted > 0 || s.Reason == pipeline.Interrupted {
		cont := "git agentmine run"
		if s.Run != pipeline.DefaultName {
			cont += " --name " + s.Run
		}
		a.P.Printf("continue with: %s\n", cont)
	}
}

// RunStatusCmd is `run status [NAME]`.
type RunStatusCmd struct {
	Name string `arg:"" optional:"" help:"Run name (default: every run)."`
	Log  int    `placeholder:"N" default:"5" help:"Log lines to show of a named run."`
}

func newRunStatus(r pipeline.Record, b *board.Board) runStatusJSON {
	return contract.NewRunStatus(r, b)
}

// Run prints the runs.
func (c *RunStatusCmd) Run(a *App) error {
	st, err := a.Store()
	if err != nil {
		return err
	}
	env, err := workerEnv(a, nil)
	if err != nil {
		return err
	}
	var recs []pipeline.Record
	if c.Name != "" {
		r, err := pipeline.Get(a.Ctx, st, c.Name)
		if err != nil {
			return err
		}
		recs = []pipeline.Record{r}
	} else if recs, err = pipeline.List(a.Ctx, st); err != nil {
		return err
	}
	b, err := board.Load(a.Ctx, st, env.Cfg.Base)
	if err != nil {
		return err
	}
	var out []runStatusJSON
	for _, r := range recs {
		j := newRunStatus(r, b)
		if c.Name != "" && c.Log > 0 {
			j.LogTail = tailLines(r.Log, c.Log)
		}
		out = append(out, j)
	}
	if a.G.JSON {
		if c.Name != "" {
			return a.P.PrintJSON(out[0])
		}
		return a.P.PrintJSONList(len(out), func(i int) any { return out[i] })
	}
	if a.G.Quiet {
		for _, j := range out {
			a.P.Printf("%s\n", j.Name)
		}
		return nil
	}
	if len(out) == 0 {
		a.P.Notef("no runs yet (git agentmine run starts one)\n")
		return nil
	}
	for i, j := range out {
		if i > 0 {
			a.P.Printf("\n")
		}
		state := j.State
		switch j.State {
		case "running":
			state = fmt.Sprintf("running (pid %d on %s, since %s)", j.Supervisor.Pid, j.Supervisor.Host, j.Supervisor.Since.Local().Format(time.DateTime))
		case "ended":
			state = "ended " + j.Ended.Result
			if j.Ended.Reason != "" {
				state += " (" + j.Ended.Reason + ")"
			}
		case "dead":
			state = "not running: its supervisor is gone; start it again to resume (git agentmine run --name " + j.Name + ")"
		}
		a.P.Printf("run %s: %s\n", j.Name, state)
		a.P.Printf("  progress  %d/%d done, %d attempt(s), %d running, parallel %d, max loops %d\n", j.Done, j.Total, j.Attempts, len(j.Running), j.Parallel, j.MaxLoops)
		if j.Usage != nil {
			a.P.Printf("  usage     %s\n", j.Usage)
		}
		for _, p := range j.RateLimits {
			a.P.Printf("  limited   %s\n", p.String(time.Now()))
		}
		for _, w := range j.Running {
			a.P.Printf("  running   task %s %q session %s (pid %d, %s)\n", short8(w.Task), w.Title, short8(w.Session), w.Pid, time.Since(w.Started).Round(time.Second))
		}
		for _, x := range j.Tasks {
			if x.Waiting != nil {
				a.P.Printf("  waiting   task %s %q: %s\n", short8(x.Task), x.Title, strings.TrimPrefix(x.Waiting.String(), "waiting: "))
			}
		}
		if c.Name != "" {
			t := a.P.NewTable("  TASK", "STATUS", "ATTEMPTS", "TITLE")
			for _, x := range j.Tasks {
				t.ColorRow([]string{"", statusColor(status.Status(x.Status))}, "  "+short8(x.Task), x.Status, strconv.Itoa(x.Attempts), x.Title)
			}
			t.Flush()
		}
		a.P.Printf("  log       %s\n", j.Log)
		for _, l := range j.LogTail {
			a.P.Printf("    %s\n", l)
		}
	}
	return nil
}

// tailLines returns the last n lines of a file (none if unreadable).
func tailLines(path string, n int) []string {
	lines, err := launch.Tail(path, n)
	if err != nil {
		return nil
	}
	return lines
}

// RunStopCmd is `run stop NAME`.
type RunStopCmd struct {
	Name   string `arg:"" help:"Run name."`
	Reason string `help:"Why, recorded with the stop."`
}

// Run records the stop, signals the supervisor, and waits for the run to
// end; a run whose supervisor is gone has its workers stopped here.
func (c *RunStopCmd) Run(a *App) error {
	st, err := a.Store()
	if err != nil {
		return err
	}
	env, err := workerEnv(a, nil)
	if err != nil {
		return err
	}
	r, err := pipeline.Get(a.Ctx, st, c.Name)
	if err != nil {
		return err
	}
	if r.Ended != nil {
		return exitcode.New(exitcode.State, fmt.Errorf("run %s already ended (%s)", c.Name, r.Ended.Result), "")
	}
	if r.Supervisor.Host != "" && r.Supervisor.Host != a.here().Host {
		return exitcode.New(exitcode.State, fmt.Errorf("run %s is supervised on another host (%s)", c.Name, r.Supervisor.Host), "stop it there")
	}
	if _, err := pipeline.RequestStop(a.Ctx, st, c.Name, c.Reason); err != nil {
		return err
	}
	if r.Alive() {
		if err := syscall.Kill(r.Supervisor.Pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("stopping run %s (pid %d): %w", c.Name, r.Supervisor.Pid, err)
		}
		a.P.Notef("sent SIGTERM to run %s (pid %d)\n", c.Name, r.Supervisor.Pid)
		ctx, cancel := context.WithTimeout(a.Ctx, env.Cfg.Grace+60*time.Second)
		defer cancel()
		for {
			cur, err := pipeline.Get(ctx, st, c.Name)
			if err == nil && cur.Ended != nil {
				break
			}
			if !cur.Alive() {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("waiting for run %s to stop: %w", c.Name, ctx.Err())
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	cur, err := pipeline.Get(a.Ctx, st, c.Name)
	if err != nil {
		return err
	}
	if cur.Ended == nil {
		// No supervisor: stop its workers here and record the end.
		n, err := pipeline.StopOrphan(a.Ctx, env, cur)
		if err != nil {
			return err
		}
		a.P.Notef("run %s had no supervisor; stopped %d worker(s)\n", c.Name, n)
	}
	if a.G.JSON {
		cur, _ = pipeline.Get(a.Ctx, st, c.Name)
		b, err := board.Load(a.Ctx, st, env.Cfg.Base)
		if err != nil {
			return err
		}
		return a.P.PrintJSON(newRunStatus(cur, b))
	}
	a.P.Notef("run %s stopped\n", c.Name)
	return nil
}
