package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestBenchTableRenders runs scripts/bench-table, the script README's
// Scale table comes from, with a `go` first in PATH that prints what `go
// test -bench` prints for two rows (a plain one and the run-against-loops
// one), and checks the rows it renders. A quoting slip in the script's
// awk program once made it stop with a syntax error before any row; this
// catches that without the half hour the real benchmarks take.
func TestBenchTableRenders(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the script is POSIX sh")
	}
	_, file, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(file), "..", "..", "scripts", "bench-table")
	if out, err := exec.Command("sh", "-n", script).CombinedOutput(); err != nil {
		t.Fatalf("sh -n %s: %v\n%s", script, err, out)
	}
	bin := t.TempDir()
	fakeGo := `#!/bin/sh
case "$*" in
*BenchmarkVersion*) echo "BenchmarkVersion-2   	     200	   6500000 ns/op	 3.10 ratio	 3.60 cpu-ratio	 6.5 agentmine-ms/op	 2.1 raw-git-ms/op	 1 agentmine-git-procs	 1 raw-git-procs" ;;
*BenchmarkRunOverhead*) echo "BenchmarkRunOverhead-2   	       1	 1 ns/op	 0.98 ratio-p1	 1.05 cpu-ratio-p1	 5.0 run-tasks/s-p1	 5.1 loops-tasks/s-p1	 -0.1667 overhead-ms/task	 0.95 ratio-p2	 1.02 cpu-ratio-p2	 10 run-tasks/s-p2	 9.5 loops-tasks/s-p2" ;;
*) echo "unexpected: $*" >&2; exit 1 ;;
esac
`
	if err := os.WriteFile(filepath.Join(bin, "go"), []byte(fakeGo), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", script, "^(version vs|run --parallel)")
	cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "BENCH_LOG="+filepath.Join(t.TempDir(), "log"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bench-table: %v\n%s", err, out)
	}
	got := string(out)
	for _, want := range []string{
		"| version vs git --version | ≤ 2× | 3.10 | 3.60 | 6.5 | 2.1 | 1 / 1 | – |",
		"(N = 1, -0.2 ms a task over the loop) | ≤ 1.1× (N = 1: ≤ 100 ms a task) | 1.02 | 1.05 | 200.0 | 196.1 |",
		"(N = 2) | ≤ 1.1× (N = 1: ≤ 100 ms a task) | 1.05 | 1.02 | 100.0 | 105.3 |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("bench-table printed no row containing %q:\n%s", want, got)
		}
	}
}
