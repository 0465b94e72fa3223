package launch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/git-agentmine/git-agentmine/exitcode"
)

// DefaultGrace is how long a worker has between SIGTERM and SIGKILL when
// Spec.Grace is zero.
const DefaultGrace = 10 * time.Second

// ErrStopRequested is the cause (context.WithCancelCause) with which a
// supervisor cancels the run's context when it is asked to stop (SIGTERM,
// as `worker stop` sends): the run ends as Stop ends it, and the result
// keeps the worker's own exit code instead of 130.
var ErrStopRequested = errors.New("stop requested")

// Spec describes a worker process to start.
type Spec struct {
	// Argv is the program and its arguments; the program is looked up in
	// the worker environment's PATH when it holds no slash.
	Argv []string
	// Shown is the command the log names as started: the client's own
	// argv when Argv wraps it in a sandbox helper; nil means Argv.
	Shown []string
	// Dir is the working directory (the worktree).
	Dir string
	// Env holds KEY=VALUE pairs added to the worker's environment; see
	// WorkerEnv for what is inherited and what is removed.
	Env []string
	// Stdin is a file fed as standard input; "" means /dev/null (stdin is
	// never the terminal, so a client can never wait for input).
	Stdin string
	// LogPath receives stdout and stderr, appended and bounded by
	// MaxLogBytes (see RotatingLog). "" keeps no log.
	LogPath string
	// MaxLogBytes bounds the log (DefaultMaxLogBytes when zero).
	MaxLogBytes int64
	// Tee, if not nil, also receives the output (the terminal of a
	// foreground run). A failing Tee is dropped; the worker goes on.
	Tee io.Writer
	// Timeout, if positive, ends the run: SIGTERM to the process group,
	// Grace, then SIGKILL; the result has exit code 124.
	Timeout time.Duration
	// Grace is the time between SIGTERM and SIGKILL (DefaultGrace if zero).
	Grace time.Duration
	// Stalls are lower-case phrases that mean the worker can make no
	// progress (StallPhrases of its client): the first output line holding
	// one stops the run as Stop does, and Result.Stalled holds the line.
	Stalls []string
	// StallTimeout, if positive, stops the run as Stop does once the
	// worker has written no output and Progress has reported nothing new
	// for that long; Result.Idle is then set.
	StallTimeout time.Duration
	// Progress, if not nil, returns a token that changes when the worker
	// makes progress other than output (the tip of its branch); with
	// StallTimeout, it is asked a few times per StallTimeout.
	Progress func() string
	// Marker is a KEY=VALUE entry added to the worker's environment that
	// identifies the run's processes: every process started with it is
	// the run's. "" makes up a fresh MarkerKey=<random> one.
	Marker string
	// Reaper keeps this run apart from the others of the same process;
	// nil gives the run a Reaper of its own (see Reaper for when that is
	// not enough).
	Reaper *Reaper
	// Client, when set, is the client whose usage reports are read from
	// the output as it streams (see ReadUsage), into Result.Usage.
	Client Client
}

// Result is what was observed of a finished run.
type Result struct {
	// ExitCode is the worker's exit code, 128+n if signal n killed it,
	// 124 (exitcode.Timeout) if it timed out and 130
	// (exitcode.Interrupted) if the run was cancelled (Ctrl-C). A run
	// ended by Stop or by a context cancelled with ErrStopRequested keeps
	// the worker's own code (143 when SIGTERM killed it).
	ExitCode int
	// Signal names the signal that ended the run ("SIGTERM", "SIGKILL"...):
	// the one that killed the worker, or else the one agentmine sent to
	// stop it; "" if the worker ended by itself.
	Signal string
	// TimedOut is set when the timeout ended the run.
	TimedOut bool
	// Interrupted is set when the context was cancelled (Ctrl-C).
	Interrupted bool
	// Stopped is set when Stop, or a context cancelled with
	// ErrStopRequested, ended the run.
	Stopped bool
	// Stalled is the output line (without ANSI escapes) that matched one
	// of Spec.Stalls, when that stopped the run.
	Stalled string
	// Idle is set when StallTimeout stopped the run: no output and no
	// progress for that long.
	Idle bool
	// Started and Finished bound the run.
	Started, Finished time.Time
	// OutputBytes counts everything the worker wrote to stdout and stderr,
	// including what log rotation dropped.
	OutputBytes int64
	// Leftovers are the run's processes that were still running when the
	// worker's own process ended (children it did not wait for, daemons
	// it started with setsid or a double fork) and that were ended then,
	// before Wait returned.
	Leftovers []Proc
	// Survivors are the run's processes that were still alive after
	// SIGKILL and killLimit (uninterruptible sleep); normally none.
	Survivors []Proc
	// Usage is what Spec.Client reported in its whole output, also the
	// part log rotation dropped; nil when it reported nothing.
	Usage *Usage
}

// Process is a running worker, leader of its own session and process
// group.
type Process struct {
	spec    Spec
	cmd     *exec.Cmd
	pid     int
	start   uint64
	marker  string
	reaper  *Reaper
	log     *RotatingLog
	tee     io.Writer
	out     *os.File // read end of the output pipe
	stopReq chan struct{}
	stopped sync.Once
	done    chan struct{}
	res     Result

	outMu    sync.Mutex
	outBytes int64
	partial  []byte // the last unfinished output line, for stall phrases
	meter    *usageMeter
	stalled  string
	midLine  bool // the worker's last output to the log did not end a line
}

// Start launches spec.Argv in a session and process group of its own with
// stdin closed (or fed from spec.Stdin) and its output going to the log
// and the tee, and supervises it until it ends: on timeout, on ctx
// cancellation or on Stop the whole group gets SIGTERM, then SIGKILL after
// the grace period. When the worker's own process has ended, every process
// of the run still running is ended the same way before Wait returns
// (Result.Leftovers): those in its group and session, those with its
// marker in their environment, and the orphans this process adopted as
// their child subreaper (see Reaper) — a setsid or a double fork does not
// escape. A program that cannot be found is a NotFound error naming it.
//
// The worker has no controlling terminal, so Ctrl-C reaches only the
// caller, which should cancel ctx (signal.NotifyContext); the worker is
// then stopped and the result is marked Interrupted. If the caller is
// killed outright, the kernel kills the worker's first process (its
// parent-death signal is SIGKILL); whatever that process started is found
// and ended by FindRun and EndRun (EndRuns), even though its leader is
// gone. The parent-death signal follows the thread that started the
// worker: Start must not run on a goroutine locked to its thread.
func Start(ctx context.Context, spec Spec) (*Process, error) {
	if len(spec.Argv) == 0 || spec.Argv[0] == "" {
		return nil, exitcode.New(exitcode.Config, errors.New("start worker: empty command"), "")
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("start worker: %w", err)
	}
	if spec.Grace <= 0 {
		spec.Grace = DefaultGrace
	}
	env := WorkerEnv(spec.Env)
	path, err := lookPath(spec.Argv[0], envValue(env, "PATH"))
	if err != nil {
		return nil, err
	}
	if spec.Dir != "" {
		if st, err := os.Stat(spec.Dir); err != nil || !st.IsDir() {
			return nil, exitcode.New(exitcode.NotFound, fmt.Errorf("start worker: directory %q does not exist", spec.Dir), "")
		}
	}
	marker := spec.Marker
	if marker == "" {
		marker = newMarker()
	}
	env = WorkerEnv(append(append([]string{}, spec.Env...), marker))
	reaper := spec.Reaper
	if reaper == nil {
		reaper = NewReaper()
	}
	// A session of its own: nothing of the worker can ever join this
	// process's session, where this process runs its own commands. The
	// kernel kills the worker's first process when this process dies
	// (kill -9 included: a parent-death signal, kept across exec); what it
	// started is ended by whoever then finds the session lost (EndRuns).
	cmd := &exec.Cmd{Path: path, Args: spec.Argv, Dir: spec.Dir, Env: env,
		SysProcAttr: workerAttr()}
	if spec.Stdin != "" {
		in, err := os.Open(spec.Stdin)
		if err != nil {
			return nil, exitcode.New(exitcode.NotFound, fmt.Errorf("start worker: stdin: %w", err), "")
		}
		defer in.Close()
		cmd.Stdin = in
	}
	p := &Process{spec: spec, cmd: cmd, marker: marker, reaper: reaper, tee: spec.Tee,
		stopReq: make(chan struct{}), done: make(chan struct{}), meter: newUsageMeter(spec.Client)}
	if spec.LogPath != "" {
		if err := os.MkdirAll(filepath.Dir(spec.LogPath), 0o755); err != nil {
			return nil, fmt.Errorf("start worker: log directory: %w", err)
		}
		if p.log, err = OpenLog(spec.LogPath, spec.MaxLogBytes); err != nil {
			return nil, fmt.Errorf("start worker: %w", err)
		}
	}
	r, w, err := os.Pipe()
	if err != nil {
		p.closeLog()
		return nil, fmt.Errorf("start worker: output pipe: %w", err)
	}
	cmd.Stdout, cmd.Stderr = w, w
	// The run joins the Reaper as it starts, so that no other run's sweep
	// sees the new worker as an orphan of nobody's.
	reaper.mu.Lock()
	reaper.subreap()
	if err := cmd.Start(); err != nil {
		reaper.unsubreap()
		reaper.mu.Unlock()
		r.Close()
		w.Close()
		p.closeLog()
		return nil, fmt.Errorf("start worker %q: %w", spec.Argv[0], err)
	}
	p.pid = cmd.Process.Pid
	// The child is not reaped before cmd.Wait, so its /proc entry is there.
	p.start, _ = StartTime(p.pid)
	reaper.add(p)
	reaper.mu.Unlock()
	w.Close()
	p.out = r
	p.res.Started = time.Now()
	shown := spec.Shown
	if len(shown) == 0 {
		shown = spec.Argv
	}
	p.note("started pid %d in %s: %s", p.pid, spec.Dir, describeArgv(shown))
	if err := reaper.Err(); err != nil {
		p.note("warning: %v: orphans that leave the worker's session and environment are not found", err)
	}

	exited := make(chan *os.ProcessState, 1)
	go func() {
		_ = cmd.Wait() // a non-zero exit is an error here; the state says all
		exited <- cmd.ProcessState
	}()
	copied := make(chan struct{})
	go p.copyOutput(copied)
	go p.supervise(ctx, exited, copied)
	if spec.StallTimeout > 0 {
		go p.watchIdle()
	}
	return p, nil
}

// watchIdle stops the run when neither the output nor Spec.Progress has
// changed for Spec.StallTimeout (a headless worker waiting for input
// looks running forever otherwise).
func (p *Process) watchIdle() {
	limit := p.spec.StallTimeout
	tick := max(limit/4, 50*time.Millisecond)
	t := time.NewTicker(tick)
	defer t.Stop()
	progress := func() string {
		if p.spec.Progress == nil {
			return ""
		}
		return p.spec.Progress()
	}
	p.outMu.Lock()
	lastBytes := p.outBytes
	p.outMu.Unlock()
	lastToken := progress()
	since := time.Now()
	for {
		select {
		case <-p.done:
			return
		case <-t.C:
		}
		p.outMu.Lock()
		n := p.outBytes
		p.outMu.Unlock()
		tok := progress()
		if n != lastBytes || tok != lastToken {
			lastBytes, lastToken, since = n, tok, time.Now()
			continue
		}
		if time.Since(since) >= limit {
			p.outMu.Lock()
			p.res.Idle = true
			p.outMu.Unlock()
			p.note("stalled: no output and no progress for %s: stopping the worker", limit)
			p.Stop()
			return
		}
	}
}

// Pid returns the worker's pid, which is also its session and process
// group id.
func (p *Process) Pid() int { return p.pid }

// StartTime returns the worker's start time in clock ticks since boot
// (0 if it could not be read); see Alive.
func (p *Process) StartTime() uint64 { return p.start }

// Done is closed when the run has ended and its Result is final.
func (p *Process) Done() <-chan struct{} { return p.done }

// Wait blocks until the run has ended (the worker and every process left
// in its group are gone) and returns what was observed.
func (p *Process) Wait() Result {
	<-p.done
	return p.res
}

// Stop ends the run: SIGTERM to the process group, SIGKILL after the grace
// period. It returns at once; Wait returns the result, marked Stopped.
func (p *Process) Stop() {
	p.stopped.Do(func() { close(p.stopReq) })
}

// Signal sends sig to the worker's whole process group.
func (p *Process) Signal(sig syscall.Signal) error {
	if err := syscall.Kill(-p.pid, sig); err != nil {
		return fmt.Errorf("signal worker %d: %w", p.pid, err)
	}
	return nil
}

func (p *Process) supervise(ctx context.Context, exited <-chan *os.ProcessState, copied <-chan struct{}) {
	defer close(p.done)
	var timeout <-chan time.Time
	if p.spec.Timeout > 0 {
		t := time.NewTimer(p.spec.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	var ps *os.ProcessState
	sent := ""
	select {
	case ps = <-exited:
	case <-timeout:
		p.res.TimedOut = true
		p.note("timed out after %s", p.spec.Timeout)
		ps, sent = p.terminate(exited)
	case <-ctx.Done():
		if errors.Is(context.Cause(ctx), ErrStopRequested) {
			p.res.Stopped = true
			p.note("stop requested")
		} else {
			p.res.Interrupted = true
			p.note("interrupted (%v)", ctx.Err())
		}
		ps, sent = p.terminate(exited)
	case <-p.stopReq:
		p.res.Stopped = true
		p.note("stop requested")
		ps, sent = p.terminate(exited)
	}
	if sent != "" {
		// The group got the signal with the worker: what is still dying
		// of it is not left over.
		waitGroupGone(p.pid, p.spec.Grace)
	}
	p.endLeftovers()

	ws, _ := ps.Sys().(syscall.WaitStatus)
	switch {
	case ws.Signaled():
		p.res.ExitCode = 128 + int(ws.Signal())
		p.res.Signal = unix.SignalName(ws.Signal())
	default:
		p.res.ExitCode = ws.ExitStatus()
		p.res.Signal = sent
	}
	switch {
	case p.res.TimedOut:
		p.res.ExitCode = exitcode.Timeout
	case p.res.Interrupted:
		p.res.ExitCode = exitcode.Interrupted
	}

	// Output still buffered in the pipe is drained; a process that left the
	// group (setsid) and kept the pipe open must not hold the run forever.
	select {
	case <-copied:
	case <-time.After(2 * time.Second):
		p.out.Close()
		<-copied
	}
	p.out.Close()
	p.res.Usage = p.meter.usage()
	p.res.Finished = time.Now()
	if p.res.Signal != "" {
		p.note("ended: exit code %d, signal %s", p.res.ExitCode, p.res.Signal)
	} else {
		p.note("ended: exit code %d", p.res.ExitCode)
	}
	p.outMu.Lock()
	p.res.OutputBytes = p.outBytes
	if p.res.Stopped {
		p.res.Stalled = p.stalled
	}
	p.outMu.Unlock()
	p.closeLog()
}

// terminate sends SIGTERM to the group, waits for the worker up to the
// grace period, then sends SIGKILL. It returns the worker's state and the
// last signal sent.
func (p *Process) terminate(exited <-chan *os.ProcessState) (*os.ProcessState, string) {
	p.note("sending SIGTERM to process group %d", p.pid)
	_ = syscall.Kill(-p.pid, syscall.SIGTERM)
	t := time.NewTimer(p.spec.Grace)
	defer t.Stop()
	select {
	case ps := <-exited:
		return ps, "SIGTERM"
	case <-t.C:
	}
	p.note("still running after %s grace: sending SIGKILL to process group %d", p.spec.Grace, p.pid)
	_ = syscall.Kill(-p.pid, syscall.SIGKILL)
	return <-exited, "SIGKILL"
}

// endLeftovers ends whatever of the run still runs now that the worker's
// own process has ended (see Reaper.members): SIGTERM, the grace period,
// SIGKILL, until nothing is left. Then the run leaves the Reaper.
func (p *Process) endLeftovers() {
	defer p.reaper.remove(p)
	first := true
	find := func() []Proc {
		ps := p.reaper.members(p)
		if first && len(ps) > 0 {
			p.note("worker left %s running: %s; sending SIGTERM", plural(len(ps), "process", "processes"), procList(ps, 5))
		}
		first = false
		return ps
	}
	p.res.Leftovers, p.res.Survivors = endAll(find, p.spec.Grace, p.note)
	if len(p.res.Survivors) > 0 {
		p.note("%s survived SIGKILL (uninterruptible sleep?): %s", plural(len(p.res.Survivors), "process", "processes"), procList(p.res.Survivors, 5))
	}
}

// procList renders up to max processes for a message.
func procList(ps []Proc, max int) string {
	var parts []string
	for i, x := range ps {
		if i == max {
			parts = append(parts, fmt.Sprintf("and %d more", len(ps)-max))
			break
		}
		parts = append(parts, x.String())
	}
	return strings.Join(parts, ", ")
}

func (p *Process) copyOutput(copied chan<- struct{}) {
	defer close(copied)
	buf := make([]byte, 64<<10)
	for {
		n, err := p.out.Read(buf)
		if n > 0 {
			p.outMu.Lock()
			p.outBytes += int64(n)
			p.outMu.Unlock()
			p.emit(buf[:n])
			p.watchStalls(buf[:n])
			if p.meter != nil {
				p.meter.write(buf[:n])
			}
		}
		if err != nil {
			return
		}
	}
}

// maxStallLine bounds the unfinished line kept for stall phrases.
const maxStallLine = 4 << 10

// watchStalls looks for the stall phrases in every output line (ended by
// a newline or a carriage return) and stops the run at the first match.
func (p *Process) watchStalls(b []byte) {
	if len(p.spec.Stalls) == 0 || p.stalled != "" {
		return
	}
	for len(b) > 0 {
		i := bytes.IndexAny(b, "\r\n")
		if i < 0 {
			p.partial = append(p.partial, b...)
			if len(p.partial) > maxStallLine {
				p.partial = p.partial[len(p.partial)-maxStallLine:]
			}
			return
		}
		line := append(p.partial, b[:i]...)
		p.partial = p.partial[:0]
		b = b[i+1:]
		text := strings.TrimSpace(string(stripANSI(line)))
		lower := strings.ToLower(text)
		for _, phrase := range p.spec.Stalls {
			if phrase != "" && strings.Contains(lower, phrase) {
				p.outMu.Lock()
				p.stalled = text
				p.outMu.Unlock()
				p.note("no progress possible (%q): stopping the worker", phrase)
				p.Stop()
				return
			}
		}
	}
}

// emit writes to the log and the tee. Failures are not the worker's
// problem: a full disk or a closed terminal must not kill the run.
func (p *Process) emit(b []byte) {
	if p.log != nil && len(b) > 0 {
		_, _ = p.log.Write(b)
		p.outMu.Lock()
		p.midLine = b[len(b)-1] != '\n'
		p.outMu.Unlock()
	}
	if p.tee != nil {
		if _, err := p.tee.Write(b); err != nil {
			p.tee = nil
		}
	}
}

// NotePrefix starts every line agentmine itself writes into a session log.
const NotePrefix = "[agentmine] "

// note records a supervisor event in the log (not on the tee).
func (p *Process) note(format string, args ...any) {
	if p.log == nil {
		return
	}
	line := NotePrefix + time.Now().UTC().Format(time.RFC3339) + " " + fmt.Sprintf(format, args...) + "\n"
	p.outMu.Lock()
	if p.midLine {
		// Start the note on its own line, so that it is never read as
		// the end of the worker's last line.
		line = "\n" + line
		p.midLine = false
	}
	p.outMu.Unlock()
	_, _ = p.log.Write([]byte(line))
}

func (p *Process) closeLog() {
	if p.log != nil {
		_ = p.log.Close()
	}
}

// describeArgv renders argv for the log, abbreviating long arguments (an
// inline prompt) to their first line and size.
func describeArgv(argv []string) string {
	parts := make([]string, len(argv))
	for i, a := range argv {
		if len(a) > 80 || strings.Contains(a, "\n") {
			first, _, _ := strings.Cut(a, "\n")
			if len(first) > 60 {
				first = first[:60]
			}
			a = fmt.Sprintf("%s…(%d bytes)", first, len(a))
		}
		parts[i] = shellQuote(a)
	}
	return strings.Join(parts, " ")
}

func envValue(env []string, key string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == key {
			return v
		}
	}
	return ""
}

// CheckCommand reports, with the error Start would return, whether the
// program of argv can be found in the PATH a worker started with env
// would have and run on this machine (Resolve). It lets a caller refuse a
// run up front (a detached run, before its supervisor is started).
func CheckCommand(argv []string, dir string, env []string) error {
	if len(argv) == 0 || argv[0] == "" {
		return exitcode.New(exitcode.Config, errors.New("start worker: empty command"), "")
	}
	_, err := Resolve(argv[0], dir, WorkerEnv(env))
	return err
}

// lookPath finds the program the worker runs. A name with a slash is used
// as is; otherwise the directories of pathEnv are searched (relative ones
// are skipped, so the worktree cannot supply the client).
func lookPath(name, pathEnv string) (string, error) {
	hint := "install it, or set command in the agent definition"
	if strings.Contains(name, "/") {
		if isExecutable(name) {
			return name, nil
		}
		return "", exitcode.New(exitcode.NotFound, fmt.Errorf("client %q not found or not executable", name), hint)
	}
	for _, dir := range filepath.SplitList(pathEnv) {
		if !filepath.IsAbs(dir) {
			continue
		}
		if p := filepath.Join(dir, name); isExecutable(p) {
			return p, nil
		}
	}
	return "", exitcode.New(exitcode.NotFound, fmt.Errorf("client %q not found in PATH", name), hint)
}

func isExecutable(path string) bool {
	st, err := os.Stat(path)
	if err != nil {
		return false
	}
	return st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0
}

// Detach starts argv as a detached process that outlives the caller: a
// new session (so no terminal signal reaches it), stdin from /dev/null,
// stdout and stderr appended to logPath, extra KEY=VALUE pairs added to
// the environment. It waits only until the process says it handles
// signals (Ready, see ReadyEnv), not for it to end; it returns its pid
// and start time, which identify it for Alive. While the caller lives, a
// background goroutine reaps the process when it exits, so it never stays
// a zombie; once the caller exits, init adopts it.
func Detach(ctx context.Context, argv []string, dir string, env []string, logPath string) (pid int, start uint64, err error) {
	if len(argv) == 0 || argv[0] == "" {
		return 0, 0, exitcode.New(exitcode.Config, errors.New("detach: empty command"), "")
	}
	if err := ctx.Err(); err != nil {
		return 0, 0, fmt.Errorf("detach: %w", err)
	}
	fullEnv := append(os.Environ(), env...)
	path, err := lookPath(argv[0], envValue(fullEnv, "PATH"))
	if err != nil {
		return 0, 0, err
	}
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return 0, 0, fmt.Errorf("detach: log directory: %w", err)
	}
	logf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return 0, 0, fmt.Errorf("detach: %w", err)
	}
	defer logf.Close()
	ready, readyW, err := os.Pipe()
	if err != nil {
		return 0, 0, fmt.Errorf("detach: %w", err)
	}
	// The pipe's write end is the child's descriptor 3 (ExtraFiles[0]).
	fullEnv = append(fullEnv, fmt.Sprintf("%s=3:%d", ReadyEnv, os.Getpid()))
	cmd := &exec.Cmd{Path: path, Args: argv, Dir: dir, Env: fullEnv, Stdout: logf, Stderr: logf,
		ExtraFiles: []*os.File{readyW}, SysProcAttr: &syscall.SysProcAttr{Setsid: true}}
	err = cmd.Start()
	readyW.Close()
	if err != nil {
		ready.Close()
		if errors.Is(err, fs.ErrNotExist) && dir != "" {
			return 0, 0, exitcode.New(exitcode.NotFound, fmt.Errorf("detach %q: %w", argv[0], err), "")
		}
		return 0, 0, fmt.Errorf("detach %q: %w", argv[0], err)
	}
	pid = cmd.Process.Pid
	start, err = StartTime(pid)
	go func() { _ = cmd.Wait() }()
	waitReady(ready)
	if err != nil {
		return pid, 0, fmt.Errorf("detach: %w", err)
	}
	return pid, start, nil
}
