package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"time"

	"github.com/git-agentmine/git-agentmine/bestof"
	"github.com/git-agentmine/git-agentmine/board"
	"github.com/git-agentmine/git-agentmine/contract"
	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/output"
	"github.com/git-agentmine/git-agentmine/sessions"
	"github.com/git-agentmine/git-agentmine/status"
	"github.com/git-agentmine/git-agentmine/tasks"
)

// TaskCmd groups the task commands.
type TaskCmd struct {
	Add    TaskAddCmd    `cmd:"" help:"Create a task."`
	List   TaskListCmd   `cmd:"" aliases:"ls" help:"List tasks with their derived status."`
	Show   TaskShowCmd   `cmd:"" help:"Show one task and the fact that decided its status."`
	Update TaskUpdateCmd `cmd:"" help:"Change fields of a task."`
	Cancel TaskCancelCmd `cmd:"" help:"Cancel a task (an explicit, recorded decision)."`
	Reopen TaskReopenCmd `cmd:"" help:"Undo a cancel, or reopen a failed task for a new attempt."`
	Ready  TaskReadyCmd  `cmd:"" help:"List open tasks whose blockers are all done."`
	Tree   TaskTreeCmd   `cmd:"" help:"Show tasks as a parent/child tree with their blockers."`
	Log    TaskLogCmd    `cmd:"" help:"Show a task's history from its commit chain."`
	Import TaskImportCmd `cmd:"" help:"Create tasks from a plan JSON file or AgentRunner's task.yaml, all at once or not at all."`
	Note   TaskNoteCmd   `cmd:"" help:"Print a task's Task Note: its attempts, reviews, criteria and final diff (Markdown)."`
}

// TaskAddCmd is `task add`.
type TaskAddCmd struct {
	Title       string   `arg:"" help:"One-line title."`
	Description string   `short:"d" help:"Description (Markdown)."`
	Type        string   `short:"t" default:"task" help:"Type: task, feature, bug, refactor, docs, test, chore, epic (a goal run plans first)."`
	Priority    string   `short:"p" default:"medium" help:"Priority: low, medium, high, critical."`
	Parent      string   `help:"Parent task id."`
	BlockedBy   []string `name:"blocked-by" sep:"none" help:"A task that must be done first (repeatable)."`
	Label       []string `short:"l" sep:"none" help:"Label (repeatable)."`
	Assignee    string   `help:"Agent name or person."`
	DoD         []string `name:"dod" sep:"none" help:"Definition-of-Done command (repeatable); overrides the agent's."`
	Base        string   `help:"Base ref for this task's branches (default: the project base)."`
	Acceptance  []string `name:"criterion" aliases:"acceptance" sep:"none" help:"Acceptance criterion (repeatable; ids AC-1, AC-2, … in this order)."`
	MaxLoops    int      `name:"max-loops" placeholder:"N" help:"Attempts run gives this task before it is exhausted (default: the run's --max-loops)."`
	BestOf      int      `name:"best-of" placeholder:"K" help:"Attempts run starts at once for this task; one that passed is merged (default: the run's --best-of)."`
	Paths       []string `name:"paths" placeholder:"GLOB" sep:"none" help:"A path the task expects to change (repeatable; a glob such as 'src/auth/**'): run never runs two tasks at once whose paths overlap."`
}

// Run creates the task.
func (c *TaskAddCmd) Run(a *App) error {
	st, err := a.Store()
	if err != nil {
		return err
	}
	t, err := tasks.Add(a.Ctx, st, tasks.New{Title: c.Title, Description: c.Description, Type: c.Type,
		Priority: c.Priority, Parent: c.Parent, BlockedBy: c.BlockedBy, Labels: c.Label, Assignee: c.Assignee,
		DoD: c.DoD, Base: c.Base, Acceptance: c.Acceptance, MaxLoops: c.MaxLoops, Paths: c.Paths, BestOf: c.BestOf})
	if err != nil {
		return err
	}
	return showOne(a, st, t.ID, "created")
}

// TaskListCmd is `task list`.
type TaskListCmd struct {
	Status   string `short:"s" help:"Only this status (open, in_progress, review, dod_failed, failed, tainted, done, cancelled, ready, blocked)."`
	Type     string `short:"t" help:"Only this type."`
	Priority string `short:"p" help:"Only this priority."`
	Label    string `help:"Only tasks with this label."`
	Assignee string `help:"Only tasks assigned to this name."`
	Parent   string `help:"Only children of this task."`
	All      bool   `short:"a" help:"Include done and cancelled tasks (the default hides them unless --status asks)."`
}

// listGCPercent is the garbage collection target (debug.SetGCPercent) of
// task list and task ready, which hold the whole board until they have
// printed it: at Go's default of 100 the heap runs up to twice the board
// between collections. 100,000 tasks, cold cache, task list --json, three
// runs each, alternating (load 14): at 100 a peak of 157-162 MB and
// 4.2-4.4 s of CPU, at 50 136-148 MB and 4.4-5.0 s; in sixteen more runs
// at 50 (load 11-14) three peaked above 150 MB (152-153). Three runs each
// alternating (load 8-12): at 50 135-153 MB and 4.3-4.6 s, at 40 130-135
// MB and 4.1-4.8 s. Once the next chunk was read while the board took the
// last (gitstore's ListEach), task ready at 40 peaked at 133-151 MB in
// eleven runs; three runs each of list and ready, alternating (load 1.4):
// at 40 131-146 MB, at 33 126-136 MB, the same 2.3-2.6 s and 3.7-4.3 s of
// CPU.
const listGCPercent = 33

// Run lists tasks.
func (c *TaskListCmd) Run(a *App) error {
	debug.SetGCPercent(listGCPercent)
	f := contract.TaskFilter{Status: c.Status, Type: c.Type, Priority: c.Priority, Label: c.Label,
		Assignee: c.Assignee, Parent: c.Parent, HideClosed: !c.All && !a.G.JSON}
	if err := f.Check(); err != nil {
		return err
	}
	v, err := loadSummaryView(a)
	if err != nil {
		return err
	}
	ids, err := f.Select(v.Loaded)
	if err != nil {
		return err
	}
	if err := printTasks(a, v, ids); err != nil {
		return err
	}
	if len(v.Board.IDs) == 0 && !a.G.JSON {
		if r := remoteToSync(v.Store); r != "" {
			a.P.Notef("hint: run 'git agentmine sync' to fetch tasks from %s\n", r)
		}
	}
	return nil
}

// remoteToSync names the remote sync would use (agentmine.remote, else
// origin) when it exists, "" otherwise: an empty board in a clone usually
// means the tasks have not been fetched yet.
func remoteToSync(st *gitstore.Store) string {
	r, ok := st.Config("agentmine.remote")
	if !ok || r == "" {
		r = "origin"
	}
	if _, ok := st.Config("remote." + r + ".url"); !ok {
		return ""
	}
	return r
}

// TaskReadyCmd is `task ready`.
type TaskReadyCmd struct{}

// Run lists ready tasks, highest priority first.
func (c *TaskReadyCmd) Run(a *App) error {
	debug.SetGCPercent(listGCPercent)
	v, err := loadSummaryView(a)
	if err != nil {
		return err
	}
	return printTasks(a, v, contract.Ready(v.Loaded))
}

// TaskShowCmd is `task show`.
type TaskShowCmd struct {
	ID string `arg:"" help:"Task id (any unique prefix)."`
}

// Run shows one task.
func (c *TaskShowCmd) Run(a *App) error {
	st, err := a.Store()
	if err != nil {
		return err
	}
	err = showOne(a, st, c.ID, "")
	var nf *gitstore.NotFoundError
	if errors.As(err, &nf) && nf.Noun == tasks.Kind.Noun {
		if serr := sessionNotTask(a, st, c.ID); serr != nil {
			return serr
		}
	}
	return err
}

// sessionNotTask is the refusal of task show given a session's id: it
// names the session, its task and the command that shows it; nil when id
// names no session either.
func sessionNotTask(a *App, st *gitstore.Store, id string) error {
	rec, err := sessions.Get(a.Ctx, st, id)
	if err != nil {
		return nil
	}
	task := rec.Session.Task
	if short, err := st.ShortID(a.Ctx, tasks.Kind, task); err == nil {
		task = short
	}
	return exitcode.New(exitcode.NotFound,
		fmt.Errorf("task %s not found: %s is session %s of task %s", id, id, rec.Session.ID[:8], task),
		"see the session with: git agentmine session show "+rec.Session.ID[:8]+"; its task with: git agentmine task show "+task)
}

// TaskUpdateCmd is `task update`.
type TaskUpdateCmd struct {
	ID              string    `arg:"" help:"Task id."`
	Title           *string   `help:"New title."`
	Description     *string   `short:"d" help:"New description."`
	Type            *string   `short:"t" help:"New type."`
	Priority        *string   `short:"p" help:"New priority."`
	Assignee        *string   `help:"New assignee (empty to clear)."`
	Parent          *string   `help:"New parent id (empty to clear)."`
	Base            *string   `help:"New base ref (empty to clear)."`
	AddLabel        []string  `name:"add-label" sep:"none" help:"Add a label (repeatable)."`
	RemoveLabel     []string  `name:"remove-label" sep:"none" help:"Remove a label (repeatable)."`
	AddBlockedBy    []string  `name:"add-blocked-by" sep:"none" help:"Add a blocker (repeatable)."`
	RemoveBlockedBy []string  `name:"remove-blocked-by" sep:"none" help:"Remove a blocker (repeatable)."`
	DoD             *[]string `name:"dod" sep:"none" help:"Replace the DoD commands (repeatable)."`
	ClearDoD        bool      `name:"clear-dod" help:"Remove the task's DoD commands (the agent's apply again)."`
	Acceptance      *[]string `name:"criterion" aliases:"acceptance" sep:"none" help:"Replace the acceptance criteria (repeatable; renumbered AC-1, AC-2, …)."`
	MaxLoops        *int      `name:"max-loops" placeholder:"N" help:"Attempts run gives this task (0: the run's --max-loops)."`
	BestOf          *int      `name:"best-of" placeholder:"K" help:"Attempts run starts at once for this task (0: the run's --best-of)."`
	Paths           *[]string `name:"paths" placeholder:"GLOB" sep:"none" help:"Replace the paths the task expects to change (repeatable)."`
	ClearPaths      bool      `name:"clear-paths" help:"Remove the task's declared paths (it no longer waits for overlapping tasks)."`
}

// Run applies the update.
func (c *TaskUpdateCmd) Run(a *App) error {
	st, err := a.Store()
	if err != nil {
		return err
	}
	p := tasks.Patch{Title: c.Title, Description: c.Description, Type: c.Type, Priority: c.Priority,
		Assignee: c.Assignee, Parent: c.Parent, Base: c.Base, AddLabels: c.AddLabel, RemoveLabels: c.RemoveLabel,
		AddBlockedBy: c.AddBlockedBy, RemoveBlockedBy: c.RemoveBlockedBy, DoD: c.DoD, Acceptance: c.Acceptance,
		MaxLoops: c.MaxLoops, Paths: c.Paths, BestOf: c.BestOf}
	if c.ClearDoD {
		empty := []string{}
		p.DoD = &empty
	}
	if c.ClearPaths {
		if c.Paths != nil {
			return exitcode.New(exitcode.Usage, errors.New("--paths and --clear-paths cannot be combined"), "")
		}
		empty := []string{}
		p.Paths = &empty
	}
	t, changed, err := tasks.Update(a.Ctx, st, c.ID, p)
	if err != nil {
		return err
	}
	verb := "updated"
	if !changed {
		verb = "unchanged"
	}
	return showOne(a, st, t.ID, verb)
}

// TaskCancelCmd is `task cancel`.
type TaskCancelCmd struct {
	ID     string `arg:"" help:"Task id."`
	Reason string `short:"r" help:"Why it is cancelled."`
}

// Run cancels the task.
func (c *TaskCancelCmd) Run(a *App) error {
	st, err := a.Store()
	if err != nil {
		return err
	}
	t, changed, err := tasks.Cancel(a.Ctx, st, c.ID, c.Reason)
	if err != nil {
		return err
	}
	verb := "cancelled"
	if !changed {
		verb = "already cancelled"
	}
	return showOne(a, st, t.ID, verb)
}

// TaskReopenCmd is `task reopen`.
type TaskReopenCmd struct {
	ID     string `arg:"" help:"Task id."`
	Reason string `short:"r" help:"Why it is reopened."`
}

// Run reopens the task.
func (c *TaskReopenCmd) Run(a *App) error {
	st, err := a.Store()
	if err != nil {
		return err
	}
	t, _, err := tasks.Reopen(a.Ctx, st, c.ID, c.Reason)
	if err != nil {
		return err
	}
	return showOne(a, st, t.ID, "reopened")
}

// TaskTreeCmd is `task tree`.
type TaskTreeCmd struct {
	ID string `arg:"" optional:"" help:"Root task (default: every top-level task)."`
}

// Run prints the tree.
func (c *TaskTreeCmd) Run(a *App) error {
	v, err := loadView(a)
	if err != nil {
		return err
	}
	var roots []string
	if c.ID != "" {
		id, err := v.Board.Resolve(c.ID)
		if err != nil {
			return err
		}
		roots = []string{id}
	} else {
		for _, id := range v.Board.IDs {
			p := v.Board.Tasks[id].Task.Parent
			if _, ok := v.Board.Tasks[p]; p == "" || !ok {
				roots = append(roots, id)
			}
		}
	}
	if a.G.JSON {
		var out []treeNode
		for _, r := range roots {
			out = append(out, v.treeJSON(r, map[string]bool{}))
		}
		return a.P.PrintJSON(nonNil(out))
	}
	for _, r := range roots {
		v.printTree(a, r, "", "", map[string]bool{})
	}
	return nil
}

func (v *view) treeJSON(id string, seen map[string]bool) treeNode {
	seen[id] = true
	t := v.Board.Tasks[id].Task
	n := treeNode{V: output.SchemaVersion, ID: id, ShortID: v.Board.ShortID(id), Title: t.Title,
		Status: string(v.Status[id].Status), BlockedBy: nonNil(t.BlockedBy), Children: []treeNode{}}
	for _, cid := range v.Board.Children(id) {
		if !seen[cid] {
			n.Children = append(n.Children, v.treeJSON(cid, seen))
		}
	}
	return n
}

func (v *view) printTree(a *App, id, prefix, childPrefix string, seen map[string]bool) {
	seen[id] = true
	t := v.Board.Tasks[id].Task
	r := v.Status[id]
	line := fmt.Sprintf("%s%s %s %s", prefix, a.P.Paint(output.Yellow, v.Board.ShortID(id)), t.Title, a.P.Paint(statusColor(r.Status), "["+string(r.Status)+"]"))
	if len(t.BlockedBy) > 0 {
		// Each blocker with its own status, so "blocked by x (open)" and
		// "blocked by x (done)" need no legend.
		var bs []string
		for _, b := range t.BlockedBy {
			st := "missing"
			if br, ok := v.Status[b]; ok {
				st = string(br.Status)
			}
			bs = append(bs, v.Board.ShortID(b)+" ("+st+")")
		}
		line += a.P.Paint(output.Gray, " blocked by "+strings.Join(bs, ", "))
	}
	if a.G.Quiet {
		line = id
	}
	a.P.Printf("%s\n", line)
	kids := v.Board.Children(id)
	for i, cid := range kids {
		if seen[cid] {
			continue
		}
		if i == len(kids)-1 {
			v.printTree(a, cid, childPrefix+"└── ", childPrefix+"    ", seen)
		} else {
			v.printTree(a, cid, childPrefix+"├── ", childPrefix+"│   ", seen)
		}
	}
}

// TaskLogCmd is `task log`.
type TaskLogCmd struct {
	ID string `arg:"" help:"Task id."`
}

// Run prints the history.
func (c *TaskLogCmd) Run(a *App) error {
	st, err := a.Store()
	if err != nil {
		return err
	}
	id, err := st.Resolve(a.Ctx, tasks.Kind, c.ID)
	if err != nil {
		return err
	}
	entries, err := st.Log(a.Ctx, tasks.Kind, id)
	if err != nil {
		return err
	}
	if a.G.JSON {
		out := []logJSON{}
		for _, e := range entries {
			out = append(out, logJSON{V: output.SchemaVersion, Commit: e.Commit, Time: e.Time, Author: e.Author, Email: e.Email, Message: e.Message})
		}
		return a.P.PrintJSON(out)
	}
	for _, e := range entries {
		if a.G.Quiet {
			a.P.Printf("%s\n", e.Commit)
			continue
		}
		a.P.Printf("%s %s %s  %s\n", a.P.Paint(output.Yellow, e.Commit[:10]), e.Time.Format("2006-01-02 15:04:05Z07:00"), a.P.Paint(output.Cyan, e.Author), firstLine(e.Message))
	}
	return nil
}

// view is the board with every task's derived status.
type view struct {
	Board  *tasks.Board
	Status map[string]status.Result
	Store  *gitstore.Store
	// Loaded is the whole board Board and Status come from.
	Loaded *board.Board
}

// loadView reads every task and resolves statuses in one batch, warning
// about refs that cannot be read.
func loadView(a *App) (*view, error) {
	return loadViewWith(a, board.Load)
}

// loadSummaryView is loadView with session summaries (board.LoadSummary):
// for commands that print statuses and tasks but no session's document.
func loadSummaryView(a *App) (*view, error) {
	return loadViewWith(a, board.LoadSummary)
}

func loadViewWith(a *App, load func(context.Context, *gitstore.Store, string) (*board.Board, error)) (*view, error) {
	st, err := a.Store()
	if err != nil {
		return nil, err
	}
	b, err := load(a.Ctx, st, "")
	if err != nil {
		return nil, err
	}
	return adoptBoard(a, st, b), nil
}

// adoptBoard warns about the refs b could not read, keeps its sessions and
// where liveness was judged for the renderers, and returns its view.
func adoptBoard(a *App, st *gitstore.Store, b *board.Board) *view {
	for _, p := range b.TaskProblems {
		a.P.Warnf("skipping unreadable task: %v", p)
	}
	for _, p := range b.SessionProblems {
		a.P.Warnf("skipping unreadable session: %v", p)
	}
	a.sessions = b.Sessions
	here := b.Here
	a.where = &here
	return &view{Board: b.Tasks, Status: b.Status, Store: st, Loaded: b}
}

// loadTaskView is loadView for one task (board.LoadTask): what task show
// prints, without reading the rest of the board.
func loadTaskView(a *App, st *gitstore.Store, prefix string) (*view, string, error) {
	b, id, err := board.LoadTask(a.Ctx, st, "", prefix)
	if err != nil {
		return nil, "", err
	}
	return adoptBoard(a, st, b), id, nil
}

// taskUsage sums the usage the task's sessions reported (nil if none did).
func taskUsage(recs []sessions.Record, id string) *sessions.Usage {
	return contract.TaskUsage(recs, id)
}

func (v *view) taskJSON(id string) taskJSON { return contract.NewTask(v.Loaded, id) }

// review returns the review of session sid, nil if it has none.
func (v *view) review(sid string) *sessions.Review {
	if sid == "" {
		return nil
	}
	for _, r := range v.Loaded.Sessions {
		if r.Session.ID == sid {
			return r.Review
		}
	}
	return nil
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func statusColor(s status.Status) string {
	switch s {
	case status.Done:
		return output.Green
	case status.InProgress, status.Planning:
		return output.Cyan
	case status.Review, status.Reviewing:
		return output.Blue
	case status.DoDFailed, status.Failed, status.Tainted:
		return output.Red
	case status.Cancelled:
		return output.Gray
	}
	return ""
}

// printTasks renders a list of tasks as a table, ids or JSON.
func printTasks(a *App, v *view, ids []string) error {
	if a.G.JSON {
		// Encoded by hand (the same bytes as encoding/json): at 100,000
		// tasks encoding/json's walk of each task was a second of CPU.
		return a.P.PrintJSONListAppend(len(ids), func(dst []byte, i int) ([]byte, error) {
			j := v.taskJSON(ids[i])
			return contract.AppendTaskJSON(dst, &j)
		})
	}
	if a.G.Quiet {
		for _, id := range ids {
			a.P.Printf("%s\n", id)
		}
		return nil
	}
	if len(ids) == 0 {
		a.P.Notef("no tasks\n")
		return nil
	}
	// STATUS is the derived status, exactly as task show and --json name
	// it; an open task with unfinished blockers shows them under WAITING
	// ON, as task show does in its "blocked: waiting on" line.
	tb := a.P.NewTable("ID", "STATUS", "PRI", "TYPE", "TITLE", "WAITING ON")
	for _, id := range ids {
		t := v.Board.Tasks[id].Task
		r := v.Status[id]
		var bl []string
		for _, b := range r.Waiting {
			if v.Status[b].Status == status.Cancelled {
				bl = append(bl, v.Board.ShortID(b)+" (cancelled)")
				continue
			}
			bl = append(bl, v.Board.ShortID(b))
		}
		tb.ColorRow([]string{output.Yellow, statusColor(r.Status), "", "", "", output.Gray},
			v.Board.ShortID(id), string(r.Status), t.Priority, t.Type, t.Title, strings.Join(bl, ","))
	}
	tb.Flush()
	return nil
}

// showOne prints one task after reading the board again (so the status and
// short id are current). verb, when set, is printed to stderr first.
func showOne(a *App, st *gitstore.Store, prefix, verb string) error {
	if verb != "" && !a.G.JSON && (a.G.Quiet || verb != "unchanged" && verb != "already cancelled") {
		if a.G.Quiet {
			// Scripts store what -q prints: the full id stays unique
			// however many tasks come later. Nothing else is printed
			// (quiet), so nothing else is read.
			a.P.Printf("%s\n", prefix)
			return nil
		}
		// After a change only the short id is printed: it needs the ids
		// that share its first digits, not every document and session
		// (one for-each-ref of a few refs, not a board).
		short, err := st.ShortID(a.Ctx, tasks.Kind, prefix)
		if err != nil {
			return err
		}
		a.P.Notef("%s task %s\n", verb, short)
		a.P.Printf("%s\n", short)
		return nil
	}
	// Only this task, its blockers, its parent and their sessions (whole)
	// are read.
	v, id, err := loadTaskView(a, st, prefix)
	if err != nil {
		return err
	}
	rounds, _, err := bestof.Get(a.Ctx, st, id)
	if err != nil {
		return err
	}
	if a.G.JSON {
		j := v.taskJSON(id)
		j.Extra = latestSession(a, v, id)
		j.Usage = taskUsage(a.sessions, id)
		j.Review = v.review(j.Session)
		j.Rounds = rounds.Rounds
		// Encoded by hand (the same bytes): encoding/json's first walk of
		// every type a task's JSON can hold was a twentieth of task show.
		raw, err := contract.AppendTaskJSON(nil, &j)
		if err != nil {
			return err
		}
		return a.P.PrintJSON(json.RawMessage(raw))
	}
	if a.G.Quiet {
		a.P.Printf("%s\n", id)
		return nil
	}
	if verb != "" {
		a.P.Notef("%s task %s\n", verb, v.Board.ShortID(id))
		if verb != "unchanged" && verb != "already cancelled" {
			a.P.Printf("%s\n", v.Board.ShortID(id))
			return nil
		}
	}
	t := v.Board.Tasks[id].Task
	r := v.Status[id]
	p := a.P
	p.Printf("%s %s\n", p.Paint(output.Yellow, v.Board.ShortID(id)), p.Paint(output.Bold, t.Title))
	p.Printf("  id:        %s\n", id)
	p.Printf("  status:    %s (%s)\n", p.Paint(statusColor(r.Status), string(r.Status)), r.Reason)
	printBlocked(a, v, id, r)
	printTaskFields(p, v, t)
	printReview(p, v.review(r.Session))
	printSessionSummary(a, v, id)
	if u := taskUsage(a.sessions, id); u != nil {
		p.Printf("  usage (all sessions): %s\n", u)
	}
	printBestOf(a, rounds)
	return nil
}

// printTaskFields prints a task's fields below its status, each only when
// it is set, then its description and acceptance criteria.
func printTaskFields(p *output.Printer, v *view, t tasks.Task) {
	p.Printf("  type:      %s\n  priority:  %s\n", t.Type, t.Priority)
	if t.Parent != "" {
		p.Printf("  parent:    %s\n", v.Board.ShortID(t.Parent))
	}
	if len(t.BlockedBy) > 0 {
		var bs []string
		for _, b := range t.BlockedBy {
			bs = append(bs, v.Board.ShortID(b))
		}
		p.Printf("  blocked by: %s\n", strings.Join(bs, ", "))
	}
	if len(t.Labels) > 0 {
		p.Printf("  labels:    %s\n", strings.Join(t.Labels, ", "))
	}
	if t.Assignee != "" {
		p.Printf("  assignee:  %s\n", t.Assignee)
	}
	if t.Base != "" {
		p.Printf("  base:      %s\n", t.Base)
	}
	if t.MaxLoops > 0 {
		p.Printf("  max loops: %d\n", t.MaxLoops)
	}
	if t.BestOf > 0 {
		p.Printf("  best of:   %d\n", t.BestOf)
	}
	if len(t.Paths) > 0 {
		p.Printf("  paths:     %s\n", strings.Join(t.Paths, ", "))
	}
	for _, d := range t.DoD {
		p.Printf("  dod:       %s\n", d)
	}
	p.Printf("  created:   %s by %s\n", t.Created.Time.Format(time.RFC3339), t.Created.Author)
	p.Printf("  updated:   %s by %s\n", t.Updated.Time.Format(time.RFC3339), t.Updated.Author)
	if t.Description != "" {
		p.Printf("\n%s\n", indent(t.Description, "  "))
	}
	if len(t.Acceptance) > 0 {
		p.Printf("\n  Acceptance criteria:\n")
		for i, c := range t.Acceptance {
			p.Printf("  - %s: %s\n", tasks.CriterionID(i), c)
		}
	}
}

// printReview prints the review of the task's latest session, if any.
func printReview(p *output.Printer, rv *sessions.Review) {
	if rv == nil {
		return
	}
	p.Printf("\n  review:    %s by %s at %s\n", rv.Verdict, rv.Agent, rv.Finished.Format(time.RFC3339))
	for _, why := range rv.Reasons {
		p.Printf("  - %s\n", why)
	}
	if rv.FollowUp != "" {
		p.Printf("  follow-up: %s\n", rv.FollowUp)
	}
}

func indent(s, pre string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = pre + l
	}
	return strings.Join(lines, "\n")
}

// printBlocked prints what a blocked task waits on, and, when a blocker is
// cancelled, that and how to unblock it; nothing when it is not blocked.
func printBlocked(a *App, v *view, id string, r status.Result) {
	if !r.Blocked {
		return
	}
	var w []string
	for _, b := range r.Waiting {
		w = append(w, v.Board.ShortID(b))
	}
	a.P.Printf("  blocked:   waiting on %s\n", strings.Join(w, ", "))
	printCancelledBlockers(a, v, id, "  ")
}

// printCancelledBlockers says that the task waits on cancelled blockers,
// which will never be done, and how to unblock it; nothing when none of
// its blockers is cancelled.
func printCancelledBlockers(a *App, v *view, id, indent string) {
	c := v.Loaded.CancelledBlockers(id)
	if len(c) == 0 {
		return
	}
	short := v.Board.ShortID(id)
	var cs []string
	for _, x := range c {
		cs = append(cs, v.Board.ShortID(x))
	}
	noun, pron := "task", "it"
	if len(cs) > 1 {
		noun, pron = "tasks", "they"
	}
	a.P.Printf("%s%s %s will never be done\n", indent, a.P.Paint(output.Red, "blocked by cancelled "+noun+" "+strings.Join(cs, ", ")+":"), pron)
	a.P.Printf("%sunblock:   %s\n", indent, unblockHint(short, cs))
}
