package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/git-agentmine/git-agentmine/agents"
	"github.com/git-agentmine/git-agentmine/board"
	"github.com/git-agentmine/git-agentmine/contract"
	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/output"
	"github.com/git-agentmine/git-agentmine/plan"
	"github.com/git-agentmine/git-agentmine/roles"
	"github.com/git-agentmine/git-agentmine/safefile"
	"github.com/git-agentmine/git-agentmine/sessions"
	"github.com/git-agentmine/git-agentmine/tasknote"
	"github.com/git-agentmine/git-agentmine/tasks"
	"github.com/git-agentmine/git-agentmine/worker"
)

// PlanCmd is `plan`.
type PlanCmd struct {
	ID      string        `arg:"" help:"Task to split into children."`
	Agent   string        `short:"a" help:"Planner agent (default: the agent named planner, else the first with role planner)."`
	DryRun  bool          `name:"dry-run" help:"Validate and print the plan; create nothing."`
	Timeout time.Duration `placeholder:"DURATION" help:"Time before the planner is stopped: 90, 90s, 5m."`
}

// Run runs the planner and creates the children.
func (c *PlanCmd) Run(a *App) error {
	env, err := workerEnv(a, nil)
	if err != nil {
		return err
	}
	p, err := roles.Plan(a.Ctx, env, c.ID, roles.PlanOptions{Agent: c.Agent, DryRun: c.DryRun,
		Timeout: c.Timeout, Progress: a.progress()})
	if err != nil {
		return err
	}
	return printPlan(a, env.St, p.Plan, p.Created, c.DryRun, planRunSession(p.Run))
}

func planRunSession(r *roles.Result) string {
	if r == nil {
		return ""
	}
	return r.Session.Session.ID
}

// progress is where long operations report, nil when quiet or with --json.
func (a *App) progress() *os.File {
	if a.G.Quiet || a.G.JSON {
		return nil
	}
	return os.Stderr
}

// printPlan prints the created children (or, for a dry run, the plan).
func printPlan(a *App, st *gitstore.Store, p plan.Plan, created []tasks.Task, dry bool, session string) error {
	if a.G.JSON {
		j := planJSON{V: output.SchemaVersion, DryRun: dry, Session: session, Summary: p.Summary, Plan: p, Created: []contract.TaskJSON{}}
		if len(created) > 0 {
			b, err := board.Load(a.Ctx, st, "")
			if err != nil {
				return err
			}
			for _, t := range created {
				j.Created = append(j.Created, contract.NewTask(b, t.ID))
			}
		}
		return a.P.PrintJSON(j)
	}
	if a.G.Quiet {
		for _, t := range created {
			a.P.Printf("%s\n", t.ID)
		}
		return nil
	}
	if dry {
		a.P.Notef("plan is valid (dry run: nothing created)\n")
		keys := p.Keys()
		for i, ch := range p.Tasks {
			after := ""
			if len(ch.BlockedBy) > 0 {
				after = "  after " + strings.Join(ch.BlockedBy, ", ")
			}
			a.P.Printf("%s  %s%s\n", keys[i], ch.Title, after)
		}
		return nil
	}
	ids, err := st.IDs(a.Ctx, tasks.Kind)
	if err != nil {
		return err
	}
	short := gitstore.ShortIDs(ids)
	a.P.Notef("created %s\n", plural(len(created), "task", "tasks"))
	for _, t := range created {
		var bs []string
		for _, b := range t.BlockedBy {
			bs = append(bs, short[b])
		}
		after := ""
		if len(bs) > 0 {
			after = "  after " + strings.Join(bs, ", ")
		}
		a.P.Printf("%s  %s%s\n", short[t.ID], t.Title, after)
	}
	return nil
}

// TaskImportCmd is `task import`.
type TaskImportCmd struct {
	File   string `arg:"" help:"Plan JSON (docs/plan.md) or AgentRunner task.yaml; - reads plan JSON from stdin."`
	Parent string `help:"Make every imported task a child of this task."`
	DryRun bool   `name:"dry-run" help:"Validate only; create nothing."`
}

// Run validates the whole file and creates its tasks in one transaction.
func (c *TaskImportCmd) Run(a *App) error {
	st, err := a.Store()
	if err != nil {
		return err
	}
	var data []byte
	name := c.File
	if c.File == "-" {
		data, err = io.ReadAll(a.In)
		name = "stdin"
	} else {
		data, err = safefile.ReadFile(c.File, plan.MaxFileBytes)
	}
	if err != nil {
		code := exitcode.NotFound
		if !errors.Is(err, fs.ErrNotExist) {
			code = exitcode.Usage // a FIFO, a device, a directory, too large
		}
		return exitcode.New(code, fmt.Errorf("importing %s: %w", name, errors.Unwrap(err)), "")
	}
	top := worker.MainTop(st)
	var p plan.Plan
	if c.File != "-" && plan.IsYAML(c.File, data) {
		clients := map[string]string{}
		defs, _, err := agents.Load(top)
		if err != nil {
			return err
		}
		for _, d := range defs {
			if d.RoleOr() == agents.RoleWorker {
				clients[d.Name] = d.Client
			}
		}
		p, err = parseTaskYAML(a, c.File, data, clients)
		if err != nil {
			return err
		}
	} else if p, err = plan.Parse(filepath.Base(name), data); err != nil {
		return err
	}
	if c.DryRun {
		pc, err := plan.LoadContext(a.Ctx, st, top, c.Parent)
		if err != nil {
			return err
		}
		if _, err := p.Validate(filepath.Base(name), pc); err != nil {
			return err
		}
		return printPlan(a, st, p, nil, true, "")
	}
	if p.Rewrite != nil {
		return &plan.Error{Where: filepath.Base(name), Err: errors.New("a rewrite is only for a planner's replan: import creates tasks")}
	}
	created, err := plan.Apply(a.Ctx, st, top, filepath.Base(name), c.Parent, p)
	if err != nil {
		return err
	}
	return printPlan(a, st, p, created, false, "")
}

// ReviewCmd is `review`.
type ReviewCmd struct {
	ID      string        `arg:"" help:"Session id, or a task id (its latest session)."`
	Agent   string        `short:"a" help:"Reviewer agent (default: the agent named reviewer, else the first with role reviewer)."`
	Timeout time.Duration `placeholder:"DURATION" help:"Time before the reviewer is stopped: 90, 90s, 5m."`
}

// Run reviews the session and records the verdict.
func (c *ReviewCmd) Run(a *App) error {
	env, err := workerEnv(a, nil)
	if err != nil {
		return err
	}
	sid, err := reviewTarget(a, env, c.ID)
	if err != nil {
		return err
	}
	r, err := roles.Review(a.Ctx, env, sid, roles.ReviewOptions{Agent: c.Agent, Timeout: c.Timeout, Progress: a.progress()})
	if err != nil {
		return err
	}
	if a.G.JSON {
		rv := r.Review
		return a.P.PrintJSON(reviewJSON{V: output.SchemaVersion, Task: r.Session.Session.Task, Review: &rv})
	}
	if a.G.Quiet {
		a.P.Printf("%s\n", r.Review.Verdict)
	} else {
		a.P.Printf("session %s reviewed by %s: %s\n", r.Session.Session.ID[:8], r.Review.Agent, r.Review.Verdict)
		for _, why := range r.Review.Reasons {
			a.P.Printf("  - %s\n", why)
		}
		if r.Review.FollowUp != "" {
			a.P.Printf("  follow-up: %s\n", r.Review.FollowUp)
		}
	}
	if !r.Review.OK() {
		return silentError{exitcode.Failed}
	}
	return nil
}

// reviewTarget turns a session id or a task id into the session to review:
// a task's latest attempt.
func reviewTarget(a *App, env *worker.Env, id string) (string, error) {
	if _, err := env.St.Resolve(a.Ctx, sessions.Kind, id); err == nil {
		return id, nil
	}
	b, err := board.Load(a.Ctx, env.St, env.Cfg.Base)
	if err != nil {
		return "", err
	}
	tid, err := b.Tasks.Resolve(id)
	if err != nil {
		return "", exitcode.New(exitcode.NotFound, fmt.Errorf("reviewing %s: no session or task has this id", id), "")
	}
	rec, ok := b.Latest(tid)
	if !ok {
		return "", exitcode.New(exitcode.State, fmt.Errorf("reviewing task %s: it has no session yet", b.Tasks.ShortID(tid)), "")
	}
	return rec.Session.ID, nil
}

// TaskNoteCmd is `task note`.
type TaskNoteCmd struct {
	ID    string `arg:"" help:"Task id."`
	Write bool   `help:"Build the note from the current state and store it first."`
}

// Run prints the latest Task Note.
func (c *TaskNoteCmd) Run(a *App) error {
	env, err := workerEnv(a, nil)
	if err != nil {
		return err
	}
	var n tasknote.Note
	if c.Write {
		if n, err = tasknote.WriteFor(a.Ctx, env.St, env.Cfg.Base, c.ID, tasknote.Options{By: "agentmine task note"}); err != nil {
			return err
		}
	} else {
		id, err := env.St.Resolve(a.Ctx, tasks.Kind, c.ID)
		if err != nil {
			return err
		}
		if n, err = tasknote.Read(a.Ctx, env.St, id); err != nil {
			if errors.Is(err, tasknote.ErrNone) {
				return exitcode.New(exitcode.NotFound, err, "write one from the current state with: git agentmine task note "+id[:8]+" --write")
			}
			return err
		}
	}
	if a.G.JSON {
		return a.P.PrintJSON(taskNoteJSON{V: output.SchemaVersion, Note: n})
	}
	if a.G.Quiet {
		a.P.Printf("%s\n", n.Task)
		return nil
	}
	a.P.Printf("%s", n.Markdown())
	return nil
}
