package sessions

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/git-agentmine/git-agentmine/gitstore"
)

// gitIn runs git in dir with a pinned environment.
func gitIn(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func pinEnv(t *testing.T) {
	t.Helper()
	home := t.TempDir()
	for k, v := range map[string]string{"HOME": home, "XDG_CONFIG_HOME": filepath.Join(home, ".config"), "GIT_CONFIG_NOSYSTEM": "1",
		"GIT_AUTHOR_NAME": "Ada", "GIT_AUTHOR_EMAIL": "ada@example.com",
		"GIT_COMMITTER_NAME": "Ada", "GIT_COMMITTER_EMAIL": "ada@example.com"} {
		t.Setenv(k, v)
	}
}

func open(t *testing.T, dir string) *gitstore.Store {
	t.Helper()
	st, err := gitstore.Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestRepoID: the id is created on first use and then stable; it is shared
// by the repository's worktrees, differs in a clone, and of many processes
// creating it at once all agree on one.
func TestRepoID(t *testing.T) {
	pinEnv(t)
	root := t.TempDir()
	a := filepath.Join(root, "a")
	gitIn(t, root, "init", "-q", "-b", "main", "a")
	gitIn(t, a, "commit", "-q", "--allow-empty", "-m", "init")

	ids := make([]string, 8)
	errs := make([]error, 8)
	stores := make([]*gitstore.Store, 8)
	for i := range stores {
		stores[i] = open(t, a)
	}
	var wg sync.WaitGroup
	for i := range ids {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			ids[i], errs[i] = RepoID(stores[i])
		}(i)
	}
	wg.Wait()
	for i := range ids {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if ids[i] != ids[0] {
			t.Fatalf("concurrent first uses disagree: %q and %q", ids[0], ids[i])
		}
	}
	if !gitstore.ValidID(ids[0]) || len(ids[0]) != gitstore.IDLen {
		t.Fatalf("repository id %q is not a full id", ids[0])
	}
	if again, err := RepoID(open(t, a)); err != nil || again != ids[0] {
		t.Fatalf("second read: %q, %v; want %q", again, err, ids[0])
	}

	wt := filepath.Join(root, "wt")
	gitIn(t, a, "worktree", "add", "-q", "--detach", wt)
	if got, err := RepoID(open(t, wt)); err != nil || got != ids[0] {
		t.Fatalf("linked worktree: %q, %v; want the main repository's %q", got, err, ids[0])
	}

	gitIn(t, root, "clone", "-q", a, "b")
	other, err := RepoID(open(t, filepath.Join(root, "b")))
	if err != nil {
		t.Fatal(err)
	}
	if other == ids[0] {
		t.Fatalf("a clone has the same repository id %q", other)
	}
}

// TestRepoIDCorrupt: a damaged id file is an error naming the file, not a
// silent new identity.
func TestRepoIDCorrupt(t *testing.T) {
	pinEnv(t)
	dir := t.TempDir()
	gitIn(t, dir, "init", "-q", "-b", "main")
	st := open(t, dir)
	local, err := st.LocalDir()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(local, repoIDFile), []byte("not an id\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = RepoID(st)
	if err == nil || !strings.Contains(err.Error(), "reading the repository id") || !strings.Contains(err.Error(), repoIDFile) {
		t.Fatalf("corrupt id file: err %v", err)
	}
}
