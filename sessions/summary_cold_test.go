package sessions

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

// TestColdSummariesWithUnreadableSession: read cold (no cache), a board
// where one session's document does not decode and another's ref points at
// a commit without one gives the summaries and the problems that reading
// every session whole from git gives, and writes no summary cache (a
// problem is never cached away).
func TestColdSummariesWithUnreadableSession(t *testing.T) {
	ctx := context.Background()
	dir := gittest.NewRepo(t)
	st := open(t, dir)
	ok := passed("bench", tRun, "")
	for n := 1; n <= 4; n++ {
		addSession(t, st, n, &ok)
	}
	// A document that is not JSON, and a commit with no document at all.
	blob := strings.TrimSpace(gittest.GitInput(t, dir, strings.NewReader("not json\n"), "hash-object", "-w", "--stdin"))
	tree := strings.TrimSpace(gittest.GitInput(t, dir, strings.NewReader("100644 blob "+blob+"\t"+Kind.File+"\n"), "mktree"))
	bad := strings.TrimSpace(gittest.Git(t, dir, "commit-tree", "-m", "bad", tree))
	gittest.Git(t, dir, "update-ref", Kind.Ref("5e55ffffffffffffff01"), bad)
	empty := strings.TrimSpace(gittest.GitInput(t, dir, strings.NewReader(""), "mktree"))
	none := strings.TrimSpace(gittest.Git(t, dir, "commit-tree", "-m", "none", empty))
	gittest.Git(t, dir, "update-ref", Kind.Ref("5e55ffffffffffffff02"), none)

	cache := filepath.Join(dir, ".git", "agentmine", "cache")
	problemsOf := func(errs []error) string {
		var b strings.Builder
		for _, e := range errs {
			b.WriteString(e.Error() + "\n")
		}
		return b.String()
	}
	if err := os.RemoveAll(cache); err != nil {
		t.Fatal(err)
	}
	whole, wantProblems, err := LoadAll(ctx, open(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	if len(whole) != 4 || len(wantProblems) != 2 {
		t.Fatalf("read %d sessions and %d problems whole, want 4 and 2: %v", len(whole), len(wantProblems), wantProblems)
	}
	want := summaryOf(t, whole)
	if err := os.RemoveAll(cache); err != nil {
		t.Fatal(err)
	}
	recs, problems, err := LoadSummaries(ctx, open(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	if got := summaryOf(t, recs); got != want {
		t.Errorf("cold summaries:\n got %s\nwant %s", got, want)
	}
	if got, want := problemsOf(problems), problemsOf(wantProblems); got != want {
		t.Errorf("cold problems:\n%s\nwant\n%s", got, want)
	}
	if _, err := os.Stat(filepath.Join(cache, "summary-"+Kind.Dir)); err == nil {
		t.Error("a summary cache was written although a session did not read")
	}
}

// TestColdSummariesWithSharedRoot: read cold, a board where two session
// refs share their first commit (one ref copied onto another's commit)
// gives both sessions the outcome in that commit's note, as reading every
// session whole does; and sharedRoots names that commit, whose note is
// then kept until the end (the two may be read in different chunks).
func TestColdSummariesWithSharedRoot(t *testing.T) {
	ctx := context.Background()
	dir := gittest.NewRepo(t)
	st := open(t, dir)
	ok := passed("bench", tRun, "")
	var first Record
	for n := 1; n <= 3; n++ {
		r := addSession(t, st, n, &ok)
		if n == 1 {
			first = r
		}
	}
	gittest.Git(t, dir, "update-ref", Kind.Ref("5e55ffffffffffffff03"), first.Commit)
	cache := filepath.Join(dir, ".git", "agentmine", "cache")
	if err := os.RemoveAll(cache); err != nil {
		t.Fatal(err)
	}
	whole, problems, err := LoadAll(ctx, open(t, dir))
	if err != nil || len(problems) != 0 {
		t.Fatal(err, problems)
	}
	withOutcome := 0
	for _, r := range whole {
		if r.Outcome != nil {
			withOutcome++
		}
	}
	if len(whole) != 4 || withOutcome != 4 {
		t.Fatalf("read %d sessions whole, %d with an outcome; want 4 and 4", len(whole), withOutcome)
	}
	if err := os.RemoveAll(cache); err != nil {
		t.Fatal(err)
	}
	recs, _, err := LoadSummaries(ctx, open(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := summaryOf(t, recs), summaryOf(t, whole); got != want {
		t.Errorf("cold summaries:\n got %s\nwant %s", got, want)
	}
	roots := map[string]string{}
	for _, r := range whole {
		roots[r.Session.ID] = r.Root
	}
	if shared := sharedRoots(roots); len(shared) != 1 || !shared[first.Root] {
		t.Errorf("shared roots %v, want only %s", shared, first.Root)
	}
}
