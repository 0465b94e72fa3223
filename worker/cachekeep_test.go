package worker_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/git-agentmine/git-agentmine/internal/gittest"
	"github.com/git-agentmine/git-agentmine/sessions"
	"github.com/git-agentmine/git-agentmine/tasks"
	"github.com/git-agentmine/git-agentmine/worker"
)

// The local caches outlive a worker that left them as they were, and are
// dropped after one that wrote to them (a same-user process can plant
// entries there).
func TestCachesKeptUnlessTheWorkerWroteThem(t *testing.T) {
	for _, c := range []struct {
		name string
		kept bool
	}{
		{"untouched", true},
		{"written", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := gittest.NewRepo(t)
			cache := filepath.Join(dir, ".git", "agentmine", "cache", tasks.Kind.Dir)
			command := `"true"`
			if !c.kept {
				command = `"sh", "-c", "printf x >> \"$0\"", "` + cache + `"`
			}
			r := prepareRun(t, dir, command)
			ctx, st, env, task, p := context.Background(), r.st, r.env, r.task, r.p
			// A reader fills the caches before the worker runs.
			if _, err := tasks.Load(ctx, st); err != nil {
				t.Fatal(err)
			}
			if _, _, err := sessions.LoadAll(ctx, st); err != nil {
				t.Fatal(err)
			}
			before, err := os.ReadFile(cache)
			if err != nil {
				t.Fatalf("the task list cache was not written: %v", err)
			}
			if _, err := env.Execute(ctx, p.Rec, worker.ExecOptions{}); err != nil {
				t.Fatal(err)
			}
			after, err := os.ReadFile(cache)
			switch {
			case c.kept && (err != nil || string(after) != string(before)):
				t.Fatalf("a worker that left the caches alone: the task list cache is gone or changed (%v)", err)
			case !c.kept && err == nil:
				t.Fatalf("a worker that wrote to the task list cache: the cache was kept:\n%s", after)
			}
			// Either way, readers see the task as git has it.
			tb, err := tasks.Load(ctx, st)
			if err != nil || len(tb.IDs) != 1 || tb.IDs[0] != task.ID {
				t.Fatalf("tasks after the run: %v %v", tb, err)
			}
		})
	}
}
