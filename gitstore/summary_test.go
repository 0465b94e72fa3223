package gitstore

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

// TestNotesOfMatchesReadNotes: reading one note (NotesOf) gives the lines
// the whole-tree reader gives, at every fan-out git uses: a few notes
// (flat), and enough that git fans the tree out into ab/… directories.
func TestNotesOfMatchesReadNotes(t *testing.T) {
	ctx := context.Background()
	for _, n := range []int{3, 300} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			if n > 3 && testing.Short() {
				t.Skip("slow: hundreds of notes")
			}
			dir := objRepo(t)
			var in bytes.Buffer
			fmt.Fprintf(&in, "commit refs/heads/many\ncommitter A <a@example.com> 1700000000 +0000\ndata 1\nx\n")
			for i := 0; i < n; i++ {
				fmt.Fprintf(&in, "commit refs/heads/many\ncommitter A <a@example.com> 1700000000 +0000\ndata 3\nc%d\n", i%10)
			}
			gittest.GitInput(t, dir, &in, "fast-import", "--quiet")
			commits := strings.Fields(gittest.Git(t, dir, "rev-list", "refs/heads/many"))
			in.Reset()
			fmt.Fprintf(&in, "commit %s\ncommitter A <a@example.com> 1700000000 +0000\ndata 5\nnotes\n", NotesRef)
			for i, c := range commits {
				note := fmt.Sprintf(`{"v":1,"n":%d}`+"\n"+`{"v":1,"again":%d}`+"\n", i, i)
				fmt.Fprintf(&in, "N inline %s\ndata %d\n%s\n", c, len(note), note)
			}
			gittest.GitInput(t, dir, &in, "fast-import", "--quiet")
			// git's own notes code rewrites the tree with its fan-out
			gittest.Git(t, dir, "notes", "--ref", NotesRef, "add", "-f", "-m", `{"v":1,"by":"git"}`, commits[0])
			if n == 300 && !strings.Contains(gittest.Git(t, dir, "ls-tree", NotesRef), " tree ") {
				t.Fatal("git did not fan the notes tree out: this case no longer tests that")
			}
			s := objOpen(t, dir)
			all, err := s.ReadNotes(ctx, commits)
			if err != nil {
				t.Fatal(err)
			}
			// every 16th note (one process each) and a commit without one
			var sample []string
			for i := 0; i < len(commits); i += 16 {
				sample = append(sample, commits[i])
			}
			for _, c := range append(sample, strings.Repeat("ab", 20)) {
				one, err := s.NotesOf(ctx, c)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(one, all[c]) {
					t.Fatalf("%s: NotesOf %q, ReadNotes %q", c, one, all[c])
				}
			}
		})
	}
}
