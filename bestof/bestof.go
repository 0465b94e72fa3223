// Package bestof records the best-of-N rounds of a task: K attempts of one
// task run at once (`run --best-of K`), each verified as usual, and one of
// those that passed is chosen (by the reviewer, else the smallest diff)
// and merged. The record lives under refs/agentmine/bestof/<task>; only the
// run supervisor writes it. Which sessions a round holds and whether each
// passed are re-derivable from the sessions' own facts; the record keeps
// the choice and its reasons, which nothing else holds.
package bestof

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/sessions"
)

// SchemaVersion is the version of the stored document.
const SchemaVersion = 1

// Kind is where the records live: refs/agentmine/bestof/<task id>.
var Kind = gitstore.Kind{Dir: "bestof", File: "bestof.json", Noun: "best-of record", Version: SchemaVersion}

// Max bounds K: more attempts of one task at once than this is a mistake.
const Max = 10

// Record is every best-of round of one task, oldest first.
type Record struct {
	V      int     `json:"v"`
	Task   string  `json:"task"`
	Rounds []Round `json:"rounds"`
}

// DocVersion reports the schema version the document was stored with.
func (r *Record) DocVersion() int { return r.V }

// Round is K attempts of the task started together.
type Round struct {
	Started time.Time `json:"started"`
	// K is how many attempts the round asked for; Attempts are those that
	// got a session, in slot order.
	K        int         `json:"k"`
	Attempts []Candidate `json:"attempts"`
	// Decided is nil until every attempt ended and a choice was made.
	Decided *Decision `json:"decided,omitempty"`
}

// Candidate is one attempt of a round.
type Candidate struct {
	Slot    int    `json:"slot"`
	Session string `json:"session"`
	Agent   string `json:"agent"`
}

// Decision is how a round ended.
type Decision struct {
	Time time.Time `json:"time"`
	// Winner is the chosen session; "" when none passed or the reviewer
	// chose none (the round then counts as one failed loop).
	Winner string `json:"winner,omitempty"`
	// By is how the choice was made: "reviewer <agent>", "smallest diff",
	// or "none passed".
	By string `json:"by"`
	// Reasons are the reviewer's reasons, or the rule's.
	Reasons []string `json:"reasons,omitempty"`
	// Candidates is the comparison, in slot order.
	Candidates []Judged `json:"candidates"`
}

// Judged is one attempt as the decision saw it.
type Judged struct {
	Slot    int    `json:"slot"`
	Session string `json:"session"`
	Agent   string `json:"agent"`
	// Passed: it exited 0 with a commit, its DoD passed and its scope is
	// valid (what a merge demands); Verdict says why not when it did not.
	Passed  bool   `json:"passed"`
	Verdict string `json:"verdict"`
	// Lines is added plus deleted lines of its diff, Files the files it
	// changed (0 for an attempt without a commit).
	Lines int             `json:"diff_lines"`
	Files int             `json:"diff_files"`
	Usage *sessions.Usage `json:"usage,omitempty"`
	// Chosen marks the winner; Why says why it was or was not chosen.
	Chosen bool   `json:"chosen"`
	Why    string `json:"why"`
}

// Get reads the record of task id; ok is false when it has none.
func Get(ctx context.Context, st *gitstore.Store, id string) (rec Record, ok bool, err error) {
	d, err := st.Get(ctx, Kind, id)
	if err != nil {
		if exitcode.Of(err) == exitcode.NotFound {
			return Record{Task: id}, false, nil
		}
		return Record{}, false, fmt.Errorf("reading the best-of record of task %s: %w", short(id), err)
	}
	r, err := gitstore.Decode[Record](Kind, d.Data)
	if err != nil {
		return Record{}, false, fmt.Errorf("reading the best-of record of task %s: %w", short(id), err)
	}
	return r, true, nil
}

// RoundOf returns the index of the round holding session sid, -1 when
// none does.
func (r Record) RoundOf(sid string) int {
	for i, rd := range r.Rounds {
		for _, c := range rd.Attempts {
			if c.Session == sid {
				return i
			}
		}
	}
	return -1
}

// Sessions lists the sessions of the round, in slot order.
func (rd Round) Sessions() []string {
	out := make([]string, len(rd.Attempts))
	for i, c := range rd.Attempts {
		out[i] = c.Session
	}
	return out
}

// AddRound records a new round of task id and returns the record.
func AddRound(ctx context.Context, st *gitstore.Store, id string, rd Round) (Record, error) {
	return change(ctx, st, id, fmt.Sprintf("best-of round of %d started", rd.K), func(r *Record) error {
		r.Rounds = append(r.Rounds, rd)
		return nil
	})
}

// ErrDecided is why a round is not decided twice.
var ErrDecided = errors.New("the round was decided already")

// Decide records the decision of round i of task id, once: a round
// decided already keeps its decision (ErrDecided, with the record).
func Decide(ctx context.Context, st *gitstore.Store, id string, i int, d Decision) (Record, error) {
	return change(ctx, st, id, "best-of round decided: "+d.By, func(r *Record) error {
		if i < 0 || i >= len(r.Rounds) {
			return fmt.Errorf("task %s has no best-of round %d", short(id), i+1)
		}
		if r.Rounds[i].Decided != nil {
			return ErrDecided
		}
		r.Rounds[i].Decided = &d
		return nil
	})
}

// change applies op to the record of task id (created when missing).
func change(ctx context.Context, st *gitstore.Store, id, msg string, op func(r *Record) error) (Record, error) {
	var out Record
	build := func(cur []byte) (gitstore.Change, error) {
		r := Record{V: SchemaVersion, Task: id}
		if cur != nil {
			var err error
			if r, err = gitstore.Decode[Record](Kind, cur); err != nil {
				return gitstore.Change{}, err
			}
		}
		if err := op(&r); err != nil {
			out = r
			return gitstore.Change{}, err
		}
		out = r
		data, err := json.MarshalIndent(r, "", "  ")
		if err != nil {
			return gitstore.Change{}, err
		}
		return gitstore.Change{Data: append(data, '\n'), Message: msg + ": " + id}, nil
	}
	for {
		_, err := st.Get(ctx, Kind, id)
		if exitcode.Of(err) == exitcode.NotFound {
			ch, berr := build(nil)
			if berr != nil {
				return out, berr
			}
			if _, err = st.Create(ctx, Kind, id, ch); errors.Is(err, gitstore.ErrConflict) {
				continue // created meanwhile: update it
			}
			if err != nil {
				return out, fmt.Errorf("recording the best-of round of task %s: %w", short(id), err)
			}
			return out, nil
		}
		if err != nil {
			return out, fmt.Errorf("reading the best-of record of task %s: %w", short(id), err)
		}
		_, _, err = st.Update(ctx, Kind, id, func(cur gitstore.Doc) (gitstore.Change, error) { return build(cur.Data) })
		if err != nil && !errors.Is(err, ErrDecided) {
			err = fmt.Errorf("recording the best-of round of task %s: %w", short(id), err)
		}
		return out, err
	}
}

func short(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// Summary says in one line how the round ended: "attempt 2 chosen by
// reviewer r: why", "none chosen (none passed): why", or "running".
func (rd Round) Summary() string {
	d := rd.Decided
	if d == nil {
		return "running"
	}
	why := ""
	if len(d.Reasons) > 0 {
		why = ": " + strings.Join(d.Reasons, "; ")
	}
	for _, c := range d.Candidates {
		if c.Chosen {
			return fmt.Sprintf("attempt %d chosen by %s%s", c.Slot, d.By, why)
		}
	}
	return fmt.Sprintf("none chosen (%s)%s", d.By, why)
}

// DiffText renders a judged attempt's diff size.
func (j Judged) DiffText() string {
	return fmt.Sprintf("%d line(s) in %d file(s)", j.Lines, j.Files)
}

// UsageText renders a judged attempt's usage, "-" when it reported none.
func (j Judged) UsageText() string {
	if j.Usage == nil {
		return "-"
	}
	return j.Usage.String()
}
