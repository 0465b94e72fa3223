package gittest

import (
	"os/exec"
	"testing"
)

// Terminal is a pseudo-terminal a test runs commands on. On macOS it is
// not implemented (no Mac runs the tests): NewTerminal skips the test.
type Terminal struct{}

// NewTerminal skips the test on macOS; see pty_linux.go.
func NewTerminal(t testing.TB) *Terminal {
	t.Helper()
	t.Skip("pseudo-terminal tests run on Linux only")
	return nil
}

// Attach is never reached on macOS (NewTerminal skips).
func (term *Terminal) Attach(cmd *exec.Cmd) {}

// Output is never reached on macOS (NewTerminal skips).
func (term *Terminal) Output() string { return "" }

// Settled is never reached on macOS (NewTerminal skips).
func (term *Terminal) Settled() string { return "" }
