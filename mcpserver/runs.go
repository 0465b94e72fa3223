package mcpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/git-agentmine/git-agentmine/contract"
	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/launch"
	"github.com/git-agentmine/git-agentmine/output"
	"github.com/git-agentmine/git-agentmine/pipeline"
)

// RunStatusArgs are run_status's arguments.
type RunStatusArgs struct {
	Name     string `json:"name,omitempty" jsonschema:"the run's name (default: default)"`
	Cursor   int64  `json:"cursor,omitempty" jsonschema:"where to continue in the run's log: the cursor the last call returned (0: its start)"`
	MaxBytes int    `json:"max_bytes,omitempty" jsonschema:"at most this many bytes of log (default 16384, at most 1048576)"`
}

// runStatus is run status --json for one run, with its log from a cursor:
// the events so far, the pauses of rate-limited clients, the running
// workers and the targets' statuses.
func (s *Server) runStatus(c *call, in RunStatusArgs) (contract.RunFollowJSON, error) {
	max := in.MaxBytes
	switch {
	case in.Cursor < 0:
		return contract.RunFollowJSON{}, usagef("run_status: cursor must not be negative")
	case max < 0 || max > maxOutputMax:
		return contract.RunFollowJSON{}, usagef("run_status: max_bytes must be between 1 and %d", maxOutputMax)
	case max == 0:
		max = defaultOutputMax
	}
	name := in.Name
	if name == "" {
		name = pipeline.DefaultName
	}
	env, err := c.worker()
	if err != nil {
		return contract.RunFollowJSON{}, err
	}
	rec, err := pipeline.Get(c.ctx, env.St, name)
	if err != nil {
		return contract.RunFollowJSON{}, err
	}
	b, err := c.board(env.Cfg.Base)
	if err != nil {
		return contract.RunFollowJSON{}, err
	}
	j := contract.RunFollowJSON{V: output.SchemaVersion, Run: contract.NewRunStatus(rec, b), Cursor: in.Cursor}
	j.Ended = j.Run.State != "running"
	root := filepath.Join(env.St.Location().CommonDir, "agentmine", "logs")
	path, err := launch.LogPathWithin(root, "run "+rec.Name, rec.Log)
	if err != nil {
		return contract.RunFollowJSON{}, err
	}
	chunk, err := launch.ReadLog(path, in.Cursor, max)
	if err != nil {
		return contract.RunFollowJSON{}, err
	}
	j.Text, j.Cursor, j.More = string(chunk.Text), chunk.Next, chunk.More
	return j, nil
}

// RunStartArgs are run_start's arguments: run --detach's.
type RunStartArgs struct {
	Tasks    []string `json:"tasks,omitempty" jsonschema:"target tasks (any unique prefix), with their descendants; none: every task not done or cancelled"`
	Name     string   `json:"name,omitempty" jsonschema:"the run's name (default: default); a run whose supervisor died is resumed by starting it again"`
	Parallel int      `json:"parallel,omitempty" jsonschema:"workers running at once (default: the max_workers setting)"`
	MaxLoops int      `json:"max_loops,omitempty" jsonschema:"attempts per task before it is exhausted (default 3)"`
	Review   bool     `json:"review,omitempty" jsonschema:"have the reviewer agent judge every session that passed DoD and scope"`
	Merge    bool     `json:"merge,omitempty" jsonschema:"merge passing sessions into the base, one at a time"`
	Deadline string   `json:"deadline,omitempty" jsonschema:"stop the run and its workers after this long: 90s, 30m"`
	Budget   string   `json:"budget,omitempty" jsonschema:"start no new attempt once the run's sessions used N tokens (or $N of cost)"`
}

// RunStopArgs are run_stop's arguments.
type RunStopArgs struct {
	Name   string `json:"name" jsonschema:"the run's name"`
	Reason string `json:"reason,omitempty" jsonschema:"why, recorded with the stop"`
}

// runStart starts a run in the background, as run --detach does (it runs
// git-agentmine run --detach --json), and returns its record once the
// supervisor recorded it.
func (s *Server) runStart(c *call, in RunStartArgs) (contract.RunStatusJSON, error) {
	args := []string{"run", "--detach"}
	if in.Name != "" {
		args = append(args, "--name", in.Name)
	}
	if in.Parallel != 0 {
		args = append(args, "--parallel", strconv.Itoa(in.Parallel))
	}
	if in.MaxLoops != 0 {
		args = append(args, "--max-loops", strconv.Itoa(in.MaxLoops))
	}
	if in.Review {
		args = append(args, "--review")
	}
	if in.Merge {
		args = append(args, "--merge")
	}
	if in.Deadline != "" {
		args = append(args, "--deadline", in.Deadline)
	}
	if in.Budget != "" {
		args = append(args, "--budget", in.Budget)
	}
	args = append(args, "--")
	args = append(args, in.Tasks...)
	return s.runCommand(c, args)
}

// runStop stops a run and the workers it started, as run stop does, and
// returns the run once it ended.
func (s *Server) runStop(c *call, in RunStopArgs) (contract.RunStatusJSON, error) {
	if in.Name == "" {
		return contract.RunStatusJSON{}, usagef("run_stop: name is required")
	}
	args := []string{"run", "stop", in.Name}
	if in.Reason != "" {
		args = append(args, "--reason", in.Reason)
	}
	return s.runCommand(c, args)
}

// runCommand runs git-agentmine with args and --json in the repository
// and returns the run it printed.
func (s *Server) runCommand(c *call, args []string) (contract.RunStatusJSON, error) {
	var j contract.RunStatusJSON
	return j, s.command(c, args, nil, &j)
}

// command runs git-agentmine with args and --json in the repository, with
// stdin, and decodes what it printed into v; a failure is its one-line
// error, hint and exit code.
func (s *Server) command(c *call, args []string, stdin []byte, v any) error {
	if s.opts.Agentmine == nil {
		return errors.New("mcp server: no git-agentmine command to run")
	}
	env, err := c.worker()
	if err != nil {
		return err
	}
	argv := s.opts.Agentmine(env.Top, append([]string{"--json"}, args...)...)
	cmd := exec.CommandContext(c.ctx, argv[0], argv[1:]...)
	cmd.Dir = env.Top
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	what := strings.Join(args[:min(2, len(args))], " ")
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		msg, hint := "", ""
		for _, l := range strings.Split(errb.String(), "\n") {
			switch {
			case msg == "" && strings.HasPrefix(l, "error: "):
				msg = strings.TrimPrefix(l, "error: ")
			case hint == "" && strings.HasPrefix(l, "hint: "):
				hint = strings.TrimPrefix(l, "hint: ")
			}
		}
		if msg == "" {
			msg = fmt.Sprintf("%s exited %d", what, ee.ExitCode())
		}
		return exitcode.New(ee.ExitCode(), errors.New(msg), hint)
	case err != nil:
		return fmt.Errorf("running the agentmine command (%s): %w", what, err)
	}
	if err := json.Unmarshal(out.Bytes(), v); err != nil {
		return fmt.Errorf("reading what the agentmine command (%s) printed: %w", what, err)
	}
	return nil
}

// TaskPlanArgs are task_plan's arguments: plan's.
type TaskPlanArgs struct {
	Task   string `json:"task" jsonschema:"the task to split into children (any unique prefix)"`
	Agent  string `json:"agent,omitempty" jsonschema:"planner agent (default: the agent named planner, else the first with role planner)"`
	DryRun bool   `json:"dry_run,omitempty" jsonschema:"validate and return the plan; create nothing"`
}

// PlanImportArgs are plan_import's arguments: task import's, with the
// plan given inline.
type PlanImportArgs struct {
	Plan   map[string]any `json:"plan" jsonschema:"the plan: {v, summary, tasks: [{key, title, description, type, priority, labels, agent, dod, acceptance_criteria, blocked_by, max_loops}]} (docs/plan.md)"`
	Parent string         `json:"parent,omitempty" jsonschema:"make every imported task a child of this task (any unique prefix)"`
	DryRun bool           `json:"dry_run,omitempty" jsonschema:"validate only; create nothing"`
}

// taskPlan runs the planner on a task and creates its children, as plan
// does (it runs git-agentmine plan --json): it returns once the planner
// answered.
func (s *Server) taskPlan(c *call, in TaskPlanArgs) (contract.PlanJSON, error) {
	if in.Task == "" {
		return contract.PlanJSON{}, usagef("task_plan: task is required")
	}
	args := []string{"plan", in.Task}
	if in.Agent != "" {
		args = append(args, "--agent", in.Agent)
	}
	if in.DryRun {
		args = append(args, "--dry-run")
	}
	var j contract.PlanJSON
	return j, s.command(c, args, nil, &j)
}

// planImport validates a plan and creates its tasks in one transaction, as
// task import does (it runs git-agentmine task import - --json).
func (s *Server) planImport(c *call, in PlanImportArgs) (contract.PlanJSON, error) {
	if in.Plan == nil {
		return contract.PlanJSON{}, usagef("plan_import: plan is required")
	}
	data, err := json.Marshal(in.Plan)
	if err != nil {
		return contract.PlanJSON{}, usagef("plan_import: %v", err)
	}
	args := []string{"task", "import", "-"}
	if in.Parent != "" {
		args = append(args, "--parent", in.Parent)
	}
	if in.DryRun {
		args = append(args, "--dry-run")
	}
	var j contract.PlanJSON
	return j, s.command(c, args, data, &j)
}
