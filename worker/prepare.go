// Package worker owns the life of one attempt at a task: preparing the
// session (record, branch, scoped worktree, Memory Bank snapshot, prompt and
// context files) as one unit that rolls back on failure, running the client
// under supervision, and judging the result from observable facts (exit
// code, signal, timeout, scope verification, Definition of Done) into the
// session's outcome note.
package worker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/git-agentmine/git-agentmine/agents"
	"github.com/git-agentmine/git-agentmine/board"
	"github.com/git-agentmine/git-agentmine/config"
	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/launch"
	"github.com/git-agentmine/git-agentmine/memory"
	"github.com/git-agentmine/git-agentmine/scope"
	"github.com/git-agentmine/git-agentmine/sessions"
	"github.com/git-agentmine/git-agentmine/status"
	"github.com/git-agentmine/git-agentmine/tasks"
	"github.com/git-agentmine/git-agentmine/verify"
	"github.com/git-agentmine/git-agentmine/worktree"
)

// Env is what every worker operation needs: the store, the configuration and
// where the repository lives.
type Env struct {
	St  *gitstore.Store
	Cfg config.Config
	// Top is the top of the main worktree (worktrees, agents, config).
	Top string
	// Self is the git-agentmine binary, which restricts a worker with
	// Landlock before running it; "" (a process that is not git-agentmine)
	// makes the landlock level unavailable.
	Self string
	// setupReaper supervises the worktree setup commands this process
	// runs, all of them (a pipeline prepares several worktrees at once):
	// one Reaper per process. nil gives each command its own.
	setupReaper *launch.Reaper
}

// NewEnv opens the configuration for st. flags holds command-line settings.
func NewEnv(st *gitstore.Store, flags map[string]string, getenv func(string) string) (*Env, error) {
	top := MainTop(st)
	cfg, err := config.Load(config.Options{Top: top, CommonDir: st.Location().CommonDir, Flags: flags, Getenv: getenv, GitConfig: st.Config})
	if err != nil {
		return nil, err
	}
	return &Env{St: st, Cfg: cfg, Top: top, Self: selfBinary(), setupReaper: launch.NewReaper()}, nil
}

// MainTop returns the main worktree's top: the parent of the common git dir
// when that is a ".git" directory, else the current worktree's top.
func MainTop(st *gitstore.Store) string {
	loc := st.Location()
	if filepath.Base(loc.CommonDir) == ".git" {
		return filepath.Dir(loc.CommonDir)
	}
	return loc.Top
}

// RunOptions are the choices of `worker run`.
type RunOptions struct {
	Task    string
	Agent   string
	Exec    bool
	Detach  bool
	Timeout time.Duration
	Base    string
	SkipDoD bool
	Force   bool
	Replace bool
	Strict  bool
	// Claim names a remote to claim the task on first (design §8); empty
	// uses the configured sync remote. NoClaim skips claiming.
	Claim   string
	NoClaim bool
	// ClaimUnseen says the caller listed the claim remote just now and
	// saw no claim on the task: the claim is pushed expecting none without
	// reading the remote first (a push that loses reads it, as always).
	ClaimUnseen bool
	// ClaimRequired says the caller would rather wait than run without a
	// claim: a claim the remote does not answer (a push cut off or timed
	// out, a listing that fails) is refused with ErrClaimBusy instead of
	// running locally without a claim, which another clone could then run
	// too. A run sets it until a task's claims went unanswered for a while.
	ClaimRequired bool
	// Feedback is appended to the prompt: what went wrong in the earlier
	// attempts (the supervisor's retries), so that a new attempt does not
	// repeat the identical failure. Empty adds nothing.
	Feedback string
	// Slot, when positive, is the session's place in a best-of round (run
	// --best-of): its worktree is task-<id>-<slot>, so the round's attempts
	// run side by side. Siblings are the sessions of the same round already
	// prepared: while only they run, the task is not refused as running.
	Slot     int
	Siblings []string
}

// Prepared is a session ready to run.
type Prepared struct {
	// Claimed names the remote the task was claimed on; ClaimNote says why
	// it was not claimed when a claim was wanted (offline).
	Claimed    string
	ClaimNote  string
	Rec        sessions.Record
	Task       tasks.Task
	Agent      agents.Agent
	Worktree   string
	PromptFile string
	Command    launch.Command
	Client     launch.Client
}

// Generated files agentmine writes into a worktree; never the worker's.
const (
	PromptRel = ".agentmine/prompt.md"
	MemoryRel = ".agentmine/memory/"
)

// Prepare does steps 1-4 of the lifecycle (design §6) as one unit.
func (e *Env) Prepare(ctx context.Context, o RunOptions) (p *Prepared, err error) {
	st := e.St
	taskID, claimShort, err := resolveTask(ctx, st, o.Task)
	if err != nil {
		return nil, err
	}
	// Only one process prepares a task at a time; the task's part of the
	// board (the task, its blockers and their sessions) is read after the
	// claim, so it sees a session the previous holder just recorded.
	release, err := claimTask(st, taskID, claimShort)
	if err != nil {
		return nil, err
	}
	defer release()
	b, _, err := board.LoadTask(ctx, st, e.Cfg.Base, taskID)
	if err != nil {
		return nil, err
	}
	task := b.Tasks.Tasks[taskID].Task
	short := b.Tasks.ShortID(taskID)
	if err := refuseStatus(b, taskID, o); err != nil {
		return nil, err
	}
	ag, spec, client, err := e.agentFor(o, task)
	if err != nil {
		return nil, err
	}
	wtPath, err := e.worktreePath(ctx, o, b, taskID)
	if err != nil {
		return nil, err
	}
	baseRef := firstNonEmpty(o.Base, task.Base, e.Cfg.Base)
	baseCommit, err := baseCommitOf(ctx, st, baseRef)
	if err != nil {
		return nil, err
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = ag.TimeoutOr(e.Cfg.Timeout)
	}
	dod := task.DoD
	if len(dod) == 0 {
		dod = ag.DoD
	}
	mode := o.mode()
	repoID, err := sessions.RepoID(st)
	if err != nil {
		return nil, err
	}
	sid := gitstore.NewID()
	pid := os.Getpid()
	pstart, _ := launch.StartTime(pid)
	sess := sessions.Session{ID: sid, Task: taskID, Agent: ag.Name, Client: string(client), Mode: mode,
		Branch: sessions.Branch(taskID, sid), BaseRef: baseRef, BaseCommit: baseCommit, Worktree: wtPath,
		Host: sessions.Host(), Repo: repoID, Pid: pid, PidStart: pstart, Timeout: int(timeout / time.Second), StallTimeout: int(ag.StallTimeout),
		Grace: int(e.Cfg.Grace / time.Second), Started: time.Now().UTC(),
		Scope: sessions.Scope{Read: spec.Read, Write: spec.Write, Exclude: spec.Exclude},
		DoD:   dod, DoDTimeout: int(e.Cfg.DoDTimeout / time.Second), SkipDoD: o.SkipDoD, Strict: o.Strict}
	if mode == sessions.ModeManual {
		sess.Pid, sess.PidStart = 0, 0
	} else if sess.Isolation, err = e.chooseIsolation(ctx, ag); err != nil {
		return nil, err
	} else if err := e.preflight(launch.Invocation{Client: client, Command: ag.Command, Worktree: wtPath, Task: taskID}, sess.Isolation); err != nil {
		return nil, err
	}
	sess.Setup = setupOf(ag, e.Cfg.DoDTimeout)
	if err := e.checkIncludes(ctx, ag, spec, sess.Setup, sess.Isolation); err != nil {
		return nil, err
	}
	logDir, err := st.LocalDir("logs")
	if err != nil {
		return nil, err
	}
	sess.Log = filepath.Join(logDir, sid+".log")

	// The client's version is recorded so that a changed flag can be traced
	// to a client release; asking takes seconds for some clients, so it
	// runs while the worktree is made.
	version := make(chan string, 1)
	if bin := clientBinary(client, ag.Command); bin != "" {
		go func() { version <- e.clientVersion(ctx, bin) }()
	} else {
		version <- ""
	}

	// From here on, every step is undone if a later one fails.
	var undo []func()
	defer func() {
		if err != nil {
			for i := len(undo) - 1; i >= 0; i-- {
				undo[i]()
			}
		}
	}()
	// The session's branch is made at its base in the session's own
	// transaction: the worktree is added on it.
	sess, root, err := sessions.Create(ctx, st, sess, gitstore.RefOp{Verb: "create", Ref: "refs/heads/" + sess.Branch, New: baseCommit})
	if err != nil {
		return nil, err
	}
	created := sessions.Record{Session: sess, Root: root} // sess changes below
	undo = append(undo, func() { undoSession(ctx, st, created) }, func() { e.dropBranch(context.WithoutCancel(ctx), sess.Branch, baseCommit) })
	claimedOn, claimNote, giveBack, err := e.claimFor(ctx, o, sess, root)
	if err != nil {
		return nil, err
	}
	if giveBack != nil {
		undo = append(undo, giveBack)
	}
	// The Memory Bank is read while the worktree is made.
	var mems []memory.Memory
	var memErr error
	memRead := make(chan struct{})
	go func() {
		defer close(memRead)
		mems, memErr = memory.Active(ctx, st)
	}()
	defer func() { <-memRead }()
	st.RecordWorktree(gitstore.JournalWorktreeAdd, wtPath)
	wt, err := worktree.Create(ctx, worktree.Options{Repo: e.Top, Path: wtPath, Branch: sess.Branch, BranchMade: true, Base: baseCommit, Scope: spec,
		CommonDir: st.Location().CommonDir, Config: st.Config, NoteConfig: st.NoteConfig, ExcludesFile: excludeRel, Reader: st})
	if err != nil {
		return nil, fmt.Errorf("preparing the worktree for task %s: %w", short, err)
	}
	undo = append(undo, func() {
		end := st.BeginWorktree(gitstore.JournalWorktreeRemove, wtPath)
		worktree.Remove(context.WithoutCancel(ctx), e.Top, wtPath, sess.Branch, true)
		end()
	})

	<-memRead
	if memErr != nil {
		return nil, memErr
	}
	generated, blobs, err := e.writeGenerated(ctx, wtPath, wt.GitDir, genInput{task: task, short: short, ag: ag, spec: spec,
		mems: mems, dod: dod, client: client, feedback: o.Feedback})
	if err != nil {
		return nil, err
	}
	promptFile := filepath.Join(wtPath, PromptRel)
	gitDirs := []string{st.Location().CommonDir}
	cmd, err := launch.Invocation{Client: client, Model: ag.Model, Command: ag.Command, PromptFile: promptFile,
		Worktree: wtPath, Task: taskID, Writable: gitDirs}.Build()
	if err != nil {
		return nil, exitcode.New(exitcode.Config, fmt.Errorf("agent %s: %w", ag.Name, err), "")
	}
	if err := e.setUp(ctx, sess, cmd, generated, ag, wt.GitDir); err != nil {
		return nil, err
	}
	clientVersion := <-version
	sess, err = sessions.UpdateAt(ctx, st, sess, root, "session prepared: worktree ready", func(s *sessions.Session) {
		s.ClientVersion = clientVersion
		s.Sparse = wt.Patterns
		s.Generated = generated
		s.GeneratedBlobs = blobs
		s.Command = cmd.Argv
		s.CommandEnv = cmd.Env
		s.CommandStdin = cmd.Stdin
		s.ClaimRemote = claimedOn
		s.Setup = sess.Setup
	})
	if err != nil {
		return nil, err
	}
	return &Prepared{Rec: sessions.Record{Session: sess, Root: root}, Task: task, Agent: ag, Worktree: wtPath,
		PromptFile: promptFile, Command: cmd, Client: client, Claimed: claimedOn, ClaimNote: claimNote}, nil
}

// dropBranch deletes the session's branch made with it when preparing
// fails before its worktree holds it: only while it is still at base, so
// that nothing committed on it is lost.
func (e *Env) dropBranch(ctx context.Context, branch, base string) {
	ref := "refs/heads/" + branch
	_, at, ok := e.St.ResolveCommit(ctx, ref)
	if !ok || at != base {
		return
	}
	_ = e.St.Transact(ctx, []gitstore.RefOp{{Verb: "delete", Ref: ref, Old: base}})
}

// worktreePath is where the task's worktree goes (a best-of attempt's
// has its slot appended); a worktree left there by an earlier session is
// refused, or removed with --replace.
func (e *Env) worktreePath(ctx context.Context, o RunOptions, b *board.Board, taskID string) (string, error) {
	short := b.Tasks.ShortID(taskID)
	wtPath := filepath.Join(e.Cfg.WorktreeDir(e.Top), "task-"+taskID[:8])
	if o.Slot > 0 {
		wtPath += fmt.Sprintf("-%d", o.Slot)
	}
	if _, err := os.Lstat(wtPath); err != nil {
		return wtPath, nil
	}
	if !o.Replace {
		return "", &RefusedError{Reason: ErrLeftover, Task: short, Err: fmt.Errorf("a worktree from an earlier session of task %s is still at %s", short, wtPath)}
	}
	if err := e.removeLeftover(ctx, wtPath, short, b.SessionsOf(taskID)); err != nil {
		return "", err
	}
	return wtPath, nil
}

// genInput is what the files agentmine writes into a worktree are made of.
type genInput struct {
	task     tasks.Task
	short    string
	ag       agents.Agent
	spec     scope.Spec
	mems     []memory.Memory
	dod      []string
	client   launch.Client
	feedback string
}

// writeGenerated writes the Memory Bank snapshot, the prompt (with any
// feedback) and the client's context files into the worktree at wtPath,
// ignores them (and the included paths) in its git dir, and returns
// their paths and the blobs of what was written: only that, byte for
// byte, is exempt from the scope.
func (e *Env) writeGenerated(ctx context.Context, wtPath, gitDir string, in genInput) ([]string, map[string]string, error) {
	st := e.St
	memPaths, err := memory.WriteSnapshot(wtPath, in.mems)
	if err != nil {
		return nil, nil, fmt.Errorf("writing the Memory Bank snapshot: %w", err)
	}
	promptText, err := BuildPrompt(e.Top, in.task, in.short, in.ag, in.spec, in.mems, in.dod)
	if err != nil {
		return nil, nil, err
	}
	if in.feedback != "" {
		promptText = strings.TrimRight(promptText, "\n") + "\n\n" + strings.TrimRight(in.feedback, "\n") + "\n"
	}
	if err := worktree.WriteFile(wtPath, PromptRel, []byte(promptText), true); err != nil {
		return nil, nil, fmt.Errorf("writing the prompt: %w", err)
	}
	generated := []string{PromptRel, MemoryRel}
	ctxFiles, err := writeContextFiles(ctx, st, wtPath, in.client, promptText)
	if err != nil {
		return nil, nil, err
	}
	generated = append(generated, ctxFiles...)
	// What was written, byte for byte: only that is exempt from the scope.
	written := append(append([]string{PromptRel}, memPaths...), ctxFiles...)
	format := "sha1"
	if st.HashLen() == 32 {
		format = "sha256"
	}
	blobs, err := verify.GeneratedBlobsIn(wtPath, format, written)
	if err != nil {
		return nil, nil, err
	}
	// Included paths are ignored in the worktree too: the worker's `add -A`
	// must not commit the person's files (or a link to them).
	if err := ignoreGenerated(st, gitDir, append(slices.Clone(generated), in.ag.Worktree.Paths()...)); err != nil {
		return nil, nil, err
	}
	return generated, blobs, nil
}

// claimFor claims the task on the remote sharing is configured with, if
// any: it returns where it was claimed, a note when the remote could not
// be reached (the worker runs locally without a claim), and what gives
// the claim back if preparing fails later.
func (e *Env) claimFor(ctx context.Context, o RunOptions, sess sessions.Session, root string) (on, note string, giveBack func(), err error) {
	remote := e.claimRemoteFor(o)
	if remote == "" {
		return "", "", nil, nil
	}
	ok, replaced, err := e.claim(ctx, remote, sess, root, o.ClaimUnseen)
	switch {
	case ok:
		return remote, "", func() {
			e.giveBack(context.WithoutCancel(ctx), remote, sess.Task, root, replaced, sess.ID)
		}, nil
	case IsOffline(err) && o.ClaimRequired:
		// The push may have taken the claim after all: put it back if it
		// is ours (only if still at root), so no claim outlives a session
		// that never runs.
		gctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), claimTimeout)
		e.giveBack(gctx, remote, sess.Task, root, replaced, sess.ID)
		cancel()
		return "", "", nil, exitcode.New(exitcode.State, fmt.Errorf("task %s: %w: %w", sess.Task[:8], ErrClaimBusy, err), "try again")
	case IsOffline(err):
		return "", err.Error() + "; running locally without a claim", nil, nil
	case err != nil:
		return "", "", nil, err
	}
	return "", "", nil, nil
}

// refuseStatus refuses a task no worker may start on now: a goal, a
// cancelled, done or tainted task, one already running (other than this
// best-of round's own attempts), planned or reviewed, or one whose
// blockers are not done (unless forced).
func refuseStatus(b *board.Board, taskID string, o RunOptions) error {
	short := b.Tasks.ShortID(taskID)
	res := b.Status[taskID]
	if res.Children != nil {
		return &RefusedError{Reason: ErrGoal, Task: short, Err: fmt.Errorf("task %s has children: its status rolls up from theirs (%s), no worker runs on it", short, res.Reason)}
	}
	switch res.Status {
	case status.Cancelled:
		return &RefusedError{Reason: ErrCancelled, Task: short, Err: fmt.Errorf("task %s is cancelled", short)}
	case status.Done:
		return exitcode.New(exitcode.State, fmt.Errorf("task %s is done (%s)", short, res.Reason), "")
	case status.Tainted:
		return &RefusedError{Reason: ErrTainted, Task: short, Err: fmt.Errorf("task %s is tainted: %s", short, res.Reason)}
	case status.InProgress:
		if o.Slot > 0 && onlySiblings(b, taskID, o.Siblings) {
			break
		}
		return &RefusedError{Reason: ErrRunning, Task: short, Err: fmt.Errorf("task %s is already running (%s)", short, res.Reason)}
	case status.Planning, status.Reviewing:
		return &RefusedError{Reason: ErrRunning, Task: short, Err: fmt.Errorf("task %s is %s (%s)", short, res.Status, res.Reason)}
	}
	if res.Blocked && !o.Force {
		if c := b.CancelledBlockers(taskID); len(c) > 0 {
			var cs []string
			for _, x := range c {
				cs = append(cs, b.Tasks.ShortID(x))
			}
			return &RefusedError{Reason: ErrBlockedByCancelled, Task: short, Blockers: cs,
				Err: fmt.Errorf("task %s is blocked by cancelled %s %s, which will never be done", short, pluralWord(len(cs), "task", "tasks"), strings.Join(cs, ", "))}
		}
		var w []string
		for _, x := range res.Waiting {
			w = append(w, b.Tasks.ShortID(x))
		}
		return exitcode.New(exitcode.State, fmt.Errorf("task %s is blocked by unfinished tasks: %s", short, strings.Join(w, ", ")), "finish those first, or pass --force")
	}
	return nil
}

// agentFor resolves the agent for the task (o.Agent, the task's assignee,
// the default) and checks its definition, scope and client.
func (e *Env) agentFor(o RunOptions, task tasks.Task) (agents.Agent, scope.Spec, launch.Client, error) {
	ag, err := e.ResolveAgent(o.Agent, task)
	if err != nil {
		return agents.Agent{}, scope.Spec{}, "", err
	}
	if probs := agents.Validate(e.Top, ag); len(probs) > 0 {
		return agents.Agent{}, scope.Spec{}, "", agents.ValidationError(ag.Name, probs)
	}
	spec := scope.Spec{Read: ag.Scope.Read, Write: ag.Scope.Write, Exclude: ag.Scope.Exclude}
	if err := spec.Validate(); err != nil {
		return agents.Agent{}, scope.Spec{}, "", exitcode.New(exitcode.Config, fmt.Errorf("agent %s: %w", ag.Name, err), "")
	}
	client, err := launch.ParseClient(ag.ClientOr(e.Cfg.Client))
	if err != nil {
		return agents.Agent{}, scope.Spec{}, "", exitcode.New(exitcode.Config, fmt.Errorf("agent %s: %w", ag.Name, err), "")
	}
	return ag, spec, client, nil
}

// baseCommitOf resolves the base ref to its commit, saying when the
// repository has no commits at all.
func baseCommitOf(ctx context.Context, st *gitstore.Store, baseRef string) (string, error) {
	_, baseCommit, ok := st.ResolveCommit(ctx, baseRef)
	if ok && baseCommit != "" {
		return baseCommit, nil
	}
	// In a repository with no commits no base can exist: say that.
	if err := st.RequireCommits(ctx); err != nil {
		return "", err
	}
	return "", exitcode.New(exitcode.NotFound, fmt.Errorf("base ref %q does not exist", baseRef), "pass --base <ref>, or set the base in .agentmine/config.toml")
}

// mode is the session mode the options ask for: manual without --exec.
func (o RunOptions) mode() string {
	if !o.Exec {
		return sessions.ModeManual
	}
	if o.Detach {
		return sessions.ModeDetach
	}
	return sessions.ModeExec
}

// onlySiblings reports whether every session of the task that runs is one
// of siblings (the best-of round being started).
func onlySiblings(b *board.Board, taskID string, siblings []string) bool {
	for _, r := range b.SessionsOf(taskID) {
		if r.Session.IsAttempt() && board.LiveNow(r, b.Here) && !slices.Contains(siblings, r.Session.ID) {
			return false
		}
	}
	return true
}

// undoSession rolls back the session rec that a preparation recorded
// before it failed. Stopped (run stop, worker stop) or interrupted (Ctrl-C),
// the preparation keeps the session, recorded as stopped before its worker
// started (as Execute records one): readers may have listed it as running
// already, and it must not vanish from under them. Any other failure
// deletes it: nothing ran.
func undoSession(ctx context.Context, st *gitstore.Store, rec sessions.Record) {
	wctx := context.WithoutCancel(ctx)
	if ctx.Err() == nil {
		sessions.Delete(wctx, st, rec.Session.ID)
		return
	}
	res := stoppedBeforeStart(ctx)
	out := sessions.Outcome{ExitCode: res.ExitCode, Signal: res.Signal, Finished: res.Finished.UTC(),
		Reason: "stopped before the worker started", By: "agentmine " + rec.Session.Mode}
	if res.Interrupted {
		out.Reason = "interrupted before the worker started"
	}
	sessions.RecordOutcome(wctx, st, rec, &out)
}

// resolveTask turns the task named on the command line into its canonical
// id and short form, reading only the tasks near it. A full id needs no
// reading: the board read after the claim (board.LoadTask) says whether
// the task exists.
func resolveTask(ctx context.Context, st *gitstore.Store, name string) (id, short string, err error) {
	if p := strings.ToLower(strings.TrimSpace(name)); len(p) == gitstore.IDLen && gitstore.ValidID(p) {
		return p, p[:gitstore.MinPrefix+4], nil
	}
	var refs, commits []string
	if near := tasks.NearPatterns(name); near != nil {
		if refs, commits, err = st.TipList(ctx, near...); err != nil {
			return "", "", err
		}
	}
	tb, id, err := tasks.LoadNear(ctx, st, name, refs, commits)
	if err != nil {
		return "", "", err
	}
	return id, tb.ShortID(id), nil
}

// removeLeftover removes a finished session's worktree for --replace,
// after ending what its sessions left running; like Done, it refuses when
// a process that is not theirs still uses it.
func (e *Env) removeLeftover(ctx context.Context, path, task string, recs []sessions.Record) error {
	for _, r := range recs {
		if r.Session.Worktree != path {
			continue
		}
		if _, err := e.EndProcesses(ctx, r); err != nil {
			return err
		}
	}
	if err := refuseInUse(path, task, ""); err != nil {
		return err
	}
	// The branch stays: it holds the earlier attempt's commits.
	end := e.St.BeginWorktree(gitstore.JournalWorktreeRemove, path)
	err := worktree.Remove(ctx, e.Top, path, "", true)
	end()
	if err != nil {
		return fmt.Errorf("removing the leftover worktree: %w", err)
	}
	return nil
}

// clientBinary is the program whose --version describes the client: the
// agent's own command if it overrides the adapter's, "" for custom clients.
func clientBinary(c launch.Client, command []string) string {
	if c == launch.Custom {
		return ""
	}
	if len(command) > 0 {
		return command[0]
	}
	return launch.Binary(c)
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

func pluralWord(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
