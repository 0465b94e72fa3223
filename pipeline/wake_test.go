package pipeline

import (
	"os/exec"
	"testing"
	"time"

	"github.com/git-agentmine/git-agentmine/launch"
)

// A watched process's exit ends the loop's sleep, however long its poll:
// the test would wait the hour if it did not.
func TestWakerWakesOnExit(t *testing.T) {
	cmd := exec.Command("sh", "-c", "read line")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	start, err := launch.StartTime(pid)
	if err != nil {
		t.Fatal(err)
	}
	w := newWaker()
	defer w.close()
	w.watch(pid, start)
	w.watch(pid, start) // watched once
	in.Close()          // the process ends
	go func() { _ = cmd.Wait() }()
	w.sleep(time.Hour, nil)

	// A process that is gone, or a pid that names another process now,
	// wakes at once.
	w.watch(pid, start)
	w.sleep(time.Hour, nil)
	self := exec.Command("sleep", "3600")
	if err := self.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = self.Process.Kill(); _ = self.Wait() }()
	w.watch(self.Process.Pid, 1) // not its start time
	w.sleep(time.Hour, nil)
}

// A sleep ends when done is closed, and close ends the watches still
// waiting.
func TestWakerDoneAndClose(t *testing.T) {
	cmd := exec.Command("sleep", "3600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	start, _ := launch.StartTime(cmd.Process.Pid)
	w := newWaker()
	w.watch(cmd.Process.Pid, start)
	done := make(chan struct{})
	close(done)
	w.sleep(time.Hour, done)
	w.close()
	for {
		w.mu.Lock()
		n, quit := len(w.watched), w.quit
		w.mu.Unlock()
		if n == 0 && quit == -1 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	w.watch(cmd.Process.Pid, start) // closed: not watched
	if w.watched[cmd.Process.Pid] {
		t.Fatal("a closed waker watches")
	}
}

func TestNextWake(t *testing.T) {
	if d := nextWake(time.Time{}, time.Hour); d != time.Hour {
		t.Errorf("no backoff: %s, want the poll", d)
	}
	if d := nextWake(time.Now().Add(-time.Minute), time.Hour); d != 10*time.Millisecond {
		t.Errorf("backoff over: %s, want 10ms", d)
	}
	if d := nextWake(time.Now().Add(time.Minute), time.Second); d != time.Second {
		t.Errorf("backoff after the poll: %s, want the poll", d)
	}
}

// BenchmarkWake measures how long after a watched process is told to end
// (its stdin closed: it exits on end of input) the loop's sleep returns,
// with an hour's poll: the latency from a worker's end to the loop.
func BenchmarkWake(b *testing.B) {
	var total, worst time.Duration
	for i := 0; i < b.N; i++ {
		cmd := exec.Command("sh", "-c", "read line")
		in, err := cmd.StdinPipe()
		if err != nil {
			b.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		start, _ := launch.StartTime(cmd.Process.Pid)
		w := newWaker()
		w.watch(cmd.Process.Pid, start)
		t0 := time.Now()
		in.Close()
		go func() { _ = cmd.Wait() }()
		w.sleep(time.Hour, nil)
		d := time.Since(t0)
		total += d
		worst = max(worst, d)
		w.close()
	}
	b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "wake-ms")
	b.ReportMetric(float64(worst.Microseconds())/1000, "worst-wake-ms")
}
