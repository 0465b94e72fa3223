//go:build !linux

package worker

// protectMemory does nothing where prctl does not exist: there the
// supervisor's nonce is protected only by the operating system's own rules
// on reading another process's memory.
func protectMemory() error { return nil }
