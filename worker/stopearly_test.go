package worker_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/launch"
	"github.com/git-agentmine/git-agentmine/sessions"
	"github.com/git-agentmine/git-agentmine/worker"
)

// A stop (run stop, worker stop: SIGTERM) or a Ctrl-C that reaches the
// supervisor while it still sets the session up is recorded as what it
// is — stopped with SIGTERM, or interrupted — and the worker never starts;
// not as a setup step that failed with "context canceled".
func TestStopBeforeTheWorkerStarts(t *testing.T) {
	for _, c := range []struct {
		name, reason, signal string
		cause                error
		code                 int
	}{
		{"stop", "stopped before the worker started", "SIGTERM", launch.ErrStopRequested, 143},
		{"interrupt", "interrupted before the worker started", "", context.Canceled, exitcode.Interrupted},
	} {
		t.Run(c.name, func(t *testing.T) {
			ran := filepath.Join(t.TempDir(), "ran")
			r := prepareRun(t, "", `"sh", "-c", "touch `+ran+`"`)
			ctx, st, env, p := context.Background(), r.st, r.env, r.p
			stopped, cancel := context.WithCancelCause(ctx)
			cancel(c.cause)
			out, err := env.Execute(stopped, p.Rec, worker.ExecOptions{})
			if err != nil {
				t.Fatalf("a stopped run is an outcome, not an error: %v", err)
			}
			if out.ExitCode != c.code || out.Signal != c.signal || out.Reason != c.reason {
				t.Errorf("outcome: exit %d, signal %q, reason %q; want %d, %q, %q", out.ExitCode, out.Signal, out.Reason, c.code, c.signal, c.reason)
			}
			if _, err := os.Stat(ran); err == nil {
				t.Error("the worker ran although the stop came first")
			}
			rec, err := sessions.Get(ctx, st, p.Rec.Session.ID)
			if err != nil {
				t.Fatal(err)
			}
			if rec.Outcome == nil || rec.Outcome.Signal != c.signal || rec.Outcome.ExitCode != c.code {
				t.Errorf("recorded outcome %+v", rec.Outcome)
			}
		})
	}
}
