package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

// TestWorkerRunGitCalls: preparing a worker (worker run without --exec,
// the task named by its full id) starts at most 5 git processes, however
// many files the worktree gets: the identity one, the session record two
// (its creation, which makes its branch too, and the worktree's facts),
// the worktree two (worktree add, checkout); the repository, the board,
// the base, the branch check, the base tree and the Memory Bank are read
// in-process. The repository's first worktree takes two more, to turn on
// per-worktree configuration.
func TestWorkerRunGitCalls(t *testing.T) {
	repo := testRepo(t)
	run(t, repo, "git", "agentmine", "init")
	gittest.WriteFiles(t, repo, map[string]string{
		".agentmine/agents/bench.toml": "client = \"custom\"\ncommand = [\"true\"]\n[scope]\nwrite = [\"src/**\"]\n",
		"src/a.go":                     "package a\n",
		"docs/b.md":                    "# b\n",
	})
	gittest.Git(t, repo, "add", "-A")
	gittest.Git(t, repo, "commit", "-qm", "files")
	counter := gittest.NewGitCounter(t)
	for i, most := range []int{7, 5} {
		id := run(t, repo, "git", "agentmine", "task", "add", fmt.Sprintf("counted %d", i), "-q")
		counter.Reset()
		cmd := exec.Command("git-agentmine", "worker", "run", id, "--agent", "bench", "--json")
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "PATH="+counter.Dir+string(os.PathListSeparator)+os.Getenv("PATH"))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("worker run: %v\n%s", err, out)
		}
		calls := strings.TrimSpace(counter.Calls(t))
		if n := len(strings.Split(calls, "\n")); n > most {
			t.Errorf("worker run %d started %d git processes, want at most %d:\n%s", i+1, n, most, calls)
		}
		if _, err := os.Stat(filepath.Join(repo, ".agentmine", "worktrees", "task-"+id[:8], "src", "a.go")); err != nil {
			t.Errorf("the worktree was not made: %v", err)
		}
	}
}

// TestWorkerRunExecGitProcesses: a whole `worker run --exec` of a no-op
// agent (prepare, run, verify, record) starts at most 14 git processes
// (15 under `git agentmine`), counted by git's own trace
// (GIT_TRACE2_EVENT), so that the processes git starts for itself
// (worktree add's symbolic-ref) count too: five ref transactions (the
// first makes the session's branch as well), three for the worktree, a
// status of the main checkout before and after (its HEAD and index read
// in-process), three for the scope check (no diff: nothing was
// committed; the base tree read in-process) and the identity. There were
// 35, 12 of them rev-parse, then 23. The repository's first worktree
// takes two more, to turn on per-worktree configuration.
func TestWorkerRunExecGitProcesses(t *testing.T) {
	repo := testRepo(t)
	run(t, repo, "git", "agentmine", "init")
	gittest.WriteFiles(t, repo, map[string]string{
		".agentmine/agents/noop.toml": "client = \"custom\"\ncommand = [\"true\"]\n[scope]\nwrite = [\"src/**\"]\n",
		"src/a.go":                    "package a\n",
	})
	gittest.Git(t, repo, "add", "-A")
	gittest.Git(t, repo, "commit", "-qm", "files")
	for i, most := range []int{16, 14} {
		id := run(t, repo, "git", "agentmine", "task", "add", fmt.Sprintf("counted %d", i), "-q")
		trace := filepath.Join(t.TempDir(), "trace")
		cmd := exec.Command("git-agentmine", "worker", "run", id, "--agent", "noop", "--exec")
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "GIT_TRACE2_EVENT="+trace)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("worker run --exec: %v\n%s", err, out)
		}
		data, err := os.ReadFile(trace)
		if err != nil {
			t.Fatal(err)
		}
		var started []string
		for _, l := range strings.Split(string(data), "\n") {
			var ev struct {
				Event string   `json:"event"`
				Argv  []string `json:"argv"`
			}
			if json.Unmarshal([]byte(l), &ev) == nil && ev.Event == "start" {
				started = append(started, strings.Join(ev.Argv[1:], " "))
			}
		}
		if len(started) == 0 || len(started) > most {
			t.Errorf("worker run --exec %d started %d git processes, want 1 to %d:\n%s", i+1, len(started), most, strings.Join(started, "\n"))
		}
	}
}
