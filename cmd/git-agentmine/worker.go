package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/git-agentmine/git-agentmine/cmd/internal/serverargs"
	"github.com/git-agentmine/git-agentmine/contract"
	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/launch"
	"github.com/git-agentmine/git-agentmine/sessions"
	"github.com/git-agentmine/git-agentmine/status"
	"github.com/git-agentmine/git-agentmine/verify"
	"github.com/git-agentmine/git-agentmine/worker"
)

// WorkerCmd groups the worker commands.
type WorkerCmd struct {
	Run       WorkerRunCmd       `cmd:"" help:"Prepare a scoped worktree for a task and (with --exec) run an agent in it."`
	Command   WorkerCommandCmd   `cmd:"" help:"Print the prompt (and with --json the argv) a worker for the task would get."`
	Status    WorkerStatusCmd    `cmd:"" help:"Show live sessions: elapsed, timeout, pid and the last log lines."`
	Wait      WorkerWaitCmd      `cmd:"" help:"Block until the given (or all) running sessions end; exit 1 if any failed."`
	Logs      WorkerLogsCmd      `cmd:"" help:"Print a task's latest session log (-f to follow)."`
	Stop      WorkerStopCmd      `cmd:"" help:"Stop running sessions (SIGTERM to the supervisor; the signal is recorded)."`
	Done      WorkerDoneCmd      `cmd:"" help:"Remove a task's worktree; delete its branch only if merged (or --force)."`
	Prune     WorkerPruneCmd     `cmd:"" help:"Remove ended sessions' worktrees and branches older than an age (--dry-run lists them)."`
	Supervise WorkerSuperviseCmd `cmd:"" hidden:"" help:"Run a prepared session (used by --detach)."`
}

func workerEnv(a *App, flags map[string]string) (*worker.Env, error) {
	st, err := a.Store()
	if err != nil {
		return nil, err
	}
	return worker.NewEnv(st, flags, a.Getenv)
}

// WorkerRunCmd is `worker run`.
type WorkerRunCmd struct {
	ID      string        `arg:"" help:"Task id."`
	Agent   string        `short:"a" help:"Agent definition (default: the task's assignee if it names an agent, else the default agent)."`
	Exec    bool          `short:"x" help:"Launch the agent's client now (otherwise print what to run)."`
	Detach  bool          `short:"D" help:"With --exec: hand the run to a detached supervisor and return at once."`
	Timeout time.Duration `placeholder:"DURATION" help:"Time before the worker is stopped (exit 124): 90, 90s, 5m; default: the agent's, else the timeout setting."`
	Base    string        `help:"Base ref for the branch (default: the task's base, else the project's)."`
	SkipDoD bool          `name:"skip-dod" help:"Do not run the Definition of Done (recorded as skipped)."`
	Force   bool          `short:"f" help:"Run although blockers are unfinished."`
	Replace bool          `help:"Remove a leftover worktree of an earlier, finished session first."`
	Strict  bool          `help:"Stop the worker at its first out-of-scope write."`
	Claim   string        `placeholder:"REMOTE" help:"Claim the task on REMOTE first, so no other clone runs it (default: the configured sync remote)."`
	NoClaim bool          `name:"no-claim" help:"Do not claim the task on the sync remote."`
}

// Run prepares and maybe runs the session.
func (c *WorkerRunCmd) Run(a *App) error {
	if c.Detach && !c.Exec {
		return exitcode.New(exitcode.Usage, errors.New("--detach needs --exec"), "")
	}
	env, err := workerEnv(a, nil)
	if err != nil {
		return err
	}
	p, err := env.Prepare(a.Ctx, worker.RunOptions{Task: c.ID, Agent: c.Agent, Exec: c.Exec, Detach: c.Detach,
		Timeout: c.Timeout, Base: c.Base, SkipDoD: c.SkipDoD, Force: c.Force,
		Replace: c.Replace, Strict: c.Strict, Claim: c.Claim, NoClaim: c.NoClaim})
	if err != nil {
		return err
	}
	switch {
	case p.ClaimNote != "":
		a.P.Warnf("%s", p.ClaimNote)
	case p.Claimed != "" && !a.G.Quiet && !a.G.JSON:
		a.P.Notef("claimed task %s on %s\n", p.Rec.Session.Task[:8], p.Claimed)
	case p.Claimed == "" && !c.NoClaim && !a.G.JSON:
		if h := serverargs.ShareHint(env.UnsharedRemote()); h != "" {
			a.P.Notef("hint: %s\n", h)
		}
	}
	s := p.Rec.Session
	j := contract.NewRun(s, p.PromptFile)
	if !c.Exec {
		if a.G.JSON {
			return a.P.PrintJSON(j)
		}
		if a.G.Quiet {
			a.P.Printf("%s\n", s.ID)
			return nil
		}
		cmdline, _ := launch.Invocation{Client: p.Client, Model: p.Agent.Model, Command: p.Agent.Command,
			PromptFile: p.PromptFile, Worktree: p.Worktree, Task: s.Task}.ShellCommand()
		a.P.Printf("session   %s (task %s, agent %s)\n", s.ID[:8], s.Task[:8], s.Agent)
		a.P.Printf("worktree  %s\nbranch    %s\nprompt    %s\n", s.Worktree, s.Branch, p.PromptFile)
		a.P.Printf("run       cd %s && %s\n", shellQuote(s.Worktree), cmdline)
		a.P.Printf("then      git agentmine session end %s --exit-code <code>\n", s.ID[:8])
		return nil
	}
	if c.Detach {
		pid, err := env.StartDetached(a.Ctx, p, supervisorArgv(a.Args0, env.Top, s.ID))
		if err != nil {
			return err
		}
		j.Pid = pid
		if a.G.JSON {
			return a.P.PrintJSON(j)
		}
		if a.G.Quiet {
			a.P.Printf("%s\n", s.ID)
			return nil
		}
		a.P.Printf("session %s running detached (supervisor pid %d); log %s\n", s.ID[:8], pid, s.Log)
		return nil
	}
	// Foreground: Ctrl-C and SIGTERM (worker stop) stop the worker; the
	// outcome records the signal.
	ctx, stop := signalContext(a.Ctx)
	defer stop()
	opts := worker.ExecOptions{}
	if !a.G.JSON && !a.G.Quiet {
		opts.Tee = a.P.Err
		opts.Progress = a.P.Err
	}
	out, err := env.Execute(ctx, p.Rec, opts)
	shareOutcome(ctx, env, p.Rec.Session, a.P.Warnf)
	if err != nil {
		return err
	}
	err = reportOutcome(a, env, j, out)
	if stopRequested(ctx) {
		// SIGTERM (worker stop): the outcome keeps the worker's own
		// exit; this process ends as docs/exit-codes.md says.
		return silentError{exitcode.Interrupted}
	}
	return err
}

// supervisorArgv is the command line of a detached supervisor for a
// session: this program (self), in the repository top, running the hidden
// `worker supervise`. worker run --detach and the MCP server's worker_start
// start it.
func supervisorArgv(self, top, session string) []string {
	return []string{self, "-C", top, "worker", "supervise", session}
}

// isSupervisorArgv reports whether args (without the program) are a
// detached supervisor's, as supervisorArgv makes them.
func isSupervisorArgv(args []string) bool {
	return len(args) == 5 && args[0] == "-C" && args[2] == "worker" && args[3] == "supervise"
}

// sealedKey is the context key of what tells a detached supervisor's
// detacher that the session records the supervisor's pid (a func()).
type sealedKey struct{}

// reportOutcome prints a finished run and maps it to the exit code: 0 when
// the run can go to review, 124 on timeout, 130 when interrupted, else 1.
func reportOutcome(a *App, env *worker.Env, j runJSON, out sessions.Outcome) error {
	v := verify.ParseVerdicts(&out)
	st := "review"
	switch {
	case out.RateLimited():
		st = "rate_limited" // not an attempt: the task is open again
	case out.TimedOut || out.ExitCode != 0 || out.Signal != "":
		st = "failed"
	case v.Failed() != "":
		st = "dod_failed"
	}
	j.Outcome = &out
	j.Status = st
	if a.G.JSON {
		a.P.PrintJSON(j)
	} else if a.G.Quiet {
		a.P.Printf("%s\n", j.Session)
	} else {
		label := a.P.Paint(statusColor(status.Status(st)), st)
		if st == "dod_failed" {
			label += " (" + v.Failed() + ")"
		}
		a.P.Printf("session %s: %s — exit %d%s, DoD %s, scope %s", j.Session[:8], label,
			out.ExitCode, sigWords(out), orDash(v.DoD.Status), scopeWord(v))
		if r := outcomeReason(out, v); r != "" {
			a.P.Printf(" — %s", r)
		}
		a.P.Printf("\n")
		printFindings(a.P, "  ", v, 0, "")
		printDoDTail(a.P, "  ", v)
	}
	switch {
	case out.TimedOut:
		return silentError{exitcode.Timeout}
	case out.Signal == "SIGINT" || out.ExitCode == exitcode.Interrupted && out.Signal != "":
		return silentError{exitcode.Interrupted}
	case st != "review":
		return silentError{exitcode.Failed}
	}
	return nil
}

// sigWords says what ended a run after its exit code: " (timed out)",
// " (SIGINT)" for an interruption (Ctrl-C: the worker itself was sent
// SIGTERM for it, or was not started yet), the signal that ended it, or
// nothing.
func sigWords(o sessions.Outcome) string {
	switch {
	case o.TimedOut:
		return " (timed out)"
	case o.ExitCode == exitcode.Interrupted && (o.Signal != "" || strings.HasPrefix(o.Reason, "interrupted")):
		return " (SIGINT)"
	case o.Signal != "":
		return " (" + o.Signal + ")"
	}
	return ""
}

func scopeWord(v verify.Verdicts) string {
	if !v.HasScope {
		return "unverified"
	}
	if v.Scope.Valid {
		return "valid"
	}
	return plural(len(v.Scope.Violations), "violation", "violations")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func shellQuote(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"\\$`!*?[]{}()<>|&;#~") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// WorkerSuperviseCmd is the detached supervisor's entry point.
type WorkerSuperviseCmd struct {
	Session string `arg:""`
}

// Run executes the prepared session and records its outcome.
func (c *WorkerSuperviseCmd) Run(a *App) error {
	// A stop that arrives while the supervisor reads its session (a run
	// interrupted the moment it started it) is recorded by Execute as a
	// stop before the worker started: the reading runs to its end, or the
	// session would be left lost, without an outcome.
	signalled := a.Ctx
	a.Ctx = context.WithoutCancel(signalled)
	defer func() { a.Ctx = signalled }()
	env, err := workerEnv(a, nil)
	if err != nil {
		return err
	}
	rec, err := sessions.Get(a.Ctx, env.St, c.Session)
	if err != nil {
		return err
	}
	if rec.Outcome != nil {
		return exitcode.New(exitcode.State, fmt.Errorf("session %s already ended", c.Session), "")
	}
	ctx, stop := signalContext(signalled)
	defer stop()
	sealed, _ := a.Ctx.Value(sealedKey{}).(func())
	_, err = env.Execute(ctx, rec, worker.ExecOptions{Progress: os.Stderr, Sealed: sealed})
	shareOutcome(ctx, env, rec.Session, func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "warning: "+format+"\n", args...)
	})
	return err
}
