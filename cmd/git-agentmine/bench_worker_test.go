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

// rawWorktreeSparse is what raw git does to make a scoped worktree: `git
// worktree add` on a new branch, then `git sparse-checkout set --no-cone`
// inside it. $1 is the worktree's directory, $2 the branch, the rest the
// sparse-checkout patterns.
const rawWorktreeSparse = `set -e
dir=$1 branch=$2
shift 2
git worktree add -q -b "$branch" "$dir" main
cd "$dir"
git sparse-checkout set --no-cone "$@"
`

// BenchmarkWorkerRun50k reports `git agentmine worker run` (no --exec: the
// session, the scoped worktree with read-only guard rails and its check,
// memory snapshot, prompt) on a 50,000-file repository against raw git
// doing `git worktree add` + `git sparse-checkout set --no-cone` with the
// same patterns (rawWorktreeSparse), in the same run and in alternating
// order, after one warming run of each: both sides' wall-clock and CPU
// times and their ratios agentmine/raw, both peak memories, and how many
// git processes one run of each starts (counted in an extra, untimed run).
func BenchmarkWorkerRun50k(b *testing.B) {
	useBuiltBinary(b)
	repo := gittest.Init(b)
	build50k(b, repo)
	timeCmd(b, repo, "git", "agentmine", "init")
	agent := "client = \"custom\"\ncommand = [\"true\"]\n[scope]\nwrite = [\"top0/**\", \"top1/**\"]\nexclude = [\"**/*.env\", \".env\", \"**/secrets/**\"]\n"
	if err := os.WriteFile(filepath.Join(repo, ".agentmine", "agents", "bench.toml"), []byte(agent), 0o644); err != nil {
		b.Fatal(err)
	}
	n := 0
	addTask := func() string {
		n++
		out, err := exec.Command("git", "-C", repo, "agentmine", "task", "add", fmt.Sprintf("bench %d", n), "-q").Output()
		if err != nil {
			b.Fatal(err)
		}
		return strings.TrimSpace(string(out))
	}
	rawDir := func() (dir, branch string) {
		n++
		return filepath.Join(b.TempDir(), "raw"), fmt.Sprintf("raw-%d", n)
	}
	done := func(task, dir string) {
		if out, err := exec.Command("git", "-C", repo, "agentmine", "worker", "done", task, "--force").CombinedOutput(); err != nil {
			b.Fatalf("worker done: %v: %s", err, out)
		}
		if out, err := exec.Command("git", "-C", repo, "worktree", "remove", "--force", dir).CombinedOutput(); err != nil {
			b.Fatalf("worktree remove: %v: %s", err, out)
		}
	}

	// The warming run of our side also gives the patterns raw git is
	// given, and both sides must then hold the same files.
	task := addTask()
	cmd := exec.Command("git", "agentmine", "worker", "run", task, "--agent", "bench", "--json")
	cmd.Dir = repo
	js, err := cmd.Output()
	if err != nil {
		b.Fatalf("worker run: %v", err)
	}
	var run struct {
		Session  string `json:"session"`
		Worktree string `json:"worktree"`
	}
	if err := json.Unmarshal(js, &run); err != nil {
		b.Fatalf("worker run --json: %v: %s", err, js)
	}
	patterns := sessionSparse(b, repo, run.Session)
	dir, branch := rawDir()
	var warm benchSides
	warm.run(b, repo, "sh", append([]string{"-c", rawWorktreeSparse, "sh", dir, branch}, patterns...)...)
	if ours, raw := gittest.Git(b, run.Worktree, "ls-files", "-t"), gittest.Git(b, dir, "ls-files", "-t"); ours != raw {
		b.Fatalf("worker run and raw git differ in what they check out")
	}
	done(task, dir)

	var o, r benchSides
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		task := addTask()
		dir, branch := rawDir()
		b.StartTimer()
		ours := func() { o.run(b, repo, "git", "agentmine", "worker", "run", task, "--agent", "bench", "--json") }
		raw := func() {
			r.run(b, repo, "sh", append([]string{"-c", rawWorktreeSparse, "sh", dir, branch}, patterns...)...)
		}
		// Alternate the order, so that neither side always runs on a
		// warmer cache.
		if i%2 == 0 {
			ours()
			raw()
		} else {
			raw()
			ours()
		}
		b.StopTimer()
		done(task, dir)
		b.StartTimer()
	}
	b.StopTimer()
	reportRatio(b, o, r)
	b.ReportMetric(float64(o.peakKB), "agentmine-peak-KiB")
	b.ReportMetric(float64(r.peakKB), "raw-peak-KiB")
	counter := gittest.NewGitCounter(b)
	task = addTask()
	dir, branch = rawDir()
	b.ReportMetric(float64(countGit(b, counter, repo, "git-agentmine", "worker", "run", task, "--agent", "bench", "--json")), "agentmine-git-procs")
	b.ReportMetric(float64(countGit(b, counter, repo, "sh", append([]string{"-c", rawWorktreeSparse, "sh", dir, branch}, patterns...)...)), "raw-git-procs")
	done(task, dir)
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
