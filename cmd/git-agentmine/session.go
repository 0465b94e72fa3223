package main

import (
	"time"

	"errors"
	"fmt"
	"strings"
	"syscall"

	"github.com/git-agentmine/git-agentmine/board"
	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/output"
	"github.com/git-agentmine/git-agentmine/sessions"
	"github.com/git-agentmine/git-agentmine/verify"
	"github.com/git-agentmine/git-agentmine/worker"
)

// SessionCmd groups the session commands, for orchestrators that run
// workers themselves.
type SessionCmd struct {
	Start SessionStartCmd `cmd:"" help:"Prepare a session (worktree, prompt) for a worker you run yourself; prints the session id."`
	End   SessionEndCmd   `cmd:"" help:"Record how a session's worker ended; verifies its changes and runs the DoD."`
	List  SessionListCmd  `cmd:"" aliases:"ls" help:"List sessions."`
	Show  SessionShowCmd  `cmd:"" help:"Show one session and its outcome."`
}

// SessionStartCmd is `session start`.
type SessionStartCmd struct {
	ID      string        `arg:"" help:"Task id."`
	Agent   string        `short:"a" help:"Agent definition."`
	Base    string        `help:"Base ref."`
	Timeout time.Duration `placeholder:"DURATION" help:"Time the worker has (for liveness seen from other clones): 90, 90s, 5m."`
	Force   bool          `short:"f" help:"Start although blockers are unfinished."`
	Replace bool          `help:"Remove a leftover worktree first."`
}

// Run prepares a manual session.
func (c *SessionStartCmd) Run(a *App) error {
	wr := WorkerRunCmd{ID: c.ID, Agent: c.Agent, Base: c.Base, Timeout: c.Timeout, Force: c.Force, Replace: c.Replace}
	if !a.G.JSON && !a.G.Quiet {
		// Data on stdout: the session id, as orchestrators expect.
		a.G.Quiet = true
		defer func() { a.G.Quiet = false }()
	}
	return wr.Run(a)
}

// SessionEndCmd is `session end`.
type SessionEndCmd struct {
	ID        string   `arg:"" help:"Session id."`
	ExitCode  *int     `name:"exit-code" required:"" help:"The worker's exit code."`
	Signal    string   `help:"Signal that ended the worker (e.g. SIGTERM)."`
	Artifacts []string `sep:"none" help:"Files the worker says it produced (repeatable); verification records what it observed too."`
	SkipDoD   bool     `name:"skip-dod" help:"Do not run the DoD (recorded as skipped)."`
}

// Run records the outcome.
func (c *SessionEndCmd) Run(a *App) error {
	if *c.ExitCode < 0 || *c.ExitCode > 255 {
		return exitcode.New(exitcode.Usage, fmt.Errorf("--exit-code %d is out of range 0-255", *c.ExitCode), "")
	}
	sig := strings.ToUpper(c.Signal)
	if sig != "" {
		if !strings.HasPrefix(sig, "SIG") {
			sig = "SIG" + sig
		}
		if _, ok := signalNames[sig]; !ok {
			return exitcode.New(exitcode.Usage, fmt.Errorf("unknown signal %q", c.Signal), "use a name like SIGTERM or KILL")
		}
	}
	env, err := workerEnv(a, nil)
	if err != nil {
		return err
	}
	rec, err := board.Session(a.Ctx, env.St, c.ID)
	if err != nil {
		return err
	}
	if rec.Outcome != nil {
		return exitcode.New(exitcode.State, fmt.Errorf("session %s already ended (exit %d)", rec.Session.ID[:8], rec.Outcome.ExitCode), "")
	}
	if err := endable(a, env, rec, *c.ExitCode, sig); err != nil {
		return err
	}
	out, err := env.End(a.Ctx, rec, *c.ExitCode, sig, c.Artifacts, c.SkipDoD)
	if err != nil {
		return err
	}
	j := runJSON{V: output.SchemaVersion, Session: rec.Session.ID, Task: rec.Session.Task, Agent: rec.Session.Agent,
		Client: rec.Session.Client, Branch: rec.Session.Branch, Worktree: rec.Session.Worktree, Mode: rec.Session.Mode, Log: rec.Session.Log}
	err = reportOutcome(a, env, j, out)
	var s silentError
	if errors.As(err, &s) {
		return nil // recording a failure succeeded
	}
	return err
}

// endable refuses to end a supervised session by hand while its
// supervisor runs (the supervisor records the outcome), and to report
// success for a sealed one at all: only its supervisor's verdict can make
// it pass, any other line claiming success is a forged outcome.
func endable(a *App, env *worker.Env, rec sessions.Record, exit int, sig string) error {
	s := rec.Session
	if s.Mode == sessions.ModeManual {
		return nil
	}
	if board.LiveNow(rec, board.HereOf(env.St)) {
		return exitcode.New(exitcode.State, fmt.Errorf("session %s is supervised (mode %s) and still running: its supervisor records the outcome", s.ID[:8], s.Mode),
			"stop it with: git agentmine worker stop "+s.Task[:8])
	}
	if s.Seal != nil && exit == 0 && sig == "" {
		return exitcode.New(exitcode.State, fmt.Errorf("session %s was sealed by its supervisor: only the supervisor's verdict can report success", s.ID[:8]),
			"record the failure with --exit-code N, or run the task again")
	}
	return nil
}

var signalNames = map[string]syscall.Signal{"SIGHUP": syscall.SIGHUP, "SIGINT": syscall.SIGINT, "SIGQUIT": syscall.SIGQUIT,
	"SIGKILL": syscall.SIGKILL, "SIGTERM": syscall.SIGTERM, "SIGSEGV": syscall.SIGSEGV, "SIGABRT": syscall.SIGABRT,
	"SIGPIPE": syscall.SIGPIPE, "SIGUSR1": syscall.SIGUSR1, "SIGUSR2": syscall.SIGUSR2, "SIGBUS": syscall.SIGBUS}

// SessionListCmd is `session list`.
type SessionListCmd struct {
	Task string `short:"t" help:"Only sessions of this task."`
}

// Run lists sessions.
func (c *SessionListCmd) Run(a *App) error {
	env, err := workerEnv(a, nil)
	if err != nil {
		return err
	}
	b, err := board.Load(a.Ctx, env.St, env.Cfg.Base)
	if err != nil {
		return err
	}
	recs := b.Sessions
	if c.Task != "" {
		tid, err := b.Tasks.Resolve(c.Task)
		if err != nil {
			return err
		}
		recs = b.SessionsOf(tid)
	}
	if a.G.JSON {
		return a.P.PrintJSONList(len(recs), func(i int) any { return toSessionJSON(a, recs[i], 0) })
	}
	if a.G.Quiet {
		for _, r := range recs {
			a.P.Printf("%s\n", r.Session.ID)
		}
		return nil
	}
	tb := a.P.NewTable("SESSION", "TASK", "AGENT", "MODE", "STARTED", "STATE", "RESULT")
	for _, r := range recs {
		tb.Row(r.Session.ID[:8], b.Tasks.ShortID(r.Session.Task), agentLabel(r.Session.Agent, r.Session.Role), r.Session.Mode,
			r.Session.Started.Format("2006-01-02 15:04"), sessionState(a, r), sessionVerdict(a, r, b.Merged(r)))
	}
	tb.Flush()
	return nil
}

// SessionShowCmd is `session show`.
type SessionShowCmd struct {
	ID string `arg:"" help:"Session id."`
}

// Run shows the session.
func (c *SessionShowCmd) Run(a *App) error {
	st, err := a.Store()
	if err != nil {
		return err
	}
	rec, err := board.Session(a.Ctx, st, c.ID)
	if err != nil {
		return err
	}
	j := toSessionJSON(a, rec, 5)
	if a.G.JSON {
		return a.P.PrintJSON(j)
	}
	if a.G.Quiet {
		a.P.Printf("%s\n", j.ID)
		return nil
	}
	merged := false
	if rec.Outcome != nil {
		env, err := workerEnv(a, nil)
		if err != nil {
			return err
		}
		b, err := board.Load(a.Ctx, env.St, env.Cfg.Base)
		if err != nil {
			return err
		}
		merged = b.Merged(rec)
	}
	a.P.Printf("session  %s\ntask     %s\nagent    %s (%s)\nmode     %s\nbranch   %s\nworktree %s\nbase     %s (%s)\nstarted  %s on %s\nstate    %s\nresult   %s\n",
		j.ID, j.Task, j.Agent, j.Client, j.Mode, j.Branch, j.Worktree, j.BaseRef, j.Base[:12], j.Started.Format("2006-01-02 15:04:05"), j.Host, j.State, sessionVerdict(a, rec, merged))
	if o := rec.Outcome; o != nil {
		a.P.Printf("exit     %d%s\n", o.ExitCode, sigWords(*o))
		if o.Reason != "" {
			a.P.Printf("reason   %s\n", o.Reason)
		}
		v := verify.ParseVerdicts(o)
		a.P.Printf("scope    %s\n", scopeWord(v))
		printFindings(a.P, "  ", v, 0, "")
		a.P.Printf("dod      %s\n", orDash(v.DoD.Status))
		for _, cr := range v.DoD.Commands {
			a.P.Printf("  - `%s` exit %d\n", cr.Cmd, cr.ExitCode)
		}
		printDoDTail(a.P, "  ", v)
		if len(o.Artifacts) > 0 {
			a.P.Printf("changed  %s\n", strings.Join(o.Artifacts, ", "))
		}
	}
	return nil
}
