package mcpserver

import (
	"path/filepath"

	"github.com/git-agentmine/git-agentmine/contract"
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
