// Package tasks owns the task entity: its JSON document, validation of its
// fields, and the operations that create and change tasks in the git store
// (add, update, cancel, reopen), including the dependency-cycle checks.
package tasks

import (
	"encoding/json"
	"slices"
	"time"

	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/scope"
	"github.com/git-agentmine/git-agentmine/validate"
)

// SchemaVersion is the version of the stored task document this binary
// reads and writes.
const SchemaVersion = 1

// Kind is where tasks live: refs/agentmine/tasks/<id>, document task.json.
var Kind = gitstore.Kind{Dir: "tasks", File: "task.json", Noun: "task", Version: SchemaVersion}

// Types lists the accepted task types.
var Types = []string{"task", "feature", "bug", "refactor", "docs", "test", "chore", TypeEpic}

// TypeEpic is the type of a goal: `run` hands a childless epic to the
// planner before any worker (docs/loop.md).
const TypeEpic = "epic"

// Priorities lists the accepted priorities, lowest first.
var Priorities = []string{"low", "medium", "high", "critical"}

// Stamp records when and by whom something happened.
type Stamp struct {
	Time   time.Time `json:"time"`
	Author string    `json:"author"`
}

// Fact is an explicit decision stored on a task (cancel, reopen), with its
// reason.
type Fact struct {
	Time   time.Time `json:"time"`
	Author string    `json:"author"`
	Reason string    `json:"reason,omitempty"`
}

// Task is the stored task document.
type Task struct {
	V           int      `json:"v"`
	ID          string   `json:"id"`
	Title       string   `json:"title"`
	Description string   `json:"description,omitempty"`
	Type        string   `json:"type"`
	Priority    string   `json:"priority"`
	Parent      string   `json:"parent,omitempty"`
	BlockedBy   []string `json:"blocked_by"`
	Labels      []string `json:"labels"`
	Assignee    string   `json:"assignee,omitempty"`
	DoD         []string `json:"dod,omitempty"`
	Base        string   `json:"base,omitempty"`
	Acceptance  []string `json:"acceptance,omitempty"`
	// MaxLoops is the most attempts `run` gives this task; 0 means the
	// run's --max-loops.
	MaxLoops int `json:"max_loops,omitempty"`
	// BestOf is how many attempts `run` starts at once for this task, of
	// which one that passed is merged; 0 means the run's --best-of.
	BestOf int `json:"best_of,omitempty"`
	// Paths are the paths the task expects to change (repository-relative
	// globs; a directory covers what is beneath it). `run` never runs two
	// tasks at once whose paths overlap; a task without paths never waits
	// for another.
	Paths   []string `json:"paths,omitempty"`
	Created Stamp    `json:"created"`
	Updated Stamp    `json:"updated"`
	// Cancelled is the explicit cancel fact; nil when not cancelled (or
	// reopened since).
	Cancelled *Fact `json:"cancelled,omitempty"`
	// Reopened is the latest reopen fact: sessions that started before it no
	// longer decide the status.
	Reopened *Fact `json:"reopened,omitempty"`
	// Exhausted is the fact a supervisor (`run`) records when the task used
	// up its attempts: the task reads as failed with the reason until it is
	// reopened, and its dependents are never started.
	Exhausted *Fact `json:"exhausted,omitempty"`
}

// Decode parses a stored task document, refusing versions this binary does
// not know.
func Decode(data []byte) (Task, error) {
	t, err := gitstore.Decode[Task](Kind, data)
	if err != nil {
		return Task{}, err
	}
	t.normalize()
	return t, nil
}

// decodeTo is Decode into *t (overwritten; the zero value on an error):
// a board read whole decodes each task in place in its batch.
func decodeTo(t *Task, data []byte) error {
	if err := gitstore.DecodeTo[Task](Kind, data, t); err != nil {
		return err
	}
	t.normalize()
	return nil
}

// DocVersion reports the schema version the document was stored with.
func (t *Task) DocVersion() int { return t.V }

// Encode renders the document as stored (indented, stable field order).
func (t Task) Encode() []byte {
	t.normalize()
	b, err := json.MarshalIndent(t, "", "  ")
	if err != nil {
		panic("encoding task: " + err.Error())
	}
	return append(b, '\n')
}

func (t *Task) normalize() {
	// Copies: Encode normalises a copy of the task, whose lists still
	// share the caller's arrays, which sorting in place would reorder and
	// compacting would leave with "" in place of duplicates.
	set := func(list []string) []string {
		out := slices.Clone(list)
		if out == nil {
			out = []string{}
		}
		slices.Sort(out)
		return slices.Compact(out)
	}
	t.BlockedBy = set(t.BlockedBy)
	t.Labels = set(t.Labels)
}

func usage(format string, a ...any) error { return validate.Usage(format, a...) }

// ValidateTitle checks a title: non-empty, one line.
func ValidateTitle(s string) (string, error) { return validate.Title("task title", s) }

// ValidateType checks a task type.
func ValidateType(s string) error { return validate.OneOf("task type", s, Types) }

// ValidatePriority checks a priority.
func ValidatePriority(s string) error { return validate.OneOf("priority", s, Priorities) }

// ValidateLabel checks a label: non-empty, no whitespace or commas.
func ValidateLabel(s string) error { return validate.Word("label", "labels", s) }

// MaxMaxLoops bounds a task's own attempt limit.
const MaxMaxLoops = 1000

// ValidateMaxLoops checks a task's attempt limit: 0 (the run's default) up
// to MaxMaxLoops.
func ValidateMaxLoops(n int) error {
	if n < 0 || n > MaxMaxLoops {
		return usage("invalid max loops %d: want 1 to %d (0 for the run's --max-loops)", n, MaxMaxLoops)
	}
	return nil
}

// MaxBestOf bounds a task's best-of setting.
const MaxBestOf = 10

// ValidateBestOf checks a task's best-of setting: 0 (the run's default) up
// to MaxBestOf.
func ValidateBestOf(n int) error {
	if n < 0 || n > MaxBestOf {
		return usage("invalid best-of %d: want 1 to %d (0 for the run's --best-of)", n, MaxBestOf)
	}
	return nil
}

// MaxPaths bounds how many path patterns one task declares.
const MaxPaths = 100

// ValidatePaths checks a task's declared paths: at most MaxPaths
// repository-relative globs, each one line.
func ValidatePaths(ps []string) error {
	if len(ps) > MaxPaths {
		return usage("too many paths (%d): at most %d", len(ps), MaxPaths)
	}
	for _, p := range ps {
		if err := ValidateLine("path", p); err != nil {
			return err
		}
		if err := scope.CheckPattern(p); err != nil {
			return usage("invalid path %q: %v", p, err)
		}
	}
	return nil
}

// ValidateLine checks a one-line free-text field (assignee, base, a DoD
// command, an acceptance criterion).
func ValidateLine(field, s string) error { return validate.Line(field, s) }
