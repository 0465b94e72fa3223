package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

// buildTaskFixture writes n task refs straight into repo with one
// `git fast-import`, in the exact format the store writes, so benchmarks
// start from a realistic repository in seconds.
func buildTaskFixture(tb testing.TB, repo string, n int) {
	tb.Helper()
	var in bytes.Buffer
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("%020x", uint64(i)*0x9E3779B97F4A7C15)
		doc := fmt.Sprintf(`{
  "v": 1,
  "id": %q,
  "title": "benchmark task %d",
  "description": "generated for the list benchmark",
  "type": "task",
  "priority": "medium",
  "blocked_by": [],
  "labels": ["bench", "l%d"],
  "created": {"time": "2026-01-02T03:04:05Z", "author": "Ada Author"},
  "updated": {"time": "2026-01-02T03:04:05Z", "author": "Ada Author"}
}
`, id, i, i%10)
		fmt.Fprintf(&in, "commit refs/agentmine/tasks/%s\ncommitter Ada Author <ada@example.com> 1767323045 +0000\ndata 14\ntask add: gen\nM 100644 inline task.json\ndata %d\n%s\n", id, len(doc), doc)
	}
	gittest.GitInput(tb, repo, &in, "fast-import", "--quiet")
	gittest.Git(tb, repo, "pack-refs", "--all")
}

func timeCmd(b *testing.B, dir string, name string, args ...string) time.Duration {
	b.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stdout = nil // discarded
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		b.Fatalf("%s %v: %v: %s", name, args, err, stderr.String())
	}
	return time.Since(start)
}

// BenchmarkTaskList10k reports `git agentmine task list --json` over 10,000
// tasks against raw git reading the same data (for-each-ref piped into
// cat-file --batch) in the same run, as the ratio agentmine/raw.
func BenchmarkTaskList10k(b *testing.B) {
	useBuiltBinary(b)
	repo := gittest.NewRepo(b)
	buildTaskFixture(b, repo, 10000)
	// Warm the page cache for both.
	timeCmd(b, repo, "git", "agentmine", "task", "list", "--json")
	var ours, raw time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ours += timeCmd(b, repo, "git", "agentmine", "task", "list", "--json")
		raw += timeCmd(b, repo, "sh", "-c", "git for-each-ref refs/agentmine/tasks | git cat-file --batch")
	}
	b.ReportMetric(float64(ours.Milliseconds())/float64(b.N), "agentmine-ms/op")
	b.ReportMetric(float64(raw.Milliseconds())/float64(b.N), "raw-git-ms/op")
	b.ReportMetric(float64(ours)/float64(raw), "ratio")
}

// useBuiltBinary builds the real git-agentmine and puts it first on PATH, so
// benchmarks time the product, not the test binary standing in for it.
func useBuiltBinary(b *testing.B) {
	b.Helper()
	bin := b.TempDir()
	if out, err := exec.Command("go", "build", "-o", filepath.Join(bin, "git-agentmine"), ".").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v: %s", err, out)
	}
	b.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
}
