// Command git-agentmine is the execution environment for parallel AI coding
// agents, as a git extension: with the binary on PATH, `git agentmine …` runs
// it. main only wires the process to Main, which returns the exit code.
package main

import (
	"context"
	"os"
	"syscall"

	"github.com/git-agentmine/git-agentmine/launch"
)

// The garbage collector runs with Go's defaults for every command. Turning
// it off for short commands (as earlier releases did) measured slower: a
// process that never reuses memory takes a page fault for every page it
// allocates, which cost more than collecting. 100,000 tasks, task list
// --json, three runs each, alternating: warm cache 2.54-2.57 s and 467 MB
// peak off, 1.87-2.31 s and 320 MB on; cold cache 4.94-5.76 s off,
// 4.92-5.42 s on.

func main() {
	os.Exit(processMain())
}

// processMain is the whole process around Main: signals handled from the
// start, a detacher told so, the exit code returned. The tests' copy of
// the program runs it too. A command that caught SIGINT or SIGTERM ends
// with 130 or 143 (128 plus the signal) once it has wound down, whatever it
// returned; a second signal ends the process at once.
func processMain() int {
	if len(os.Args) == 2 && os.Args[1] == "version" {
		// Prints one line and has nothing to wind down, so it goes without
		// the signal watcher (a signal ends it with 128 plus its number
		// all the same): os/signal's loop and the watcher's goroutine
		// cost a thread, 0.5 ms of CPU in a 4.5 ms run (two copies of
		// each build, 250 alternating runs, load average 7).
		launch.Ready(os.Getenv)
		return Main(context.Background(), os.Args[1:], Stdio{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}, os.Getenv)
	}
	ctx, stop, caught := watchSignals(context.Background(), func(sig syscall.Signal) {
		os.Exit(signalExit(sig))
	})
	defer stop()
	// A detached process may be signalled by pid from now on; a detached
	// supervisor says so once its session records its pid (its seal), so
	// that the process that detached it need not record it too.
	ready := launch.ReadyLater(os.Getenv)
	if isSupervisorArgv(os.Args[1:]) {
		ctx = context.WithValue(ctx, sealedKey{}, ready)
	} else {
		ready()
	}
	code := Main(ctx, os.Args[1:], Stdio{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}, os.Getenv)
	if sig := caught(); sig != 0 {
		return signalExit(sig)
	}
	return code
}
