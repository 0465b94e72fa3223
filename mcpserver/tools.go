package mcpserver

import (
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/git-agentmine/git-agentmine/bestof"
	"github.com/git-agentmine/git-agentmine/board"
	"github.com/git-agentmine/git-agentmine/contract"
	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/memory"
	"github.com/git-agentmine/git-agentmine/merge"
	"github.com/git-agentmine/git-agentmine/output"
	"github.com/git-agentmine/git-agentmine/sessions"
	"github.com/git-agentmine/git-agentmine/tasks"
	"github.com/git-agentmine/git-agentmine/worker"
)

// The tools' arguments. Each field's json name is the argument's name; an
// argument without omitempty is required; the jsonschema tag is the
// description clients show. docs/mcp.md documents every argument.

// ContextArgs are the context tool's arguments.
type ContextArgs struct {
	Ready *int `json:"ready,omitempty" jsonschema:"how many ready tasks to include (default 10)"`
}

// TaskListArgs are task_list's arguments: task list's filters.
type TaskListArgs struct {
	Status   string `json:"status,omitempty" jsonschema:"only tasks with this status: open, planning, in_progress, reviewing, review, dod_failed, failed, tainted, done, cancelled, ready or blocked"`
	Type     string `json:"type,omitempty" jsonschema:"only tasks of this type: task, feature, bug, refactor, docs, test, chore or epic"`
	Priority string `json:"priority,omitempty" jsonschema:"only tasks of this priority: low, medium, high or critical"`
	Label    string `json:"label,omitempty" jsonschema:"only tasks with this label"`
	Assignee string `json:"assignee,omitempty" jsonschema:"only tasks assigned to this agent or person"`
	Parent   string `json:"parent,omitempty" jsonschema:"only the children of this task (id or unique prefix)"`
	Limit    *int   `json:"limit,omitempty" jsonschema:"at most this many tasks (default 100; 0 for all); total says how many matched"`
}

// TaskReadyArgs are task_ready's arguments.
type TaskReadyArgs struct {
	Limit *int `json:"limit,omitempty" jsonschema:"at most this many tasks (default 100; 0 for all); total says how many are ready"`
}

// TaskIDArgs name one task: task_show's arguments.
type TaskIDArgs struct {
	ID string `json:"id" jsonschema:"task id (any unique prefix)"`
}

// TaskCreateArgs are task_create's arguments: task add's.
type TaskCreateArgs struct {
	Title       string   `json:"title" jsonschema:"one-line title"`
	Description string   `json:"description,omitempty" jsonschema:"description (Markdown)"`
	Type        string   `json:"type,omitempty" jsonschema:"task (default), feature, bug, refactor, docs, test, chore or epic"`
	Priority    string   `json:"priority,omitempty" jsonschema:"low, medium (default), high or critical"`
	Parent      string   `json:"parent,omitempty" jsonschema:"parent task id"`
	BlockedBy   []string `json:"blocked_by,omitempty" jsonschema:"tasks that must be done first (ids)"`
	Labels      []string `json:"labels,omitempty" jsonschema:"labels"`
	Assignee    string   `json:"assignee,omitempty" jsonschema:"the agent (or person) to run it"`
	DoD         []string `json:"dod,omitempty" jsonschema:"Definition-of-Done shell commands; they replace the agent's"`
	Base        string   `json:"base,omitempty" jsonschema:"base ref for the task's branches (default: the project's)"`
	Acceptance  []string `json:"acceptance,omitempty" jsonschema:"acceptance criteria"`
	Paths       []string `json:"paths,omitempty" jsonschema:"paths the task expects to change (globs such as src/auth/**): run never runs two tasks at once whose paths overlap"`
	BestOf      int      `json:"best_of,omitempty" jsonschema:"attempts run starts at once for this task (1 to 10), of which one that passed is merged (default: the run's --best-of)"`
}

// TaskUpdateArgs are task_update's arguments: task update's. An argument
// left out is not changed.
type TaskUpdateArgs struct {
	ID              string    `json:"id" jsonschema:"task id (any unique prefix)"`
	Title           *string   `json:"title,omitempty" jsonschema:"new title"`
	Description     *string   `json:"description,omitempty" jsonschema:"new description"`
	Type            *string   `json:"type,omitempty" jsonschema:"new type"`
	Priority        *string   `json:"priority,omitempty" jsonschema:"new priority"`
	Assignee        *string   `json:"assignee,omitempty" jsonschema:"new assignee (empty to clear)"`
	Parent          *string   `json:"parent,omitempty" jsonschema:"new parent id (empty to clear)"`
	Base            *string   `json:"base,omitempty" jsonschema:"new base ref (empty to clear)"`
	AddLabels       []string  `json:"add_labels,omitempty" jsonschema:"labels to add"`
	RemoveLabels    []string  `json:"remove_labels,omitempty" jsonschema:"labels to remove"`
	AddBlockedBy    []string  `json:"add_blocked_by,omitempty" jsonschema:"blockers to add (ids)"`
	RemoveBlockedBy []string  `json:"remove_blocked_by,omitempty" jsonschema:"blockers to remove (ids)"`
	DoD             *[]string `json:"dod,omitempty" jsonschema:"replace the DoD commands ([] removes them: the agent's apply again)"`
	Acceptance      *[]string `json:"acceptance,omitempty" jsonschema:"replace the acceptance criteria"`
	Paths           *[]string `json:"paths,omitempty" jsonschema:"replace the paths the task expects to change ([] removes them)"`
	BestOf          *int      `json:"best_of,omitempty" jsonschema:"attempts run starts at once for this task (0: the run's --best-of)"`
}

// TaskCancelArgs are task_cancel's arguments.
type TaskCancelArgs struct {
	ID     string `json:"id" jsonschema:"task id (any unique prefix)"`
	Reason string `json:"reason,omitempty" jsonschema:"why it is cancelled"`
}

// WorkerStartArgs are worker_start's arguments: worker run --exec
// --detach's.
type WorkerStartArgs struct {
	Task    string `json:"task" jsonschema:"task id (any unique prefix)"`
	Agent   string `json:"agent,omitempty" jsonschema:"agent definition (default: the task's assignee if it names an agent, else the default agent)"`
	Timeout int    `json:"timeout,omitempty" jsonschema:"seconds before the worker is stopped (default: the agent's, else the project's)"`
	Base    string `json:"base,omitempty" jsonschema:"base ref for the branch (default: the task's, else the project's)"`
	SkipDoD bool   `json:"skip_dod,omitempty" jsonschema:"do not run the Definition of Done (recorded as skipped; merge then needs allow_skipped)"`
	Force   bool   `json:"force,omitempty" jsonschema:"start although blockers are unfinished"`
	Replace bool   `json:"replace,omitempty" jsonschema:"remove a leftover worktree of an earlier, finished session first"`
	Strict  bool   `json:"strict,omitempty" jsonschema:"stop the worker at its first out-of-scope write"`
	Claim   string `json:"claim,omitempty" jsonschema:"claim the task on this remote first (default: the configured sync remote)"`
	NoClaim bool   `json:"no_claim,omitempty" jsonschema:"do not claim the task on the sync remote"`
}

// SessionStatusArgs are session_status's arguments: a session, or a task
// for its latest session.
type SessionStatusArgs struct {
	Session string `json:"session,omitempty" jsonschema:"session id (any unique prefix)"`
	Task    string `json:"task,omitempty" jsonschema:"or a task id: its latest session"`
	Lines   *int   `json:"lines,omitempty" jsonschema:"last log lines to include (default 5)"`
}

// SessionOutputArgs are session_output's arguments.
type SessionOutputArgs struct {
	Session     string `json:"session" jsonschema:"session id (any unique prefix)"`
	Cursor      int64  `json:"cursor,omitempty" jsonschema:"where to continue: the cursor the last call returned (0: the start of the log)"`
	MaxBytes    int    `json:"max_bytes,omitempty" jsonschema:"at most this many bytes of log (default 16384, at most 1048576)"`
	WaitSeconds int    `json:"wait_seconds,omitempty" jsonschema:"when nothing new is there yet and the session runs, wait up to this many seconds for output or the end (at most 60)"`
}

// MergeArgs are merge's arguments.
type MergeArgs struct {
	Task         string `json:"task" jsonschema:"task id (any unique prefix)"`
	AllowSkipped bool   `json:"allow_skipped,omitempty" jsonschema:"merge although the session's DoD was skipped"`
	AcceptMain   bool   `json:"accept_main_changes,omitempty" jsonschema:"merge although the main checkout changed during the run: the user made those changes (recorded in the merge commit)"`
}

// MemoryAddArgs are memory_add's arguments: memory add's.
type MemoryAddArgs struct {
	Category string `json:"category" jsonschema:"one of the project's memory categories (memory_categories: architecture, tooling, convention, rule, domain, decision by default) or one a memory already uses"`
	// NewCategory starts a category outside that set.
	NewCategory bool     `json:"new_category,omitempty" jsonschema:"start a category outside the project's set"`
	Title       string   `json:"title" jsonschema:"one-line title"`
	Summary     string   `json:"summary,omitempty" jsonschema:"what workers see in their prompt (default: the content's first line)"`
	Content     string   `json:"content,omitempty" jsonschema:"content (Markdown)"`
	Status      string   `json:"status,omitempty" jsonschema:"active (default: reaches every worker), draft or archived"`
	Tags        []string `json:"tags,omitempty" jsonschema:"tags"`
	Task        string   `json:"task,omitempty" jsonschema:"related task id"`
}

// MemoryListArgs are memory_list's arguments: memory list's filters.
type MemoryListArgs struct {
	Category string `json:"category,omitempty" jsonschema:"only this category"`
	Status   string `json:"status,omitempty" jsonschema:"only this status: draft, active or archived"`
	Tag      string `json:"tag,omitempty" jsonschema:"only memories with this tag"`
}

// Defaults and bounds of the arguments above.
const (
	defaultReady      = 10
	defaultListLimit  = 100
	defaultLogLines   = 5
	defaultOutputMax  = 16 << 10
	maxOutputMax      = 1 << 20
	maxOutputWaitSecs = 60
	boardFailures     = 5
)

// Annotations tell clients what a call does, so they can decide what to
// ask the user first.
func readOnly() *mcp.ToolAnnotations { return &mcp.ToolAnnotations{ReadOnlyHint: true} }

func creates() *mcp.ToolAnnotations { return &mcp.ToolAnnotations{DestructiveHint: ptr(false)} }

func changes() *mcp.ToolAnnotations {
	return &mcp.ToolAnnotations{DestructiveHint: ptr(false), IdempotentHint: true}
}

func startsWork() *mcp.ToolAnnotations {
	return &mcp.ToolAnnotations{DestructiveHint: ptr(false), OpenWorldHint: ptr(true)}
}

func ptr[T any](v T) *T { return &v }

// addTools adds every tool, in the order tools/list gives them.
func (s *Server) addTools() {
	addTool(s, &mcp.Tool{Name: "context", Annotations: readOnly(), Description: "Start here: the board (tasks per status, " +
		"running workers, the review queue, recent failures), the first ready tasks and the active memory."}, s.context)
	addTool(s, &mcp.Tool{Name: "task_list", Annotations: readOnly(), Description: "List tasks with their derived status, " +
		"filtered like task list (done and cancelled included unless a status is asked for)."}, s.taskList)
	addTool(s, &mcp.Tool{Name: "task_ready", Annotations: readOnly(), Description: "List open tasks whose blockers are all done, " +
		"highest priority first."}, s.taskReady)
	addTool(s, &mcp.Tool{Name: "task_show", Annotations: readOnly(), Description: "Show one task: its status and the fact that " +
		"decided it, and its latest session with the verdicts (violations, DoD per command)."}, s.taskShow)
	addTool(s, &mcp.Tool{Name: "task_create", Annotations: creates(), Description: "Create a task, with blockers, DoD commands, " +
		"acceptance criteria, labels and the agent to run it."}, s.taskCreate)
	addTool(s, &mcp.Tool{Name: "task_update", Annotations: changes(), Description: "Change fields of a task; arguments left out " +
		"are not changed."}, s.taskUpdate)
	addTool(s, &mcp.Tool{Name: "task_cancel", Annotations: changes(), Description: "Cancel a task (an explicit, recorded decision)."}, s.taskCancel)
	addTool(s, &mcp.Tool{Name: "worker_start", Annotations: startsWork(), Description: "Start a worker on a task: a scoped " +
		"worktree on its own branch and the agent run there by a detached supervisor. Returns at once with the session " +
		"and branch; follow it with session_output, read the verdict with session_status."}, s.workerStart)
	addTool(s, &mcp.Tool{Name: "session_status", Annotations: readOnly(), Description: "A session (or a task's latest " +
		"session): state, outcome, verdicts, the last log lines, and what it means for the task."}, s.sessionStatus)
	addTool(s, &mcp.Tool{Name: "session_output", Annotations: readOnly(), Description: "Read a session's log from a cursor " +
		"and get the cursor to continue from; call again until ended is true and more is false."}, s.sessionOutput)
	addTool(s, &mcp.Tool{Name: "task_plan", Annotations: startsWork(), Description: "Have the planner agent split a task " +
		"into children (plan): returns the plan and the tasks created once the planner answered."}, s.taskPlan)
	addTool(s, &mcp.Tool{Name: "plan_import", Annotations: creates(), Description: "Create the tasks of a plan (plan JSON, " +
		"as the planner writes it) in one transaction, or only validate it (task import)."}, s.planImport)
	addTool(s, &mcp.Tool{Name: "run_start", Annotations: startsWork(), Description: "Start a run in the background " +
		"(as run --detach does): its supervisor starts the ready targets, at most parallel at a time, retries with feedback, reviews " +
		"and merges when asked, in the background. Returns once the run is recorded; follow it with run_status."}, s.runStart)
	addTool(s, &mcp.Tool{Name: "run_stop", Annotations: changes(), Description: "Stop a run and the workers it started, " +
		"recording why (run stop); returns once it ended."}, s.runStop)
	addTool(s, &mcp.Tool{Name: "run_status", Annotations: readOnly(), Description: "A run as the command line's run status " +
		"shows it: state, progress, attempts, running workers, the clients a rate limit paused and until when, and its " +
		"log of events from a cursor; call again with the cursor until ended is true and more is false."}, s.runStatus)
	addTool(s, &mcp.Tool{Name: "merge", Annotations: changes(), Description: "Merge a task's latest session into its base, " +
		"only if its DoD passed and its scope held; refused otherwise, with the reason."}, s.merge)
	addTool(s, &mcp.Tool{Name: "memory_add", Annotations: creates(), Description: "Record a project decision in the Memory " +
		"Bank; active memories reach every worker's prompt."}, s.memoryAdd)
	addTool(s, &mcp.Tool{Name: "memory_list", Annotations: readOnly(), Description: "List the Memory Bank (archived memories " +
		"included unless a status is asked for)."}, s.memoryList)
}

// limitOf is a list's limit: def when absent, every element for 0.
func limitOf(tool string, p *int, def int) (int, error) {
	if p == nil {
		return def, nil
	}
	if *p < 0 {
		return 0, exitcode.New(exitcode.Usage, errors.New(tool+": limit must not be negative"), "")
	}
	return *p, nil
}

// tasksOf is the task list document of ids, cut to limit (0: all).
func tasksOf(b *board.Board, ids []string, limit int) contract.TasksJSON {
	out := contract.TasksJSON{V: output.SchemaVersion, Tasks: []contract.TaskJSON{}, Total: len(ids)}
	if limit > 0 && len(ids) > limit {
		ids = ids[:limit]
	}
	for _, id := range ids {
		out.Tasks = append(out.Tasks, contract.NewTask(b, id))
	}
	return out
}

func (s *Server) context(c *call, in ContextArgs) (contract.ContextJSON, error) {
	n := defaultReady
	if in.Ready != nil {
		if *in.Ready < 0 {
			return contract.ContextJSON{}, exitcode.New(exitcode.Usage, errors.New("context: ready must not be negative"), "")
		}
		n = *in.Ready
	}
	env, err := c.worker()
	if err != nil {
		return contract.ContextJSON{}, err
	}
	b, err := c.board("")
	if err != nil {
		return contract.ContextJSON{}, err
	}
	bank, err := memory.Load(c.ctx, env.St)
	if err != nil {
		return contract.ContextJSON{}, err
	}
	for _, p := range bank.Problems {
		c.warnf("skipping unreadable memory: %v", p)
	}
	j := contract.ContextJSON{V: output.SchemaVersion, Top: env.Top, Base: env.Cfg.Base,
		Board: contract.NewBoard(b, boardFailures, time.Now()), Ready: []contract.TaskJSON{}, Memories: []contract.MemoryBriefJSON{}}
	for _, id := range contract.Ready(b) {
		if len(j.Ready) == n {
			break
		}
		j.Ready = append(j.Ready, contract.NewTask(b, id))
	}
	for _, m := range bank.Active() {
		j.Memories = append(j.Memories, contract.MemoryBriefJSON{ID: m.ID, ShortID: bank.ShortID(m.ID),
			Category: m.Category, Title: m.Title, Summary: m.Summary})
	}
	return j, nil
}

func (s *Server) taskList(c *call, in TaskListArgs) (contract.TasksJSON, error) {
	limit, err := limitOf("task_list", in.Limit, defaultListLimit)
	if err != nil {
		return contract.TasksJSON{}, err
	}
	f := contract.TaskFilter{Status: in.Status, Type: in.Type, Priority: in.Priority, Label: in.Label,
		Assignee: in.Assignee, Parent: in.Parent}
	if err := f.Check(); err != nil {
		return contract.TasksJSON{}, err
	}
	b, err := c.board("")
	if err != nil {
		return contract.TasksJSON{}, err
	}
	ids, err := f.Select(b)
	if err != nil {
		return contract.TasksJSON{}, err
	}
	return tasksOf(b, ids, limit), nil
}

func (s *Server) taskReady(c *call, in TaskReadyArgs) (contract.TasksJSON, error) {
	limit, err := limitOf("task_ready", in.Limit, defaultListLimit)
	if err != nil {
		return contract.TasksJSON{}, err
	}
	b, err := c.board("")
	if err != nil {
		return contract.TasksJSON{}, err
	}
	return tasksOf(b, contract.Ready(b), limit), nil
}

// showTask is the document task show --json prints for prefix, read after
// any change the call made.
func (s *Server) showTask(c *call, prefix string) (contract.TaskJSON, error) {
	b, err := c.board("")
	if err != nil {
		return contract.TaskJSON{}, err
	}
	id, err := b.Tasks.Resolve(prefix)
	if err != nil {
		return contract.TaskJSON{}, err
	}
	j := contract.NewTaskDetail(b, id, time.Now())
	st, err := c.store()
	if err != nil {
		return contract.TaskJSON{}, err
	}
	rounds, _, err := bestof.Get(c.ctx, st, id)
	if err != nil {
		return contract.TaskJSON{}, err
	}
	j.Rounds = rounds.Rounds
	return j, nil
}

func (s *Server) taskShow(c *call, in TaskIDArgs) (contract.TaskJSON, error) {
	return s.showTask(c, in.ID)
}

func (s *Server) taskCreate(c *call, in TaskCreateArgs) (contract.TaskJSON, error) {
	st, err := c.store()
	if err != nil {
		return contract.TaskJSON{}, err
	}
	t, err := tasks.Add(c.ctx, st, tasks.New{Title: in.Title, Description: in.Description, Type: in.Type,
		Priority: in.Priority, Parent: in.Parent, BlockedBy: in.BlockedBy, Labels: in.Labels, Assignee: in.Assignee,
		DoD: in.DoD, Base: in.Base, Acceptance: in.Acceptance, Paths: in.Paths, BestOf: in.BestOf})
	if err != nil {
		return contract.TaskJSON{}, err
	}
	return s.showTask(c, t.ID)
}

func (s *Server) taskUpdate(c *call, in TaskUpdateArgs) (contract.TaskJSON, error) {
	st, err := c.store()
	if err != nil {
		return contract.TaskJSON{}, err
	}
	t, _, err := tasks.Update(c.ctx, st, in.ID, tasks.Patch{Title: in.Title, Description: in.Description,
		Type: in.Type, Priority: in.Priority, Assignee: in.Assignee, Parent: in.Parent, Base: in.Base,
		AddLabels: in.AddLabels, RemoveLabels: in.RemoveLabels, AddBlockedBy: in.AddBlockedBy,
		RemoveBlockedBy: in.RemoveBlockedBy, DoD: in.DoD, Acceptance: in.Acceptance, Paths: in.Paths, BestOf: in.BestOf})
	if err != nil {
		return contract.TaskJSON{}, err
	}
	return s.showTask(c, t.ID)
}

func (s *Server) taskCancel(c *call, in TaskCancelArgs) (contract.TaskJSON, error) {
	st, err := c.store()
	if err != nil {
		return contract.TaskJSON{}, err
	}
	t, _, err := tasks.Cancel(c.ctx, st, in.ID, in.Reason)
	if err != nil {
		return contract.TaskJSON{}, err
	}
	return s.showTask(c, t.ID)
}

func (s *Server) workerStart(c *call, in WorkerStartArgs) (contract.RunJSON, error) {
	if in.Timeout < 0 {
		return contract.RunJSON{}, exitcode.New(exitcode.Usage, errors.New("worker_start: timeout must not be negative"), "")
	}
	env, err := c.worker()
	if err != nil {
		return contract.RunJSON{}, err
	}
	p, err := env.Prepare(c.ctx, worker.RunOptions{Task: in.Task, Agent: in.Agent, Exec: true, Detach: true,
		Timeout: time.Duration(in.Timeout) * time.Second, Base: in.Base, SkipDoD: in.SkipDoD, Force: in.Force,
		Replace: in.Replace, Strict: in.Strict, Claim: in.Claim, NoClaim: in.NoClaim})
	if err != nil {
		return contract.RunJSON{}, err
	}
	if p.ClaimNote != "" {
		c.warnf("%s", p.ClaimNote)
	}
	sess := p.Rec.Session
	pid, err := env.StartDetached(c.ctx, p, s.opts.Supervisor(env.Top, sess.ID))
	if err != nil {
		return contract.RunJSON{}, err
	}
	j := contract.NewRun(sess, p.PromptFile)
	j.Pid = pid
	if r := env.UnsharedRemote(); r != "" && p.Claimed == "" && !in.NoClaim && s.opts.ShareHint != nil {
		j.Hint = s.opts.ShareHint(r)
	}
	return j, nil
}

// session finds a session by its id, or a task's latest session.
func (c *call) session(tool, session, task string) (sessions.Record, *board.Board, error) {
	env, err := c.worker()
	if err != nil {
		return sessions.Record{}, nil, err
	}
	if (session == "") == (task == "") {
		return sessions.Record{}, nil, exitcode.New(exitcode.Usage, errors.New(tool+": give either session or task"), "")
	}
	b, err := c.board(env.Cfg.Base)
	if err != nil {
		return sessions.Record{}, nil, err
	}
	if task != "" {
		tid, err := b.Tasks.Resolve(task)
		if err != nil {
			return sessions.Record{}, nil, err
		}
		rec, ok := b.Latest(tid)
		if !ok {
			return sessions.Record{}, nil, exitcode.New(exitcode.State, errors.New("task "+b.Tasks.ShortID(tid)+" has no session"), "")
		}
		return rec, b, nil
	}
	rec, err := board.Session(c.ctx, env.St, session)
	if err != nil {
		return sessions.Record{}, nil, err
	}
	return rec, b, nil
}

func (s *Server) sessionStatus(c *call, in SessionStatusArgs) (contract.SessionStatusJSON, error) {
	lines := defaultLogLines
	if in.Lines != nil {
		if *in.Lines < 0 {
			return contract.SessionStatusJSON{}, exitcode.New(exitcode.Usage, errors.New("session_status: lines must not be negative"), "")
		}
		lines = *in.Lines
	}
	rec, b, err := c.session("session_status", in.Session, in.Task)
	if err != nil {
		return contract.SessionStatusJSON{}, err
	}
	now := time.Now()
	state := contract.SessionState(rec, b.Here, now)
	j := contract.SessionStatusJSON{V: output.SchemaVersion, Session: contract.NewSession(rec, b.Here, now, lines),
		Verdict: contract.Verdict(rec, state, b.Merged(rec))}
	if r, ok := b.Status[rec.Session.Task]; ok {
		j.TaskStatus = string(r.Status)
	}
	return j, nil
}

func (s *Server) merge(c *call, in MergeArgs) (contract.MergeJSON, error) {
	env, err := c.worker()
	if err != nil {
		return contract.MergeJSON{}, err
	}
	res, err := merge.Task(c.ctx, env.St, env.Cfg.Base, in.Task, merge.Options{AllowSkipped: in.AllowSkipped,
		AcceptMainChanges: in.AcceptMain})
	if err != nil {
		return contract.MergeJSON{}, err
	}
	return contract.MergeJSON{V: output.SchemaVersion, Result: res}, nil
}

func (s *Server) memoryAdd(c *call, in MemoryAddArgs) (contract.MemoryJSON, error) {
	env, err := c.worker()
	if err != nil {
		return contract.MemoryJSON{}, err
	}
	st := env.St
	if err := memory.CheckCategory(c.ctx, st, in.Category, env.Cfg.MemoryCategories, in.NewCategory); err != nil {
		return contract.MemoryJSON{}, err
	}
	m, err := memory.Add(c.ctx, st, memory.New{Category: in.Category, Title: in.Title, Summary: in.Summary,
		Content: in.Content, Status: in.Status, Tags: in.Tags, Task: in.Task})
	if err != nil {
		return contract.MemoryJSON{}, err
	}
	bank, err := memory.Load(c.ctx, st)
	if err != nil {
		return contract.MemoryJSON{}, err
	}
	return contract.NewMemory(bank, m.ID), nil
}

func (s *Server) memoryList(c *call, in MemoryListArgs) (contract.MemoriesJSON, error) {
	if in.Status != "" {
		if err := memory.ValidateStatus(in.Status); err != nil {
			return contract.MemoriesJSON{}, err
		}
	}
	st, err := c.store()
	if err != nil {
		return contract.MemoriesJSON{}, err
	}
	bank, err := memory.Load(c.ctx, st)
	if err != nil {
		return contract.MemoriesJSON{}, err
	}
	for _, p := range bank.Problems {
		c.warnf("skipping unreadable memory: %v", p)
	}
	var ms []memory.Memory
	for _, id := range bank.IDs {
		m := bank.Memories[id].Memory
		switch {
		case in.Category != "" && m.Category != strings.ToLower(in.Category),
			in.Status != "" && m.Status != in.Status,
			in.Tag != "" && !slices.Contains(m.Tags, in.Tag):
			continue
		}
		ms = append(ms, m)
	}
	memory.Sort(ms)
	out := contract.MemoriesJSON{V: output.SchemaVersion, Memories: []contract.MemoryJSON{}}
	for _, m := range ms {
		out.Memories = append(out.Memories, contract.NewMemory(bank, m.ID))
	}
	return out, nil
}
