package verify

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/gitcmd"
	"github.com/git-agentmine/git-agentmine/worktree"
)

// DoD statuses, as recorded in the outcome note.
const (
	DoDPassed  = "passed"
	DoDFailed  = "failed"
	DoDTimeout = "timeout"
	DoDSkipped = "skipped"
)

// CommandResult is the outcome of one Definition-of-Done command.
type CommandResult struct {
	// Cmd is the shell command as configured.
	Cmd string `json:"cmd"`
	// ExitCode is the command's exit status; -1 when it was killed by a
	// signal or did not run.
	ExitCode int `json:"exit_code"`
	// Signal names the signal that ended it, if any.
	Signal string `json:"signal,omitempty"`
	// TimedOut is set when the command ran past its timeout and was killed.
	TimedOut bool `json:"timed_out,omitempty"`
	// Skipped is set when the command was not run (an earlier one timed out).
	Skipped bool `json:"skipped,omitempty"`
	// Duration is how long it ran.
	Duration time.Duration `json:"-"`
	// DurationMS is Duration in milliseconds, for the JSON form.
	DurationMS int64 `json:"duration_ms"`
	// OutputTail is the end of its combined stdout and stderr.
	OutputTail string `json:"output_tail"`
	// OutputBytes is the total size of its output.
	OutputBytes int64 `json:"output_bytes"`
	// Error says why the command could not be started, if it could not.
	Error string `json:"error,omitempty"`
}

// DoDResult is the outcome of a whole Definition of Done.
type DoDResult struct {
	// Status is passed, failed, timeout or skipped.
	Status string `json:"status"`
	// Reason explains a skipped DoD.
	Reason string `json:"reason,omitempty"`
	// Tip is the commit the commands judged, when run on a clean checkout.
	Tip string `json:"tip,omitempty"`
	// Commands holds one result per configured command, in order.
	Commands []CommandResult `json:"commands,omitempty"`
}

// DoDOptions tunes how DoD commands run.
type DoDOptions struct {
	// Timeout bounds each command (0: no limit). On timeout the command's
	// process group gets SIGTERM, then SIGKILL after Grace; the commands
	// after it are not run.
	Timeout time.Duration
	// Grace is the wait between SIGTERM and SIGKILL (default 5s).
	Grace time.Duration
	// TailBytes bounds OutputTail (default 4096).
	TailBytes int
	// Env holds extra KEY=VALUE pairs for the commands.
	Env []string
	// Shell runs each command as Shell -c <cmd> (default /bin/sh).
	Shell string
	// CheckoutRoot is where RunDoD creates its temporary checkout (default:
	// <git common dir>/agentmine/dod).
	CheckoutRoot string
	// Prepare, if not nil, readies RunDoD's checkout before the commands
	// run (the worktree setup a worker's worktree had). Its error fails the
	// DoD with its reason; only a cancelled ctx makes it RunDoD's error.
	Prepare func(ctx context.Context, dir string) error
}

// Skipped returns the result of a DoD that was not run, with the reason.
func Skipped(reason string) DoDResult {
	return DoDResult{Status: DoDSkipped, Reason: reason}
}

// NotRun returns the result of a DoD that could not run at all (its
// checkout of the tip failed, say, because the tip holds a path git
// refuses): failed, with err's first line as the reason. A DoD that did not
// run never passes, and its result always says why.
func NotRun(err error) DoDResult {
	reason := "the DoD could not run"
	if err != nil {
		msg := err.Error()
		if i := strings.IndexByte(msg, '\n'); i >= 0 {
			msg = msg[:i]
		}
		reason += ": " + msg
	}
	return DoDResult{Status: DoDFailed, Reason: reason}
}

// RunDoD runs the Definition of Done against the committed tip of a worker's
// branch. It never runs in the worker's worktree: uncommitted leftovers must
// not be able to make it pass, and the worker's files must not be touched.
// Instead it adds a detached worktree of tip in a temporary directory (with
// the same sparse-checkout patterns when sparse is non-nil, so the commands
// see what the worker saw), runs the commands there, and removes it. repo is
// any directory of the repository (the worker's worktree will do).
//
// The returned error is for failures to set up or clean up the checkout and
// for a cancelled ctx; a failing command is a DoDFailed result, not an error.
func RunDoD(ctx context.Context, repo, tip string, sparse []string, cmds []string, opts DoDOptions) (DoDResult, error) {
	if len(cmds) == 0 {
		return Skipped("no DoD commands configured"), nil
	}
	loc, err := gitcmd.Locate(ctx, repo)
	if err != nil {
		return DoDResult{}, fmt.Errorf("run dod: %w", err)
	}
	g := gitcmd.Runner{Dir: repo}
	commit, err := g.Output(ctx, "rev-parse", "--verify", "--end-of-options", tip+"^{commit}")
	if err != nil {
		return DoDResult{}, exitcode.New(exitcode.NotFound, fmt.Errorf("run dod: resolve tip %q: %w", tip, err), "")
	}
	root := opts.CheckoutRoot
	if root == "" {
		root = filepath.Join(loc.CommonDir, "agentmine", "dod")
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return DoDResult{}, fmt.Errorf("run dod: %w", err)
	}
	dir, err := os.MkdirTemp(root, "dod-")
	if err != nil {
		return DoDResult{}, fmt.Errorf("run dod: %w", err)
	}
	cleanup := func() error {
		// The commands may have left read-only files (module caches do):
		// restore write permission first or the removal fails half-way.
		_ = worktree.MakeWritable(dir)
		if err := worktree.Remove(context.WithoutCancel(ctx), repo, dir, "", true); err != nil {
			return fmt.Errorf("remove dod checkout %s: %w", dir, err)
		}
		return nil
	}
	if err := worktree.AddDetached(ctx, repo, dir, commit, sparse); err != nil {
		_ = cleanup()
		return DoDResult{}, fmt.Errorf("run dod: check out %s: %w", short(commit), err)
	}
	if opts.Prepare != nil {
		if err := opts.Prepare(ctx, dir); err != nil {
			cerr := cleanup()
			if ctx.Err() != nil {
				return DoDResult{}, fmt.Errorf("run dod: %w", ctx.Err())
			}
			res := DoDResult{Status: DoDFailed, Tip: commit, Reason: "the DoD checkout's setup failed: " + firstLineOf(err.Error())}
			for _, c := range cmds {
				res.Commands = append(res.Commands, CommandResult{Cmd: c, ExitCode: -1, Skipped: true})
			}
			return res, cerr
		}
	}
	res, runErr := RunCommands(ctx, dir, cmds, opts)
	res.Tip = commit
	if err := cleanup(); err != nil && runErr == nil {
		runErr = fmt.Errorf("run dod: %w", err)
	}
	return res, runErr
}

func firstLineOf(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func short(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	return commit
}

// RunCommands runs cmds one after the other in dir, each in its own process
// group, and records each one's exit code, duration and output tail. A
// command that fails does not stop the ones after it (the report is more
// useful whole); a command that times out does, and the rest are recorded as
// skipped. The error is non-nil only when ctx was cancelled.
func RunCommands(ctx context.Context, dir string, cmds []string, opts DoDOptions) (DoDResult, error) {
	if len(cmds) == 0 {
		return Skipped("no DoD commands configured"), nil
	}
	if opts.Grace <= 0 {
		opts.Grace = 5 * time.Second
	}
	if opts.TailBytes <= 0 {
		opts.TailBytes = 4096
	}
	if opts.Shell == "" {
		opts.Shell = "/bin/sh"
	}
	res := DoDResult{Status: DoDPassed}
	stop := false
	for _, c := range cmds {
		if stop || ctx.Err() != nil {
			res.Commands = append(res.Commands, CommandResult{Cmd: c, ExitCode: -1, Skipped: true})
			continue
		}
		r := runOne(ctx, dir, c, opts)
		res.Commands = append(res.Commands, r)
		switch {
		case r.TimedOut:
			res.Status = DoDTimeout
			stop = true
		case r.ExitCode != 0 && res.Status == DoDPassed:
			res.Status = DoDFailed
		}
	}
	if err := ctx.Err(); err != nil {
		res.Status = DoDFailed
		return res, exitcode.New(exitcode.Interrupted, fmt.Errorf("run dod: %w", err), "")
	}
	return res, nil
}

func runOne(ctx context.Context, dir, command string, opts DoDOptions) CommandResult {
	res := CommandResult{Cmd: command, ExitCode: -1}
	tail := &tailBuffer{max: opts.TailBytes}
	pr, pw, err := os.Pipe()
	if err != nil {
		res.Error = err.Error()
		return res
	}
	cmd := exec.Command(opts.Shell, "-c", command)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), opts.Env...)
	cmd.Stdout = pw
	cmd.Stderr = pw
	// The DoD runs the worker's code: it dies with whoever runs it.
	cmd.SysProcAttr = dodAttr()
	start := time.Now()
	if err := cmd.Start(); err != nil {
		pw.Close()
		pr.Close()
		res.Error = err.Error()
		res.OutputTail = err.Error()
		return res
	}
	pw.Close()
	copied := make(chan struct{})
	go func() {
		_, _ = io.Copy(tail, pr)
		close(copied)
	}()
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()

	pgid := cmd.Process.Pid
	var timer <-chan time.Time
	if opts.Timeout > 0 {
		t := time.NewTimer(opts.Timeout)
		defer t.Stop()
		timer = t.C
	}
	var waitErr error
	select {
	case waitErr = <-waited:
	case <-timer:
		res.TimedOut = true
		waitErr = terminate(pgid, waited, opts.Grace)
	case <-ctx.Done():
		waitErr = terminate(pgid, waited, opts.Grace)
	}
	res.Duration = time.Since(start)
	res.DurationMS = res.Duration.Milliseconds()
	// Whatever the command left running in its group goes too: a DoD
	// command must not leave daemons behind or hold its output pipe open.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	select {
	case <-copied:
	case <-time.After(opts.Grace):
		// A process that left the group still holds the pipe; stop reading.
	}
	pr.Close()

	var ee *exec.ExitError
	switch {
	case waitErr == nil:
		res.ExitCode = 0
	case errors.As(waitErr, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			res.Signal = signalName(ws.Signal())
			res.ExitCode = -1
		} else {
			res.ExitCode = ee.ExitCode()
		}
	default:
		res.Error = waitErr.Error()
	}
	res.OutputTail, res.OutputBytes = tail.result()
	return res
}

// terminate sends SIGTERM to the process group, then SIGKILL after grace,
// and returns the leader's wait error.
func terminate(pgid int, waited <-chan error, grace time.Duration) error {
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case err := <-waited:
		return err
	case <-t.C:
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	return <-waited
}

func signalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGKILL:
		return "SIGKILL"
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGHUP:
		return "SIGHUP"
	case syscall.SIGSEGV:
		return "SIGSEGV"
	case syscall.SIGABRT:
		return "SIGABRT"
	case syscall.SIGPIPE:
		return "SIGPIPE"
	}
	return s.String()
}

// tailBuffer keeps the last max bytes written to it and counts them all.
type tailBuffer struct {
	mu    sync.Mutex
	max   int
	buf   []byte
	total int64
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.total += int64(len(p))
	if len(p) >= t.max {
		t.buf = append(t.buf[:0], p[len(p)-t.max:]...)
		return len(p), nil
	}
	t.buf = append(t.buf, p...)
	if len(t.buf) > 2*t.max {
		n := copy(t.buf, t.buf[len(t.buf)-t.max:])
		t.buf = t.buf[:n]
	}
	return len(p), nil
}

func (t *tailBuffer) result() (string, int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.buf
	if len(b) > t.max {
		b = b[len(b)-t.max:]
	}
	// Do not start in the middle of a UTF-8 sequence.
	for n := 0; n < utf8.UTFMax-1 && len(b) > 0 && !utf8.RuneStart(b[0]); n++ {
		b = b[1:]
	}
	return string(b), t.total
}
