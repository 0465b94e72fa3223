// Command git-agentmine is the execution environment for parallel AI coding
// agents, as a git extension: with the binary on PATH, `git agentmine …` runs
// it. main only wires the process to Main, which returns the exit code.
package main

import (
	"context"
	"os"
	"runtime/debug"
)

func main() {
	// A short-lived CLI: collect garbage only when the heap grows past a
	// soft limit, instead of many times over while reading a large board.
	// Commands that live long (servers, supervisors, waits) call
	// longLived.
	debug.SetGCPercent(-1)
	debug.SetMemoryLimit(512 << 20)
	ctx, stop := signalContext(context.Background())
	code := Main(ctx, os.Args[1:], Stdio{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}, os.Getenv)
	stop()
	os.Exit(code)
}

// longLived turns garbage collection back on for a command that runs for
// as long as its work does (a server, a supervisor, a wait): main turns it
// off for short commands, and a process that reads the board again and
// again would otherwise grow to the memory limit before collecting.
func longLived() { debug.SetGCPercent(100) }
