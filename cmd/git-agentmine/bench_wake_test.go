package main

import (
	"fmt"
	"os"
	"os/exec"
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
				if out, err := cmd.CombinedOutput(); err != nil {
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
// by side over N×AGENTMINE_BENCH_WAKE_TASKS (default 10) tasks, then `run
// --parallel N` over as many tasks in a fresh repository. It reports both
// throughputs and their ratio (run / loops: 1 is "as fast as the plain
// loops"), and, for N = 1, run's overhead per task in milliseconds (run's
// time per task minus the plain loop's). The load average is reported at
// the start and the end. Run with -benchtime=1x.
func BenchmarkRunOverhead(b *testing.B) {
	useBuiltBinary(b)
	m := envInt("AGENTMINE_BENCH_WAKE_TASKS", 10)
	b.ReportMetric(loadAvg(), "load-start")
	for i := 0; i < b.N; i++ {
		for _, n := range []int{1, 2, 4, 8} {
			repo, ids := benchRunRepo(b, n*m)
			loops := plainLoops(b, repo, ids, n)
			repo2, _ := benchRunRepo(b, n*m)
			run := timeRun(b, repo2, n)
			tasks := float64(n * m)
			b.ReportMetric(tasks/loops.Seconds(), fmt.Sprintf("loops-tasks/s-p%d", n))
			b.ReportMetric(tasks/run.Seconds(), fmt.Sprintf("run-tasks/s-p%d", n))
			b.ReportMetric(loops.Seconds()/run.Seconds(), fmt.Sprintf("ratio-p%d", n))
			if n == 1 {
				b.ReportMetric(float64((run-loops).Milliseconds())/tasks, "overhead-ms/task")
			}
		}
	}
	b.ReportMetric(loadAvg(), "load-end")
}
