package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// plainLoops runs the tasks with `worker run --exec` in n loops side by
// side (loop i takes every n-th task, one after another) and returns the
// wall-clock time of the whole.
func plainLoops(b *testing.B, repo string, ids []string, n int) time.Duration {
	b.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	start := time.Now()
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := i; j < len(ids); j += n {
				cmd := exec.Command("git", "agentmine", "worker", "run", ids[j], "--exec", "-q")
				cmd.Dir = repo
				// Exit 1 is a session that ended without passing (a no-op
				// worker whose scope check saw a sibling's worktree): the
				// work was done, as run counts it.
				out, err := cmd.CombinedOutput()
				if ee, ok := err.(*exec.ExitError); err != nil && (!ok || ee.ExitCode() != 1) {
					errs <- fmt.Errorf("worker run: %v\n%s", err, out)
					return
				}
			}
		}()
	}
	wg.Wait()
	d := time.Since(start)
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	return d
}

// loadAvg is the one-minute load average of the machine (0 where unknown).
func loadAvg() float64 {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f, _ := strconv.ParseFloat(strings.Fields(string(data))[0], 64)
	return f
}

// BenchmarkRunOverhead measures what `run` adds to its workers, against
// plain `worker run --exec` loops in the same run, on no-op (`true`)
// workers in a small repository: for N = 1, 2, 4 and 8, N plain loops side
// by side over N×AGENTMINE_BENCH_WAKE_TASKS (default 10) tasks, and `run
// --parallel N` over as many tasks in a fresh repository, in
// AGENTMINE_BENCH_WAKE_PAIRS (default 3) alternating pairs. It reports the
// medians of both throughputs and of their ratio (run / loops: 1 is "as
// fast as the plain loops"), and, for N = 1, the median of run's overhead
// per task in milliseconds (run's time per task minus the plain loop's).
// The load average is reported at the start and the end. Run with
// -benchtime=1x.
func BenchmarkRunOverhead(b *testing.B) {
	useBuiltBinary(b)
	m := envInt("AGENTMINE_BENCH_WAKE_TASKS", 10)
	pairs := envInt("AGENTMINE_BENCH_WAKE_PAIRS", 3)
	b.ReportMetric(loadAvg(), "load-start")
	for i := 0; i < b.N; i++ {
		for _, n := range []int{1, 2, 4, 8} {
			tasks := float64(n * m)
			var loopTP, runTP, ratio, over, attempts []float64
			for k := 0; k < pairs; k++ {
				var loops, run time.Duration
				timeLoops := func() {
					repo, ids := benchRunRepo(b, n*m)
					loops = plainLoops(b, repo, ids, n)
				}
				timeRunN := func() {
					repo, _ := benchRunRepo(b, n*m)
					run = timeRun(b, repo, n)
					attempts = append(attempts, float64(runAttempts(b, repo))/tasks)
				}
				if k%2 == 0 {
					timeLoops()
					timeRunN()
				} else {
					timeRunN()
					timeLoops()
				}
				loopTP = append(loopTP, tasks/loops.Seconds())
				runTP = append(runTP, tasks/run.Seconds())
				ratio = append(ratio, loops.Seconds()/run.Seconds())
				over = append(over, float64((run-loops).Milliseconds())/tasks)
			}
			b.ReportMetric(median(loopTP), fmt.Sprintf("loops-tasks/s-p%d", n))
			b.ReportMetric(median(runTP), fmt.Sprintf("run-tasks/s-p%d", n))
			b.ReportMetric(median(ratio), fmt.Sprintf("ratio-p%d", n))
			b.Logf("N=%d: ratios %v, run's attempts per task %v", n, ratio, attempts)
			if n == 1 {
				b.ReportMetric(median(over), "overhead-ms/task")
				b.Logf("N=1: overhead ms/task %v", over)
			}
		}
	}
	b.ReportMetric(loadAvg(), "load-end")
}

// runAttempts is how many attempts the last run in repo made.
func runAttempts(b *testing.B, repo string) int {
	b.Helper()
	cmd := exec.Command("git", "agentmine", "run", "status", "--json")
	cmd.Dir = repo
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("run status: %v", err)
	}
	var st []struct {
		Attempts int `json:"attempts"`
	}
	if err := json.Unmarshal(out, &st); err != nil || len(st) == 0 {
		var one struct {
			Attempts int `json:"attempts"`
		}
		if err := json.Unmarshal(out, &one); err != nil {
			b.Fatalf("run status: %v\n%s", err, out)
		}
		return one.Attempts
	}
	return st[0].Attempts
}

// median is the middle value of xs (the mean of the two middle ones for
// an even count).
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
