package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/git-agentmine/git-agentmine/board"
	"github.com/git-agentmine/git-agentmine/sessions"
)

// Rate limits pause, they do not fail. A worker session whose client
// reported that a rate or usage limit refused it (sessions.Outcome's
// RateLimit) did no work for a reason that is not the task's: it is not an
// attempt. The run starts no worker of that client until the limit resets
// (the time the client gave, else an exponential backoff), and while
// limits repeat it runs fewer of that client's workers at once (half the
// run's parallelism per limit in a row, at least one), until a session of
// the client ends without one. Everything is derived from the sessions'
// outcomes at every look, so a restarted supervisor pauses alike; the
// run record keeps the pauses only to show them (run status, the board).

// Pause is what a run knows of one client that a limit refused.
type Pause struct {
	// Client is the client (an agent's client; "custom:<agent>" for a
	// custom command, each its own service).
	Client string `json:"client"`
	// Limits counts the limits in a row: sessions of the client refused by
	// one, with none that ended otherwise since.
	Limits int `json:"limits"`
	// Session is the latest refused session (of Task), Reason the
	// client's words.
	Session string `json:"session"`
	Task    string `json:"task"`
	Reason  string `json:"reason"`
	// Since is when that session ended; Until when the run starts the
	// client again: the client's reset time when it gave one (FromClient),
	// else Since plus the backoff.
	Since      time.Time `json:"since"`
	Until      time.Time `json:"until"`
	FromClient bool      `json:"from_client"`
	// Parallel is the most workers of the client the run runs at once
	// while limits repeat.
	Parallel int `json:"parallel"`
	// Lifted is when the run saw a session of the client end without a
	// limit, which ended the limits in a row; nil while they go on.
	Lifted *time.Time `json:"lifted,omitempty"`
}

// Active reports whether the pause is still on at now.
func (p Pause) Active(now time.Time) bool { return p.Lifted == nil && now.Before(p.Until) }

// String renders a pause for people.
func (p Pause) String(now time.Time) string {
	state := "paused until " + p.Until.Local().Format(time.DateTime)
	switch {
	case p.Lifted != nil:
		state = "limits over since " + p.Lifted.Local().Format(time.DateTime) + " (last pause until " + p.Until.Local().Format(time.DateTime) + ")"
	case !p.Active(now):
		state = "pause ended " + p.Until.Local().Format(time.DateTime)
	}
	how := "backoff"
	if p.FromClient {
		how = "the client's reset time"
	}
	return fmt.Sprintf("%s: %s (%s; %d limit(s) in a row, at most %d at once): %s", p.Client, state, how, p.Limits, p.Parallel, p.Reason)
}

// DefaultRateLimitBackoff is the first pause after a limit whose client
// gave no reset time; it doubles with each limit in a row, up to
// maxRateLimitBackoff.
const DefaultRateLimitBackoff = 30 * time.Second

const maxRateLimitBackoff = 30 * time.Minute

// clientKey is the client a pause applies to.
func clientKey(client, agent string) string {
	if client == "custom" || client == "" {
		return "custom:" + agent
	}
	return client
}

// PausesOf derives run r's pauses from its worker sessions' outcomes:
// one per client whose latest ended sessions were refused by a limit.
// base is the first backoff (DefaultRateLimitBackoff when zero).
func PausesOf(b *board.Board, r Record, base time.Duration) []Pause {
	if base <= 0 {
		base = DefaultRateLimitBackoff
	}
	var ended []sessions.Record
	now := time.Now()
	for _, id := range r.Targets {
		for _, s := range b.SessionsOf(id) {
			if s.Outcome == nil || !s.Session.IsAttempt() || s.Session.Started.Before(r.Started) || IsStartFailure(s, b.Here, now) || IsStopped(s) {
				continue
			}
			ended = append(ended, s)
		}
	}
	sort.SliceStable(ended, func(i, j int) bool { return ended[i].Outcome.Finished.Before(ended[j].Outcome.Finished) })
	byClient := map[string]*Pause{}
	for _, s := range ended {
		k := clientKey(s.Session.Client, s.Session.Agent)
		if !s.Outcome.RateLimited() {
			delete(byClient, k) // it did work: the limits in a row end
			continue
		}
		p := byClient[k]
		if p == nil {
			p = &Pause{Client: k}
			byClient[k] = p
		}
		p.Limits++
		p.Session, p.Task, p.Reason, p.Since = s.Session.ID, s.Session.Task, s.Outcome.Reason, s.Outcome.Finished
		backoff := maxRateLimitBackoff
		if p.Limits <= 16 { // beyond, the shift would overflow
			backoff = min(base<<(p.Limits-1), maxRateLimitBackoff)
		}
		p.Until, p.FromClient = p.Since.Add(backoff), false
		if u := s.Outcome.RateLimit.Until; u != nil && u.After(p.Since) {
			p.Until, p.FromClient = *u, true
		}
		p.Parallel = max(1, r.Parallel>>p.Limits)
	}
	out := make([]Pause, 0, len(byClient))
	for _, p := range byClient {
		out = append(out, *p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Client < out[j].Client })
	return out
}

// limitStarts leaves out of reqs the starts of a paused client, and those
// beyond the parallelism a client has while its limits repeat; it returns
// the earliest end of a pause that held a start back (zero: none).
func (s *Supervisor) limitStarts(ctx context.Context, b *board.Board, running []sessions.Record, reqs []startReq, now time.Time) ([]startReq, time.Time) {
	pauses := PausesOf(b, s.rec, s.o.RateLimitBackoff)
	s.notePauses(ctx, pauses)
	if len(pauses) == 0 {
		return reqs, time.Time{}
	}
	byClient := map[string]Pause{}
	for _, p := range pauses {
		byClient[p.Client] = p
	}
	busy := map[string]int{}
	for _, r := range running {
		busy[clientKey(r.Session.Client, r.Session.Agent)]++
	}
	for id := range s.starting {
		busy[s.clientOf(b, id)]++
	}
	var next time.Time
	out := reqs[:0:0]
	for _, r := range reqs {
		k := s.clientOf(b, r.ts.id)
		p, paused := byClient[k]
		switch {
		case paused && p.Active(now):
			next = earliest(next, p.Until)
			continue
		case paused && busy[k] >= p.Parallel:
			continue // a running worker's end wakes the loop
		}
		busy[k]++
		out = append(out, r)
	}
	return out, next
}

// clientOf is the client key a start of the task would use ("" when no
// agent resolves: the start says why).
func (s *Supervisor) clientOf(b *board.Board, id string) string {
	t, ok := b.Tasks.Tasks[id]
	if !ok {
		return ""
	}
	a, err := s.env.ResolveAgent("", t.Task)
	if err != nil {
		return ""
	}
	return clientKey(a.ClientOr(s.env.Cfg.Client), a.Name)
}

// notePauses tells of every new limit (an event, and the log) and keeps
// the run record's pauses up to date for run status and the board: the
// latest pause of every client the run saw limited, Lifted once the
// limits in a row ended.
func (s *Supervisor) notePauses(ctx context.Context, pauses []Pause) {
	for _, p := range pauses {
		if s.announced["limit:"+p.Session] {
			continue
		}
		s.announced["limit:"+p.Session] = true
		until := p.Until
		s.emit(Event{Event: EvRateLimited, Task: p.Task, Session: p.Session, Reason: p.Reason, Until: &until, Client: p.Client})
	}
	shown := mergePauses(s.rec.RateLimits, pauses, time.Now().UTC())
	if samePauses(shown, s.rec.RateLimits) {
		return
	}
	rec, err := update(ctx, s.st, s.rec.Name, "run pauses changed", func(r *Record) error {
		r.RateLimits = mergePauses(r.RateLimits, pauses, time.Now().UTC())
		return nil
	})
	if err != nil {
		fmt.Fprintf(s.log, "%s recording the pauses: %v\n", time.Now().Format("15:04:05"), err)
		return
	}
	s.rec.RateLimits = rec.RateLimits
}

// mergePauses is the shown pauses old updated with the derived ones: a
// client no longer derived as limited is lifted at now.
func mergePauses(old, derived []Pause, now time.Time) []Pause {
	out := slices.Clone(derived)
	for _, p := range old {
		if slices.ContainsFunc(derived, func(d Pause) bool { return d.Client == p.Client }) {
			continue
		}
		if p.Lifted == nil {
			p.Lifted = &now
		}
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Client < out[j].Client })
	return out
}

// samePauses compares two lists of pauses as stored.
func samePauses(a, b []Pause) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
