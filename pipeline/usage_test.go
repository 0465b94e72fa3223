package pipeline

import (
	"testing"
	"time"

	"github.com/git-agentmine/git-agentmine/board"
	"github.com/git-agentmine/git-agentmine/sessions"
)

// TestUsageOfCountsTheRunsSessions: the run's usage sums the sessions of
// its targets started while it went on (reviewers included), and leaves
// out sessions of other tasks, sessions started before it or after its
// end, and start failures; a session without usage counts as a session
// that reported none.
func TestUsageOfCountsTheRunsSessions(t *testing.T) {
	start := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	end := start.Add(time.Hour)
	rec := func(id, task string, at time.Duration, role string, out *sessions.Outcome) sessions.Record {
		if out != nil {
			out.Session = id
		}
		return sessions.Record{Session: sessions.Session{ID: id, Task: task, Started: start.Add(at), Role: role, WorkerPid: 42}, Outcome: out}
	}
	used := func(in, out int64, cost float64) *sessions.Outcome {
		return &sessions.Outcome{Usage: &sessions.Usage{InputTokens: in, OutputTokens: out, CacheReadTokens: 5, CostUSD: cost}}
	}
	startFailure := rec("s-start", "a", 2*time.Minute, "", &sessions.Outcome{ExitCode: 127})
	startFailure.Session.WorkerPid = 0
	b := &board.Board{Sessions: []sessions.Record{
		rec("s-before", "a", -time.Minute, "", used(1e6, 1e6, 9)),                     // an earlier run's
		rec("s-1", "a", time.Minute, "", used(1000, 20, 0.25)),                        // attempt 1
		rec("s-review", "a", 3*time.Minute, sessions.RoleReviewer, used(300, 4, 0.5)), // its reviewer
		rec("s-2", "b", 4*time.Minute, "", &sessions.Outcome{}),                       // reported nothing
		rec("s-live", "b", 5*time.Minute, "", nil),                                    // still running
		rec("s-other", "c", 5*time.Minute, "", used(1e6, 1e6, 9)),                     // not a target
		rec("s-after", "a", 2*time.Hour, "", used(1e6, 1e6, 9)),                       // after the end
		startFailure,
	}}
	r := Record{Name: "r", Targets: []string{"a", "b"}, Started: start}
	want := RunUsage{Usage: sessions.Usage{InputTokens: 1300, OutputTokens: 24, CacheReadTokens: 10, CostUSD: 0.75}, Sessions: 4, Reported: 2}
	r.Ended = &End{Time: end}
	if got := UsageOf(b, r); got != want {
		t.Errorf("ended run: usage %+v, want %+v", got, want)
	}
	if got, want := UsageOf(b, r).String(), "1300 in, 24 out (cache 10 read, 0 written), $0.7500 (2 of 4 session(s) reported usage)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	// While it runs, every later session of a target is the run's.
	r.Ended = nil
	want.Usage = want.Add(sessions.Usage{InputTokens: 1e6, OutputTokens: 1e6, CacheReadTokens: 5, CostUSD: 9})
	want.Sessions, want.Reported = 5, 3
	if got := UsageOf(b, r); got != want {
		t.Errorf("running run: usage %+v, want %+v", got, want)
	}
	if got := (RunUsage{Sessions: 2}).String(); got != "none reported (2 session(s))" {
		t.Errorf("nothing reported: %q", got)
	}
}
