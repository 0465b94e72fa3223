package gitstore

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

// TestPackedMapFollowsRewrites: one store lists refs again and again while
// git rewrites packed-refs between the listings (more refs packed, a ref
// moved to another commit in a file of the very same size, refs deleted,
// packed-refs emptied and removed, then written again): every listing and
// every lookup equals git's answer at that moment, never the mapping kept
// from before.
func TestPackedMapFollowsRewrites(t *testing.T) {
	repo := objRepo(t)
	ctx := context.Background()
	var commits []string
	for i := 0; i < 3; i++ {
		gittest.Git(t, repo, "commit", "-q", "--allow-empty", "-m", fmt.Sprint(i))
		commits = append(commits, gittest.Git(t, repo, "rev-parse", "HEAD"))
	}
	s := objOpen(t, repo)
	packed := filepath.Join(repo, ".git", "packed-refs")
	check := func(step string) {
		t.Helper()
		for _, pat := range []string{"refs/agentmine/tasks/", "refs/heads/"} {
			refs, ids, err := s.listRefs(ctx, pat)
			if err != nil {
				t.Fatal(err)
			}
			wantRefs, wantIDs := gitListing(t, repo, pat)
			if !slices.Equal(refs, wantRefs) || !slices.Equal(ids, wantIDs) {
				t.Fatalf("%s: %s lists %v %v\ngit lists %v %v", step, pat, refs, ids, wantRefs, wantIDs)
			}
		}
		id, found, sure := s.lookupRef("refs/agentmine/tasks/b")
		out, _ := exec.Command("git", "-C", repo, "rev-parse", "-q", "--verify", "refs/agentmine/tasks/b").Output()
		want := strings.TrimSpace(string(out))
		if !sure || found != (want != "") || id != want {
			t.Fatalf("%s: lookup of refs/agentmine/tasks/b gives %q (found %v, sure %v), git %q", step, id, found, sure, want)
		}
	}
	check("no packed-refs")
	for _, n := range []string{"a", "b", "c"} {
		gittest.Git(t, repo, "update-ref", "refs/agentmine/tasks/"+n, commits[0])
	}
	gittest.Git(t, repo, "pack-refs", "--all")
	check("packed")
	before, err := os.Stat(packed)
	if err != nil {
		t.Fatal(err)
	}
	// The same size: one packed ref moved to another commit.
	gittest.Git(t, repo, "update-ref", "refs/agentmine/tasks/b", commits[1])
	gittest.Git(t, repo, "pack-refs", "--all")
	if after, err := os.Stat(packed); err != nil || after.Size() != before.Size() {
		t.Fatalf("packed-refs changed size (%v, %v): the case is not the one meant", err, after)
	}
	check("moved, same size")
	gittest.Git(t, repo, "update-ref", "-d", "refs/agentmine/tasks/b")
	check("deleted")
	gittest.Git(t, repo, "update-ref", "refs/agentmine/tasks/b", commits[2])
	check("loose over packed")
	gittest.Git(t, repo, "pack-refs", "--all")
	check("packed again")
	if err := os.WriteFile(packed+".new", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(packed+".new", packed); err != nil {
		t.Fatal(err)
	}
	check("emptied")
	if err := os.Remove(packed); err != nil {
		t.Fatal(err)
	}
	check("removed")
	for _, n := range []string{"b", "d"} {
		gittest.Git(t, repo, "update-ref", "refs/agentmine/tasks/"+n, commits[1])
	}
	gittest.Git(t, repo, "pack-refs", "--all")
	check("written again")
}
