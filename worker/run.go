package worker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/git-agentmine/git-agentmine/board"
	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/gitcmd"
	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/isolation"
	"github.com/git-agentmine/git-agentmine/launch"
	"github.com/git-agentmine/git-agentmine/scope"
	"github.com/git-agentmine/git-agentmine/sessions"
	"github.com/git-agentmine/git-agentmine/verify"
	"github.com/git-agentmine/git-agentmine/worktree"
)

// ExecOptions tune a run.
type ExecOptions struct {
	// Tee receives the worker's output too (the terminal of a foreground run).
	Tee io.Writer
	// Progress receives one-line progress messages (stderr), or nil.
	Progress io.Writer
	// Sealed, when set, is called once the session records its seal (and
	// with it this process's pid): a detached supervisor tells the process
	// that started it (StartDetached) so.
	Sealed func()
}

// Execute runs a prepared session's client under supervision (timeout,
// process group, bounded log, live watcher), then judges the result and
// records the outcome note. It is used by foreground runs and by the
// detached supervisor alike. A cancelled ctx (Ctrl-C, worker stop) stops
// the worker and is recorded as a signal. A client that cannot be started
// (not installed, for example) is recorded as a failed outcome (exit 127)
// and also returned as an error carrying its exit code.
func (e *Env) Execute(ctx context.Context, rec sessions.Record, opts ExecOptions) (sessions.Outcome, error) {
	s := rec.Session
	say := func(format string, a ...any) {
		if opts.Progress != nil {
			fmt.Fprintf(opts.Progress, format+"\n", a...)
		}
	}
	// Everything before the worker starts runs to its end even when a stop
	// arrives meanwhile (worker stop, run stop, Ctrl-C): a session stopped
	// while it was being set up is recorded as stopped, with the signal,
	// not as a setup step that failed with "context canceled". The
	// watchers it starts run until they are stopped, through the worker's
	// grace period.
	pctx := context.WithoutCancel(ctx)
	// The seal comes first: nothing of the worker runs before the session
	// records who alone can write its verdict.
	nonce, sealed, err := e.sealRun(pctx, rec, say)
	if err != nil {
		return e.sealFailed(pctx, rec, err)
	}
	if opts.Sealed != nil {
		opts.Sealed()
	}
	rec.Session, rec.Root = sealed.Session, sealed.Root
	s = rec.Session
	spec := specOf(s)
	generated := s.Generated
	ignore := notWorkers(s)
	// The watcher starts after the refs watch: what excuses another
	// worktree appearing is what the supervisor's witness heard.
	var refs *refWatch
	wopts := verify.WatchOptions{Ignore: ignore, Extra: e.watchExtras(pctx, s, func() []gitstore.JournalEntry {
		if refs == nil {
			return nil
		}
		j, _ := refs.journal(e.St)
		return j
	})}
	var proc *launch.Process
	// strict holds the first violation seen live and the running process;
	// whichever of the two arrives second stops the worker, so a write made
	// the instant the worker starts is not missed.
	var strict struct {
		sync.Mutex
		ev   *verify.Event
		v    verify.Violation
		proc *launch.Process
	}
	if s.Strict {
		judge := verify.NewEventJudge(spec, generated)
		wopts.OnEvent = func(ev verify.Event) {
			v, bad := judge.Judge(ev)
			if !bad {
				return
			}
			strict.Lock()
			defer strict.Unlock()
			if strict.ev == nil {
				evc := ev
				strict.ev, strict.v = &evc, v
				if strict.proc != nil {
					strict.proc.Stop()
				}
			}
		}
	}
	main := e.startMainCheckout(pctx, s)
	refs = e.watchRefs(pctx, rec, say)
	watcher, werr := verify.StartWatch(pctx, s.Worktree, wopts)
	if werr != nil {
		say("warning: live watcher unavailable: %v", werr)
	}
	var res launch.Result
	reaper := launch.NewReaper()
	// What the local caches hold before the worker can write to them: the
	// seal check keeps them only if they are the same at the end.
	caches := e.St.SnapshotCaches()
	// The one place the worker's command is wrapped: its isolation level.
	box, startErr := e.isolate(pctx, s)
	stoppedEarly := false
	if startErr == nil {
		defer box.Close()
		if ctx.Err() != nil {
			// Stopped while it was being set up: the worker never starts.
			stoppedEarly = true
		} else {
			proc, startErr = launch.Start(ctx, launch.Spec{Argv: box.Command(s.Command), Shown: s.Command, Dir: s.Worktree, Env: append(e.workerEnv(rec), box.Env()...),
				Stdin: s.CommandStdin, LogPath: s.Log, Tee: opts.Tee, Timeout: time.Duration(s.Timeout) * time.Second,
				Grace: time.Duration(s.Grace) * time.Second, Stalls: stallsOf(s), Marker: markerOf(s), Reaper: reaper,
				StallTimeout: time.Duration(s.StallTimeout) * time.Second, Progress: e.tipOf(s), Client: launch.Client(s.Client)})
		}
	}
	switch {
	case stoppedEarly:
		res = stoppedBeforeStart(ctx)
		say("stopped before the worker started")
	case startErr == nil:
		strict.Lock()
		strict.proc = proc
		if strict.ev != nil {
			proc.Stop()
		}
		strict.Unlock()
		say("worker started: pid %d, timeout %ds, log %s", proc.Pid(), s.Timeout, s.Log)
		if amended, err := e.recordWorker(ctx, sealed, proc); err != nil {
			say("warning: %v", err)
		} else {
			sealed = amended
		}
		res = proc.Wait()
		res.Leftovers = sandboxed(box, res.Leftovers)
		if len(res.Leftovers) > 0 {
			say("ended %s the worker left running", LeftoverText(res.Leftovers))
		}
		if err := e.bringBack(context.WithoutCancel(ctx), box, s); err != nil {
			say("warning: %v", err)
		}
	default:
		now := time.Now()
		res = launch.Result{ExitCode: 127, Started: now, Finished: now}
	}
	var live *verify.Record
	if watcher != nil {
		r := watcher.Stop()
		live = &r
	} else {
		live = verify.NotWatched(fmt.Sprintf("watcher could not start: %v", werr))
	}
	// Judge in a context that survives the Ctrl-C that may have ended the run.
	jctx := context.WithoutCancel(ctx)
	out := sessions.Outcome{ExitCode: res.ExitCode, Signal: res.Signal, TimedOut: res.TimedOut,
		Finished: res.Finished.UTC(), By: "agentmine " + s.Mode}
	if startErr != nil {
		out.Reason = firstLine(startErr.Error())
		if err := appendLog(s.Log, "agentmine: "+startErr.Error()+"\n"); err != nil {
			say("warning: %v", err)
		}
	} else if !stoppedEarly {
		e.clientFacts(rec, box, res, &out)
	}
	strictReason := ""
	if strict.ev != nil {
		strictReason = "stopped by --strict at the first out-of-scope change: " + strict.v.Type + " " + strict.ev.Path
	}
	stopReason(res, stoppedEarly, strictReason, &out)
	if startErr == nil && !stoppedEarly {
		say("worker ended: exit %d%s", out.ExitCode, endedText(res))
	}
	main.end(jctx)
	if err := e.judgeContained(jctx, reaper, rec, spec, live, main, res.Leftovers, &out, say); err != nil {
		say("warning: %v", err)
		if out.Reason == "" {
			out.Reason = firstLine(err.Error())
		}
	}
	e.checkRefs(jctx, rec, refs, &out)
	// After the refs: the seal check may restore the session document,
	// on agentmine's own behalf once the registration has ended.
	foreign := e.checkSeal(jctx, sealed, caches, &out, say)
	out.Supervisor = nonce.Proof(*sealed.Session.Seal)
	if err := sessions.RecordOutcome(jctx, e.St, rec, &out); err != nil {
		return out, err
	}
	out = readerVerdict(sealed.Session.Seal, foreign, out)
	if startErr != nil {
		// Recorded as failed; the caller still learns why, with its exit code.
		return out, fmt.Errorf("session %s could not start: %w", s.ID[:8], startErr)
	}
	return out, nil
}

// sealFailed ends a session whose seal could not be written: one sealed
// already is refused; otherwise the failure is recorded as its outcome.
func (e *Env) sealFailed(ctx context.Context, rec sessions.Record, err error) (sessions.Outcome, error) {
	s := rec.Session
	if errors.Is(err, sessions.ErrAlreadySealed) {
		return sessions.Outcome{}, exitcode.New(exitcode.State, err, "")
	}
	out := sessions.Outcome{ExitCode: 127, Finished: time.Now().UTC(), Reason: firstLine(err.Error()), By: "agentmine " + s.Mode}
	if rerr := sessions.RecordOutcome(ctx, e.St, rec, &out); rerr != nil {
		return out, rerr
	}
	return out, fmt.Errorf("session %s could not start: %w", s.ID[:8], err)
}

// stopReason gives a stopped worker's outcome its reason: --strict's
// (strictReason, when it stopped it), stopped or interrupted before it
// started, or plainly stopped.
func stopReason(res launch.Result, stoppedEarly bool, strictReason string, out *sessions.Outcome) {
	if res.Stopped && strictReason == "" && !res.Idle && res.Stalled == "" {
		// worker stop (SIGTERM to the supervisor): say so rather than
		// quote whatever the worker printed last. A worker agentmine
		// stopped itself (idle, or a client's words that it can make no
		// progress) keeps that reason: it is a verdict, not a stop.
		out.Reason = "stopped"
	}
	if stoppedEarly {
		out.Reason = "stopped before the worker started"
		if res.Interrupted {
			out.Reason = "interrupted before the worker started"
		}
	}
	if strictReason != "" {
		out.Reason = strictReason
	}
}

// clientFacts reads what the worker's client said of its end from the
// log's tail (and, for some clients, their own log files): its reason,
// a failure despite exit 0, the usage it reported, and a rate limit.
func (e *Env) clientFacts(rec sessions.Record, box *isolation.Box, res launch.Result, out *sessions.Outcome) {
	s := rec.Session
	tail, _ := launch.TailBytes(s.Log, usageTailBytes)
	if v := launch.ReadVerdict(launch.Client(s.Client), res.ExitCode, tail); v.Reason != "" {
		out.Reason = v.Reason
		if v.Failed && out.ExitCode == 0 {
			// The client said it failed although it exited 0.
			out.ExitCode = 1
		}
	}
	if out.ExitCode != 0 || res.TimedOut {
		// Some clients keep their reason in their own log files.
		if r := launch.ClientLogReason(launch.Client(s.Client), append(e.workerEnv(rec), box.HostEnv()...), res.Started); r != "" {
			switch {
			case res.TimedOut:
				out.Reason = "timed out; the client's log says: " + r
			case out.Reason == "":
				out.Reason = r
			}
		}
	}
	if res.Stalled != "" {
		out.Reason = "no progress possible: " + res.Stalled
	}
	if res.Idle && res.Stopped {
		out.Reason = fmt.Sprintf("stalled: no output and no new commit for %ds", s.StallTimeout)
	}
	u, ok := launch.ReadUsage(launch.Client(s.Client), tail)
	if res.Usage != nil {
		// Read as the output streamed: also what the log rotated away.
		u, ok = *res.Usage, true
	}
	if ok {
		out.Usage = &sessions.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
			CacheReadTokens: u.CacheReadTokens, CacheWriteTokens: u.CacheWriteTokens, CostUSD: u.CostUSD}
	}
	if res.TimedOut || !res.Stopped {
		// A client still retrying a limit at its timeout was stopped
		// by the limit, not by the task.
		rateLimited(launch.Client(s.Client), tail, res.Finished, out)
	}
}

// CheckStartable returns nil when the session's client can be found. When
// it cannot, it records the failed outcome a foreground run records (exit
// 127, the reason in the log) and returns the error with its exit code and
// hint. A detached run calls it before starting its supervisor, so that a
// missing client fails up front instead of after "running detached".
func (e *Env) CheckStartable(ctx context.Context, rec sessions.Record) error {
	s := rec.Session
	err := launch.CheckCommand(s.Command, s.Worktree, e.workerEnv(rec))
	if err == nil {
		return nil
	}
	ctx = context.WithoutCancel(ctx)
	_ = appendLog(s.Log, "agentmine: "+err.Error()+"\n")
	out := sessions.Outcome{ExitCode: 127, Finished: time.Now().UTC(), Reason: firstLine(err.Error()), By: "agentmine " + s.Mode}
	if rerr := sessions.RecordOutcome(ctx, e.St, rec, &out); rerr != nil {
		return rerr
	}
	return fmt.Errorf("session %s could not start: %w", s.ID[:8], err)
}

// judge verifies the changes against the scope and runs the DoD, filling in
// the outcome. Verification errors are reported, never a false success.
func (e *Env) judge(ctx context.Context, rec sessions.Record, spec scope.Spec, live *verify.Record, main *mainCheckout, out *sessions.Outcome, say func(string, ...any)) error {
	s := rec.Session
	g := e.St.Git().In(e.Top)
	_, tip, ok := e.St.ResolveCommit(ctx, "refs/heads/"+s.Branch)
	if !ok {
		tip = ""
	}
	out.Tip = tip
	if tip != "" && tip != s.BaseCommit {
		if n, err := g.Output(ctx, "rev-list", "--count", s.BaseCommit+".."+tip); err == nil {
			fmt.Sscan(n, &out.Commits)
		}
	}
	if _, err := os.Stat(s.Worktree); err != nil {
		return fmt.Errorf("worktree %s is gone: nothing to verify", s.Worktree)
	}
	say("verifying the changes against the scope…")
	verdict, err := verify.Check(ctx, verify.Input{Worktree: s.Worktree, Base: s.BaseCommit, Tip: tip, Scope: spec,
		Generated: s.Generated, GeneratedBlobs: s.GeneratedBlobs, Prepared: preparedOf(s), Sparse: s.Sparse, Permissions: true, Live: live, Reader: e.St})
	if err != nil {
		return fmt.Errorf("verifying session %s: %w", s.ID[:8], err)
	}
	mv, mw := main.findings(ctx, s.Worktree, verdict.Changed)
	verdict.Violations = append(verdict.Violations, mv...)
	verdict.Warnings = append(verdict.Warnings, mw...)
	verdict.Valid = len(verdict.Violations) == 0
	for _, c := range verdict.Changed {
		out.Artifacts = append(out.Artifacts, c.Path)
	}
	verify.Verdicts{Scope: verdict, HasScope: true}.Record(out)
	var dod verify.DoDResult
	switch {
	case s.SkipDoD:
		dod = verify.Skipped("--skip-dod")
	case len(s.DoD) == 0:
		dod = verify.Skipped("no DoD commands configured")
	case out.ExitCode != 0 || out.Signal != "" || out.TimedOut:
		dod = verify.Skipped("the worker failed")
	case tip == "" || tip == s.BaseCommit:
		dod = verify.DoDResult{Status: "failed", Reason: verify.NoCommitReason}
	default:
		n := "commands"
		if len(s.DoD) == 1 {
			n = "command"
		}
		say("running the Definition of Done (%d %s)…", len(s.DoD), n)
		dod, err = verify.RunDoD(ctx, e.Top, tip, s.Sparse, s.DoD, verify.DoDOptions{Timeout: time.Duration(s.DoDTimeout) * time.Second,
			Prepare: e.dodSetup(s)})
		if err != nil {
			// A DoD that could not run did not pass: record why, so that
			// neither status nor merge is left with an empty DoD verdict.
			verify.Verdicts{Scope: verdict, HasScope: true, DoD: verify.NotRun(err)}.Record(out)
			return fmt.Errorf("running the DoD: %w", err)
		}
	}
	vs := verify.Verdicts{Scope: verdict, HasScope: true, DoD: dod}
	vs.Record(out)
	if out.Reason == "" {
		out.Reason = vs.Explain()
	}
	return nil
}

// watchExtras are the places outside the worktree a worker must not touch
// that the watcher can see: the repository's hooks, config and info, the
// worktree's own config, and the directory holding the worktrees (writes
// through ../), minus the other sessions' registered worktrees.
func (e *Env) watchExtras(ctx context.Context, s sessions.Session, journal func() []gitstore.JournalEntry) []verify.Extra {
	loc, err := e.worktreeLocation(ctx, s.Worktree)
	if err != nil {
		return nil
	}
	return excuseJournaledWorktrees(verify.ExtrasAt(ctx, loc, s.Worktree), journal)
}

// worktreeLocation returns the git directories and top of the session's
// worktree, as gitcmd.Locate does: read in-process (its .git file, then
// its git dir's commondir) when they are as git worktree add makes them,
// else asked of git.
func (e *Env) worktreeLocation(ctx context.Context, worktree string) (gitcmd.Location, error) {
	g := e.St.Git().In(worktree)
	top, err := filepath.EvalSymlinks(worktree)
	if err == nil {
		if gitDir, err := worktreeGitDir(ctx, g); err == nil {
			if b, err := os.ReadFile(filepath.Join(gitDir, "commondir")); err == nil {
				c := strings.TrimSpace(string(b))
				if !filepath.IsAbs(c) {
					c = filepath.Join(gitDir, c)
				}
				if common, err := filepath.EvalSymlinks(c); err == nil && common == e.St.Location().CommonDir {
					return gitcmd.Location{Top: top, GitDir: gitDir, CommonDir: common}, nil
				}
			}
		}
	}
	return gitcmd.Locate(ctx, worktree)
}

func (e *Env) workerEnv(rec sessions.Record) []string {
	s := rec.Session
	env := append([]string{}, s.CommandEnv...)
	env = append(env, "AGENTMINE_TASK="+s.Task, "AGENTMINE_SESSION="+s.ID, "AGENTMINE_WORKTREE="+s.Worktree,
		"AGENTMINE_PROMPT_FILE="+filepath.Join(s.Worktree, PromptRel))
	return env
}

// usageTailBytes is how much of the end of a session log is read for the
// client's verdict and usage report (some clients report usage per step).
const usageTailBytes = 4 << 20

// tipOf returns what tells a stalled worker from a busy one besides its
// output: the tip of its branch (a new commit is progress). nil when the
// session has no stall timeout.
func (e *Env) tipOf(s sessions.Session) func() string {
	if s.StallTimeout <= 0 {
		return nil
	}
	return func() string {
		tip, _ := e.St.Git().Output(context.Background(), "rev-parse", "-q", "--verify", "refs/heads/"+s.Branch)
		return tip
	}
}

// stallsOf returns the stall phrases of the session's client, unless the
// agent replaced the adapter's command with its own.
func stallsOf(s sessions.Session) []string {
	c := launch.Client(s.Client)
	if len(s.Command) == 0 || s.Command[0] != launch.Binary(c) {
		return nil
	}
	return launch.StallPhrases(c)
}

// notWorkers tells the paths the live watcher ignores: agentmine's
// generated files and the worktree setup's.
func notWorkers(s sessions.Session) func(rel string) bool {
	generated, prepared := s.Generated, preparedOf(s)
	return func(rel string) bool { return isGenerated(rel, generated) || isGenerated(rel, prepared) }
}

// preparedOf lists the paths of the session's worktree setup (included,
// shared, and what the setup commands left): not the worker's changes.
func preparedOf(s sessions.Session) []string {
	if s.Setup == nil {
		return nil
	}
	var out []string
	for _, p := range append(append([]string{}, s.Setup.Include...), s.Setup.Share...) {
		out = append(out, p, p+"/") // a file, or a directory and what it holds
	}
	return append(out, s.Setup.Prepared...)
}

func isGenerated(rel string, generated []string) bool {
	for _, g := range generated {
		if rel == g || strings.HasSuffix(g, "/") && strings.HasPrefix(rel, g) || rel+"/" == g {
			return true
		}
	}
	return false
}

func appendLog(path, text string) error {
	if path == "" {
		return nil
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.WriteString(text)
	return err
}

// endedText says what ended a run after its exit code: " (SIGINT)" for
// Ctrl-C (the worker itself was sent SIGTERM for it), else as sigText.
func endedText(res launch.Result) string {
	if res.Interrupted && !res.TimedOut {
		return " (SIGINT)"
	}
	return sigText(res.Signal, res.TimedOut)
}

func sigText(sig string, timedOut bool) string {
	switch {
	case timedOut:
		return " (timed out)"
	case sig != "":
		return " (" + sig + ")"
	}
	return ""
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// DoneResult is what Done did. A second Done of the same session finds
// nothing to remove: every field is false or empty.
type DoneResult struct {
	// WorktreeRemoved is set when the worktree existed and was removed.
	WorktreeRemoved bool
	// BranchDeleted is set when the session's branch existed and was
	// deleted.
	BranchDeleted bool
	// BranchKept is set when the branch exists and was kept (its work has
	// not reached the base, and no force).
	BranchKept bool
	// Ended lists the processes of the session that were still running
	// (its supervisor was killed, say) and were ended first.
	Ended []launch.Proc
}

// Done ends a session's worktree: ends what is still running of the
// session (EndProcesses), restores write permission, removes the worktree,
// and deletes the branch only when its work reached the base (or force).
// A worktree that a process which is not provably the session's still
// uses (its working directory, an open or mapped file) is never removed:
// that is an ErrWorktreeInUse refusal naming the process, and nothing is
// changed. The session record stays.
func (e *Env) Done(ctx context.Context, rec sessions.Record, merged, force bool) (DoneResult, error) {
	var res DoneResult
	s := rec.Session
	live := board.LiveNow(rec, board.HereOf(e.St))
	switch {
	case live && s.Mode != sessions.ModeManual:
		return res, &RefusedError{Reason: ErrSessionLive, Task: s.Task[:8], Session: s.ID[:8], Err: fmt.Errorf("session %s is still running", s.ID[:8])}
	case live && !force:
		// A manual session without an outcome would stay in progress
		// forever once its worktree is gone.
		return res, &RefusedError{Reason: ErrNotEnded, Task: s.Task[:8], Session: s.ID[:8], Err: fmt.Errorf("session %s has not ended", s.ID[:8])}
	}
	ended, err := e.EndProcesses(ctx, rec)
	res.Ended = ended
	if err != nil {
		return res, err
	}
	_, statErr := os.Stat(s.Worktree)
	exists := statErr == nil
	if exists {
		if err := refuseInUse(s.Worktree, s.Task[:8], s.ID[:8]); err != nil {
			return res, err
		}
	}
	if live {
		out := sessions.Outcome{ExitCode: 1, Finished: time.Now().UTC(), Reason: "abandoned: worker done --force before an outcome was recorded", By: "worker done"}
		if err := sessions.RecordOutcome(ctx, e.St, rec, &out); err != nil {
			return res, err
		}
	}
	branch := ""
	if merged || force {
		branch = s.Branch
	}
	if exists {
		end := e.St.BeginWorktree(gitstore.JournalWorktreeRemove, s.Worktree)
		err := worktree.Remove(ctx, e.Top, s.Worktree, "", true)
		end()
		if err != nil {
			return res, err
		}
		res.WorktreeRemoved = true
	}
	if !e.branchExists(ctx, s.Branch) {
		return res, nil
	}
	if branch == "" {
		res.BranchKept = true
		return res, nil
	}
	// Through the store, so that the journal records the deletion
	// (supervisors of running sessions must not hold it against their
	// workers).
	if err := e.St.DeleteRef(ctx, "refs/heads/"+branch); err != nil {
		return res, fmt.Errorf("deleting branch %s: %w", branch, err)
	}
	if e.branchExists(ctx, branch) {
		return res, fmt.Errorf("deleting branch %s: it is still there", branch)
	}
	res.BranchDeleted = true
	return res, nil
}

// branchExists reports whether the local branch exists.
func (e *Env) branchExists(ctx context.Context, branch string) bool {
	if branch == "" {
		return false
	}
	_, err := e.St.Git().In(e.Top).Run(ctx, "rev-parse", "--verify", "-q", "refs/heads/"+branch)
	return err == nil
}

// refuseInUse returns an ErrWorktreeInUse refusal (for task and session,
// short ids) when a live process uses the worktree at path, nil otherwise.
func refuseInUse(path, task, session string) error {
	users, err := launch.UsersOf(path)
	if err != nil {
		return fmt.Errorf("checking what uses worktree %s: %w", path, err)
	}
	if len(users) == 0 {
		return nil
	}
	who := users[0].String()
	if len(users) > 1 {
		who += fmt.Sprintf(" and %d more", len(users)-1)
	}
	return &RefusedError{Reason: ErrWorktreeInUse, Task: task, Session: session, Pid: users[0].Pid,
		Err: fmt.Errorf("worktree %s is in use by a process that is not the session's: %s", path, who)}
}

func specOf(s sessions.Session) scope.Spec {
	return scope.Spec{Read: s.Scope.Read, Write: s.Scope.Write, Exclude: s.Scope.Exclude}
}

// stoppedBeforeStart is the result of a run whose context ended before its
// worker was started: a stop (SIGTERM, cause launch.ErrStopRequested) is
// recorded as the signal a running worker would have been ended with, an
// interruption (Ctrl-C) with exit code 130 and no signal: none was sent.
func stoppedBeforeStart(ctx context.Context) launch.Result {
	now := time.Now()
	if errors.Is(context.Cause(ctx), launch.ErrStopRequested) {
		return launch.Result{ExitCode: 128 + int(syscall.SIGTERM), Signal: "SIGTERM", Stopped: true, Started: now, Finished: now}
	}
	return launch.Result{ExitCode: exitcode.Interrupted, Interrupted: true, Started: now, Finished: now}
}

// rateLimited records on a failed run's outcome that its client reported
// a rate or usage limit (launch.ReadRateLimit): the client's words become
// the reason, after "rate limited: ".
func rateLimited(c launch.Client, tail []byte, finished time.Time, out *sessions.Outcome) {
	rl, ok := launch.ReadRateLimit(c, out.ExitCode, tail, finished)
	if !ok {
		return
	}
	out.RateLimit = &sessions.RateLimit{}
	if !rl.Until.IsZero() {
		u := rl.Until.UTC()
		out.RateLimit.Until = &u
	}
	out.Reason = "rate limited: " + rl.Reason
}
