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
	// Long-lived detached supervisors stay well under it.
	debug.SetGCPercent(-1)
	debug.SetMemoryLimit(512 << 20)
	ctx, stop := signalContext(context.Background())
	code := Main(ctx, os.Args[1:], Stdio{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}, os.Getenv)
	stop()
	os.Exit(code)
}
