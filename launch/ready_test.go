package launch

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// readyHelperEnv makes this test binary, run by TestDetachWaitsForReady,
// act as a detached supervisor: wait a while, say it is ready, report
// what its environment still holds.
const readyHelperEnv = "LAUNCH_TEST_READY_HELPER"

func TestReadyHelper(t *testing.T) {
	dir := os.Getenv(readyHelperEnv)
	if dir == "" {
		t.Skip("run by TestDetachWaitsForReady as a detached process")
	}
	// Slow to set up, as a loaded machine makes a supervisor: whoever
	// detached this process must not go on before it is ready.
	time.Sleep(300 * time.Millisecond)
	os.WriteFile(filepath.Join(dir, "before-ready"), nil, 0o644)
	Ready(os.Getenv)
	os.WriteFile(filepath.Join(dir, "env-after"), []byte(os.Getenv(ReadyEnv)), 0o644)
	// Its own children must not see the descriptor or the variable.
	time.Sleep(1000 * time.Second)
}

func TestDetachWaitsForReady(t *testing.T) {
	scrubEnv(t)
	dir := t.TempDir()
	log := filepath.Join(dir, "helper.log")
	pid, _, err := Detach(context.Background(), []string{os.Args[0], "-test.run=^TestReadyHelper$"}, dir,
		[]string{readyHelperEnv + "=" + dir}, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-pid, syscall.SIGKILL) })
	if _, err := os.Stat(filepath.Join(dir, "before-ready")); err != nil {
		t.Fatalf("Detach returned before the process said it was ready: %v", err)
	}
	waitForFile(t, filepath.Join(dir, "env-after"))
	if b, _ := os.ReadFile(filepath.Join(dir, "env-after")); len(b) != 0 {
		t.Errorf("after Ready the process still has %s=%s", ReadyEnv, b)
	}
	// The descriptor is closed in the process: its fd 3 is not the pipe.
	if target, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "fd", "3")); err == nil && strings.HasPrefix(target, "pipe:") {
		t.Errorf("the detached process still holds the readiness pipe at fd 3")
	}
}

// readyLaterHelperEnv makes this test binary, run by
// TestDetachWaitsForReadyLater, say it is ready only after a while, as a
// detached supervisor does once its session records its pid.
const readyLaterHelperEnv = "LAUNCH_TEST_READY_LATER_HELPER"

func TestReadyLaterHelper(t *testing.T) {
	dir := os.Getenv(readyLaterHelperEnv)
	if dir == "" {
		t.Skip("run by TestDetachWaitsForReadyLater as a detached process")
	}
	ready := ReadyLater(os.Getenv)
	os.WriteFile(filepath.Join(dir, "env-at-start"), []byte(os.Getenv(ReadyEnv)), 0o644)
	// A child started before the process is ready does not hold the
	// descriptor.
	out, _ := exec.Command("sh", "-c", "readlink /proc/$$/fd/3 || true").Output()
	os.WriteFile(filepath.Join(dir, "child-fd3"), out, 0o644)
	time.Sleep(300 * time.Millisecond)
	os.WriteFile(filepath.Join(dir, "before-ready"), nil, 0o644)
	ready()
	ready() // once only
	time.Sleep(1000 * time.Second)
}

func TestDetachWaitsForReadyLater(t *testing.T) {
	scrubEnv(t)
	dir := t.TempDir()
	pid, _, err := Detach(context.Background(), []string{os.Args[0], "-test.run=^TestReadyLaterHelper$"}, dir,
		[]string{readyLaterHelperEnv + "=" + dir}, filepath.Join(dir, "helper.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-pid, syscall.SIGKILL) })
	if _, err := os.Stat(filepath.Join(dir, "before-ready")); err != nil {
		t.Fatalf("Detach returned before the process said it was ready: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "env-at-start")); len(b) != 0 {
		t.Errorf("after ReadyLater the process still has %s=%s", ReadyEnv, b)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "child-fd3")); strings.HasPrefix(string(b), "pipe:") {
		t.Errorf("a child of the process inherited the readiness pipe: %s", b)
	}
}

// TestReadyIgnoresOthers: Ready acts only for the process whose parent is
// named in the variable, and only on a descriptor past stderr.
func TestReadyIgnoresOthers(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	for _, v := range []string{
		strconv.Itoa(int(w.Fd())) + ":" + strconv.Itoa(os.Getppid()+1), // another parent
		"2:" + strconv.Itoa(os.Getppid()),                              // stderr
		strconv.Itoa(int(w.Fd())),                                      // no parent
		"x:y",
	} {
		t.Setenv(ReadyEnv, v)
		Ready(os.Getenv)
		if os.Getenv(ReadyEnv) != "" {
			t.Errorf("Ready(%q) left the variable set", v)
		}
	}
	r.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if n, _ := r.Read(make([]byte, 1)); n != 0 {
		t.Error("Ready wrote to a descriptor it was not given")
	}
}

func waitForFile(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never appeared", path)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
