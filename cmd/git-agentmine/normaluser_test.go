package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

// normalUserRepo returns the normal user, with this test binary installed
// for it as git-agentmine, and a repository the user made and owns: files
// committed on main, then `git agentmine init` and the agent definitions
// (name → TOML) committed too, as a project that versions its agents does.
// Root ignores mode bits: these tests see what a normal user sees.
func normalUserRepo(t *testing.T, files, agents map[string]string) (*gittest.User, string) {
	t.Helper()
	if testing.Short() {
		t.Skip("slow: real workers run as a normal user")
	}
	u := gittest.NormalUser(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	u.Install(t, "git-agentmine", exe)
	dir := filepath.Join(t.TempDir(), "repo")
	gittest.WriteFiles(t, dir, files)
	u.Give(t, dir)
	u.Run(t, dir, "git", "init", "-q", "-b", "main")
	u.Run(t, dir, "git", "add", "-A")
	u.Run(t, dir, "git", "commit", "-q", "-m", "fixture")
	u.Run(t, dir, "git", "agentmine", "init", "-q")
	for name, toml := range agents {
		if err := os.WriteFile(filepath.Join(dir, ".agentmine", "agents", name+".toml"), []byte(toml), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	u.Give(t, filepath.Join(dir, ".agentmine"))
	u.Run(t, dir, "git", "add", "-A")
	u.Run(t, dir, "git", "commit", "-q", "-m", "agents")
	return u, dir
}

// exitOf returns the exit code of a failed User.Try, 0 for no error.
func exitOf(t *testing.T, err error) int {
	t.Helper()
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("command did not run: %v", err)
	}
	return ee.ExitCode()
}

// TestMemorySnapshotAsNormalUser: with an active memory, worker run writes
// the Memory Bank snapshot into a worktree whose .agentmine the scope made
// read-only (it used to fail with "permission denied" for anyone but
// root), the run ends review and merges, and worker done removes the
// worktree with its read-only snapshot directories.
func TestMemorySnapshotAsNormalUser(t *testing.T) {
	u, dir := normalUserRepo(t, map[string]string{"src/a.txt": "a\n"}, map[string]string{
		"w": "client = \"custom\"\ncommand = [\"sh\", \"-c\", \"cat .agentmine/memory/*/*.md > /dev/null && echo b >> src/a.txt && git commit -qam work\"]\ndod = [\"test -s src/a.txt\"]\n[scope]\nwrite = [\"src/**\"]\n",
	})
	mem := u.Run(t, dir, "git", "agentmine", "memory", "add", "--category", "rule", "--title", "Use tabs", "--summary", "tabs, not spaces", "--status", "active", "-q")
	task := u.Run(t, dir, "git", "agentmine", "task", "add", "Work", "-q")
	out, err := u.Try(dir, "git", "agentmine", "worker", "run", task, "--agent", "w", "--exec")
	if err != nil {
		t.Fatalf("worker run as %s: %v\n%s", u.Name, err, out)
	}
	if !strings.Contains(out, ": review — ") {
		t.Fatalf("worker run as %s: %s", u.Name, out)
	}
	wt := filepath.Join(dir, ".agentmine", "worktrees", "task-"+task[:8])
	snap := filepath.Join(wt, ".agentmine", "memory", "rule", mem+".md")
	for p, want := range map[string]os.FileMode{snap: 0o444, filepath.Dir(snap): 0o555, filepath.Join(wt, ".agentmine"): 0o555} {
		fi, err := os.Stat(p)
		if err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: %v, mode %v, want %v", p, err, fi.Mode().Perm(), want)
		}
	}
	// The worker cannot add files beside the snapshot.
	if _, err := u.Try(wt, "touch", ".agentmine/memory/rule/injected.md"); err == nil {
		t.Errorf("a normal user could write into the snapshot directory")
	}
	u.Run(t, dir, "git", "agentmine", "merge", task)
	u.Run(t, dir, "git", "agentmine", "worker", "done", task)
	if _, err := os.Lstat(wt); !os.IsNotExist(err) {
		t.Errorf("worktree %s still there after worker done: %v", wt, err)
	}
}

// tomlString quotes s as a TOML basic string.
func tomlString(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}
