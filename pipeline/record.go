// Package pipeline owns the run supervisor (`git agentmine run`): it starts
// the ready tasks of a run as normal supervised worker sessions, at most N at
// a time, retries failed attempts with feedback in the next prompt, reviews
// and merges passing work one at a time, marks tasks that used up their
// attempts as exhausted, and ends when every target is settled. Everything it
// decides from is in refs and notes (tasks, sessions, outcomes and its own
// run record under refs/agentmine/runs/<name>), so a supervisor killed at any
// moment and started again adopts the sessions still running and continues
// the attempt counts where they were.
package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/launch"
	"github.com/git-agentmine/git-agentmine/sessions"
)

// SchemaVersion is the version of the stored run document.
const SchemaVersion = 1

// Kind is where runs live: refs/agentmine/runs/<name>, document run.json.
var Kind = gitstore.Kind{Dir: "runs", File: "run.json", Noun: "run", Version: SchemaVersion}

// DefaultName names a run started without --name.
const DefaultName = "default"

// Record is the stored run document: what the run was asked to do, who
// supervises it, and how it ended. The tasks' and sessions' own facts say
// everything else.
type Record struct {
	V    int    `json:"v"`
	Name string `json:"name"`
	// Targets are the canonical ids of the tasks the run settles.
	Targets  []string `json:"targets"`
	Parallel int      `json:"parallel"`
	MaxLoops int      `json:"max_loops"`
	Review   bool     `json:"review"`
	// Plan is run --plan: the Named targets are goals, planned first.
	Plan  bool     `json:"plan,omitempty"`
	Named []string `json:"named,omitempty"`
	// ReplanAfter is how many failed attempts in a row make the run ask
	// the planner before the next one (0: never).
	ReplanAfter int  `json:"replan_after,omitempty"`
	Merge       bool `json:"merge"`
	// Deadline is when the run stops its workers and ends; nil is none.
	Deadline *time.Time `json:"deadline,omitempty"`
	// Budget is as given (tokens, or "$N" for cost); "" is none.
	Budget string `json:"budget,omitempty"`
	// BestOf is the attempts started at once per task (--best-of; 0 or 1:
	// one); Agents are the agents of a round's attempts, in turn.
	BestOf int      `json:"best_of,omitempty"`
	Agents []string `json:"agents,omitempty"`
	// Started is when the run was created: attempts are the worker
	// sessions of a target started since then.
	Started    time.Time `json:"started"`
	Supervisor Holder    `json:"supervisor"`
	// Log is the supervisor's log file (local to the clone that runs it).
	Log string `json:"log"`
	// Resumed counts the times a supervisor took over the run after the
	// previous one died.
	Resumed int `json:"resumed,omitempty"`
	// RateLimits are the clients a rate or usage limit refused during the
	// run: the latest pause of each (see PausesOf), shown by run status
	// and the board.
	RateLimits []Pause `json:"rate_limits,omitempty"`
	// StopRequested is set by `run stop`.
	StopRequested *Fact `json:"stop_requested,omitempty"`
	Ended         *End  `json:"ended,omitempty"`
}

// Holder identifies the process running the loop, for liveness.
type Holder struct {
	Host     string    `json:"host"`
	Repo     string    `json:"repo"`
	Pid      int       `json:"pid"`
	PidStart uint64    `json:"pid_start"`
	Since    time.Time `json:"since"`
}

// Fact is a decision with its time, author and reason.
type Fact struct {
	Time   time.Time `json:"time"`
	Author string    `json:"author"`
	Reason string    `json:"reason,omitempty"`
}

// End is how a run ended.
type End struct {
	Time time.Time `json:"time"`
	// Result is "done" (every target done), "failed" (some target is not)
	// or "stopped" (run stop, Ctrl-C, or the deadline).
	Result string `json:"result"`
	Reason string `json:"reason,omitempty"`
	Done   int    `json:"done"`
	Total  int    `json:"total"`
}

// Alive reports whether the run's supervisor process is running on this
// host (same pid and start time).
func (r Record) Alive() bool {
	s := r.Supervisor
	return s.Host == sessions.Host() && s.Pid > 0 && launch.Alive(s.Pid, s.PidStart)
}

// ValidateName checks a run name: letters, digits, ".", "_", "-", at most
// 64, starting with a letter or digit, and a valid ref name component
// (refs/agentmine/runs/<name>): no "..", no trailing "." or ".lock".
func ValidateName(name string) error {
	if !validName(name) {
		return exitcode.New(exitcode.Usage, fmt.Errorf("invalid run name %q: want letters, digits, '.', '_' or '-' (at most 64, starting with a letter or digit, without \"..\", not ending in '.' or \".lock\")", name), "")
	}
	return nil
}

// validName is ValidateName's rule. It is not a regular expression: the
// bounded repetition compiled to 64 copies, a millisecond at every start.
func validName(name string) bool {
	if name == "" || len(name) > 64 || strings.Contains(name, "..") || strings.HasSuffix(name, ".") || strings.HasSuffix(name, ".lock") {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case i > 0 && (c == '.' || c == '_' || c == '-'):
		default:
			return false
		}
	}
	return true
}

func decode(data []byte) (Record, error) {
	return gitstore.Decode[Record](Kind, data)
}

// DocVersion reports the schema version the document was stored with.
func (r *Record) DocVersion() int { return r.V }

func (r Record) encode() []byte {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		panic("encoding run: " + err.Error())
	}
	return append(b, '\n')
}

// Get reads the run named name; a missing run is a NotFound error.
func Get(ctx context.Context, st *gitstore.Store, name string) (Record, error) {
	if err := ValidateName(name); err != nil {
		return Record{}, err
	}
	d, err := st.Get(ctx, Kind, name)
	if err != nil {
		if exitcode.Of(err) == exitcode.NotFound {
			return Record{}, exitcode.New(exitcode.NotFound, &NotFoundError{Name: name}, "")
		}
		return Record{}, fmt.Errorf("reading run %s: %w", name, err)
	}
	r, err := decode(d.Data)
	if err != nil {
		return Record{}, fmt.Errorf("reading run %s: %w", name, err)
	}
	return r, nil
}

// List reads every run.
func List(ctx context.Context, st *gitstore.Store) ([]Record, error) {
	docs, problems, err := st.List(ctx, Kind)
	if err != nil {
		return nil, fmt.Errorf("listing runs: %w", err)
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("listing runs: %w", problems[0])
	}
	var out []Record
	for _, d := range docs {
		r, err := decode(d.Data)
		if err != nil {
			return nil, fmt.Errorf("reading run %s: %w", d.ID, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// update applies op to the latest run document (compare-and-swap).
func update(ctx context.Context, st *gitstore.Store, name, msg string, op func(r *Record) error) (Record, error) {
	var out Record
	_, _, err := st.Update(ctx, Kind, name, func(cur gitstore.Doc) (gitstore.Change, error) {
		r, err := decode(cur.Data)
		if err != nil {
			return gitstore.Change{}, err
		}
		if err := op(&r); err != nil {
			return gitstore.Change{}, err
		}
		out = r
		return gitstore.Change{Data: r.encode(), Message: msg + ": " + name}, nil
	})
	if err != nil {
		if errors.Is(err, gitstore.ErrNoChange) {
			return out, nil
		}
		return Record{}, fmt.Errorf("updating run %s: %w", name, err)
	}
	return out, nil
}

// RequestStop records that the run should stop (run stop), with why.
func RequestStop(ctx context.Context, st *gitstore.Store, name, reason string) (Record, error) {
	now := gitstore.Stamp(st)
	return update(ctx, st, name, "run stop requested", func(r *Record) error {
		if r.StopRequested == nil {
			r.StopRequested = &Fact{Time: now.Time, Author: now.Author, Reason: reason}
		}
		return nil
	})
}

// MarkEnded records how the run ended, unless it ended already.
func MarkEnded(ctx context.Context, st *gitstore.Store, name string, e End) (Record, error) {
	return update(ctx, st, name, "run ended", func(r *Record) error {
		if r.Ended == nil {
			r.Ended = &e
		}
		return nil
	})
}
