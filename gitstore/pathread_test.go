package gitstore

import (
	"strconv"
	"strings"
	"testing"

	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

// TestReadLocalPathsMatchGit reads <rev>:<path> names in-process, twice
// (the second time through the memo of commits and trees), and compares
// every answer with git's: found objects, missing entries at each depth,
// and a path through a blob, which git answers and readLocal leaves to it.
func TestReadLocalPathsMatchGit(t *testing.T) {
	gittest.Scrub(t)
	repo := gittest.NewRepo(t)
	commit := gittest.CommitFiles(t, repo, "tree", map[string]string{
		"a/b/c.txt": "c\n", "a/b/d.txt": "d\n", "a/e.txt": "e\n", "f.txt": "f\n", "a/b c/g.txt": "g\n",
	})
	s := objOpen(t, repo)
	names := []string{"a/b/c.txt", "a/b/d.txt", "a/e.txt", "f.txt", "a/b c/g.txt", "a/b", "a",
		"a/b/x.txt", "x/y", "a/x/y", "f.txt/z"}
	for round := 0; round < 2; round++ {
		for _, n := range names {
			name := commit + ":" + n
			got, ok := s.readLocal(name)
			want := gittest.GitInput(t, repo, strings.NewReader(name+"\n"), "cat-file", "--batch-check")
			switch {
			case !ok && n == "f.txt/z":
				// a path through a blob goes to git
			case !ok:
				t.Errorf("%s: not answered in-process", n)
			case got.missing:
				if !strings.HasSuffix(want, " missing") {
					t.Errorf("%s: in-process missing, git %q", n, want)
				}
			default:
				if want != got.id+" "+got.typ+" "+strconv.Itoa(len(got.data)) {
					t.Errorf("%s: in-process %s %s %d, git %q", n, got.id, got.typ, len(got.data), want)
				}
			}
		}
	}
	if len(s.kept) == 0 {
		t.Error("no commit or tree was kept for the second round")
	}
}
