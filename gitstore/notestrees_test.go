package gitstore

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

// TestNotesTreesCache: a note read through the notes-trees cache is the
// note git shows, whether the cache is empty, filled, planted with another
// tree's content under a tree's name (not used: it does not hash to that
// name), or left from an older notes commit (its root's files go when the
// new root is written).
func TestNotesTreesCache(t *testing.T) {
	ctx := context.Background()
	repo := objRepo(t)
	var in bytes.Buffer
	const who = "A <a@example.com> 1700000000 +0000"
	fmt.Fprintf(&in, "reset refs/heads/main\nfrom refs/heads/main^0\n\n")
	for i := 0; i < 600; i++ {
		fmt.Fprintf(&in, "commit refs/heads/main\nmark :%d\ncommitter %s\ndata 2\nm\n\n", i+1, who)
	}
	fmt.Fprintf(&in, "commit %s\ncommitter %s\ndata 6\nnotes\n", NotesRef, who)
	for i := 0; i < 600; i++ {
		fmt.Fprintf(&in, "N inline :%d\ndata 8\nnote %03d\n", i+1, i)
	}
	gittest.GitInput(t, repo, &in, "fast-import", "--quiet")
	targets := strings.Fields(gittest.Git(t, repo, "rev-list", "main~1", "-n", "5"))
	if names := strings.Fields(gittest.Git(t, repo, "ls-tree", "--name-only", NotesRef)); len(names[0]) != 2 {
		t.Fatal("the notes have no fan-out: the test shows nothing")
	}
	check := func(what string) {
		t.Helper()
		s := objOpen(t, repo)
		for _, target := range targets {
			got, err := s.NotesOf(ctx, target)
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			want := gittest.Git(t, repo, "notes", "--ref", NotesRef, "show", target)
			if strings.Join(got, "\n") != want {
				t.Fatalf("%s: note of %s %q, git shows %q", what, target, got, want)
			}
		}
	}
	dir := objOpen(t, repo).notesTreesDir()
	files := func() []string {
		es, _ := os.ReadDir(dir)
		var out []string
		for _, e := range es {
			out = append(out, e.Name())
		}
		return out
	}
	check("no cache")
	root := gittest.Git(t, repo, "rev-parse", NotesRef+"^{tree}")
	cached := files()
	if !slices.Contains(cached, root) || len(cached) < 2 {
		t.Fatalf("cache files %v, want the root %s and subtrees", cached, root)
	}
	check("cached")
	// Another tree's content under each subtree's name.
	for _, name := range cached {
		if name != root {
			data, err := os.ReadFile(filepath.Join(dir, root))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	check("planted")
	gittest.Git(t, repo, "notes", "--ref", NotesRef, "add", "-f", "-m", "changed", targets[0])
	check("a new notes commit")
	if now := files(); slices.Contains(now, root) || !slices.Contains(now, gittest.Git(t, repo, "rev-parse", NotesRef+"^{tree}")) {
		t.Fatalf("after a new notes commit the cache holds %v", now)
	}
}
