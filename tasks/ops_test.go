package tasks

import (
	"context"
	"slices"
	"testing"
)

// TestAddAndUpdateNameEachTaskOnce: several prefixes of one blocker, a
// parent that is also a blocker, and two new blockers that share a blocker
// of their own each make the write depend on one task twice; the write's
// transaction checks that task once (it used to fail with git update-ref's
// raw "multiple updates for ref ... not allowed"), and the task lists each
// blocker once.
func TestAddAndUpdateNameEachTaskOnce(t *testing.T) {
	ctx := context.Background()
	st, _ := store(t)
	x := add(t, st, "X", New{})
	a := add(t, st, "A", New{BlockedBy: []string{x}})
	b := add(t, st, "B", New{BlockedBy: []string{x}})
	sorted := func(ids ...string) []string { return slices.Sorted(slices.Values(ids)) }
	check := func(name string, got Task, want []string) {
		t.Helper()
		board, err := Load(ctx, st)
		if err != nil {
			t.Fatal(err)
		}
		if stored := board.Tasks[got.ID].Task.BlockedBy; !slices.Equal(got.BlockedBy, want) || !slices.Equal(stored, want) {
			t.Errorf("%s: blocked by %v, stored %v, want %v", name, got.BlockedBy, stored, want)
		}
	}
	for _, tc := range []struct {
		name string
		n    New
		want []string
	}{
		{"add: two prefixes of one blocker", New{BlockedBy: []string{x[:4], x[:6], x, a}}, sorted(x, a)},
		{"add: the parent as a blocker too", New{Parent: x[:5], BlockedBy: []string{x[:4], a}}, sorted(x, a)},
	} {
		tc.n.Title = tc.name
		got, err := Add(ctx, st, tc.n)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		check(tc.name, got, tc.want)
	}
	str := func(s string) *string { return &s }
	for _, tc := range []struct {
		name  string
		patch Patch
		want  []string
	}{
		{"update: two prefixes of one blocker", Patch{AddBlockedBy: []string{x[:4], x[:7]}}, sorted(x)},
		{"update: two blockers that share a blocker", Patch{AddBlockedBy: []string{a, b}}, sorted(a, b)},
		{"update: a parent among the blockers' blockers", Patch{Parent: str(x), AddBlockedBy: []string{a}}, sorted(a)},
	} {
		id := add(t, st, tc.name, New{})
		got, _, err := Update(ctx, st, id, tc.patch)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		check(tc.name, got, tc.want)
	}
}
