package worker

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

// lsFilesFlags is what snapshotMain makes of `git ls-files -v -z`.
func lsFilesFlags(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := gittest.Git(t, dir, "ls-files", "-v", "-z")
	flags := map[string]string{}
	for _, rec := range strings.Split(out, "\x00") {
		if len(rec) < 3 {
			continue
		}
		if tag := rec[:1]; tag == "S" || tag >= "a" && tag <= "z" {
			flags[rec[2:]] = tag
		}
	}
	return flags
}

// localOf is the in-process reader of the main checkout dir.
func localOf(t *testing.T, dir string) *mainLocal {
	t.Helper()
	st, err := gitstore.Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	l := (&Env{St: st, Top: dir}).mainLocalFor(dir)
	if l == nil {
		t.Fatal("the main checkout is not read in-process")
	}
	return l
}

// TestIndexFlagsMatchLsFiles reads the index in-process in each version
// git writes (2, 3 with extended flags, 4 with compressed paths) and
// compares the flagged entries with ls-files -v: assume-unchanged,
// skip-worktree, both, an unmerged entry marked assume-unchanged, and a
// path longer than the index's 12-bit name length.
func TestIndexFlagsMatchLsFiles(t *testing.T) {
	dir := gittest.NewRepo(t)
	gittest.CommitFiles(t, dir, "files", map[string]string{"a.txt": "a\n", "b/c.txt": "c\n", "b/d.txt": "d\n", "e.txt": "e\n", "f.txt": "f\n"})
	blob := gittest.Git(t, dir, "rev-parse", "HEAD:a.txt")
	long := strings.Repeat("dir/", 1100) + "long.txt"
	gittest.Git(t, dir, "update-index", "--add", "--cacheinfo", "100644,"+blob+","+long)
	gittest.Git(t, dir, "update-index", "--assume-unchanged", "a.txt", long)
	l := localOf(t, dir)
	index := filepath.Join(dir, ".git", "index")
	for _, step := range []struct {
		name string
		args []string
	}{
		{"version 2, assume-unchanged", []string{"update-index", "--index-version", "2"}},
		{"version 3, skip-worktree", []string{"update-index", "--skip-worktree", "b/c.txt", "e.txt"}},
		{"both flags", []string{"update-index", "--assume-unchanged", "e.txt"}},
		{"version 4", []string{"update-index", "--index-version", "4"}},
		{"unmerged", []string{"update-index", "--index-info"}},
		{"back to version 3", []string{"update-index", "--index-version", "3"}},
	} {
		if step.name == "unmerged" {
			stages := "0 " + strings.Repeat("0", len(blob)) + "\tf.txt\n100644 " + blob + " 1\tf.txt\n100644 " + blob + " 2\tf.txt\n"
			gittest.GitInput(t, dir, strings.NewReader(stages), step.args...)
			gittest.Git(t, dir, "update-index", "--assume-unchanged", "b/d.txt")
		} else {
			gittest.Git(t, dir, step.args...)
		}
		got, ok := l.indexFlags(index)
		if !ok {
			t.Fatalf("%s: not read in-process", step.name)
		}
		if want := lsFilesFlags(t, dir); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: in-process %v, ls-files %v", step.name, got, want)
		}
	}
	if got, ok := l.indexFlags(filepath.Join(dir, "no-index")); !ok || len(got) != 0 {
		t.Errorf("a missing index: %v %v, want no entries", got, ok)
	}
}

// TestIndexLeftToGit: a split index, a sparse index, a corrupt one and
// one of an unknown version are not read in-process.
func TestIndexLeftToGit(t *testing.T) {
	dir := gittest.NewRepo(t)
	gittest.CommitFiles(t, dir, "files", map[string]string{"a.txt": "a\n", "b/c.txt": "c\n"})
	index := filepath.Join(dir, ".git", "index")
	l := localOf(t, dir)
	data, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := l.indexFlags(index); !ok {
		t.Fatal("a plain index is not read in-process")
	}
	bad := filepath.Join(t.TempDir(), "index")
	for name, b := range map[string][]byte{
		"corrupt":         append(append([]byte{}, data[:len(data)-1]...), data[len(data)-1]^1),
		"unknown version": append(append([]byte("DIRC\x00\x00\x00\x09"), data[8:len(data)-20]...), make([]byte, 20)...),
		"truncated":       data[:30],
	} {
		if err := os.WriteFile(bad, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, ok := l.indexFlags(bad); ok {
			t.Errorf("%s index read in-process", name)
		}
	}
	gittest.Git(t, dir, "update-index", "--split-index")
	if _, ok := l.indexFlags(index); ok {
		t.Error("a split index read in-process")
	}
	gittest.Git(t, dir, "update-index", "--no-split-index")
	gittest.Git(t, dir, "sparse-checkout", "set", "--cone", "--sparse-index", "b")
	if _, ok := l.indexFlags(index); ok {
		t.Error("a sparse index read in-process")
	}
}

// TestMainHeadLocal: HEAD on a branch and detached is read in-process as
// rev-parse answers; an unborn branch is left to git.
func TestMainHeadLocal(t *testing.T) {
	dir := gittest.NewRepo(t)
	l := localOf(t, dir)
	var snap mainSnapshot
	index, ok := l.headAndIndex(&snap)
	if !ok || snap.headRef != "refs/heads/main" || snap.head != gittest.Git(t, dir, "rev-parse", "HEAD") || index != filepath.Join(dir, ".git", "index") {
		t.Errorf("on main: %v %q %q %q", ok, snap.headRef, snap.head, index)
	}
	gittest.Git(t, dir, "checkout", "-q", "--detach")
	snap = mainSnapshot{}
	if _, ok := l.headAndIndex(&snap); !ok || snap.headRef != "HEAD" || snap.head != gittest.Git(t, dir, "rev-parse", "HEAD") {
		t.Errorf("detached: %v %q %q", ok, snap.headRef, snap.head)
	}
	gittest.Git(t, dir, "checkout", "-q", "--orphan", "unborn")
	if _, ok := l.headAndIndex(&mainSnapshot{}); ok {
		t.Error("an unborn branch answered in-process")
	}
}
