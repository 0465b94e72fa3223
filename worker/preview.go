package worker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/git-agentmine/git-agentmine/agents"
	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/launch"
	"github.com/git-agentmine/git-agentmine/memory"
	"github.com/git-agentmine/git-agentmine/scope"
	"github.com/git-agentmine/git-agentmine/tasks"
)

// Preview is what a worker for a task would get, without preparing anything.
type Preview struct {
	Task     tasks.Task
	Agent    agents.Agent
	Client   launch.Client
	Prompt   string
	Argv     []string
	Worktree string
}

// ResolveAgent picks the agent for a task: the flag, else the task's
// assignee when it names an agent, else the default agent.
func (e *Env) ResolveAgent(flag string, t tasks.Task) (agents.Agent, error) {
	name := flag
	if name == "" && t.Assignee != "" && agents.ValidName(t.Assignee) {
		if _, err := agents.Get(e.Top, t.Assignee); err == nil {
			name = t.Assignee
		}
	}
	if name == "" {
		name = e.Cfg.DefaultAgent
	}
	a, err := agents.Get(e.Top, name)
	if err != nil {
		return agents.Agent{}, err
	}
	if a.RoleOr() != agents.RoleWorker {
		return agents.Agent{}, exitcode.New(exitcode.Config, fmt.Errorf("agent %s is a %s, not a worker: a worker run needs an agent with role worker", a.Name, a.RoleOr()), "")
	}
	return a, nil
}

// PreviewRun builds the prompt and command line for a task.
func (e *Env) PreviewRun(ctx context.Context, taskPrefix, agentFlag string) (*Preview, error) {
	tb, err := tasks.Load(ctx, e.St)
	if err != nil {
		return nil, err
	}
	id, err := tb.Resolve(taskPrefix)
	if err != nil {
		return nil, err
	}
	t := tb.Tasks[id].Task
	ag, err := e.ResolveAgent(agentFlag, t)
	if err != nil {
		return nil, err
	}
	spec := scope.Spec{Read: ag.Scope.Read, Write: ag.Scope.Write, Exclude: ag.Scope.Exclude}
	if err := spec.Validate(); err != nil {
		return nil, exitcode.New(exitcode.Config, fmt.Errorf("agent %s: %w", ag.Name, err), "")
	}
	client, err := launch.ParseClient(ag.ClientOr(e.Cfg.Client))
	if err != nil {
		return nil, exitcode.New(exitcode.Config, fmt.Errorf("agent %s: %w", ag.Name, err), "")
	}
	mems, err := memory.Active(ctx, e.St)
	if err != nil {
		return nil, err
	}
	dod := t.DoD
	if len(dod) == 0 {
		dod = ag.DoD
	}
	prompt, err := BuildPrompt(e.Top, t, tb.ShortID(id), ag, spec, mems, dod)
	if err != nil {
		return nil, err
	}
	wt := filepath.Join(e.Cfg.WorktreeDir(e.Top), "task-"+id[:8])
	// Adapters read the prompt file (short prompts go inline), but the
	// worktree does not exist yet: build from a temporary copy, then name the
	// file where the worker will find it.
	tmp, err := os.CreateTemp("", "agentmine-prompt-*.md")
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name())
	_, werr := tmp.WriteString(prompt)
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return nil, werr
	}
	cmd, err := launch.Invocation{Client: client, Model: ag.Model, Command: ag.Command,
		PromptFile: tmp.Name(), Worktree: wt, Task: id}.Build()
	if err != nil {
		return nil, exitcode.New(exitcode.Config, fmt.Errorf("agent %s: %w", ag.Name, err), "")
	}
	final := filepath.Join(wt, PromptRel)
	for i, a := range cmd.Argv {
		cmd.Argv[i] = strings.ReplaceAll(a, tmp.Name(), final)
	}
	return &Preview{Task: t, Agent: ag, Client: client, Prompt: prompt, Argv: cmd.Argv, Worktree: wt}, nil
}
