package roles

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/git-agentmine/git-agentmine/agents"
	"github.com/git-agentmine/git-agentmine/board"
	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/memory"
	"github.com/git-agentmine/git-agentmine/plan"
	"github.com/git-agentmine/git-agentmine/status"
	"github.com/git-agentmine/git-agentmine/tasks"
	"github.com/git-agentmine/git-agentmine/worker"
)

// MaxFileList bounds the repository file list in a planner's prompt, and
// MaxTaskList its list of existing tasks.
const (
	MaxFileList = 2000
	MaxTaskList = 300
)

// PlanOptions are the choices of a planner run.
type PlanOptions struct {
	// Agent names the planner agent ("" picks one, see PickAgent).
	Agent string
	// DryRun validates the plan and creates nothing.
	DryRun bool
	// Timeout overrides the agent's timeout.
	Timeout time.Duration
	// Tee and Progress as in Request.
	Tee, Progress io.Writer
	// About names the attempt whose review NG or failures a replan
	// answers; it is recorded as the planner session's Reviews, so that a
	// supervisor can tell which decision a planner run made.
	About string
}

// Planned is a planner's plan and what became of it.
type Planned struct {
	// Plan is the plan as the planner wrote it.
	Plan plan.Plan
	// Created are the children created (none for a dry run).
	Created []tasks.Task
	// Rewritten is the task after a replan's rewrite (nil without one).
	Rewritten *tasks.Task
	// Run is the planner's run.
	Run *Result
}

// Plan runs a planner agent on a task (any unique prefix): it sees the
// task, its acceptance criteria, the active Memory Bank, the existing tasks,
// the worker agents and the repository's file list at the task's base,
// and writes a plan (docs/plan.md). The whole plan is validated and every
// child created under the task in one ref transaction (nothing with
// DryRun). A bad plan is a *plan.Error naming the first problem, and
// nothing is created; a run without an answer is an *InfraError.
func Plan(ctx context.Context, env *worker.Env, taskPrefix string, o PlanOptions) (Planned, error) {
	return planOrReplan(ctx, env, taskPrefix, nil, o)
}

// Replan runs a planner agent on a task whose attempt was reviewed NG (seed
// 003: the fault lies with the instructions, not the worker). The planner
// is given the reviewer's reasons (feedback) and may rewrite the task's
// description and acceptance criteria (recorded in the task's history as a
// "task replan" commit naming the reason) and/or split it into children,
// as in Plan. An answer that does neither is a *plan.Error.
func Replan(ctx context.Context, env *worker.Env, taskPrefix string, feedback []string, o PlanOptions) (Planned, error) {
	if feedback == nil {
		feedback = []string{}
	}
	return planOrReplan(ctx, env, taskPrefix, feedback, o)
}

func planOrReplan(ctx context.Context, env *worker.Env, taskPrefix string, feedback []string, o PlanOptions) (Planned, error) {
	st := env.St
	if err := st.RequireCommits(ctx); err != nil {
		return Planned{}, err
	}
	b, err := board.Load(ctx, st, env.Cfg.Base)
	if err != nil {
		return Planned{}, err
	}
	id, err := b.Tasks.Resolve(taskPrefix)
	if err != nil {
		return Planned{}, err
	}
	t := b.Tasks.Tasks[id].Task
	if t.Cancelled != nil {
		return Planned{}, exitcode.New(exitcode.State, fmt.Errorf("task %s is cancelled: there is nothing to plan", b.Tasks.ShortID(id)), "")
	}
	ag, err := PickAgent(env.Top, agents.RolePlanner, o.Agent)
	if err != nil {
		return Planned{}, err
	}
	base := firstNonEmpty(t.Base, env.Cfg.Base, "HEAD")
	prompt, err := PlanPrompt(ctx, env, b, id, ag, base, feedback)
	if err != nil {
		return Planned{}, err
	}
	run, err := Run(ctx, env, Request{Role: agents.RolePlanner, Agent: ag.Name, Task: id, Commit: base, Prompt: prompt,
		Reviews: o.About, Timeout: o.Timeout, Tee: o.Tee, Progress: o.Progress})
	if err != nil {
		return Planned{Run: run}, err
	}
	where := "plan from " + ag.Name
	p, err := plan.Parse(where, run.Output)
	if err != nil {
		return Planned{Run: run}, err
	}
	out := Planned{Plan: p, Run: run}
	if feedback == nil && p.Rewrite != nil {
		return out, &plan.Error{Where: where, Err: fmt.Errorf("a rewrite is only for a replan")}
	}
	if feedback != nil && p.Rewrite == nil && len(p.Tasks) == 0 {
		return out, &plan.Error{Where: where, Err: fmt.Errorf("the replan neither rewrites the task nor splits it")}
	}
	c, err := plan.LoadContext(ctx, st, env.Top, id)
	if err != nil {
		return out, err
	}
	ns, err := p.Validate(where, c)
	if err != nil {
		return out, err
	}
	if o.DryRun {
		return out, nil
	}
	if rw := p.Rewrite; rw != nil {
		why := rw.Reason
		if why == "" {
			why = "review NG: " + strings.Join(feedback, "; ")
		}
		nt, _, err := tasks.Revise(ctx, st, id, tasks.Patch{Description: rw.Description, Acceptance: rw.Criteria}, "planner "+ag.Name+": "+why)
		if err != nil {
			return out, err
		}
		out.Rewritten = &nt
	}
	if len(ns) > 0 {
		if out.Created, err = tasks.AddAll(ctx, st, ns); err != nil {
			return out, err
		}
	}
	return out, nil
}

// PlanPrompt renders a planner's prompt for task id; feedback, when not
// nil, makes it a replan prompt carrying the reviewer's reasons.
func PlanPrompt(ctx context.Context, env *worker.Env, b *board.Board, id string, ag agents.Agent, base string, feedback []string) (string, error) {
	t := b.Tasks.Tasks[id].Task
	var s strings.Builder
	if feedback != nil {
		fmt.Fprintf(&s, "# Replan task %s: %s\n\n", b.Tasks.ShortID(id), t.Title)
		s.WriteString("You are the planner. An attempt at this task was reviewed NG, or attempts at it kept\n")
		s.WriteString("failing. The fault may lie with the instructions, not with the worker: rewrite the task's\n")
		s.WriteString("description and acceptance criteria so that the next attempt can succeed, or split the\n")
		s.WriteString("task into smaller children.\n\n")
		s.WriteString("## What went wrong\n\n")
		for _, f := range feedback {
			fmt.Fprintf(&s, "- %s\n", f)
		}
		s.WriteString("\n")
	} else {
		fmt.Fprintf(&s, "# Plan task %s: %s\n\n", b.Tasks.ShortID(id), t.Title)
		s.WriteString("You are the planner. Split this task into child tasks small enough for one worker\n")
		s.WriteString("each, with the dependencies between them. Do not write code.\n\n")
	}
	fmt.Fprintf(&s, "- id: %s\n- type: %s\n- priority: %s\n\n", id, t.Type, t.Priority)
	if d := strings.TrimSpace(t.Description); d != "" {
		fmt.Fprintf(&s, "## Description\n\n%s\n\n", d)
	}
	s.WriteString(CriteriaSection(t))
	if err := instructions(&s, env.Top, ag); err != nil {
		return "", err
	}
	mems, err := memory.Active(ctx, env.St)
	if err != nil {
		return "", err
	}
	if len(mems) > 0 {
		s.WriteString("## Memory Bank (project decisions)\n\n")
		memory.Sort(mems)
		for _, m := range mems {
			fmt.Fprintf(&s, "- [%s] %s", m.Category, m.Title)
			if m.Summary != "" {
				fmt.Fprintf(&s, ": %s", strings.ReplaceAll(strings.TrimSpace(m.Summary), "\n", " "))
			}
			s.WriteString("\n")
		}
		s.WriteString("\n")
	}
	s.WriteString("## Existing tasks (not done or cancelled)\n\n")
	listed, more := 0, 0
	for _, tid := range b.Tasks.IDs {
		st := b.Status[tid].Status
		if st == status.Done || st == status.Cancelled {
			continue
		}
		if listed == MaxTaskList {
			more++
			continue
		}
		listed++
		et := b.Tasks.Tasks[tid].Task
		fmt.Fprintf(&s, "- %s [%s] %s", b.Tasks.ShortID(tid), st, et.Title)
		if et.Parent != "" {
			fmt.Fprintf(&s, " (child of %s)", b.Tasks.ShortID(et.Parent))
		}
		s.WriteString("\n")
	}
	if listed == 0 {
		s.WriteString("(none)\n")
	}
	if more > 0 {
		fmt.Fprintf(&s, "- … and %d more\n", more)
	}
	s.WriteString("\n## Worker agents\n\n")
	defs, _, err := agents.Load(env.Top)
	if err != nil {
		return "", err
	}
	var workers []string
	for _, a := range defs {
		if a.RoleOr() == agents.RoleWorker {
			workers = append(workers, a.Name)
			fmt.Fprintf(&s, "- %s: %s (writes %s)\n", a.Name, oneLine(a.Description), strings.Join(a.Scope.Write, ", "))
		}
	}
	if len(workers) == 0 {
		s.WriteString("(none defined: leave \"agent\" out)\n")
	}
	files, err := env.St.Git().Lines(ctx, "ls-tree", "-r", "--name-only", "--full-tree", base)
	if err != nil {
		return "", fmt.Errorf("listing the files of %s: %w", base, err)
	}
	fmt.Fprintf(&s, "\n## Files at %s (%d)\n\n", base, len(files))
	for i, f := range files {
		if i == MaxFileList {
			fmt.Fprintf(&s, "- … and %d more (your working directory holds them all)\n", len(files)-MaxFileList)
			break
		}
		fmt.Fprintf(&s, "- %s\n", f)
	}
	s.WriteString("\n## How to answer\n\nAnswer with one JSON object (the plan format of docs/plan.md):\n\n")
	s.WriteString(`    {"v": 1,
     "summary": "how the work is split and why",
     "tasks": [
       {"key": "schema", "title": "one line", "description": "what to do",
        "type": "task|feature|bug|refactor|docs|test|chore|epic", "priority": "low|medium|high|critical",
        "labels": [], "agent": "a worker agent above", "dod": ["shell command"],
        "acceptance_criteria": ["checkable statement"], "blocked_by": ["another key, or a task id"],
        "paths": ["the files or globs it will change, e.g. src/auth/**"]}
     ]}
`)
	if feedback != nil {
		s.WriteString(`
To change this task instead of (or as well as) splitting it, add:

     "rewrite": {"description": "the new description", "acceptance_criteria": ["..."],
                 "reason": "why, for the task's history"}

and leave "tasks" empty ([]) when you do not split it.
`)
	}
	s.WriteString("\nList in paths what each task will change: tasks whose paths overlap never run at the same time, so precise paths let more run in parallel.\n")
	s.WriteString("\nKeys must be unique; blocked_by must not form a cycle. The whole plan is refused if any part is invalid.\n")
	if len(workers) > 0 {
		fmt.Fprintf(&s, "Known worker agents: %s.\n", strings.Join(workers, ", "))
	}
	return s.String(), nil
}

func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return "(no description)"
	}
	s, _, _ = strings.Cut(s, "\n")
	return s
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}
