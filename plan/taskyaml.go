package plan

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/git-agentmine/git-agentmine/safefile"
	"github.com/git-agentmine/git-agentmine/tasks"
)

// TaskYAMLVersion is the only version of AgentRunner's task.yaml read.
const TaskYAMLVersion = 1

// TaskYAML is AgentRunner's task file (seed 004): one task, its PRD, and
// how the runner should loop. Keys agentmine has no use for are ignored.
type TaskYAML struct {
	Version int `yaml:"version"`
	Task    struct {
		ID          string   `yaml:"id"`
		Title       string   `yaml:"title"`
		Repo        string   `yaml:"repo"`
		Description string   `yaml:"description"`
		Criteria    []string `yaml:"acceptance_criteria"`
		// Paths are the paths the task expects to change (an agentmine
		// addition; AgentRunner ignores it).
		Paths []string `yaml:"paths"`
		PRD   struct {
			Path string `yaml:"path"`
		} `yaml:"prd"`
	} `yaml:"task"`
	Runner struct {
		Meta struct {
			Kind     string `yaml:"kind"`
			Model    string `yaml:"model"`
			MaxLoops int    `yaml:"max_loops"`
		} `yaml:"meta"`
		Worker struct {
			Kind string `yaml:"kind"`
		} `yaml:"worker"`
	} `yaml:"runner"`
}

// MaxPRDBytes bounds the file a task.yaml's prd.path names: it becomes
// part of the task's description. The file is opened without blocking and
// must be a regular file (a FIFO or /dev/zero is refused, not waited on).
const MaxPRDBytes = 16 << 20

// MaxFileBytes bounds a plan file or task.yaml that `task import` reads.
const MaxFileBytes = 64 << 20

// SourceLabel prefixes the label naming the task.yaml's task.id
// ("agentrunner:TASK-123").
const SourceLabel = "agentrunner:"

// workerKinds maps AgentRunner's runner.worker.kind to agentmine clients.
var workerKinds = map[string]string{
	"codex-cli": "codex", "codex": "codex", "claude-code": "claude-code", "claude": "claude-code",
	"gemini-cli": "gemini", "gemini": "gemini", "opencode": "opencode", "aider": "aider",
}

// TaskYAMLDecodeError is the Error for a task.yaml (file) that did not
// decode: err is io.EOF for an empty one, else the YAML decoder's error.
// The decoder (package plan/yamlfile) is linked only where task.yaml is
// read, not into every command: its package initialisation cost every
// command about 0.26 ms of CPU.
func TaskYAMLDecodeError(file string, err error) error {
	where := filepath.Base(file)
	if errors.Is(err, io.EOF) {
		return bad(where, "empty: expected AgentRunner's task.yaml (version: 1)")
	}
	return bad(where, "malformed YAML: %s", firstLine(strings.TrimPrefix(err.Error(), "yaml: ")))
}

// TaskYAMLPlan turns AgentRunner's task.yaml (file, decoded as y) into a
// plan of one task: title, the PRD (prd.path, relative to the file's
// directory) as its description, its acceptance criteria, a label naming
// its id, its max_loops as the task's own attempt limit, its paths, and as
// agent the worker agent whose client matches runner.worker.kind when
// exactly one does (clients maps agent name to client). A wrong version, a
// missing title or an unreadable PRD is an Error naming it.
func TaskYAMLPlan(file string, y TaskYAML, clients map[string]string) (Plan, error) {
	where := filepath.Base(file)
	if y.Version != TaskYAMLVersion {
		return Plan{}, bad(where, "version %d is not supported: task.yaml must say version: %d", y.Version, TaskYAMLVersion)
	}
	title := strings.TrimSpace(y.Task.Title)
	if title == "" {
		return Plan{}, bad(where, "task.title is missing")
	}
	if strings.ContainsAny(title, "\r\n") {
		return Plan{}, bad(where, "task.title must be a single line")
	}
	desc := strings.TrimSpace(y.Task.Description)
	if y.Task.PRD.Path != "" {
		p := y.Task.PRD.Path
		if !filepath.IsAbs(p) {
			p = filepath.Join(filepath.Dir(file), p)
		}
		prd, err := safefile.ReadFile(p, MaxPRDBytes)
		if err != nil {
			return Plan{}, bad(where, "task.prd.path %q cannot be read: %v", y.Task.PRD.Path, errors.Unwrap(err))
		}
		if desc != "" {
			desc += "\n\n"
		}
		desc += strings.TrimSpace(string(prd))
	}
	if n := y.Runner.Meta.MaxLoops; n < 0 || n > tasks.MaxMaxLoops {
		return Plan{}, bad(where, "runner.meta.max_loops must be 0 to %d, got %d", tasks.MaxMaxLoops, n)
	}
	ch := Child{Key: y.Task.ID, Title: title, Description: desc, Criteria: y.Task.Criteria, MaxLoops: y.Runner.Meta.MaxLoops,
		Paths: y.Task.Paths}
	if err := tasks.ValidatePaths(ch.Paths); err != nil {
		return Plan{}, bad(where, "task.paths: %s", strings.TrimPrefix(err.Error(), "error: "))
	}
	if id := strings.TrimSpace(y.Task.ID); id != "" {
		if strings.ContainsAny(id, " \t\r\n,") {
			return Plan{}, bad(where, "task.id %q must be one word", id)
		}
		ch.Labels = append(ch.Labels, SourceLabel+id)
	}
	if kind := y.Runner.Worker.Kind; kind != "" {
		client, ok := workerKinds[kind]
		if !ok {
			client = kind
		}
		var match []string
		for name, c := range clients {
			if c == client {
				match = append(match, name)
			}
		}
		if len(match) == 1 {
			ch.Agent = match[0]
		}
	}
	return Plan{V: Version, Summary: fmt.Sprintf("imported from %s", where), Tasks: []Child{ch}}, nil
}

// IsYAML reports whether a file to import is a task.yaml rather than plan
// JSON: by its name, else by its first non-blank character.
func IsYAML(file string, data []byte) bool {
	switch strings.ToLower(filepath.Ext(file)) {
	case ".yaml", ".yml":
		return true
	case ".json":
		return false
	}
	t := bytes.TrimSpace(data)
	return len(t) > 0 && t[0] != '{'
}
