package tasks

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

// TestReach: the walk finds the target through any path, stops at tasks
// that are not on the board, and survives cycles already in the data.
func TestReach(t *testing.T) {
	b := &Board{Tasks: map[string]Entry{}}
	edges := map[string][]string{
		"a": {"b", "c"}, // a is blocked by b and c
		"b": {"d"},
		"c": {"d"},
		"d": nil,
		"x": {"y"}, // y is not on the board
		"p": {"q"}, // p and q block each other (written by an old binary)
		"q": {"p"},
	}
	for id, bl := range edges {
		b.Tasks[id] = Entry{Task: Task{ID: id, BlockedBy: bl}}
	}
	blockers := func(e Task) []string { return e.BlockedBy }
	cases := []struct {
		start, target string
		found         bool
		seen          []string
	}{
		{"a", "d", true, nil},
		{"d", "a", false, []string{"d"}},
		{"a", "a", true, []string{"a"}},
		{"b", "c", false, []string{"b", "d"}},
		{"x", "a", false, []string{"x", "y"}},
		{"p", "a", false, []string{"p", "q"}},
		{"y", "a", false, []string{"y"}},
	}
	for _, c := range cases {
		seen, found := reach(b, c.start, c.target, blockers)
		if found != c.found {
			t.Errorf("reach %s -> %s: found %v, want %v", c.start, c.target, found, c.found)
		}
		if c.seen != nil {
			slices.Sort(seen)
			if !slices.Equal(seen, c.seen) {
				t.Errorf("reach %s -> %s: saw %v, want %v", c.start, c.target, seen, c.seen)
			}
		}
		if found && seen[len(seen)-1] != c.target {
			t.Errorf("reach %s -> %s: the walk went on after the target: %v", c.start, c.target, seen)
		}
	}
}

// store is a fresh repository with one commit, with a pinned environment.
func store(t *testing.T) (*gitstore.Store, string) {
	t.Helper()
	dir := gittest.NewRepo(t)
	return open(t, dir), dir
}

func open(t *testing.T, dir string) *gitstore.Store {
	t.Helper()
	st, err := gitstore.Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func add(t *testing.T, st *gitstore.Store, title string, n New) string {
	t.Helper()
	n.Title = title
	task, err := Add(context.Background(), st, n)
	if err != nil {
		t.Fatal(err)
	}
	return task.ID
}

func ref(t *testing.T, st *gitstore.Store, id string) string {
	t.Helper()
	out, err := st.Git().Output(context.Background(), "rev-parse", Kind.Ref(id))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestUpdateRefusesCycles: a blocker or parent that would close a cycle,
// directly or through other tasks, is a usage error and changes nothing;
// shapes without a cycle (a diamond) are accepted.
func TestUpdateRefusesCycles(t *testing.T) {
	ctx := context.Background()
	st, _ := store(t)
	a := add(t, st, "A", New{})
	b := add(t, st, "B", New{BlockedBy: []string{a}})
	c := add(t, st, "C", New{BlockedBy: []string{b}})
	parent := add(t, st, "Parent", New{})
	child := add(t, st, "Child", New{Parent: parent})
	grandchild := add(t, st, "Grandchild", New{Parent: child})
	str := func(s string) *string { return &s }

	refused := []struct {
		name  string
		id    string
		patch Patch
		msg   string
	}{
		{"blocking itself", a, Patch{AddBlockedBy: []string{a[:6]}}, "cannot block itself"},
		{"a direct cycle", a, Patch{AddBlockedBy: []string{b}}, "blocking " + a[:4]},
		{"a cycle through another task", a, Patch{AddBlockedBy: []string{c}}, "would create a dependency cycle"},
		{"its own parent", parent, Patch{Parent: str(parent)}, "cannot be its own parent"},
		{"a parent cycle", parent, Patch{Parent: str(child)}, "would create a cycle"},
		{"a longer parent cycle", parent, Patch{Parent: str(grandchild)}, "would create a cycle"},
	}
	for _, r := range refused {
		before := ref(t, st, r.id)
		_, changed, err := Update(ctx, st, r.id, r.patch)
		if err == nil || changed {
			t.Errorf("%s: accepted (changed %v)", r.name, changed)
			continue
		}
		if exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), r.msg) {
			t.Errorf("%s: exit %d, %v; want a usage error containing %q", r.name, exitcode.Of(err), err, r.msg)
		}
		if after := ref(t, st, r.id); after != before {
			t.Errorf("%s: the task changed although the update was refused", r.name)
		}
	}

	// A diamond is not a cycle: D is blocked by B and C, both blocked by A.
	d := add(t, st, "D", New{BlockedBy: []string{b}})
	if _, changed, err := Update(ctx, st, d, Patch{AddBlockedBy: []string{c}}); err != nil || !changed {
		t.Fatalf("diamond: changed %v, %v", changed, err)
	}
	// Moving a subtree under an unrelated task is not a cycle either.
	if _, changed, err := Update(ctx, st, child, Patch{Parent: str(a)}); err != nil || !changed {
		t.Fatalf("reparenting: changed %v, %v", changed, err)
	}
	// And once the edge that closed a cycle is gone, the edge is allowed.
	if _, _, err := Update(ctx, st, b, Patch{RemoveBlockedBy: []string{a}}); err != nil {
		t.Fatal(err)
	}
	if _, changed, err := Update(ctx, st, a, Patch{AddBlockedBy: []string{c}}); err != nil || !changed {
		t.Fatalf("after removing B's blocker, A blocked by C: changed %v, %v", changed, err)
	}
}

// TestConcurrentBlockersCannotCloseCycle: two updates that each look fine
// alone but together close a cycle race from separate processes' stores;
// the guard re-runs the loser against the winner's write, so exactly one
// lands and the board has no cycle.
func TestConcurrentBlockersCannotCloseCycle(t *testing.T) {
	gittest.SkipShort(t, "real parallel writers racing")
	ctx := context.Background()
	st, dir := store(t)
	for round := 0; round < 5; round++ {
		a := add(t, st, "A", New{})
		b := add(t, st, "B", New{})
		stores := []*gitstore.Store{open(t, dir), open(t, dir)}
		pairs := [][2]string{{a, b}, {b, a}}
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for i := range pairs {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				_, _, errs[i] = Update(ctx, stores[i], pairs[i][0], Patch{AddBlockedBy: []string{pairs[i][1]}})
			}(i)
		}
		wg.Wait()
		ok := 0
		for _, err := range errs {
			switch {
			case err == nil:
				ok++
			case !strings.Contains(err.Error(), "would create a dependency cycle"):
				t.Fatalf("round %d: unexpected error: %v", round, err)
			}
		}
		if ok != 1 {
			t.Fatalf("round %d: %d of the two updates landed (%v), want exactly 1", round, ok, errs)
		}
		board, err := Load(ctx, st)
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(board.Tasks[a].Task.BlockedBy, b) && slices.Contains(board.Tasks[b].Task.BlockedBy, a) {
			t.Fatalf("round %d: A and B block each other", round)
		}
	}
}
