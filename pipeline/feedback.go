package pipeline

import (
	"context"
	"fmt"
	"strings"

	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/sessions"
	"github.com/git-agentmine/git-agentmine/status"
	"github.com/git-agentmine/git-agentmine/verify"
)

// Feedback is what went wrong in the previous attempt of a task, for the
// next attempt's prompt: retrying with the identical prompt reproduces the
// identical failure.
type Feedback struct {
	Attempt  int
	MaxLoops int
	// Previous is the previous attempt's session (nil for a first attempt
	// after failures outside this run).
	Previous *sessions.Record
	// Status is the task's derived status and its reason.
	Status, StatusReason string
	// Review holds the reviewer's NG reasons and follow-up.
	ReviewReasons []string
	FollowUp      string
	Reviewer      string
	// Conflicts are the paths a merge with the fresh base conflicted in.
	Conflicts []string
	// DiffStat is `git diff --stat` of the previous attempt's work.
	DiffStat string
	// Round says how the other attempts of the previous best-of round
	// ended, when none was chosen: one line each.
	Round []string
}

// RetryFeedback is the feedback of attempt `attempt` (of maxLoops) of a
// task whose derived status is res and whose latest attempt is previous
// (nil when it has none): the status and its reason, the reviewer's NG
// reasons when previous is the session that decided the status and was
// reviewed NG, and the diff stat of previous's work. It is what run gives
// the retry of a task reviewed NG; the board's "request changes" builds
// the new attempt's feedback here too, so that its prompt carries the
// person's comments the same way.
func RetryFeedback(ctx context.Context, st *gitstore.Store, res status.Result, previous *sessions.Record, attempt, maxLoops int) *Feedback {
	fb := &Feedback{Status: string(res.Status), StatusReason: res.Reason}
	fb.addReview(res, previous)
	fb.complete(ctx, st, previous, attempt, maxLoops)
	return fb
}

// addReview adds the reviewer's NG reasons of l when l is the session that
// decided res and its review is NG, and reports whether it did.
func (f *Feedback) addReview(res status.Result, l *sessions.Record) bool {
	if l == nil || l.Session.ID != res.Session || l.Review == nil || l.Review.OK() {
		return false
	}
	f.ReviewReasons, f.FollowUp, f.Reviewer = l.Review.Reasons, l.Review.FollowUp, l.Review.Agent
	return true
}

// complete numbers the attempt and adds the previous attempt (latest,
// unless set already) and the stat of its diff.
func (f *Feedback) complete(ctx context.Context, st *gitstore.Store, latest *sessions.Record, attempt, maxLoops int) {
	f.Attempt, f.MaxLoops = attempt, maxLoops
	if f.Previous == nil {
		f.Previous = latest
	}
	f.DiffStat = diffStat(ctx, st, f.Previous)
}

// maxTail bounds each DoD output tail quoted in a prompt.
const maxTail = 2000

// Text renders the feedback as a prompt section.
func (f Feedback) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "## Feedback from earlier attempts\n\nThis is attempt %d of %d. ", f.Attempt, f.MaxLoops)
	if f.Previous == nil {
		b.WriteString("Earlier work on this task did not succeed")
		if f.StatusReason != "" {
			fmt.Fprintf(&b, " (%s)", f.StatusReason)
		}
		b.WriteString(". Do not repeat it.\n")
		return b.String()
	}
	fmt.Fprintf(&b, "The previous attempt (session %s) did not succeed. Fix what is listed here; do not repeat it.\n\n", short(f.Previous.Session.ID))
	if f.StatusReason != "" {
		fmt.Fprintf(&b, "- Result: %s (%s)\n", f.Status, f.StatusReason)
	}
	if o := f.Previous.Outcome; o != nil {
		switch {
		case o.TimedOut:
			fmt.Fprintf(&b, "- Exit: timed out after %ds\n", f.Previous.Session.Timeout)
		case o.Signal != "":
			fmt.Fprintf(&b, "- Exit: ended by %s (exit %d)\n", o.Signal, o.ExitCode)
		default:
			fmt.Fprintf(&b, "- Exit code: %d\n", o.ExitCode)
		}
		if o.Reason != "" {
			fmt.Fprintf(&b, "- Reason: %s\n", firstLine(o.Reason))
		}
		v := verify.ParseVerdicts(o)
		for _, c := range v.DoD.Commands {
			if c.ExitCode == 0 && !c.TimedOut && c.Error == "" {
				continue
			}
			if c.Skipped {
				continue
			}
			what := fmt.Sprintf("exit %d", c.ExitCode)
			if c.TimedOut {
				what = "timed out"
			}
			if c.Error != "" {
				what = c.Error
			}
			fmt.Fprintf(&b, "- DoD command failed: `%s` (%s). Output (tail):\n\n```\n%s\n```\n", c.Cmd, what, tail(c.OutputTail))
		}
		if v.HasScope {
			for _, x := range v.Scope.Violations {
				fmt.Fprintf(&b, "- Scope violation: %s %s: %s\n", x.Type, x.Path, x.Reason)
			}
		}
	}
	if len(f.ReviewReasons) > 0 || f.FollowUp != "" {
		who := f.Reviewer
		if who == "" {
			who = "the reviewer"
		}
		fmt.Fprintf(&b, "- Review by %s: NG\n", who)
		for _, r := range f.ReviewReasons {
			// A reason of several lines (a person's comment) stays one
			// item of the list.
			fmt.Fprintf(&b, "  - %s\n", strings.ReplaceAll(strings.TrimSpace(r), "\n", "\n    "))
		}
		if f.FollowUp != "" {
			fmt.Fprintf(&b, "  - Follow-up: %s\n", f.FollowUp)
		}
	}
	if len(f.Round) > 0 {
		b.WriteString("- The other attempts of the same round, none chosen:\n")
		for _, r := range f.Round {
			fmt.Fprintf(&b, "  - %s\n", r)
		}
	}
	if len(f.Conflicts) > 0 {
		fmt.Fprintf(&b, "- Merging into the base conflicted in: %s. This attempt starts from the current base: redo the work on top of it.\n", strings.Join(f.Conflicts, ", "))
	}
	if f.DiffStat != "" {
		fmt.Fprintf(&b, "- Diff stat of the previous attempt:\n\n```\n%s\n```\n", f.DiffStat)
	}
	return b.String()
}

func tail(s string) string {
	s = strings.TrimRight(s, "\n")
	if len(s) > maxTail {
		s = "…" + s[len(s)-maxTail:]
	}
	return s
}

// diffStat is the stat of a session's committed work, "" when it has none.
func diffStat(ctx context.Context, st *gitstore.Store, r *sessions.Record) string {
	if r == nil || r.Outcome == nil || r.Outcome.Tip == "" || r.Outcome.Tip == r.Session.BaseCommit {
		return ""
	}
	out, err := st.Git().Output(ctx, "diff", "--stat", r.Session.BaseCommit, r.Outcome.Tip)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(out)
}
