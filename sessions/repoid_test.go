package sessions

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

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
	gittest.Scrub(t)
	root := t.TempDir()
	a := filepath.Join(root, "a")
	gittest.Git(t, root, "init", "-q", "-b", "main", "a")
	gittest.Git(t, a, "commit", "-q", "--allow-empty", "-m", "init")

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
	gittest.Git(t, a, "worktree", "add", "-q", "--detach", wt)
	if got, err := RepoID(open(t, wt)); err != nil || got != ids[0] {
		t.Fatalf("linked worktree: %q, %v; want the main repository's %q", got, err, ids[0])
	}

	gittest.Git(t, root, "clone", "-q", a, "b")
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
	gittest.Scrub(t)
	dir := t.TempDir()
	gittest.Git(t, dir, "init", "-q", "-b", "main")
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
