package pipeline

import (
	"fmt"
	"time"

	"github.com/git-agentmine/git-agentmine/board"
	"github.com/git-agentmine/git-agentmine/sessions"
)

// RunUsage is the usage a run's sessions reported, summed: a fact derived
// from the outcome notes each time it is asked for, never stored.
type RunUsage struct {
	sessions.Usage
	// Sessions counts the run's sessions (see SessionsOf); Reported counts
	// those whose outcome carries usage. A session still running, or whose
	// client reports none (custom clients, a client that failed before
	// answering), is in Sessions but not in Reported.
	Sessions int `json:"sessions"`
	Reported int `json:"reported"`
}

// String renders the sum for people: "3321 in, 69 out, $0.0147 (2 of 3
// sessions reported usage)".
func (u RunUsage) String() string {
	if u.Reported == 0 {
		return fmt.Sprintf("none reported (%d session(s))", u.Sessions)
	}
	return fmt.Sprintf("%s (%d of %d session(s) reported usage)", u.Usage, u.Reported, u.Sessions)
}

// SessionsOf lists the sessions of run r: every session of one of its
// targets (workers, reviewers and planners alike, since all of them cost
// tokens) started while the run went on, from its Started time to its end
// (now while it runs); start failures, whose client never ran, are left
// out.
//
// The run knows its sessions this way rather than by a list in its record
// for the same reasons its attempts are counted this way: a supervisor that
// took a run over adopts the sessions its dead predecessor started, the
// reviewers and planners run in processes of their own that do not know
// the run, and the loop refuses to start a task that someone else is
// running, so a session of a target started during the run is one the run
// waited for and judged. The budget (--budget) is checked against the same
// sum, so what a run reports and what it enforced are one number.
func SessionsOf(b *board.Board, r Record) []sessions.Record {
	var out []sessions.Record
	now := time.Now()
	for _, id := range r.Targets {
		for _, s := range b.SessionsOf(id) {
			if s.Session.Started.Before(r.Started) || IsStartFailure(s, b.Here, now) {
				continue
			}
			if r.Ended != nil && s.Session.Started.After(r.Ended.Time) {
				continue
			}
			out = append(out, s)
		}
	}
	return out
}

// UsageOf sums the usage the sessions of run r reported.
func UsageOf(b *board.Board, r Record) RunUsage {
	var u RunUsage
	for _, s := range SessionsOf(b, r) {
		u.Sessions++
		if s.Outcome != nil && s.Outcome.Usage != nil {
			u.Reported++
			u.Usage = u.Usage.Add(*s.Outcome.Usage)
		}
	}
	return u
}
