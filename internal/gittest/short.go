package gittest

import "testing"

// SkipShort leaves t out of `go test -short`, the fast subset for the edit
// loop, saying why it is slow. Every test still runs in the full suite (and
// in CI); the subset keeps one representative of each behaviour.
func SkipShort(t testing.TB, why string) {
	t.Helper()
	if testing.Short() {
		t.Skip("slow, left out of -short: " + why)
	}
}
