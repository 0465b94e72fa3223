package worker_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/internal/gittest"
	"github.com/git-agentmine/git-agentmine/launch"
	"github.com/git-agentmine/git-agentmine/scaffold"
	"github.com/git-agentmine/git-agentmine/sessions"
	"github.com/git-agentmine/git-agentmine/tasks"
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
			dir := gittest.NewRepo(t)
			ran := filepath.Join(t.TempDir(), "ran")
			gittest.CommitFiles(t, dir, "fixture", map[string]string{
				"src/app.txt":                  "app\n",
				".agentmine/agents/coder.toml": "client = \"custom\"\ncommand = [\"sh\", \"-c\", \"touch " + ran + "\"]\n[scope]\nwrite = [\"src/**\"]\n",
			})
			ctx := context.Background()
			st, err := gitstore.Open(ctx, dir)
			if err != nil {
				t.Fatal(err)
			}
			env, err := worker.NewEnv(st, nil, func(string) string { return "" })
			if err != nil {
				t.Fatal(err)
			}
			if _, err := scaffold.ExcludeWorktrees(st.Location().CommonDir, dir, env.Cfg.WorktreeDir(dir)); err != nil {
				t.Fatal(err)
			}
			task, err := tasks.Add(ctx, st, tasks.New{Title: "t", Assignee: "coder"})
			if err != nil {
				t.Fatal(err)
			}
			p, err := env.Prepare(ctx, worker.RunOptions{Task: task.ID, Exec: true, NoClaim: true})
			if err != nil {
				t.Fatal(err)
			}
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
