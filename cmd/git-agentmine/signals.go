package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/git-agentmine/git-agentmine/launch"
)

// signalContext is cancelled by Ctrl-C or a hang-up (SIGINT, SIGHUP: cause
// context.Canceled) or by SIGTERM (cause launch.ErrStopRequested, which
// `worker stop` sends to a supervisor): a supervised run then records the
// worker's own exit (143 for SIGTERM) as stopped, not 130 as interrupted.
// A foreground run whose terminal closes thus ends its worker and records
// it, instead of dying and leaving the worker running unsupervised. main and the
// supervisors both use it, so whichever notices a signal first, the cause
// is the same. stop releases the signals.
func signalContext(parent context.Context) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(parent)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		select {
		case s := <-sigs:
			if s == syscall.SIGTERM {
				cancel(launch.ErrStopRequested)
			} else {
				cancel(context.Canceled)
			}
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		cancel(context.Canceled)
	}
}

// stopRequested reports whether ctx ended because of SIGTERM.
func stopRequested(ctx context.Context) bool {
	return ctx.Err() != nil && context.Cause(ctx) == launch.ErrStopRequested
}
