package worker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/git-agentmine/git-agentmine/agents"
	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/isolation"
	"github.com/git-agentmine/git-agentmine/launch"
	"github.com/git-agentmine/git-agentmine/scope"
	"github.com/git-agentmine/git-agentmine/sessions"
)

// Worktree setup (the agent's [worktree] table): a fresh worktree holds
// none of the person's ignored files and no installed dependencies, so
// paths of the main checkout are brought in (copied, or linked to be
// shared) and setup commands run in it before the worker starts, inside
// the worker's own isolation. A setup that fails is a SetupError: the
// session is rolled back, so it is never an attempt.

// ErrSetup matches a SetupError.
var ErrSetup = errors.New("worktree setup failed")

// SetupError says that a setup command failed in a new worktree.
type SetupError struct {
	Command string
	// Exit is the command's exit code (124 when it timed out).
	Exit     int
	TimedOut bool
	// Last is the command's last line of output, "" when it printed none.
	Last string
	// Log is the file holding the command's whole output.
	Log string
}

func (e *SetupError) Error() string {
	how := fmt.Sprintf("exited %d", e.Exit)
	if e.TimedOut {
		how = "timed out"
	}
	msg := fmt.Sprintf("worktree setup failed: %q %s", e.Command, how)
	if e.Last != "" {
		msg += ": " + e.Last
	}
	return msg
}

// Is makes errors.Is(err, ErrSetup) true.
func (e *SetupError) Is(target error) bool { return target == ErrSetup }

// ExitCode is exitcode.Failed.
func (e *SetupError) ExitCode() int { return exitcode.Failed }

// setupOf returns the session's setup for agent ag (commands bounded by
// def unless the agent sets setup_timeout), nil when it asks for nothing.
func setupOf(ag agents.Agent, def time.Duration) *sessions.Setup {
	w := ag.Worktree
	if len(w.Setup) == 0 && len(w.Include) == 0 && len(w.Share) == 0 {
		return nil
	}
	su := &sessions.Setup{Commands: w.Setup, Timeout: w.SetupTimeout}
	if su.Timeout == 0 {
		su.Timeout = int(def / time.Second)
	}
	for _, p := range w.Include {
		su.Include = append(su.Include, agents.CleanInclude(p))
	}
	for _, p := range w.Share {
		su.Share = append(su.Share, agents.CleanInclude(p))
	}
	return su
}

// checkIncludes refuses, before anything of a session exists, what the
// main checkout at top cannot give: a path that is not there (NotFound), a
// path git tracks (the worktree has it already), a directory holding a
// path the scope hides, and a shared path at a level that hides the main
// checkout from the worker (bwrap, clone), all Config errors naming the
// agent's file.
func (e *Env) checkIncludes(ctx context.Context, ag agents.Agent, spec scope.Spec, su *sessions.Setup, iso *sessions.Isolation) error {
	if su == nil {
		return nil
	}
	cfgErr := func(format string, a ...any) error {
		return exitcode.New(exitcode.Config, fmt.Errorf("%s: "+format, append([]any{ag.File}, a...)...), "")
	}
	hidden := iso != nil && (iso.Level == string(isolation.Bwrap) || iso.Level == string(isolation.Clone))
	if hidden && len(su.Share) > 0 {
		return cfgErr("worktree.share %q: the %s level hides the main checkout from the worker", su.Share[0], iso.Level)
	}
	classify := spec.Classifier()
	for _, rel := range append(append([]string{}, su.Include...), su.Share...) {
		src := filepath.Join(e.Top, filepath.FromSlash(rel))
		if _, err := os.Lstat(src); err != nil {
			return exitcode.New(exitcode.NotFound, fmt.Errorf("%s: worktree include %q is not in the main checkout", ag.File, rel), "")
		}
		if out, _ := e.St.Git().In(e.Top).Output(ctx, "ls-files", "-z", "--", rel); out != "" {
			return cfgErr("worktree include %q is tracked by git: every worktree has it already", rel)
		}
		err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			r, _ := filepath.Rel(e.Top, p)
			if classify(filepath.ToSlash(r)) == scope.Absent {
				return cfgErr("worktree include %q holds %s, which the scope hides from the worker", rel, filepath.ToSlash(r))
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// bringIncludes copies su's included paths and links its shared ones from
// the main checkout at top into dir.
func bringIncludes(top, dir string, su *sessions.Setup) error {
	for _, rel := range su.Include {
		src, dst := filepath.Join(top, filepath.FromSlash(rel)), filepath.Join(dir, filepath.FromSlash(rel))
		if err := inParent(dst, func() error { return copyTree(src, dst) }); err != nil {
			return fmt.Errorf("bringing in %s from the main checkout: %w", rel, err)
		}
	}
	for _, rel := range su.Share {
		src, dst := filepath.Join(top, filepath.FromSlash(rel)), filepath.Join(dir, filepath.FromSlash(rel))
		if err := inParent(dst, func() error { return os.Symlink(src, dst) }); err != nil {
			return fmt.Errorf("sharing %s from the main checkout: %w", rel, err)
		}
	}
	return nil
}

// inParent runs fn, which creates path, once path's directory exists and
// can be written: a directory the scope made read-only is made writable
// for the while and given its mode back.
func inParent(path string, fn func() error) error {
	parent := filepath.Dir(path)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	fi, err := os.Stat(parent)
	if err != nil {
		return err
	}
	if mode := fi.Mode().Perm(); mode&0o200 == 0 {
		if err := os.Chmod(parent, mode|0o200); err != nil {
			return err
		}
		defer os.Chmod(parent, mode)
	}
	return fn()
}

// copyTree copies the file, link or directory src to dst, keeping modes.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		r, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, r)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.MkdirAll(to, info.Mode().Perm()|0o700)
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
				return err
			}
			return os.Symlink(target, to)
		case info.Mode().IsRegular():
			if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
				return err
			}
			return copyRegular(p, to, info.Mode().Perm())
		}
		return nil // sockets, FIFOs, devices: nothing a build reads
	})
}

func copyRegular(src, dst string, mode fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// setupRun is how setup commands run: in dir, wrapped by wrap (the
// worker's isolation), with env added, their output appended to log (and
// to tee, a foreground run's terminal).
type setupRun struct {
	dir    string
	wrap   func([]string) []string
	env    []string
	log    string
	tee    io.Writer
	reaper *launch.Reaper
}

// run runs the commands one after the other; the first that fails ends the
// setup with a SetupError.
func (r setupRun) run(ctx context.Context, su *sessions.Setup) error {
	for _, c := range su.Commands {
		_ = appendLog(r.log, "agentmine: worktree setup: "+c+"\n")
		if r.tee != nil {
			fmt.Fprintf(r.tee, "agentmine: worktree setup: %s\n", c)
		}
		argv := []string{"/bin/sh", "-c", c}
		if r.wrap != nil {
			argv = r.wrap(argv)
		}
		p, err := launch.Start(ctx, launch.Spec{Argv: argv, Dir: r.dir, Env: r.env, LogPath: r.log, Tee: r.tee,
			Timeout: time.Duration(su.Timeout) * time.Second, Reaper: r.reaper})
		if err != nil {
			return fmt.Errorf("starting worktree setup %q: %w", c, err)
		}
		res := p.Wait()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if res.ExitCode != 0 || res.TimedOut {
			_ = appendLog(r.log, fmt.Sprintf("agentmine: worktree setup failed: exit %d\n", res.ExitCode))
			return &SetupError{Command: c, Exit: res.ExitCode, TimedOut: res.TimedOut, Last: lastLogLine(r.log), Log: r.log}
		}
	}
	return nil
}

// lastLogLine is the last non-empty line of the log before agentmine's
// own closing line.
func lastLogLine(log string) string {
	tail, _ := launch.TailBytes(log, 4096)
	lines := bytes.Split(bytes.TrimRight(tail, "\n"), []byte("\n"))
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(string(lines[i]))
		if l != "" && !strings.HasPrefix(l, "agentmine: ") && !strings.HasPrefix(l, "[agentmine] ") {
			if len(l) > 200 {
				l = l[:200] + "…"
			}
			return l
		}
	}
	return ""
}

// setUp readies the prepared session's worktree when its agent has a
// [worktree] table (prepareWorktree), records what it holds then on
// sess.Setup, and makes the worker's git ignore it too: its `add -A` must
// not commit the person's files or the setup's as the worker's. A failed
// setup command is a SetupError with a hint naming the log.
func (e *Env) setUp(ctx context.Context, sess sessions.Session, cmd launch.Command, generated []string, ag agents.Agent, gitDir string) error {
	if sess.Setup == nil {
		return nil
	}
	ready := sess
	ready.Command, ready.CommandEnv, ready.Generated = cmd.Argv, cmd.Env, generated
	prepared, err := e.prepareWorktree(ctx, ready, nil)
	if errors.Is(err, ErrSetup) {
		return exitcode.New(exitcode.Failed, err, fmt.Sprintf("its output is in %s; the setup commands are the [worktree] table of %s", sess.Log, ag.File))
	}
	if err != nil {
		return err
	}
	sess.Setup.Prepared = prepared
	return ignoreGenerated(e.St, gitDir, slices.Concat(generated, ag.Worktree.Paths(), prepared))
}

// prepareWorktree brings the includes into the session's worktree and runs
// the setup commands there inside the session's isolation, then returns
// what the worktree holds beyond the base's files and the generated paths
// (Setup.Prepared).
func (e *Env) prepareWorktree(ctx context.Context, sess sessions.Session, tee io.Writer) ([]string, error) {
	su := sess.Setup
	if err := bringIncludes(e.Top, sess.Worktree, su); err != nil {
		return nil, err
	}
	if len(su.Commands) > 0 {
		box, err := e.isolate(ctx, sess)
		if err != nil {
			return nil, fmt.Errorf("preparing the isolation of the worktree setup: %w", err)
		}
		defer box.Close()
		r := setupRun{dir: sess.Worktree, wrap: box.Command, env: append(e.workerEnv(sessions.Record{Session: sess}), box.Env()...),
			log: sess.Log, tee: tee, reaper: e.setupReaper}
		if err := r.run(ctx, su); err != nil {
			return nil, err
		}
	}
	return e.preparedPaths(ctx, sess.Worktree, sess.Generated)
}

// preparedPaths lists what git status shows in the worktree at dir
// (untracked, ignored or changed), minus the generated paths.
func (e *Env) preparedPaths(ctx context.Context, dir string, generated []string) ([]string, error) {
	out, err := e.St.Git().In(dir).Run(ctx, "status", "--porcelain", "-z", "--untracked-files=all", "--ignored=matching")
	if err != nil {
		return nil, fmt.Errorf("listing what the worktree setup left: %w", err)
	}
	var paths []string
	fields := strings.Split(string(out), "\x00")
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		if len(f) < 4 {
			continue
		}
		if f[0] == 'R' || f[0] == 'C' {
			i++ // the source path follows
		}
		p := f[3:]
		if isGenerated(strings.TrimSuffix(p, "/"), generated) {
			continue
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// dodSetup returns the preparation of the checkout the DoD runs in: the
// same includes and setup commands as the worker's worktree, at level none
// (the DoD itself runs there), their output in the session log. nil when
// the session has no setup.
func (e *Env) dodSetup(s sessions.Session) func(ctx context.Context, dir string) error {
	if s.Setup == nil {
		return nil
	}
	return func(ctx context.Context, dir string) error {
		if err := bringIncludes(e.Top, dir, s.Setup); err != nil {
			return err
		}
		_ = appendLog(s.Log, "agentmine: preparing the DoD checkout\n")
		return setupRun{dir: dir, env: e.workerEnv(sessions.Record{Session: s}), log: s.Log, reaper: e.setupReaper}.run(ctx, s.Setup)
	}
}
