package gittest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// GitCounter is a directory holding a wrapper named git that logs each
// call before running the real git. With Dir first on PATH, Count tells
// how many git processes were started through PATH since Reset: the
// benchmarks report it beside their timings (from an extra, untimed run,
// since the wrapper's own fork would distort the times). git runs its own
// helpers from its exec-path, so programs must be invoked directly
// (git-agentmine, not `git agentmine`) for their calls to show.
type GitCounter struct {
	// Dir is the directory to put first on PATH.
	Dir string
	log string
}

// NewGitCounter writes the wrapper into a temporary directory of tb.
func NewGitCounter(tb testing.TB) GitCounter {
	tb.Helper()
	real, err := exec.LookPath("git")
	if err != nil {
		tb.Fatal(err)
	}
	c := GitCounter{Dir: tb.TempDir()}
	c.log = filepath.Join(c.Dir, "calls")
	script := fmt.Sprintf("#!/bin/sh\necho \"$*\" >> '%s'\nexec '%s' \"$@\"\n", c.log, real)
	if err := os.WriteFile(filepath.Join(c.Dir, "git"), []byte(script), 0o755); err != nil {
		tb.Fatal(err)
	}
	return c
}

// Reset forgets the calls logged so far.
func (c GitCounter) Reset() { os.Remove(c.log) }

// Count returns the number of git calls logged since Reset.
func (c GitCounter) Count(tb testing.TB) int {
	tb.Helper()
	data, err := os.ReadFile(c.log)
	if err != nil && !os.IsNotExist(err) {
		tb.Fatal(err)
	}
	return bytes.Count(data, []byte("\n"))
}

// Calls returns the arguments of each git call logged since Reset, one
// call per line.
func (c GitCounter) Calls(tb testing.TB) string {
	tb.Helper()
	data, err := os.ReadFile(c.log)
	if err != nil && !os.IsNotExist(err) {
		tb.Fatal(err)
	}
	return string(data)
}
