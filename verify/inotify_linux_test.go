package verify

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestChangedSinceBirth: a directory made during the run and left as it
// was made is not changed; one that held a file that is gone again is,
// once the clock ticked between the two; one born before the run never
// counts. A file system without birth times answers false throughout.
func TestChangedSinceBirth(t *testing.T) {
	start := time.Now()
	dir := filepath.Join(t.TempDir(), "d")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if changedSinceBirth(dir, start) {
		t.Fatal("a fresh directory reads as changed")
	}
	time.Sleep(50 * time.Millisecond) // past the file system's clock tick
	f := filepath.Join(dir, "f")
	if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(f); err != nil {
		t.Fatal(err)
	}
	if !changedSinceBirth(dir, start) {
		t.Skip("no birth time on this file system (or a tick coarser than 50 ms)")
	}
	if changedSinceBirth(dir, time.Now().Add(2*time.Second)) {
		t.Fatal("a directory born before the run counts")
	}
}
