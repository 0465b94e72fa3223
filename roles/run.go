// Package roles owns running planner and reviewer agents (design §1, seed
// 003): an agent whose definition says role = "planner" or "reviewer" runs
// through the same launch adapters, timeouts and logs as a worker, in a
// read-only detached worktree of the commit it must look at, and hands its
// answer back as a JSON file whose path its prompt names. Each run is a
// session with the role recorded, visible like a worker's, but it is never
// an attempt at its task. On top of Run sit the three things the loop asks
// of these agents: a plan (Plan), a review of a finished session (Review)
// and a replan after a review said NG (Replan).
package roles

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/git-agentmine/git-agentmine/agents"
	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/launch"
	"github.com/git-agentmine/git-agentmine/safefile"
	"github.com/git-agentmine/git-agentmine/sessions"
	"github.com/git-agentmine/git-agentmine/worker"
	"github.com/git-agentmine/git-agentmine/worktree"
)

// OutputPlaceholder is replaced in a custom command by the path of the file
// the agent must write its JSON answer to.
const OutputPlaceholder = "{output_file}"

// MaxOutputBytes bounds the answer file read back.
const MaxOutputBytes = 4 << 20

// Request is one run of a planner or reviewer agent.
type Request struct {
	// Role is agents.RolePlanner or agents.RoleReviewer.
	Role string
	// Agent names the agent; "" picks one with the role (PickAgent).
	Agent string
	// Task is the canonical id of the task the run is about.
	Task string
	// Commit is what the read-only worktree checks out (any commit-ish).
	Commit string
	// Prompt is the agent's prompt; Run appends where to write the answer.
	Prompt string
	// Reviews is the session a reviewer reviews, or the attempt whose NG
	// or failures a planner's replan answers ("" for a first plan).
	Reviews string
	// Timeout overrides the agent's (then the project's) timeout.
	Timeout time.Duration
	// Tee receives the agent's output too; Progress one-line messages.
	Tee, Progress io.Writer
}

// Result is a finished run.
type Result struct {
	// Session is the run's session record, with its outcome.
	Session sessions.Record
	// Agent is the definition that ran.
	Agent agents.Agent
	// Output is the JSON answer the agent wrote.
	Output []byte
	// OutputFile is where it was written.
	OutputFile string
}

// ErrInfra matches every InfraError.
var ErrInfra = errors.New("planner or reviewer run failed to produce an answer")

// InfraError is a run that produced no answer for reasons a retry may
// cure: the client could not be started, it failed or timed out, or it
// wrote no answer file. The supervisor retries these with backoff; they
// are never attempts at the task and never a verdict.
type InfraError struct {
	// Role and Agent say what ran; Session is its session ("" when none
	// was recorded).
	Role, Agent, Session string
	Err                  error
}

func (e *InfraError) Error() string {
	s := e.Role + " " + e.Agent
	if e.Session != "" {
		s += " (session " + short(e.Session) + ")"
	}
	return s + ": " + e.Err.Error()
}

// Unwrap returns the cause.
func (e *InfraError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrInfra) true.
func (e *InfraError) Is(target error) bool { return target == ErrInfra }

// ExitCode is exitcode.Failed.
func (e *InfraError) ExitCode() int { return exitcode.Failed }

// Retryable reports whether err is an InfraError (a run worth retrying).
func Retryable(err error) bool { return errors.Is(err, ErrInfra) }

// ChangedError is a run that changed its read-only worktree: its answer is
// not used. It is not retryable: the agent misbehaved.
type ChangedError struct {
	Role, Agent, Session string
	// Paths lists what changed (a few).
	Paths []string
}

func (e *ChangedError) Error() string {
	return fmt.Sprintf("%s %s (session %s) changed its read-only worktree: %s; its answer is not used", e.Role, e.Agent, short(e.Session), strings.Join(e.Paths, ", "))
}

// ExitCode is exitcode.Failed.
func (e *ChangedError) ExitCode() int { return exitcode.Failed }

// NoAgentError says that no agent has the role a run needs.
type NoAgentError struct{ Role string }

func (e *NoAgentError) Error() string {
	return fmt.Sprintf("no %s agent is defined (an agent under %s with role = %q)", e.Role, agents.Dir, e.Role)
}

// ExitCode is exitcode.NotFound.
func (e *NoAgentError) ExitCode() int { return exitcode.NotFound }

// PickAgent returns the agent named name, which must have the role, or
// when name is "": the agent named like the role if it has the role, else
// the first agent (by name) with it. No such agent is a NotFound error
// that says how to define one.
func PickAgent(top, role, name string) (agents.Agent, error) {
	if name != "" {
		a, err := agents.Get(top, name)
		if err != nil {
			return agents.Agent{}, err
		}
		if a.RoleOr() != role {
			return agents.Agent{}, exitcode.New(exitcode.Config, fmt.Errorf("agent %s has role %s, not %s", name, a.RoleOr(), role),
				"set role = \""+role+"\" in "+a.File+", or name a "+role+" agent")
		}
		return a, nil
	}
	defs, _, err := agents.Load(top)
	if err != nil {
		return agents.Agent{}, err
	}
	var found []agents.Agent
	for _, a := range defs {
		if a.RoleOr() == role {
			if a.Name == role {
				return a, nil
			}
			found = append(found, a)
		}
	}
	if len(found) == 0 {
		return agents.Agent{}, &NoAgentError{Role: role}
	}
	sort.Slice(found, func(i, j int) bool { return found[i].Name < found[j].Name })
	return found[0], nil
}

// Run runs a planner or reviewer agent: it records a session with the
// role, checks req.Commit out in a detached worktree made read-only,
// launches the agent there like a worker (adapter or custom command,
// timeout, process group, log), checks afterwards that nothing in the
// worktree changed, removes the worktree, records the outcome (sealed, so
// only this process can have written it) and returns the answer file's
// content. Failures to produce an answer are *InfraError; a changed
// worktree is *ChangedError; the session is recorded either way.
//
// The agent runs under launch.Start with a Reaper of its own: while it
// runs, this process is a child subreaper, and when it ends, processes of
// this process that left their session and carry no marker are taken for
// the agent's leftovers and ended. Call Run from a process that has no
// other such descendants (a detached worker supervisor started by the same
// process would be one), or run it in a process of its own.
func Run(ctx context.Context, env *worker.Env, req Request) (*Result, error) {
	if req.Role != agents.RolePlanner && req.Role != agents.RoleReviewer {
		return nil, fmt.Errorf("running an agent: role %q is not planner or reviewer", req.Role)
	}
	p, err := prepare(ctx, env, req)
	if err != nil {
		return nil, err
	}
	r, err := p.record(ctx)
	if err != nil {
		return nil, err
	}
	return r.run(ctx)
}

// roleRun is one planner or reviewer run as Run takes it through its steps:
// what was resolved before the session exists (prepare), then the session
// and its seal (record), then the worktree and the agent (run).
type roleRun struct {
	env     *worker.Env
	req     Request
	ag      agents.Agent
	client  launch.Client
	commit  string
	timeout time.Duration
	sid     string
	wtPath  string
	outFile string
	cmd     launch.Command
	rec     sessions.Record
	seal    sessions.Seal
	nonce   *sessions.Nonce
}

// say prints a progress line when the request asked for them.
func (r *roleRun) say(format string, a ...any) {
	if r.req.Progress != nil {
		fmt.Fprintf(r.req.Progress, format+"\n", a...)
	}
}

// infra wraps err as the run's *InfraError.
func (r *roleRun) infra(err error) error {
	return &InfraError{Role: r.req.Role, Agent: r.ag.Name, Session: r.sid, Err: err}
}

// prepare resolves the agent, its client, the commit and the timeout,
// clears worktrees left by killed runs, and writes the prompt: everything
// before a session is recorded, so a bad request records nothing.
func prepare(ctx context.Context, env *worker.Env, req Request) (*roleRun, error) {
	r := &roleRun{env: env, req: req}
	ag, err := PickAgent(env.Top, req.Role, req.Agent)
	if err != nil {
		return nil, err
	}
	if probs := agents.Validate(env.Top, ag); len(probs) > 0 {
		return nil, agents.ValidationError(ag.Name, probs)
	}
	r.ag = ag
	if r.client, err = launch.ParseClient(ag.ClientOr(env.Cfg.Client)); err != nil {
		return nil, exitcode.New(exitcode.Config, fmt.Errorf("agent %s: %w", ag.Name, err), "")
	}
	r.commit, err = env.St.Git().Output(ctx, "rev-parse", "--verify", "-q", "--end-of-options", req.Commit+"^{commit}")
	if err != nil || r.commit == "" {
		return nil, exitcode.New(exitcode.NotFound, fmt.Errorf("running %s %s: %q does not name a commit", req.Role, ag.Name, req.Commit), "")
	}
	r.timeout = req.Timeout
	if r.timeout <= 0 {
		r.timeout = ag.TimeoutOr(env.Cfg.Timeout)
	}
	if gone, err := CleanLeftovers(ctx, env); err != nil {
		r.say("warning: removing worktrees left by killed %s runs: %v", req.Role, err)
	} else if len(gone) > 0 {
		r.say("removed %d worktree(s) left by killed planner or reviewer runs", len(gone))
	}
	r.sid = gitstore.NewID()
	dir, err := env.St.LocalDir("roles", r.sid)
	if err != nil {
		return nil, err
	}
	r.wtPath = filepath.Join(env.Cfg.WorktreeDir(env.Top), req.Role+"-"+r.sid[:8])
	promptFile := filepath.Join(dir, "prompt.md")
	r.outFile = filepath.Join(dir, "answer.json")
	prompt := strings.TrimRight(req.Prompt, "\n") + "\n\n## Your answer\n\n" +
		"Write your answer as one JSON document to this file (create it; it is outside the\n" +
		"repository, which is read-only for you):\n\n    " + r.outFile + "\n\n" +
		"Do not change any file of the repository. Nothing but that JSON file is read.\n"
	if err := os.WriteFile(promptFile, []byte(prompt), 0o644); err != nil {
		return nil, fmt.Errorf("writing the %s prompt: %w", req.Role, err)
	}
	r.cmd, err = launch.Invocation{Client: r.client, Model: ag.Model, Command: ag.Command, PromptFile: promptFile,
		Worktree: r.wtPath, Task: req.Task, OutputFile: r.outFile, Writable: []string{dir}}.Build()
	if err != nil {
		return nil, exitcode.New(exitcode.Config, fmt.Errorf("agent %s: %w", ag.Name, err), "")
	}
	return r, nil
}

// record creates the run's session, with its role, and seals it to this
// process.
func (r *roleRun) record(ctx context.Context) (*roleRun, error) {
	st := r.env.St
	repoID, err := sessions.RepoID(st)
	if err != nil {
		return nil, err
	}
	logDir, err := st.LocalDir("logs")
	if err != nil {
		return nil, err
	}
	pid := os.Getpid()
	pstart, _ := launch.StartTime(pid)
	req := r.req
	sess := sessions.Session{ID: r.sid, Task: req.Task, Agent: r.ag.Name, Client: string(r.client), Mode: sessions.ModeExec,
		Role: req.Role, Reviews: req.Reviews, BaseRef: req.Commit, BaseCommit: r.commit, Worktree: r.wtPath,
		Host: sessions.Host(), Repo: repoID, Pid: pid, PidStart: pstart, Timeout: int(r.timeout / time.Second),
		Grace: int(r.env.Cfg.Grace / time.Second), Started: time.Now().UTC(), Scope: sessions.Scope{Read: []string{"**"}, Write: []string{}, Exclude: []string{}},
		Command: r.cmd.Argv, CommandEnv: r.cmd.Env, CommandStdin: r.cmd.Stdin, Log: filepath.Join(logDir, r.sid+".log")}
	sess, root, err := sessions.Create(ctx, st, sess)
	if err != nil {
		return nil, err
	}
	r.rec = sessions.Record{Session: sess, Root: root}
	if r.seal, r.nonce, err = sessions.NewSeal(sessions.Host(), pid, pstart); err != nil {
		return nil, err
	}
	sealed, err := sessions.SealSession(ctx, st, r.sid, r.seal)
	if err != nil {
		return nil, err
	}
	r.rec.Session = sealed.Session
	return r, nil
}

// finish records the run's outcome, sealed by this process.
func (r *roleRun) finish(ctx context.Context, out sessions.Outcome) error {
	out.By = "agentmine " + r.req.Role
	out.Supervisor = r.nonce.Proof(r.seal)
	if out.Finished.IsZero() {
		out.Finished = time.Now().UTC()
	}
	return sessions.RecordOutcome(ctx, r.env.St, r.rec, &out)
}

// failed records an outcome for a run that could not get its agent going
// and returns err as an *InfraError joined with any failure to record it.
func (r *roleRun) failed(ctx context.Context, err error, why error) error {
	ferr := r.finish(ctx, sessions.Outcome{ExitCode: 127, Reason: firstLine(why.Error())})
	return errors.Join(r.infra(err), ferr)
}

// run checks the commit out read-only, runs the agent there, checks that
// nothing in the worktree changed, records the outcome and reads the
// answer.
func (r *roleRun) run(ctx context.Context) (*Result, error) {
	st := r.env.St
	jctx := context.WithoutCancel(ctx)
	st.RecordWorktree(gitstore.JournalWorktreeAdd, r.wtPath)
	if err := worktree.AddDetached(ctx, r.env.Top, r.wtPath, r.commit, nil); err != nil {
		return nil, r.failed(jctx, fmt.Errorf("preparing its read-only worktree: %w", err), err)
	}
	defer func() {
		worktree.MakeWritable(r.wtPath)
		// Journaled first, as the add was: a worker running meanwhile
		// sees the worktree go and its supervisor must know it was ours.
		end := st.BeginWorktree(gitstore.JournalWorktreeRemove, r.wtPath)
		worktree.Remove(jctx, r.env.Top, r.wtPath, "", true)
		end()
	}()
	if err := makeReadOnly(r.wtPath); err != nil {
		return nil, r.failed(jctx, fmt.Errorf("making its worktree read-only: %w", err), err)
	}
	before, err := snapshot(r.wtPath)
	if err != nil {
		return nil, r.failed(jctx, err, err)
	}
	proc, startErr := launch.Start(ctx, launch.Spec{Argv: r.cmd.Argv, Dir: r.wtPath, Env: r.cmd.Env, Stdin: r.cmd.Stdin,
		LogPath: r.rec.Session.Log, Tee: r.req.Tee, Timeout: r.timeout, Grace: r.env.Cfg.Grace, Stalls: launch.StallPhrases(r.client), Client: r.client})
	if startErr != nil {
		return nil, r.failed(jctx, fmt.Errorf("could not start: %w", startErr), startErr)
	}
	r.say("%s %s started: pid %d, timeout %s, log %s", r.req.Role, r.ag.Name, proc.Pid(), r.timeout, r.rec.Session.Log)
	if s, err := sessions.Update(ctx, st, r.sid, "session: "+r.req.Role+" started", func(s *sessions.Session) {
		s.WorkerPid, s.WorkerStart = proc.Pid(), proc.StartTime()
	}); err == nil {
		r.rec.Session = s
	}
	res := proc.Wait()
	out := r.outcome(res)
	changed := r.unchanged(jctx, &out, before)
	answer, rerr := readAnswer(r.outFile)
	if err := r.finish(jctx, out); err != nil {
		return nil, err
	}
	if got, err := sessions.Get(jctx, st, r.sid); err == nil {
		r.rec = got
	}
	result := &Result{Session: r.rec, Agent: r.ag, Output: answer, OutputFile: r.outFile}
	r.say("%s %s ended: exit %d%s", r.req.Role, r.ag.Name, out.ExitCode, map[bool]string{true: " (timed out)"}[res.TimedOut])
	return result, r.judge(out, res.TimedOut, changed, rerr)
}

// outcome is what the agent's process and its log say: exit, signal,
// timeout, the client's own verdict and its usage.
func (r *roleRun) outcome(res launch.Result) sessions.Outcome {
	out := sessions.Outcome{ExitCode: res.ExitCode, Signal: res.Signal, TimedOut: res.TimedOut, Finished: res.Finished.UTC()}
	tail, _ := launch.TailBytes(r.rec.Session.Log, 1<<20)
	if v := launch.ReadVerdict(r.client, res.ExitCode, tail); v.Reason != "" {
		out.Reason = v.Reason
		if v.Failed && out.ExitCode == 0 {
			out.ExitCode = 1
		}
	}
	u, ok := launch.ReadUsage(r.client, tail)
	if res.Usage != nil {
		u, ok = *res.Usage, true
	}
	if ok {
		out.Usage = &sessions.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
			CacheReadTokens: u.CacheReadTokens, CacheWriteTokens: u.CacheWriteTokens, CostUSD: u.CostUSD}
	}
	return out
}

// unchanged checks that the worktree and its HEAD are as they were before
// the agent ran, records the answer in out.ScopeValid (and the reason) and
// returns what changed.
func (r *roleRun) unchanged(ctx context.Context, out *sessions.Outcome, before map[string]fileState) []string {
	changed, serr := changes(r.wtPath, before)
	if head, err := r.env.St.Git().In(r.wtPath).Output(ctx, "rev-parse", "HEAD"); serr == nil && (err != nil || head != r.commit) {
		changed = append(changed, "moved HEAD from "+short(r.commit)+" to "+short(head))
	}
	valid := serr == nil && len(changed) == 0
	out.ScopeValid = &valid
	if !valid {
		if serr != nil {
			changed = []string{serr.Error()}
		}
		out.Reason = "changed its read-only worktree: " + strings.Join(changed, ", ")
	}
	return changed
}

// judge is the error Run returns for a recorded outcome: a changed
// worktree, a timeout, a failed exit, or an answer that could not be read.
func (r *roleRun) judge(out sessions.Outcome, timedOut bool, changed []string, rerr error) error {
	switch {
	case !*out.ScopeValid:
		return &ChangedError{Role: r.req.Role, Agent: r.ag.Name, Session: r.sid, Paths: changed}
	case timedOut:
		return r.infra(fmt.Errorf("timed out after %s", r.timeout))
	case out.ExitCode != 0:
		why := fmt.Sprintf("exited %d", out.ExitCode)
		if out.Reason != "" {
			why += ": " + out.Reason
		}
		return r.infra(errors.New(why))
	case rerr != nil:
		return r.infra(rerr)
	}
	return nil
}

// Unfence returns an answer without the one Markdown code fence some
// clients wrap a JSON file's content in ("```json" … "```"); any other
// answer is returned as it is.
func Unfence(data []byte) []byte {
	t := strings.TrimSpace(string(data))
	if !strings.HasPrefix(t, "```") || !strings.HasSuffix(t, "```") || len(t) < 6 {
		return data
	}
	body := strings.TrimSuffix(t, "```")
	nl := strings.IndexByte(body, '\n')
	if nl < 0 {
		return data
	}
	if lang := strings.TrimSpace(body[3:nl]); lang != "" && lang != "json" {
		return data
	}
	return []byte(strings.TrimSpace(body[nl+1:]))
}

func readAnswer(path string) ([]byte, error) {
	// The agent wrote it: opened without blocking (a FIFO it left must not
	// hang the command), a regular file only, read with a bound.
	data, err := safefile.ReadFile(path, MaxOutputBytes)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, errors.New("it wrote no answer file")
	case errors.Is(err, safefile.ErrTooLarge):
		return nil, fmt.Errorf("its answer is larger than %d bytes", MaxOutputBytes)
	case err != nil:
		return nil, fmt.Errorf("reading its answer: %w", err)
	}
	return Unfence(data), nil
}

// makeReadOnly takes every write bit off the files and directories under
// root (symbolic links and the .git link file aside): a guard rail only,
// which root and the owner can undo; changes finds what was changed.
func makeReadOnly(root string) error {
	var dirs []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 || p == filepath.Join(root, ".git") {
			return nil
		}
		if d.IsDir() {
			dirs = append(dirs, p)
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		return os.Chmod(p, fi.Mode().Perm()&^0o222)
	})
	if err != nil {
		return err
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		fi, err := os.Stat(dirs[i])
		if err != nil {
			return err
		}
		if err := os.Chmod(dirs[i], fi.Mode().Perm()&^0o222); err != nil {
			return err
		}
	}
	return nil
}

// fileState is what a read-only worktree's entry must still be after a run.
type fileState struct {
	mode  fs.FileMode
	size  int64
	mtime int64
	link  string
}

// snapshot records every entry of the worktree (the .git link file aside).
func snapshot(root string) (map[string]fileState, error) {
	out := map[string]fileState{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if rel == ".git" {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		s := fileState{mode: fi.Mode(), size: fi.Size(), mtime: fi.ModTime().UnixNano()}
		if d.IsDir() {
			s.size, s.mtime = 0, 0
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			s.link, _ = os.Readlink(p)
		}
		out[filepath.ToSlash(rel)] = s
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the read-only worktree: %w", err)
	}
	return out, nil
}

// changes lists (at most five) paths that differ from the snapshot.
func changes(root string, before map[string]fileState) ([]string, error) {
	after, err := snapshot(root)
	if err != nil {
		return nil, err
	}
	var out []string
	for p, a := range after {
		b, ok := before[p]
		switch {
		case !ok:
			out = append(out, "created "+p)
		case a != b:
			out = append(out, "modified "+p)
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			out = append(out, "removed "+p)
		}
	}
	sort.Strings(out)
	if len(out) > 5 {
		out = append(out[:5], fmt.Sprintf("and %d more", len(out)-5))
	}
	return out, nil
}

func short(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}
