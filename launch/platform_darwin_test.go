package launch

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The darwin process table, marker and supervision on a real process: a
// child in a group of its own, found by identity, marker and descent,
// signalled by identity and waited for with kqueue. Runs on a Mac only.
func TestDarwinPlatform(t *testing.T) {
	marker := newMarker()
	cmd := exec.Command("sleep", "30")
	cmd.Env = append(os.Environ(), marker)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	defer func() { _ = cmd.Process.Kill(); <-done }()

	start, err := StartTime(pid)
	if err != nil || start == 0 {
		t.Fatalf("StartTime = %d, %v", start, err)
	}
	if !Alive(pid, start) || Alive(pid, start+1) {
		t.Fatal("Alive does not tell the process by its start time")
	}
	if !environHas(pid, marker) || environHas(pid, marker+"x") {
		t.Fatal("environHas does not read the marker exactly")
	}
	if _, ok := family(os.Getpid())[pid]; !ok {
		t.Fatal("the child is not in this process's family")
	}
	if c := commandOf(pid); c != "sleep 30" {
		t.Fatalf("commandOf = %q", c)
	}
	if signalProc(Proc{Pid: pid, Start: start + 1}, unix.SIGTERM) {
		t.Fatal("a signal went to a process with another start time")
	}
	if !signalProc(Proc{Pid: pid, Start: start}, unix.SIGTERM) {
		t.Fatal("the signal was not sent")
	}
	// kqueue NOTE_EXIT wakes the wait as the member ends.
	waitGroupGone(pid, 5*time.Second)
	if groupAlive(pid) {
		t.Fatal("the group outlived waitGroupGone")
	}
	<-done
	if Alive(pid, start) {
		t.Fatal("Alive after the process was reaped")
	}
}

// Without a child subreaper, the Reaper says so: orphans are found by
// their marker alone.
func TestDarwinReaperHasNoSubreaper(t *testing.T) {
	r := NewReaper()
	r.mu.Lock()
	r.subreap()
	r.mu.Unlock()
	if r.Err() == nil {
		t.Fatal("Reaper.Err is nil on darwin")
	}
}
