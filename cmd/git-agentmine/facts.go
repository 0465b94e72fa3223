package main

import (
	"time"

	"github.com/git-agentmine/git-agentmine/sessions"
	"github.com/git-agentmine/git-agentmine/verify"
)

// sessionInfo is the latest session shown with a task: the session and
// its verdicts (violations with type and path, DoD per command).
type sessionInfo = sessionJSON

// latestSession returns the latest session of a task for --json output.
func latestSession(a *App, v *view, id string) *sessionInfo {
	var best *sessions.Record
	for i := range a.sessions {
		r := &a.sessions[i]
		if r.Session.Task != id {
			continue
		}
		if best == nil || r.Session.Started.After(best.Session.Started) {
			best = r
		}
	}
	if best == nil {
		return nil
	}
	j := toSessionJSON(a, *best, 0)
	return &j
}

// printSessionSummary prints the latest session's facts under a task.
func printSessionSummary(a *App, v *view, id string) {
	j := latestSession(a, v, id)
	if j == nil {
		return
	}
	p := a.P
	p.Printf("\n  Latest session %s (%s, agent %s): %s\n", j.ShortID, j.State, j.Agent, j.Branch)
	if j.Mode == sessions.ModeManual {
		p.Printf("    manual: its outcome is the orchestrator's report (session end), not a supervised verdict\n")
	}
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
	} else {
		// No verdict: lines that claimed one were forged.
		for _, f := range j.Forged {
			p.Printf("    violation %s: outcome line recorded_by %q, finished %s: %s\n", sessions.ForgedOutcome, f.By, f.Finished.UTC().Format(time.RFC3339), f.Reason)
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
