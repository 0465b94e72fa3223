package pipeline

import (
	"fmt"
	"strings"
	"time"
)

// The events a run reports (one JSON object per line with --json).
const (
	EvPlanned   = "planned"   // a planner split a goal before any attempt; Reason counts the children
	EvStarted   = "started"   // a worker session started (attempt 1)
	EvRetried   = "retried"   // a worker session started for attempt 2 or later, with feedback
	EvEnded     = "ended"     // a worker session ended; Status is the task's status after it
	EvReviewed  = "reviewed"  // a reviewer judged a session; Verdict is OK or NG
	EvMerged    = "merged"    // a session's branch landed on the base
	EvExhausted = "exhausted" // a task used up its attempts (or could not be started)
	// EvRateLimited: a client reported a rate or usage limit; the run
	// starts none of its workers until Until. Not an attempt.
	EvRateLimited = "rate_limited"
	EvFinished    = "finished" // the run ended; Summary says how
)

// Event is one thing that happened in a run.
type Event struct {
	V     int       `json:"v"`
	Event string    `json:"event"`
	Time  time.Time `json:"time"`
	Run   string    `json:"run"`
	Task  string    `json:"task,omitempty"`
	Title string    `json:"title,omitempty"`
	// Session is the worker session concerned.
	Session string `json:"session,omitempty"`
	// Attempt is the attempt number of the session (1-based), of MaxLoops.
	Attempt  int `json:"attempt,omitempty"`
	MaxLoops int `json:"max_loops,omitempty"`
	// Status is the task's derived status after the event.
	Status string `json:"status,omitempty"`
	// Reason says why (the failure retried, the exhaustion, the review).
	Reason string `json:"reason,omitempty"`
	// Verdict is the review's verdict (reviewed).
	Verdict string `json:"verdict,omitempty"`
	// Commit is the merge commit (merged).
	Commit string `json:"commit,omitempty"`
	// Client and Until say which client a limit paused, and until when
	// (rate_limited).
	Client string     `json:"client,omitempty"`
	Until  *time.Time `json:"until,omitempty"`
	// Running is how many workers of the run were running after the event.
	Running int `json:"running"`
	// Summary is the run's summary (finished only).
	Summary *Summary `json:"summary,omitempty"`
}

// Summary is how a run ended.
type Summary struct {
	Run string `json:"run"`
	// Result is "done" (every target done), "passed" (a run without
	// merge: every target passed, approved when the run reviews, and waits
	// to be merged), "failed" or "stopped" (a stop, the deadline, or an
	// interruption: Reason "interrupted").
	Result string `json:"result"`
	// Reason says why the run ended before every target was done.
	Reason     string `json:"reason,omitempty"`
	Total      int    `json:"total"`
	Done       int    `json:"done"`
	Failed     int    `json:"failed"`
	Cancelled  int    `json:"cancelled"`
	NotStarted int    `json:"not_started"`
	Waiting    int    `json:"waiting"`
	// Interrupted counts targets whose last session was stopped by the
	// interruption (or a stop): not attempts; the next run continues them.
	Interrupted int           `json:"interrupted"`
	Attempts    int           `json:"attempts"`
	Tasks       []TaskSummary `json:"tasks"`
	// Usage sums the usage the run's sessions reported (UsageOf).
	Usage RunUsage `json:"usage"`
}

// TaskSummary is one target at the end of a run.
type TaskSummary struct {
	ID       string `json:"id"`
	Title    string `json:"title"`
	Status   string `json:"status"`
	Reason   string `json:"reason"`
	Attempts int    `json:"attempts"`
	// MaxLoops is the most attempts the task gets: its own max_loops, else
	// the run's.
	MaxLoops int `json:"max_loops"`
	// AcceptMainChanges is set on a target waiting to be merged because the
	// main checkout changed during its run (isolation level none): a person
	// who made those changes merges it accepting them.
	AcceptMainChanges bool `json:"accept_main_changes,omitempty"`
	// BlockedByCancelled lists the cancelled blockers of a task that
	// never started: it waits on them until they are removed from it or
	// reopened.
	BlockedByCancelled []string `json:"blocked_by_cancelled,omitempty"`
}

// Line renders an event as one plain line (logs, and output that is not a
// terminal).
func (e Event) Line() string {
	var b strings.Builder
	b.WriteString(e.Time.Local().Format("15:04:05"))
	b.WriteString(" ")
	b.WriteString(e.Event)
	if e.Task != "" {
		fmt.Fprintf(&b, " task %s", short(e.Task))
		if e.Title != "" {
			fmt.Fprintf(&b, " %q", e.Title)
		}
	}
	if e.Session != "" {
		fmt.Fprintf(&b, " session %s", short(e.Session))
	}
	if e.Attempt > 0 {
		fmt.Fprintf(&b, " attempt %d/%d", e.Attempt, e.MaxLoops)
	}
	if e.Status != "" {
		fmt.Fprintf(&b, ": %s", e.Status)
	}
	if e.Verdict != "" {
		fmt.Fprintf(&b, ": %s", e.Verdict)
	}
	if e.Commit != "" {
		fmt.Fprintf(&b, " as %s", short(e.Commit))
	}
	if e.Until != nil {
		fmt.Fprintf(&b, " %s paused until %s", e.Client, e.Until.Local().Format("15:04:05"))
	}
	if e.Reason != "" {
		fmt.Fprintf(&b, " — %s", firstLine(e.Reason))
	}
	if e.Summary != nil {
		s := e.Summary
		fmt.Fprintf(&b, ": %s, %d/%d done, %d failed, %d not started, %d attempts; usage %s", s.Result, s.Done, s.Total, s.Failed, s.NotStarted, s.Attempts, s.Usage)
		if s.Reason != "" {
			fmt.Fprintf(&b, " — %s", s.Reason)
		}
	}
	return b.String()
}

func short(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
