package pipeline

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/git-agentmine/git-agentmine/board"
	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/internal/gittest"
	"github.com/git-agentmine/git-agentmine/replica"
	"github.com/git-agentmine/git-agentmine/tasks"
	"github.com/git-agentmine/git-agentmine/worker"
)

// fleetClone clones remote into a new directory, shares through it when
// shared (agentmine.remote), pulls the board and opens it.
func fleetClone(t *testing.T, remote string, shared bool) *gitstore.Store {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "clone")
	gittest.Git(t, "", "clone", "-q", remote, dir)
	if shared {
		gittest.Git(t, dir, "config", "agentmine.remote", "origin")
	}
	st, err := gitstore.Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := replica.Sync(context.Background(), st, replica.Options{Remote: "origin"}); err != nil {
		t.Fatal(err)
	}
	return st
}

// startRun starts (without looping) a run of every task in st's clone.
func startRun(t *testing.T, st *gitstore.Store) *Supervisor {
	t.Helper()
	env, err := worker.NewEnv(st, nil, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	s, err := Start(context.Background(), env, Options{Parallel: 2, MaxLoops: 1, Supervisor: func(id string) []string { return []string{"true", id} }}, Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.log.Close() })
	return s
}

// orderOf is the order in which a new run of st's clone would start its
// targets.
func orderOf(t *testing.T, st *gitstore.Store) ([]string, *Supervisor) {
	t.Helper()
	s := startRun(t, st)
	b, err := s.load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return s.order(b), s
}

// newFleetRemote makes a bare remote holding a commit and a board of n
// medium tasks, then one high-priority task added last, and returns the
// remote and the ids (the high one last).
func newFleetRemote(t *testing.T, n int) (string, []string) {
	t.Helper()
	ctx := context.Background()
	first := gittest.NewRepo(t)
	remote := filepath.Join(t.TempDir(), "remote.git")
	gittest.Git(t, "", "init", "-q", "--bare", "-b", "main", remote)
	gittest.Git(t, first, "remote", "add", "origin", remote)
	gittest.Git(t, first, "push", "-q", "origin", "main")
	st, err := gitstore.Open(ctx, first)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := 0; i <= n; i++ {
		prio := "medium"
		if i == n {
			prio = "high"
		}
		tk, err := tasks.Add(ctx, st, tasks.New{Title: fmt.Sprintf("fleet task %d", i), Priority: prio})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, tk.ID)
	}
	if _, err := replica.Sync(ctx, st, replica.Options{Remote: "origin"}); err != nil {
		t.Fatal(err)
	}
	return remote, ids
}

// TestFleetClonesPreferDifferentTasks: two clones sharing one remote order
// the same ready tasks differently (each by its own identity), while
// priority still comes first; clones that claim nowhere keep the board's
// order (priority, then creation), whoever they are; and over many clone identities the first choices spread over the
// board instead of all falling on one task.
func TestFleetClonesPreferDifferentTasks(t *testing.T) {
	remote, ids := newFleetRemote(t, 20)
	high, medium := ids[len(ids)-1], ids[:len(ids)-1]

	a, _ := orderOf(t, fleetClone(t, remote, true))
	b, _ := orderOf(t, fleetClone(t, remote, true))
	alone, _ := orderOf(t, fleetClone(t, remote, false))
	alone2, _ := orderOf(t, fleetClone(t, remote, false))
	for name, o := range map[string][]string{"clone a": a, "clone b": b, "unshared clone": alone} {
		if len(o) != len(ids) || o[0] != high {
			t.Fatalf("%s: order %v, want the high-priority task %s first of %d", name, o, high, len(ids))
		}
		if rest := slices.Sorted(slices.Values(o[1:])); !slices.Equal(rest, slices.Sorted(slices.Values(medium))) {
			t.Fatalf("%s: after the high task %v, want the medium tasks %v", name, o[1:], medium)
		}
	}
	if !slices.Equal(alone, alone2) {
		t.Errorf("two clones that claim nowhere order the board differently (their order is the board's, not theirs):\n%v\n%v", alone, alone2)
	}
	if slices.Equal(a, b) {
		t.Errorf("two clones with different ids order the board alike: %v", a)
	}
	if slices.Equal(a, alone) && slices.Equal(b, alone) {
		t.Errorf("both sharing clones keep the order of a clone that claims nowhere")
	}

	// 32 clone identities over the same 20 tasks: their first choices.
	firsts := map[string]bool{}
	for c := 0; c < 32; c++ {
		key := spreadKey("origin", board.Here{Host: "host", Repo: fmt.Sprintf("repo-%d", c)})
		best := slices.MinFunc(medium, func(x, y string) int {
			return cmp.Compare(spreadRank(key, x), spreadRank(key, y))
		})
		firsts[best] = true
	}
	if len(firsts) < 8 {
		t.Errorf("32 clones' first choices fall on %d of 20 tasks, want them spread", len(firsts))
	}
}

// TestFleetListsClaimsOnce: a run that claims reads every claim with one
// listing: a task another clone claimed, with a session this clone never
// saw, is left to it (settled as claimed, with no read of the claim); a
// task nobody claimed is started pushing its claim without reading it
// first; a task with sessions here is left to its start's own read.
func TestFleetListsClaimsOnce(t *testing.T) {
	ctx := context.Background()
	remote, ids := newFleetRemote(t, 3)
	other := fleetClone(t, remote, true)
	head := gittest.Git(t, other.Location().Top, "rev-parse", "HEAD")
	if err := replica.TakeClaim(ctx, other, replica.Claim{Remote: "origin", Ref: worker.ClaimPrefix + ids[0], Commit: head}); err != nil {
		t.Fatal(err)
	}

	// This clone runs git through a counter (its runner finds git once).
	counter := gittest.NewGitCounter(t)
	t.Setenv("PATH", counter.Dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	here := fleetClone(t, remote, true)
	s := startRun(t, here)
	b, err := s.load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var reqs []startReq
	for _, id := range ids[:3] {
		reqs = append(reqs, startReq{ts: s.stateOf(b, id), loop: 1})
	}
	counter.Reset()
	kept := s.dropClaimed(ctx, b, reqs)
	if n := counter.Count(t); n != 1 {
		t.Errorf("reading the claims of %d tasks started %d git processes, want one listing:\n%s", len(reqs), n, counter.Calls(t))
	}
	if _, ok := s.claimed[ids[0]]; !ok || len(kept) != 2 {
		t.Fatalf("kept %d of 3 tasks, claimed %v: want the task another clone claimed left to it", len(kept), s.claimed)
	}
	for _, r := range kept {
		if r.ts.id == ids[0] || !r.unseen {
			t.Errorf("task %s kept with unseen=%v, want the unclaimed tasks, seen unclaimed", r.ts.id, r.unseen)
		}
	}

	// The claim remote unset: nothing is listed, every task is started.
	s.claimRemote = ""
	counter.Reset()
	if kept := s.dropClaimed(ctx, b, reqs[1:]); len(kept) != 2 || counter.Count(t) != 0 {
		t.Errorf("a run that claims nowhere: kept %d of 2 after %d git processes", len(kept), counter.Count(t))
	}
}
