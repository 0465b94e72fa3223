package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

// build50k commits 50,000 files (plus .env files and a secrets/ tree) on
// main with one fast-import.
func build50k(tb testing.TB, repo string) {
	tb.Helper()
	var in bytes.Buffer
	in.WriteString("commit refs/heads/main\ncommitter Ada Author <ada@example.com> 1767323045 +0000\ndata 4\n50k\n")
	for i := 0; i < 50000; i++ {
		fmt.Fprintf(&in, "M 100644 inline top%d/dir%d/file%d.txt\ndata 6\nhello\n", i%10, i%500, i)
	}
	for i := 0; i < 50; i++ {
		fmt.Fprintf(&in, "M 100644 inline top%d/dir%d/local.env\ndata 2\nx\n", i%10, i)
	}
	in.WriteString("M 100644 inline .env\ndata 2\nx\nM 100644 inline secrets/key\ndata 2\nk\n\n")
	fastImport(tb, repo, &in)
	gittest.Git(tb, repo, "checkout", "-q", "-f", "main")
}

// BenchmarkWorkerRun50k reports `git agentmine worker run` (no --exec: the
// session, the scoped worktree with read-only guard rails and its check,
// memory snapshot, prompt) on a 50,000-file repository against raw git
// doing `git worktree add` + `git sparse-checkout set --no-cone` with the
// same patterns, in the same run, as the ratio agentmine/raw.
func BenchmarkWorkerRun50k(b *testing.B) {
	useBuiltBinary(b)
	repo := gittest.Init(b)
	build50k(b, repo)
	timeCmd(b, repo, "git", "agentmine", "init")
	agent := "client = \"custom\"\ncommand = [\"true\"]\n[scope]\nwrite = [\"top0/**\", \"top1/**\"]\nexclude = [\"**/*.env\", \".env\", \"**/secrets/**\"]\n"
	if err := os.WriteFile(filepath.Join(repo, ".agentmine", "agents", "bench.toml"), []byte(agent), 0o644); err != nil {
		b.Fatal(err)
	}
	var ours, raw time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		out, err := exec.Command("git", "-C", repo, "agentmine", "task", "add", fmt.Sprintf("bench %d", i), "-q").Output()
		if err != nil {
			b.Fatal(err)
		}
		id := strings.TrimSpace(string(out))
		b.StartTimer()
		start := time.Now()
		cmd := exec.Command("git", "agentmine", "worker", "run", id, "--agent", "bench", "--json")
		cmd.Dir = repo
		js, err := cmd.Output()
		if err != nil {
			b.Fatalf("worker run: %v", err)
		}
		ours += time.Since(start)
		b.StopTimer()
		var r struct {
			Session string `json:"session"`
		}
		json.Unmarshal(js, &r)
		show, _ := exec.Command("git", "-C", repo, "agentmine", "session", "show", r.Session, "--json").Output()
		_ = show
		patterns := sessionSparse(b, repo, r.Session)
		dir := filepath.Join(b.TempDir(), "raw")
		b.StartTimer()
		start = time.Now()
		timeCmd(b, repo, "git", "worktree", "add", "-q", "-b", fmt.Sprintf("raw-%d", i), dir, "main")
		timeCmd(b, dir, "git", append([]string{"sparse-checkout", "set", "--no-cone"}, patterns...)...)
		raw += time.Since(start)
		b.StopTimer()
		exec.Command("git", "-C", repo, "worktree", "remove", "--force", dir).Run()
		exec.Command("git", "-C", repo, "agentmine", "worker", "done", id, "--force").Run()
		b.StartTimer()
	}
	b.ReportMetric(float64(ours.Milliseconds())/float64(b.N), "agentmine-ms/op")
	b.ReportMetric(float64(raw.Milliseconds())/float64(b.N), "raw-git-ms/op")
	b.ReportMetric(float64(ours)/float64(raw), "ratio")
}

func sessionSparse(b *testing.B, repo, session string) []string {
	out, err := exec.Command("git", "-C", repo, "for-each-ref", "--format=%(refname)", "refs/agentmine/sessions/").Output()
	if err != nil {
		b.Fatal(err)
	}
	for _, ref := range strings.Fields(string(out)) {
		if !strings.Contains(ref, session) {
			continue
		}
		doc, err := exec.Command("git", "-C", repo, "cat-file", "blob", ref+":session.json").Output()
		if err != nil {
			b.Fatal(err)
		}
		var s struct {
			Sparse []string `json:"sparse"`
		}
		json.Unmarshal(doc, &s)
		return s.Sparse
	}
	b.Fatalf("session %s not found", session)
	return nil
}
