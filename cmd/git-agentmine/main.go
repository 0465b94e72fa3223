// Command git-agentmine is the execution environment for parallel AI coding
// agents, as a git extension: with the binary on PATH, `git agentmine …` runs
// it. main only wires the process to Main, which returns the exit code.
package main

import (
	"context"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
)

func main() {
	// A short-lived CLI: trade memory for less garbage-collection time on
	// large boards.
	debug.SetGCPercent(400)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := Main(ctx, os.Args[1:], Stdio{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}, os.Getenv)
	stop()
	os.Exit(code)
}
