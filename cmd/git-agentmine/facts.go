package main

import (
	"time"

	"github.com/git-agentmine/git-agentmine/contract"
	"github.com/git-agentmine/git-agentmine/sessions"
	"github.com/git-agentmine/git-agentmine/verify"
)

// sessionInfo is the latest session shown with a task: the session and
// its verdicts (violations with type and path, DoD per command).
type sessionInfo = sessionJSON

// latestSession returns the latest session of a task for --json output.
func latestSession(a *App, v *view, id string) *sessionInfo {
	return contract.LatestSession(a.sessions, id, a.here(), time.Now())
}

// printSessionSummary prints the latest session's facts under a task.
func printSessionSummary(a *App, v *view, id string) {
	j := latestSession(a, v, id)
	if j == nil {
		return
	}
	p := a.P
	p.Printf("\n  Latest session %s (%s, agent %s): %s\n", j.ShortID, j.State, j.Agent, j.Branch)
	if o := j.Outcome; o != nil {
		vd := verify.ParseVerdicts(o)
		p.Printf("    exit %d%s, DoD %s, scope %s\n", o.ExitCode, sigWords(*o), orDash(vd.DoD.Status), scopeWord(vd))
		for _, x := range vd.Scope.Violations {
			p.Printf("    violation %s %s: %s\n", x.Type, x.Path, x.Reason)
		}
		if r := outcomeReason(*o, vd); r != "" {
			p.Printf("    reason: %s\n", r)
		}
		if o.Usage != nil {
			p.Printf("    usage: %s\n", o.Usage)
		}
	}
}

// outcomeReason is the reason to print for an outcome: the recorded one (the
// client's own words), else the first failed fact; "" when nothing failed.
func outcomeReason(o sessions.Outcome, v verify.Verdicts) string {
	if o.Reason != "" {
		return o.Reason
	}
	return v.Explain()
}
