// Package plan owns plans: the JSON a planner agent (or a person) writes to
// split a task into child tasks with their dependencies, AgentRunner's
// task.yaml, the validation of a whole plan against the repository (schema,
// agents, task ids, cycles, duplicate keys) and its creation, every child
// in one ref transaction. docs/plan.md describes both formats.
package plan

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/git-agentmine/git-agentmine/agents"
	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/tasks"
)

// Version is the newest plan schema version this binary reads ("v").
const Version = 1

// Plan is a planner's answer: child tasks to create under a parent, and,
// when replanning, a rewrite of the parent itself.
type Plan struct {
	// V is the schema version; 0 (absent) means 1.
	V int `json:"v,omitempty"`
	// Summary is the planner's one-paragraph account of the plan.
	Summary string `json:"summary,omitempty"`
	// Tasks are the children to create, in order.
	Tasks []Child `json:"tasks"`
	// Rewrite, when replanning, changes the parent's description and
	// acceptance criteria.
	Rewrite *Rewrite `json:"rewrite,omitempty"`
}

// Child is one task of a plan.
type Child struct {
	// Key names the child inside the plan, for blocked_by; "" means its
	// position ("1", "2", …).
	Key         string   `json:"key,omitempty"`
	Title       string   `json:"title"`
	Description string   `json:"description,omitempty"`
	Type        string   `json:"type,omitempty"`
	Priority    string   `json:"priority,omitempty"`
	Labels      []string `json:"labels,omitempty"`
	// Agent is the worker agent to run it (the task's assignee).
	Agent string   `json:"agent,omitempty"`
	DoD   []string `json:"dod,omitempty"`
	// Criteria are the acceptance criteria (AC-1, AC-2, … in this order).
	Criteria []string `json:"acceptance_criteria,omitempty"`
	// BlockedBy holds keys of other children, or ids (unique prefixes) of
	// existing tasks.
	BlockedBy []string `json:"blocked_by,omitempty"`
	// MaxLoops is the child's own attempt limit; 0 (absent) leaves it to
	// the run's --max-loops.
	MaxLoops int `json:"max_loops,omitempty"`
	// BestOf is how many attempts `run` starts at once for the child; 0
	// (absent) leaves it to the run's --best-of.
	BestOf int `json:"best_of,omitempty"`
	// Paths are the paths the child expects to change: `run` never runs
	// two tasks at once whose paths overlap.
	Paths []string `json:"paths,omitempty"`
}

// Rewrite is a planner's change to the task it replans. Nil fields leave
// the task's field alone.
type Rewrite struct {
	Description *string   `json:"description,omitempty"`
	Criteria    *[]string `json:"acceptance_criteria,omitempty"`
	// Reason says why, for the task's history.
	Reason string `json:"reason,omitempty"`
}

// Error is a plan that cannot be used; its message names the first problem.
// Its exit code is exitcode.Usage.
type Error struct {
	// Where says what was being read ("plan", "task.yaml", a file name).
	Where string
	Err   error
}

func (e *Error) Error() string { return e.Where + ": " + e.Err.Error() }

// Unwrap returns the problem.
func (e *Error) Unwrap() error { return e.Err }

// ExitCode is exitcode.Usage.
func (e *Error) ExitCode() int { return exitcode.Usage }

// ErrInvalid matches every Error.
var ErrInvalid = errors.New("invalid plan")

// Is makes errors.Is(err, ErrInvalid) true.
func (e *Error) Is(target error) bool { return target == ErrInvalid }

func bad(where, format string, a ...any) error {
	return &Error{Where: where, Err: fmt.Errorf(format, a...)}
}

// Parse decodes a plan strictly: malformed JSON, an unknown key, a wrong
// type, trailing data or an unknown version is an Error naming it. where
// names the source in messages.
func Parse(where string, data []byte) (Plan, error) {
	var p Plan
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return Plan{}, &Error{Where: where, Err: jsonProblem(data, err)}
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Plan{}, bad(where, "unexpected data after the plan's JSON object")
	}
	if p.V < 0 || p.V > Version || p.V == 0 && hasVersion(data) {
		return Plan{}, bad(where, "plan version %d is not supported by this binary (it reads version %d)", p.V, Version)
	}
	if p.V == 0 {
		p.V = Version
	}
	return p, nil
}

// hasVersion reports whether a plan that decoded states its version: an
// absent "v" means 1, an explicit 0 (or null) is no version at all.
func hasVersion(data []byte) bool {
	var v struct {
		V json.RawMessage `json:"v"`
	}
	return json.Unmarshal(data, &v) == nil && v.V != nil
}

// jsonProblem turns a decoding error into one line naming what and where.
func jsonProblem(data []byte, err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		// Offset counts the bytes read, the offending one included.
		line, col := position(data, max(se.Offset-1, 0))
		return fmt.Errorf("malformed JSON at line %d, column %d: %v", line, col, se)
	case errors.As(err, &te):
		line, col := position(data, te.Offset)
		field := te.Field
		if field == "" {
			field = "the plan"
		}
		return fmt.Errorf("line %d, column %d: %s must be %s, not %s", line, col, field, jsonType(te.Type.Kind().String()), te.Value)
	case errors.Is(err, io.EOF):
		return errors.New("empty: expected a JSON object with a \"tasks\" array")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("malformed JSON: unexpected end of input")
	}
	if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return fmt.Errorf("unknown key %s (known: v, summary, tasks, rewrite; a task has key, title, description, type, priority, labels, agent, dod, acceptance_criteria, blocked_by)", f)
	}
	return fmt.Errorf("malformed JSON: %v", strings.TrimPrefix(err.Error(), "json: "))
}

func jsonType(kind string) string {
	switch kind {
	case "slice":
		return "an array"
	case "struct", "ptr":
		return "an object"
	case "int":
		return "a number"
	}
	return "a " + kind
}

func position(data []byte, off int64) (line, col int) {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	line = 1 + bytes.Count(data[:off], []byte("\n"))
	col = int(off) - bytes.LastIndexByte(data[:off], '\n')
	return line, col
}

// Context is what a plan is checked against.
type Context struct {
	// Board holds the existing tasks.
	Board *tasks.Board
	// Agents lists the agents a child may name (worker agents).
	Agents []string
	// Parent is the canonical id of the task the children belong to ("" for
	// none).
	Parent string
}

// LoadContext reads the tasks of st and the worker agents defined under
// top. parent, when not empty, is resolved (any unique prefix).
func LoadContext(ctx context.Context, st *gitstore.Store, top, parent string) (Context, error) {
	b, err := tasks.Load(ctx, st)
	if err != nil {
		return Context{}, err
	}
	c := Context{Board: b}
	if parent != "" {
		if c.Parent, err = b.Resolve(parent); err != nil {
			return Context{}, err
		}
	}
	defs, _, err := agents.Load(top)
	if err != nil {
		return Context{}, err
	}
	for _, a := range defs {
		if a.RoleOr() == agents.RoleWorker {
			c.Agents = append(c.Agents, a.Name)
		}
	}
	return c, nil
}

// Keys returns each child's key (its position, from 1, when it has none).
func (p Plan) Keys() []string {
	out := make([]string, len(p.Tasks))
	for i, c := range p.Tasks {
		out[i] = c.Key
		if out[i] == "" {
			out[i] = strconv.Itoa(i + 1)
		}
	}
	return out
}

// Validate checks the whole plan against c and returns the tasks to create
// (blockers inside the plan as tasks.NewRef+index), or an Error naming the
// first problem: no tasks, a duplicate key, a bad field, an unknown agent,
// a blocker that is neither a key nor a task id, a dependency cycle.
func (p Plan) Validate(where string, c Context) ([]tasks.New, error) {
	if len(p.Tasks) == 0 && p.Rewrite == nil {
		return nil, bad(where, "the plan has no tasks")
	}
	keys := p.Keys()
	index := map[string]int{}
	for i, k := range keys {
		if strings.TrimSpace(k) == "" || strings.ContainsAny(k, "\r\n") {
			return nil, bad(where, "task %d: key %q must be a non-empty single line", i+1, k)
		}
		if j, dup := index[k]; dup {
			return nil, bad(where, "task %d: duplicate key %q (task %d has it too)", i+1, k, j+1)
		}
		index[k] = i
	}
	out := make([]tasks.New, len(p.Tasks))
	for i, ch := range p.Tasks {
		name := fmt.Sprintf("task %d (%s)", i+1, keys[i])
		n := tasks.New{Title: ch.Title, Description: ch.Description, Type: ch.Type, Priority: ch.Priority,
			Parent: c.Parent, Labels: ch.Labels, Assignee: ch.Agent, DoD: ch.DoD, Acceptance: ch.Criteria,
			MaxLoops: ch.MaxLoops, Paths: ch.Paths, BestOf: ch.BestOf}
		if err := checkFields(ch); err != nil {
			return nil, &Error{Where: where, Err: fmt.Errorf("%s: %w", name, err)}
		}
		if ch.Agent != "" && !slices.Contains(c.Agents, ch.Agent) {
			known := "none defined"
			if len(c.Agents) > 0 {
				known = "known: " + strings.Join(c.Agents, ", ")
			}
			return nil, bad(where, "%s: unknown agent %q (%s)", name, ch.Agent, known)
		}
		bs, err := blockers(where, name, i, ch.BlockedBy, index, c)
		if err != nil {
			return nil, err
		}
		n.BlockedBy = bs
		out[i] = n
	}
	if err := tasks.CheckCycle(out); err != nil {
		return nil, &Error{Where: where, Err: err}
	}
	if rw := p.Rewrite; rw != nil && rw.Criteria != nil {
		for _, a := range *rw.Criteria {
			if err := tasks.ValidateLine("acceptance criterion", a); err != nil {
				return nil, &Error{Where: where, Err: fmt.Errorf("rewrite: %w", err)}
			}
		}
	}
	return out, nil
}

// checkFields checks one child's fields as task add does.
func checkFields(ch Child) error {
	if err := tasks.ValidateMaxLoops(ch.MaxLoops); err != nil {
		return err
	}
	if err := tasks.ValidateBestOf(ch.BestOf); err != nil {
		return err
	}
	if err := tasks.ValidatePaths(ch.Paths); err != nil {
		return err
	}
	if _, err := tasks.ValidateTitle(ch.Title); err != nil {
		return err
	}
	if ch.Type != "" {
		if err := tasks.ValidateType(ch.Type); err != nil {
			return fmt.Errorf("%w (use one of: %s)", err, strings.Join(tasks.Types, ", "))
		}
	}
	if ch.Priority != "" {
		if err := tasks.ValidatePriority(ch.Priority); err != nil {
			return fmt.Errorf("%w (use one of: %s)", err, strings.Join(tasks.Priorities, ", "))
		}
	}
	for _, l := range ch.Labels {
		if err := tasks.ValidateLabel(l); err != nil {
			return err
		}
	}
	for _, d := range ch.DoD {
		if err := tasks.ValidateLine("DoD command", d); err != nil {
			return err
		}
	}
	for _, a := range ch.Criteria {
		if err := tasks.ValidateLine("acceptance criterion", a); err != nil {
			return err
		}
	}
	return nil
}

// blockers resolves the blockers of child i (named name in messages): a
// key of the plan becomes a reference to that new task, anything else
// must be an existing task's id.
func blockers(where, name string, i int, blockedBy []string, index map[string]int, c Context) ([]string, error) {
	var out []string
	for _, b := range blockedBy {
		if k, ok := index[b]; ok {
			if k == i {
				return nil, bad(where, "%s: it cannot be blocked by itself", name)
			}
			out = append(out, tasks.NewRef+strconv.Itoa(k))
			continue
		}
		id, err := c.resolve(b)
		if err != nil {
			return nil, bad(where, "%s: blocked_by %q is neither a key of the plan nor a task id (%v)", name, b, err)
		}
		out = append(out, id)
	}
	return out, nil
}

func (c Context) resolve(prefix string) (string, error) {
	if c.Board == nil {
		return "", errors.New("no tasks")
	}
	id, err := c.Board.Resolve(prefix)
	if err != nil {
		return "", errors.New(firstLine(err.Error()))
	}
	return id, nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// Apply validates p against the latest state and creates every child, with
// parent set, in one ref transaction: all of them or none. parent may be
// "" (an imported plan without a parent) or any unique prefix.
func Apply(ctx context.Context, st *gitstore.Store, top, where, parent string, p Plan) ([]tasks.Task, error) {
	c, err := LoadContext(ctx, st, top, parent)
	if err != nil {
		return nil, err
	}
	ns, err := p.Validate(where, c)
	if err != nil {
		return nil, err
	}
	if len(ns) == 0 {
		return nil, nil
	}
	return tasks.AddAll(ctx, st, ns)
}
