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
// and returns the run it printed; a failure is its one-line error, hint
// and exit code.
func (s *Server) runCommand(c *call, args []string) (contract.RunStatusJSON, error) {
	if s.opts.Agentmine == nil {
		return contract.RunStatusJSON{}, errors.New("mcp server: no git-agentmine command to run")
	}
	env, err := c.worker()
	if err != nil {
		return contract.RunStatusJSON{}, err
	}
	argv := s.opts.Agentmine(env.Top, append([]string{"--json"}, args...)...)
	cmd := exec.CommandContext(c.ctx, argv[0], argv[1:]...)
	cmd.Dir = env.Top
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
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
			msg = fmt.Sprintf("%s exited %d", strings.Join(args[:2], " "), ee.ExitCode())
		}
		return contract.RunStatusJSON{}, exitcode.New(ee.ExitCode(), errors.New(msg), hint)
	case err != nil:
		return contract.RunStatusJSON{}, fmt.Errorf("running git-agentmine %s: %w", args[0], err)
	}
	var j contract.RunStatusJSON
	if err := json.Unmarshal(out.Bytes(), &j); err != nil {
		return contract.RunStatusJSON{}, fmt.Errorf("reading what git-agentmine %s printed: %w", strings.Join(args[:2], " "), err)
	}
	return j, nil
}
