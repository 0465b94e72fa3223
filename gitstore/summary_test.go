package gitstore

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"sort"
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
			if n > 3 {
				gittest.SkipShort(t, "hundreds of notes, fanned out")
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

// TestShortIDListsOnlyNeighbours: ShortID, which lists only the refs that
// share an id's first digits, gives what ShortIDs over every id gives,
// with ids that share no, some and long prefixes.
func TestShortIDListsOnlyNeighbours(t *testing.T) {
	ctx := context.Background()
	dir := objRepo(t)
	s := objOpen(t, dir)
	k := Kind{Dir: "things", File: "thing.json", Noun: "thing", Version: 1}
	head := strings.TrimSpace(gittest.Git(t, dir, "rev-parse", "HEAD"))
	ids := []string{"abcd000000000000000a", "abcd000000000000000b", "abcd100000000000000c", "abce200000000000000d",
		"0123456789abcdef0123", "ffff000000000000000e", "abcd0000000000000100"}
	var in strings.Builder
	for _, id := range ids {
		fmt.Fprintf(&in, "create %s %s\n", k.Ref(id), head)
	}
	gittest.GitInput(t, dir, strings.NewReader(in.String()), "update-ref", "--stdin")
	sorted := append([]string(nil), ids...)
	sort.Strings(sorted)
	want := ShortIDs(sorted)
	for _, refs := range []string{"loose", "packed"} {
		if refs == "packed" {
			gittest.Git(t, dir, "pack-refs", "--all")
		}
		for _, id := range ids {
			got, err := s.ShortID(ctx, k, id)
			if err != nil || got != want[id] {
				t.Fatalf("%s refs: ShortID(%s) = %q, %v; want %q", refs, id, got, err, want[id])
			}
		}
	}
	if _, err := s.ShortID(ctx, k, "not hex"); err == nil {
		t.Fatal("ShortID accepted a malformed id")
	}
}
