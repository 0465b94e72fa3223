// Package gitcmd owns running the git binary: one Runner type shared by every
// package that shells out to git, always with a context, and a typed Error
// carrying git's exit code and stderr. Every git it starts runs with
// LC_ALL=C and LANGUAGE unset, so that git's messages are in English
// whatever the user's locale: callers match words of git's stderr (a held
// ref lock, "not a git repository") and must not depend on a translation.
// And every git it starts runs with GIT_NO_REPLACE_OBJECTS=1: agentmine
// reads the objects as they are, never what a refs/replace/* ref (which a
// worker can write as easily as any ref) substitutes for them. A command
// that may reach a remote never prompts and never waits unbounded for a
// connection (network.go).
package gitcmd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	"github.com/git-agentmine/git-agentmine/exitcode"
)

// Runner runs git in a directory with an optional extra environment.
// The zero value runs git in the current directory, looking the binary up in
// PATH at every call; New looks it up once.
type Runner struct {
	// Dir is the working directory git runs in.
	Dir string
	// Env holds extra KEY=VALUE pairs appended to the process environment.
	// LC_ALL, LANGUAGE and GIT_NO_REPLACE_OBJECTS set here are overridden:
	// git always runs with LC_ALL=C and GIT_NO_REPLACE_OBJECTS=1.
	Env []string
	// Path is the git binary to run, as New resolved it; "" means "git",
	// looked up in PATH when each command starts.
	Path string
	// ssh remembers core.sshCommand per directory for the network
	// commands of every copy of a runner New made (nil: look it up each
	// time).
	ssh *sshMemo
}

// ErrGitNotFound is returned when there is no git binary in PATH.
var ErrGitNotFound = errors.New("git not found in PATH")

// New returns a runner for dir with the git binary looked up in PATH once,
// here, so that every command it runs starts the same binary without
// searching again. It fails with ErrGitNotFound (exit code NotFound) when
// PATH has no git.
func New(dir string) (Runner, error) {
	p, err := exec.LookPath("git")
	if err != nil {
		return Runner{}, gitNotFound(err)
	}
	return Runner{Dir: dir, Path: p, ssh: &sshMemo{}}, nil
}

// gitNotFound turns a failed lookup of the git binary into the documented
// error: ErrGitNotFound with exit code NotFound, plus the reason when it is
// not plain absence (a git found only in a relative PATH entry, say).
func gitNotFound(err error) error {
	e := ErrGitNotFound
	if !errors.Is(err, exec.ErrNotFound) {
		e = fmt.Errorf("%w: %w", ErrGitNotFound, err)
	}
	return exitcode.New(exitcode.NotFound, e, "install git, or add the directory that holds it to PATH")
}

// Error is a failed git invocation.
type Error struct {
	Args     []string
	Code     int // git's exit code, or -1 if it did not start or was killed
	Stderr   string
	Err      error
	Canceled bool
}

func (e *Error) Error() string {
	msg := firstLine(e.Stderr)
	if msg == "" && e.Err != nil {
		msg = e.Err.Error()
	}
	// Named by its subcommand: "git update-ref", not "git -c".
	sub := "git"
	if c := subcommand(e.Args); c != "" {
		sub = "git " + c
	}
	return fmt.Sprintf("%s: %s", sub, msg)
}

// Unwrap returns the underlying exec error.
func (e *Error) Unwrap() error { return e.Err }

// ExitCode maps a git failure to agentmine's fatal git exit code, or to
// Interrupted when the context was cancelled.
func (e *Error) ExitCode() int {
	if e.Canceled {
		return exitcode.Interrupted
	}
	return exitcode.Git
}

// IsExit reports whether err is a git failure with the given exit code.
func IsExit(err error, code int) bool {
	var ge *Error
	return errors.As(err, &ge) && ge.Code == code
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	// git prefixes many messages with "fatal: " or "error: ".
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "hint:") {
			continue
		}
		line = strings.TrimPrefix(line, "fatal: ")
		line = strings.TrimPrefix(line, "error: ")
		return line
	}
	return ""
}

// Command returns an exec.Cmd for git with the runner's directory and
// environment (LC_ALL=C, LANGUAGE unset, GIT_NO_REPLACE_OBJECTS=1; for a
// command that may reach a remote, no prompt of any kind and a bounded
// connect time: networkEnv). Callers that need streaming use it directly.
func (r Runner) Command(ctx context.Context, args ...string) *exec.Cmd {
	name := r.Path
	if name == "" {
		name = "git"
	}
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = r.Dir
	cmd.Env = environ(os.Environ(), r.Env)
	if mayUseNetwork(args) {
		r.offline(ctx, cmd)
	}
	return cmd
}

// environ returns the environment git runs with: base plus extra, without
// any LC_ALL, LANGUAGE or GIT_NO_REPLACE_OBJECTS, and with LC_ALL=C and
// GIT_NO_REPLACE_OBJECTS=1 last. LC_ALL=C overrides LANG and every other
// LC_* variable; GNU gettext ignores LANGUAGE under the C locale, and it is
// dropped as well so no translation can apply. GIT_NO_REPLACE_OBJECTS (any
// value) makes git ignore refs/replace/* and GIT_REPLACE_REF altogether.
func environ(base, extra []string) []string {
	env := make([]string, 0, len(base)+len(extra)+2)
	for _, kvs := range [][]string{base, extra} {
		for _, kv := range kvs {
			k, _, _ := strings.Cut(kv, "=")
			if k == "LC_ALL" || k == "LANGUAGE" || k == "GIT_NO_REPLACE_OBJECTS" {
				continue
			}
			env = append(env, kv)
		}
	}
	return append(env, "LC_ALL=C", "GIT_NO_REPLACE_OBJECTS=1")
}

// Run runs git with args and returns its stdout.
func (r Runner) Run(ctx context.Context, args ...string) ([]byte, error) {
	return r.RunInput(ctx, nil, args...)
}

// RunInput runs git with args, feeding stdin, and returns its stdout.
func (r Runner) RunInput(ctx context.Context, stdin io.Reader, args ...string) ([]byte, error) {
	var out chunks
	err := r.run(ctx, stdin, &out, args)
	return out.bytes(), err
}

func (r Runner) run(ctx context.Context, stdin io.Reader, out *chunks, args []string) error {
	cmd := r.Command(ctx, args...)
	var errb bytes.Buffer
	cmd.Stdin = stdin
	cmd.Stdout = out
	cmd.Stderr = &errb
	if err := cmd.Run(); err != nil {
		return r.wrap(ctx, args, err, errb.String())
	}
	return nil
}

// chunks collects a process's output in pieces that double in size, each
// filled before the next is made: a large output (for-each-ref over tens
// of thousands of refs) is copied once into place, where a bytes.Buffer
// copied it into a buffer of twice the size over and over.
type chunks struct {
	list [][]byte
	n    int
}

// Write stores a copy of p.
func (c *chunks) Write(p []byte) (int, error) {
	written := len(p)
	for len(p) > 0 {
		if k := len(c.list); k == 0 || len(c.list[k-1]) == cap(c.list[k-1]) {
			c.list = append(c.list, make([]byte, 0, min(max(512, c.n), 1<<20)))
		}
		last := &c.list[len(c.list)-1]
		m := min(len(p), cap(*last)-len(*last))
		*last = append(*last, p[:m]...)
		p = p[m:]
		c.n += m
	}
	return written, nil
}

// bytes returns the output as one slice.
func (c *chunks) bytes() []byte {
	switch len(c.list) {
	case 0:
		return nil
	case 1:
		return c.list[0]
	}
	out := make([]byte, 0, c.n)
	for _, b := range c.list {
		out = append(out, b...)
	}
	return out
}

// string returns the output as one string, copied once.
func (c *chunks) string() string {
	var b strings.Builder
	b.Grow(c.n)
	for _, p := range c.list {
		b.Write(p)
	}
	return b.String()
}

// Stream is a running git process whose standard output is read as git
// writes it, so that a listing of every ref or path is never held whole.
// Read it, then call Wait.
type Stream struct {
	r      Runner
	ctx    context.Context
	args   []string
	cmd    *exec.Cmd
	out    io.ReadCloser
	stderr bytes.Buffer
}

// Stream starts git with args, its output to be read from the Stream.
func (r Runner) Stream(ctx context.Context, args ...string) (*Stream, error) {
	s := &Stream{r: r, ctx: ctx, args: args, cmd: r.Command(ctx, args...)}
	s.cmd.Stderr = &s.stderr
	out, err := s.cmd.StdoutPipe()
	if err != nil {
		return nil, r.wrap(ctx, args, err, "")
	}
	if err := s.cmd.Start(); err != nil {
		return nil, r.wrap(ctx, args, err, "")
	}
	s.out = out
	return s, nil
}

// Read reads git's output.
func (s *Stream) Read(p []byte) (int, error) { return s.out.Read(p) }

// Wait discards what is left of the output (so that git is never stuck
// writing it), waits for git to end and returns its failure as the
// runner's own calls do (an *Error, or ErrGitNotFound).
func (s *Stream) Wait() error {
	_, _ = io.Copy(io.Discard, s.out)
	if err := s.cmd.Wait(); err != nil {
		return s.r.wrap(s.ctx, s.args, err, s.stderr.String())
	}
	return nil
}

// Output runs git and returns its stdout with surrounding whitespace trimmed.
func (r Runner) Output(ctx context.Context, args ...string) (string, error) {
	out, err := r.Run(ctx, args...)
	return strings.TrimSpace(string(out)), err
}

// Lines runs git and returns the non-empty lines of its stdout.
func (r Runner) Lines(ctx context.Context, args ...string) ([]string, error) {
	var out chunks
	if err := r.run(ctx, nil, &out, args); err != nil {
		return nil, err
	}
	text := out.string()
	lines := make([]string, 0, strings.Count(text, "\n")+1)
	for l := range strings.SplitSeq(text, "\n") {
		if l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 {
		return nil, nil
	}
	return lines, nil
}

func (r Runner) wrap(ctx context.Context, args []string, err error, stderr string) error {
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, exec.ErrDot) {
		return gitNotFound(err)
	}
	return Failure(ctx, args, err, stderr)
}

// Failure is the typed error of a git process that failed with err (its
// exit code when it ran, whether ctx was cancelled) and wrote stderr: for
// git processes a package runs itself, streaming their output, rather than
// through a Runner's methods.
func Failure(ctx context.Context, args []string, err error, stderr string) error {
	ge := &Error{Args: args, Code: -1, Stderr: stderr, Err: err}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		ge.Code = ee.ExitCode()
	}
	if ctx.Err() != nil {
		ge.Canceled = true
		ge.Err = ctx.Err()
	}
	return ge
}

// In returns a copy of the runner that runs in dir.
func (r Runner) In(dir string) Runner {
	r.Dir = dir
	return r
}

// Location names the directories of a repository as git reports them.
type Location struct {
	// Top is the top of the working tree ("" for a bare repository).
	Top string
	// GitDir is this worktree's git directory.
	GitDir string
	// CommonDir is the directory shared by all worktrees: refs, objects, config.
	CommonDir string
}

// Locate asks git where the repository containing dir lives.
func Locate(ctx context.Context, dir string) (Location, error) {
	loc, _, err := LocateWith(ctx, dir)
	return loc, err
}

// LocateWith is Locate plus extra rev-parse queries answered by the same git
// process. Each query is the arguments of one rev-parse option that prints
// exactly one line (e.g. {"--git-path", "objects"}); the lines are returned
// in order.
func LocateWith(ctx context.Context, dir string, queries ...[]string) (Location, []string, error) {
	r, err := New(dir)
	if err != nil {
		return Location{}, nil, err
	}
	return r.LocateWith(ctx, queries...)
}

// LocateWith is the package's LocateWith for the runner's directory, run
// with the runner's git binary.
func (r Runner) LocateWith(ctx context.Context, queries ...[]string) (Location, []string, error) {
	args := []string{"rev-parse", "--path-format=absolute", "--git-dir", "--git-common-dir"}
	for _, q := range queries {
		args = append(args, q...)
	}
	args = append(args, "--show-toplevel")
	lines, err := r.Lines(ctx, args...)
	if err != nil {
		var ge *Error
		if errors.As(err, &ge) && strings.Contains(ge.Stderr, "not a git repository") {
			return Location{}, nil, exitcode.New(exitcode.State, errors.New("not a git repository (or any parent up to the filesystem root)"), "run it inside a git repository, or pass -C <dir>")
		}
		if errors.As(err, &ge) && strings.Contains(ge.Stderr, "must be run in a work tree") {
			return Location{}, nil, exitcode.New(exitcode.State, errors.New("this repository has no working tree (bare)"), "run it in a clone with a working tree")
		}
		return Location{}, nil, err
	}
	n := 2 + len(queries)
	if len(lines) < n {
		return Location{}, nil, fmt.Errorf("git rev-parse: unexpected output %q", lines)
	}
	loc := Location{GitDir: lines[0], CommonDir: lines[1]}
	if len(lines) > n {
		loc.Top = lines[n]
	}
	return loc, lines[2:n], nil
}
