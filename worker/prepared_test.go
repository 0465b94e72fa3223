package worker_test

import (
	"context"
	"testing"

	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/internal/gittest"
	"github.com/git-agentmine/git-agentmine/scaffold"
	"github.com/git-agentmine/git-agentmine/tasks"
	"github.com/git-agentmine/git-agentmine/worker"
)

// preparedRun is a repository with one task for an agent "coder" whose
// command is command (the TOML array's elements, written between its
// brackets) and a session prepared for it, not yet executed.
type preparedRun struct {
	st   *gitstore.Store
	env  *worker.Env
	task tasks.Task
	p    *worker.Prepared
}

// prepareRun builds a preparedRun; dir, when not empty, is a repository
// made by gittest.NewRepo already.
func prepareRun(t *testing.T, dir, command string) preparedRun {
	t.Helper()
	if dir == "" {
		dir = gittest.NewRepo(t)
	}
	gittest.CommitFiles(t, dir, "fixture", map[string]string{
		"src/app.txt":                  "app\n",
		".agentmine/agents/coder.toml": "client = \"custom\"\ncommand = [" + command + "]\n[scope]\nwrite = [\"src/**\"]\n",
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
	return preparedRun{st: st, env: env, task: task, p: p}
}
