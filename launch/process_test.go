package launch

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

func startSh(t *testing.T, ctx context.Context, script string, spec Spec) (*Process, string) {
	t.Helper()
	dir := t.TempDir()
	spec.Argv = []string{writeScript(t, dir, "worker.sh", script)}
	if spec.Dir == "" {
		spec.Dir = dir
	}
	if spec.LogPath == "" {
		spec.LogPath = filepath.Join(dir, "logs", "session.log")
	}
	p, err := Start(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	return p, spec.LogPath
}

func readLog(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestExitCodeAndLog(t *testing.T) {
	scrubEnv(t)
	var tee bytes.Buffer
	p, log := startSh(t, context.Background(), `echo to-stdout; echo to-stderr >&2; pwd; exit 3`, Spec{Tee: &tee, Timeout: 20 * time.Second})
	res := p.Wait()
	if res.ExitCode != 3 || res.Signal != "" || res.TimedOut || res.Interrupted || res.Stopped {
		t.Fatalf("result %+v", res)
	}
	if !res.Finished.After(res.Started) && !res.Finished.Equal(res.Started) {
		t.Fatalf("finished %v before started %v", res.Finished, res.Started)
	}
	text := readLog(t, log)
	for _, want := range []string{"to-stdout\n", "to-stderr\n", filepath.Dir(p.spec.Argv[0]) + "\n", NotePrefix, "exit code 3"} {
		if !strings.Contains(text, want) {
			t.Errorf("log lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(tee.String(), NotePrefix) || !strings.Contains(tee.String(), "to-stderr") {
		t.Errorf("tee should get the worker's output only: %q", tee.String())
	}
	if res.OutputBytes != int64(tee.Len()) {
		t.Errorf("OutputBytes = %d, tee got %d", res.OutputBytes, tee.Len())
	}
	assertGroupGone(t, p.Pid())
}

func TestStdinIsClosed(t *testing.T) {
	scrubEnv(t)
	p, _ := startSh(t, context.Background(), `cat; echo done`, Spec{Timeout: 20 * time.Second})
	if res := p.Wait(); res.ExitCode != 0 || res.TimedOut {
		t.Fatalf("a worker reading stdin must see EOF at once: %+v", res)
	}
}

func TestMissingClient(t *testing.T) {
	scrubEnv(t)
	t.Setenv("PATH", t.TempDir())
	log := filepath.Join(t.TempDir(), "logs", "s.log")
	_, err := Start(context.Background(), Spec{Argv: []string{"claude", "-p", "x"}, LogPath: log})
	wantCode(t, err, exitcode.NotFound)
	if err.Error() != `client "claude" not found in PATH` {
		t.Fatalf("error = %q", err)
	}
	if exitcode.HintOf(err) == "" {
		t.Error("no hint")
	}
	if _, statErr := os.Stat(filepath.Dir(log)); !os.IsNotExist(statErr) {
		t.Error("a failed start left a log behind")
	}

	notExec := filepath.Join(t.TempDir(), "tool")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Start(context.Background(), Spec{Argv: []string{notExec}})
	wantCode(t, err, exitcode.NotFound)
	if !strings.Contains(err.Error(), notExec) {
		t.Fatalf("error should name the program: %v", err)
	}

	_, err = Start(context.Background(), Spec{Argv: []string{"/bin/sh"}, Dir: filepath.Join(t.TempDir(), "gone")})
	wantCode(t, err, exitcode.NotFound)
	_, err = Start(context.Background(), Spec{})
	wantCode(t, err, exitcode.Config)
	_, err = Start(context.Background(), Spec{Argv: []string{"/bin/sh"}, Stdin: filepath.Join(t.TempDir(), "none")})
	wantCode(t, err, exitcode.NotFound)
}

func TestTimeoutTerminatesGroup(t *testing.T) {
	scrubEnv(t)
	p, log := startSh(t, context.Background(), `sleep 1000 & echo ready; sleep 1000`, Spec{Timeout: 500 * time.Millisecond, Grace: 5 * time.Second})
	res := p.Wait()
	if !res.TimedOut || res.ExitCode != exitcode.Timeout || res.Signal != "SIGTERM" {
		t.Fatalf("result %+v", res)
	}
	assertGroupGone(t, p.Pid())
	text := readLog(t, log)
	if !strings.Contains(text, "timed out after 500ms") || !strings.Contains(text, "SIGTERM") {
		t.Fatalf("log does not explain the timeout:\n%s", text)
	}
}

func TestTimeoutWorkerIgnoresTerm(t *testing.T) {
	scrubEnv(t)
	// The ignored disposition is inherited by the sleep as well.
	p, log := startSh(t, context.Background(), `trap '' TERM; echo ready; sleep 1000`, Spec{Timeout: time.Second, Grace: 300 * time.Millisecond})
	res := p.Wait()
	if !res.TimedOut || res.ExitCode != exitcode.Timeout || res.Signal != "SIGKILL" {
		t.Fatalf("result %+v", res)
	}
	assertGroupGone(t, p.Pid())
	if text := readLog(t, log); !strings.Contains(text, "sending SIGKILL") {
		t.Fatalf("log does not record the SIGKILL:\n%s", text)
	}
}

func TestChildrenKilledWhenWorkerExits(t *testing.T) {
	scrubEnv(t)
	dir := t.TempDir()
	script := `sleep 1000 & echo $! > ` + dir + `/a
(trap '' TERM; exec sleep 1000) & echo $! > ` + dir + `/b
sleep 0.1
exit 0`
	p, log := startSh(t, context.Background(), script, Spec{Timeout: 20 * time.Second, Grace: 300 * time.Millisecond})
	res := p.Wait()
	if res.ExitCode != 0 || res.Signal != "" || res.TimedOut {
		t.Fatalf("the worker itself exited 0: %+v", res)
	}
	assertGroupGone(t, p.Pid())
	for _, f := range []string{"a", "b"} {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
		if st, err := readProcStat(pid); err == nil && st.state != 'Z' {
			t.Errorf("child %s (pid %d) still runs: state %c", f, pid, st.state)
		}
	}
	if text := readLog(t, log); !strings.Contains(text, "worker left") {
		t.Errorf("log does not mention the leftover children:\n%s", text)
	}
}

func TestOutputFloodIsBounded(t *testing.T) {
	gittest.SkipShort(t, "a worker flooding its output")
	scrubEnv(t)
	const total = 40_000_000
	const bound = 1 << 20
	p, log := startSh(t, context.Background(), `yes 0123456789abcdefghijklmnopqrstuvwxyz | head -c `+strconv.Itoa(total)+`; echo; echo last-line`,
		Spec{MaxLogBytes: bound, Timeout: 60 * time.Second})
	res := p.Wait()
	if res.ExitCode != 0 || res.TimedOut {
		t.Fatalf("result %+v", res)
	}
	if res.OutputBytes != int64(total+len("\nlast-line\n")) {
		t.Errorf("OutputBytes = %d", res.OutputBytes)
	}
	kept := int64(0)
	for _, f := range []string{log, log + ".1"} {
		st, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if st.Size() > bound {
			t.Errorf("%s is %d bytes, bound %d", f, st.Size(), bound)
		}
		kept += st.Size()
	}
	if _, err := os.Stat(log + ".2"); !os.IsNotExist(err) {
		t.Error("more than one rotated file")
	}
	if kept > 2*bound {
		t.Errorf("kept %d bytes", kept)
	}
	lines, err := Tail(log, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 3 || lines[1] != "last-line" || !strings.HasPrefix(lines[2], NotePrefix) {
		t.Fatalf("tail = %q", lines)
	}
}

func TestCancelStopsForegroundRun(t *testing.T) {
	scrubEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var tee bytes.Buffer
	p, log := startSh(t, ctx, `echo ready; sleep 1000`, Spec{Tee: &tee, Timeout: time.Minute, Grace: 5 * time.Second})
	waitForLog(t, log, "ready")
	cancel()
	res := p.Wait()
	if !res.Interrupted || res.TimedOut || res.ExitCode != exitcode.Interrupted || res.Signal != "SIGTERM" {
		t.Fatalf("result %+v", res)
	}
	assertGroupGone(t, p.Pid())
	if tee.String() != "ready\n" {
		t.Errorf("tee = %q", tee.String())
	}
	if !strings.Contains(readLog(t, log), "interrupted") {
		t.Error("log does not record the interruption")
	}
}

// A context cancelled with ErrStopRequested (worker stop's SIGTERM to the
// supervisor) ends the run like Stop: the worker's own exit is recorded,
// whether SIGTERM killed it or it exited by itself on SIGTERM.
func TestStopRequestedKeepsWorkerExit(t *testing.T) {
	scrubEnv(t)
	for _, c := range []struct {
		name, script string
		code         int
	}{
		{"killed", `echo ready; sleep 1000`, 128 + int(syscall.SIGTERM)},
		{"trapped", `trap 'exit 7' TERM; echo ready; while :; do sleep 0.05; done`, 7},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			p, log := startSh(t, ctx, c.script, Spec{Timeout: time.Minute, Grace: 5 * time.Second})
			waitForLog(t, log, "ready")
			cancel(ErrStopRequested)
			res := p.Wait()
			if !res.Stopped || res.Interrupted || res.TimedOut || res.ExitCode != c.code || res.Signal != "SIGTERM" {
				t.Fatalf("result %+v, want stopped with exit %d and SIGTERM", res, c.code)
			}
			assertGroupGone(t, p.Pid())
			if !strings.Contains(readLog(t, log), "stop requested") {
				t.Error("log does not record the stop")
			}
		})
	}
}

func TestStopAndSignal(t *testing.T) {
	scrubEnv(t)
	p, log := startSh(t, context.Background(), `trap 'echo got-usr1' USR1; echo ready; while :; do sleep 0.05; done`, Spec{Timeout: time.Minute})
	waitForLog(t, log, "ready")
	if err := p.Signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	waitForLog(t, log, "got-usr1")
	p.Stop()
	p.Stop() // idempotent
	res := p.Wait()
	if !res.Stopped || res.ExitCode != 128+int(syscall.SIGTERM) || res.Signal != "SIGTERM" {
		t.Fatalf("result %+v", res)
	}
	assertGroupGone(t, p.Pid())
	if err := p.Signal(syscall.SIGTERM); err == nil {
		t.Error("signalling a finished group should fail")
	}
}

func TestProcessIdentity(t *testing.T) {
	st, err := StartTime(os.Getpid())
	if err != nil || st == 0 {
		t.Fatalf("StartTime(self) = %d, %v", st, err)
	}
	if !Alive(os.Getpid(), st) {
		t.Fatal("this process is not alive")
	}
	if Alive(os.Getpid(), st+1) {
		t.Fatal("a different start time (recycled pid) counted as alive")
	}
	if Alive(0, st) || Alive(-1, st) {
		t.Fatal("invalid pid alive")
	}
	if _, err := StartTime(0); err == nil {
		t.Fatal("StartTime(0) succeeded")
	}

	// A zombie (exited, not yet reaped) is not alive.
	cmd := exec.Command("/bin/sh", "-c", "exit 0")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	zst, err := StartTime(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		ps, err := readProcStat(cmd.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		if ps.state == 'Z' {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("child never became a zombie")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if Alive(cmd.Process.Pid, zst) {
		t.Fatal("zombie counted as alive")
	}
	_ = cmd.Wait()
	if Alive(cmd.Process.Pid, zst) {
		t.Fatal("reaped process counted as alive")
	}
}

func TestStartedProcessIdentity(t *testing.T) {
	scrubEnv(t)
	p, log := startSh(t, context.Background(), `echo ready; sleep 1000`, Spec{Timeout: time.Minute, Grace: time.Second})
	waitForLog(t, log, "ready")
	if p.StartTime() == 0 || !Alive(p.Pid(), p.StartTime()) {
		t.Fatalf("running worker not alive: pid %d start %d", p.Pid(), p.StartTime())
	}
	p.Stop()
	p.Wait()
	if Alive(p.Pid(), p.StartTime()) {
		t.Fatal("stopped worker still alive")
	}
}

func TestParseProcStat(t *testing.T) {
	line := "4242 (we) ird (name) S 1 4240 4240 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 987654 1000 10"
	st, err := parseProcStat(line)
	if err != nil || st.state != 'S' || st.pgrp != 4240 || st.startTime != 987654 {
		t.Fatalf("got %+v, %v", st, err)
	}
	for _, bad := range []string{"", "1 (x) S 1 2", "1 (x) S 1 notanumber 3 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5 0 0"} {
		if _, err := parseProcStat(bad); err == nil {
			t.Errorf("parseProcStat(%q) succeeded", bad)
		}
	}
}

func TestDetach(t *testing.T) {
	scrubEnv(t)
	dir := t.TempDir()
	log := filepath.Join(dir, "sup", "supervisor.log")
	// Closing the readiness descriptor says "ready" as well as Ready does.
	script := writeScript(t, dir, "sup.sh", `exec 3>&-; echo "sup $AGENTMINE_X in $(pwd)"; cat; sleep 1000`)
	ctx, cancel := context.WithCancel(context.Background())
	pid, start, err := Detach(ctx, []string{script}, dir, []string{"AGENTMINE_X=42"}, log)
	cancel() // the caller's context ending must not matter
	if err != nil {
		t.Fatal(err)
	}
	// The detached process leads its own session and group: end all of it.
	t.Cleanup(func() { syscall.Kill(-pid, syscall.SIGKILL) })
	waitForLog(t, log, "sup 42 in "+dir)
	if !Alive(pid, start) {
		t.Fatal("detached process not alive")
	}
	sid, err := unix.Getsid(pid)
	if err != nil || sid != pid {
		t.Fatalf("detached process should lead its own session: sid %d, %v", sid, err)
	}
	mySid, _ := unix.Getsid(os.Getpid())
	if sid == mySid {
		t.Fatal("detached process shares our session")
	}
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for Alive(pid, start) {
		if time.Now().After(deadline) {
			t.Fatal("killed detached process still alive")
		}
		time.Sleep(10 * time.Millisecond)
	}
	assertGroupGone(t, pid)

	t.Setenv("PATH", t.TempDir())
	_, _, err = Detach(context.Background(), []string{"git-agentmine"}, dir, nil, log)
	wantCode(t, err, exitcode.NotFound)
	_, _, err = Detach(context.Background(), nil, dir, nil, log)
	wantCode(t, err, exitcode.Config)
}
