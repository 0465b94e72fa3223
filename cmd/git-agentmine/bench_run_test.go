package main

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

// benchRunRepo makes a small repository with a no-op worker agent (`true`)
// and n open tasks, and returns it with the tasks' ids.
func benchRunRepo(b *testing.B, n int) (string, []string) {
	b.Helper()
	repo := gittest.Init(b)
	gittest.CommitFiles(b, repo, "small repository", map[string]string{"README": "x\n", "src/a.go": "package a\n"})
	timeCmd(b, repo, "git", "agentmine", "init")
	gittest.WriteFiles(b, repo, map[string]string{".agentmine/agents/coder.toml": "client = \"custom\"\ncommand = [\"true\"]\n[scope]\nwrite = [\"**\"]\n"})
	gittest.Git(b, repo, "add", "-A")
	gittest.Git(b, repo, "commit", "-qm", "agents")
	var ids []string
	for i := 0; i < n; i++ {
		out, err := exec.Command("git", "-C", repo, "agentmine", "task", "add", fmt.Sprintf("no-op %d", i), "-q").Output()
		if err != nil {
			b.Fatal(err)
		}
		ids = append(ids, strings.TrimSpace(string(out)))
	}
	return repo, ids
}

// timeRun runs `run --parallel p` (the tasks end in review: exit 1) and
// returns its wall-clock time.
func timeRun(b *testing.B, repo string, p int) time.Duration {
	b.Helper()
	d, _ := timeRunCPU(b, repo, p)
	return d
}

// timeRunCPU is timeRun that also returns the CPU time (user and system)
// of the run and of every process it waited for: its git processes and
// its workers' detached supervisors (their agents and git processes
// included).
func timeRunCPU(b *testing.B, repo string, p int) (time.Duration, time.Duration) {
	b.Helper()
	start := time.Now()
	cmd := exec.Command("git", "agentmine", "run", "--parallel", strconv.Itoa(p), "--json")
	cmd.Dir = repo
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); err != nil && (!ok || ee.ExitCode() != 1) {
		b.Fatalf("run: %v\n%s", err, out)
	}
	d := time.Since(start)
	if !strings.Contains(string(out), `"event":"finished"`) {
		b.Fatalf("run did not finish:\n%s", out)
	}
	return d, cpuOf(cmd.ProcessState)
}

// cpuOf is the user and system time of an ended process and of the
// processes it waited for (zero for nil).
func cpuOf(ps *os.ProcessState) time.Duration {
	if ps == nil {
		return 0
	}
	return ps.UserTime() + ps.SystemTime()
}

// BenchmarkRunPipeline measures the supervisor against plain `worker run
// --exec` in the same run: AGENTMINE_BENCH_RUN_SEQ no-op tasks (default
// 200) run one after another with worker run, then
// AGENTMINE_BENCH_RUN_TASKS (default 200) by `run --parallel 8`; then
// AGENTMINE_BENCH_RUN_SMALL tasks (default 24) by run with N = 1, 2, 4 and
// 8, for the throughput and the supervisor's own cost per task (N=1
// against worker run). The ratio is per task, so a smaller sequential
// sample on a busy machine still compares. Run with -benchtime=1x: one
// pass takes many minutes.
func BenchmarkRunPipeline(b *testing.B) {
	useBuiltBinary(b)
	n := envInt("AGENTMINE_BENCH_RUN_TASKS", 200)
	nseq := envInt("AGENTMINE_BENCH_RUN_SEQ", 200)
	small := envInt("AGENTMINE_BENCH_RUN_SMALL", 24)
	for i := 0; i < b.N; i++ {
		repo, ids := benchRunRepo(b, nseq)
		start := time.Now()
		for _, id := range ids {
			cmd := exec.Command("git", "agentmine", "worker", "run", id, "--exec", "-q")
			cmd.Dir = repo
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("worker run: %v\n%s", err, out)
			}
		}
		seq := time.Since(start)
		repo8, _ := benchRunRepo(b, n)
		par := timeRun(b, repo8, 8)
		seqPer := float64(seq.Milliseconds()) / float64(nseq)
		parPer := float64(par.Milliseconds()) / float64(n)
		b.ReportMetric(seq.Seconds(), "sequential-s")
		b.ReportMetric(par.Seconds(), "run-p8-s")
		b.ReportMetric(seqPer/parPer, "speedup-per-task")
		b.ReportMetric(seqPer, "worker-run-ms/task")
		b.ReportMetric(parPer, "run-p8-ms/task")
		for _, p := range []int{1, 2, 4, 8} {
			r, _ := benchRunRepo(b, small)
			d := timeRun(b, r, p)
			b.ReportMetric(float64(small)/d.Seconds(), fmt.Sprintf("tasks/s-p%d", p))
			if p == 1 {
				b.ReportMetric(float64(d.Milliseconds())/float64(small), "run-p1-ms/task")
			}
		}
	}
}

func envInt(key string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(key)); err == nil && v > 0 {
		return v
	}
	return def
}
