package pipeline

import (
	"slices"

	"github.com/git-agentmine/git-agentmine/board"
	"github.com/git-agentmine/git-agentmine/sessions"
	"github.com/git-agentmine/git-agentmine/status"
)

// Interruptions are not verdicts. A session whose worker was stopped (a
// Ctrl-C or SIGTERM on the run, run stop, worker stop) said nothing about
// the agent's work: it is not an attempt, the task is never failed or
// exhausted because of it, and the next look (or the next run of the same
// name) starts it again.

// IsStopped reports whether a worker session ended because it was stopped
// (sessions.Outcome.Stopped) rather than by its own doing, a timeout or a
// stall.
func IsStopped(r sessions.Record) bool { return r.Outcome.Stopped() }

// interrupted reports whether the task is open again because its latest
// sessions were stopped with no real attempt after them (status leaves
// stopped sessions out of its verdict).
func (ts taskState) interrupted() bool {
	return ts.stopped != nil && ts.res.Status == status.Open
}

// feedbackAfterStop is the feedback of the start that follows a stopped
// session: none before the first real attempt, else what that attempt
// left.
func (ts taskState) feedbackAfterStop() *Feedback {
	l := ts.latest
	if l == nil {
		return nil
	}
	fb := &Feedback{Status: "failed", Previous: l}
	if l.Outcome != nil {
		fb.StatusReason = l.Outcome.Reason
	}
	return fb
}

// Interrupted is the reason recorded for a run ended by Ctrl-C, SIGTERM or
// a hang-up without a recorded stop. The next run of the same name
// continues it: same targets and settings, attempts counted on.
const Interrupted = "interrupted"

// continues reports whether starting run o over the ended record old
// continues it: old was interrupted, and o names no targets or the same
// ones.
func continues(b *board.Board, old Record, o Options) bool {
	if old.Ended == nil || old.Ended.Reason != Interrupted {
		return false
	}
	if len(o.Targets) == 0 {
		return true
	}
	targets, err := resolveTargets(b, o.Targets)
	return err == nil && slices.Equal(targets, old.Targets)
}
