package main

import (
	"context"
	"os"
	"os/signal"
	"sync/atomic"
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
	ctx, stop, _ = watchSignals(parent, nil)
	return ctx, stop
}

// watchSignals is signalContext that also reports the first signal caught
// (0 while none) and hands a second one to again, when not nil.
func watchSignals(parent context.Context, again func(syscall.Signal)) (ctx context.Context, stop func(), caught func() syscall.Signal) {
	ctx, cancel := context.WithCancelCause(parent)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	var got atomic.Int32
	released := make(chan struct{})
	go func() {
		select {
		case s := <-sigs:
			sig, _ := s.(syscall.Signal)
			got.Store(int32(sig))
			if sig == syscall.SIGTERM {
				cancel(launch.ErrStopRequested)
			} else {
				cancel(context.Canceled)
			}
		case <-ctx.Done():
			return
		}
		if again == nil {
			return
		}
		select {
		case s := <-sigs:
			sig, _ := s.(syscall.Signal)
			again(sig)
		case <-released:
		}
	}()
	var once atomic.Bool
	return ctx, func() {
			if once.CompareAndSwap(false, true) {
				signal.Stop(sigs)
				close(released)
				cancel(context.Canceled)
			}
		}, func() syscall.Signal {
			return syscall.Signal(got.Load())
		}
}

// signalExit is the exit code of a command ended by sig: 128 plus its
// number, as a shell reports it (130 for SIGINT, 143 for SIGTERM).
func signalExit(sig syscall.Signal) int { return 128 + int(sig) }

// stopRequested reports whether ctx ended because of SIGTERM.
func stopRequested(ctx context.Context) bool {
	return ctx.Err() != nil && context.Cause(ctx) == launch.ErrStopRequested
}
