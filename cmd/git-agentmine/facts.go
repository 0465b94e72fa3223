package main

import (
	"strings"
	"time"
	"unicode"

	"github.com/git-agentmine/git-agentmine/output"
	"github.com/git-agentmine/git-agentmine/sessions"
	"github.com/git-agentmine/git-agentmine/verify"
)

// sessionInfo is the latest session shown with a task: the session and
// its verdicts (violations with type and path, DoD per command).
type sessionInfo = sessionJSON

// latestSession returns the latest session of a task for --json output.
func latestSession(a *App, v *view, id string) *sessionInfo {
	best := latestRecord(a, id)
	if best == nil {
		return nil
	}
	j := toSessionJSON(a, *best, 0)
	return &j
}

// latestRecord returns the latest attempt at a task (planner and reviewer
// runs are not attempts), nil when it has none.
func latestRecord(a *App, id string) *sessions.Record {
	var best *sessions.Record
	for i := range a.sessions {
		r := &a.sessions[i]
		if r.Session.Task != id || !r.Session.IsAttempt() {
			continue
		}
		if best == nil || r.Session.Started.After(best.Session.Started) {
			best = r
		}
	}
	return best
}

// printFindings prints a scope verdict's violations, then its warnings,
// one a line under indent, each with its type, path and reason:
//
//	violation main-checkout-changed README.md: changed in the main checkout …
//	warning   uncommitted src/x.go: left uncommitted: untracked
//
// limit > 0 prints at most limit findings, then how many more there are
// and the command that lists them all (seeAll).
func printFindings(p *output.Printer, indent string, vd verify.Verdicts, limit int, seeAll string) {
	type finding struct {
		kind, color string
		x           verify.Violation
	}
	var all []finding
	for _, x := range vd.Scope.Violations {
		all = append(all, finding{"violation", output.Red, x})
	}
	for _, x := range vd.Scope.Warnings {
		all = append(all, finding{"warning  ", output.Yellow, x})
	}
	for i, f := range all {
		if limit > 0 && i == limit {
			p.Printf("%s… %d more: %s\n", indent, len(all)-limit, seeAll)
			return
		}
		what := f.x.Type
		if f.x.Path != "" {
			what += " " + f.x.Path
		}
		p.Printf("%s%s %s: %s\n", indent, p.Paint(f.color, f.kind), what, f.x.Reason)
	}
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
	if iso := j.Isolation; iso != nil {
		p.Printf("    isolation: %s\n", isolationWords(*iso))
	}
	if o := j.Outcome; o != nil {
		vd := verify.ParseVerdicts(o)
		p.Printf("    exit %d%s, DoD %s, scope %s\n", o.ExitCode, sigWords(*o), orDash(vd.DoD.Status), scopeWord(vd))
		printFindings(p, "    ", vd, 0, "")
		if w := liveGapWords(vd.Scope); w != "" {
			p.Printf("    live record: %s\n", w)
		}
		if r := outcomeReason(*o, vd); r != "" {
			p.Printf("    reason: %s\n", r)
		}
		printDoDTail(p, "    ", vd)
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

// liveGapWords says how an incomplete live record was judged, or "" when
// there is nothing to say (a complete record, a run nobody watched).
func liveGapWords(v verify.Verdict) string {
	switch v.LiveGap {
	case verify.LiveGapProved:
		return "incomplete (" + v.LiveReason + "), proved harmless: the scope lets the worker write every path of the worktree"
	case verify.LiveGapUnproved:
		return "incomplete (" + v.LiveReason + "), not proved harmless: a change made and undone meanwhile cannot be ruled out"
	}
	return ""
}

// isolationWords renders a session's isolation fact: "bwrap, no network",
// "landlock (auto)", "none (fallback: …)".
func isolationWords(iso sessions.Isolation) string {
	w := iso.Level
	if iso.Requested == "auto" {
		w += " (auto)"
	}
	if !iso.Network && iso.Level != "none" {
		w += ", no network"
	}
	if iso.Note != "" {
		w += " — " + iso.Note
	}
	return w
}

// dodTailLines is how many lines of a failed DoD command's output the
// commands show.
const dodTailLines = 10

// printDoDTail prints the last lines of the first failed DoD command's
// output under a "DoD output" line, made safe for a terminal; nothing when
// no command failed or it printed nothing.
func printDoDTail(p *output.Printer, indent string, v verify.Verdicts) {
	for _, c := range v.DoD.Commands {
		if c.ExitCode == 0 && !c.TimedOut {
			continue
		}
		lines := dodTail(c.OutputTail, dodTailLines)
		if len(lines) == 0 {
			return
		}
		p.Printf("%sDoD output (last %s of `%s`):\n", indent, plural(len(lines), "line", "lines"), c.Cmd)
		for _, l := range lines {
			p.Printf("%s  %s\n", indent, p.Paint(output.Gray, "| ")+l)
		}
		return
	}
}

// dodTail returns the last n non-empty lines of s, with escape
// sequences and other control characters removed (the output is the
// worker's to write) and invalid UTF-8 replaced.
func dodTail(s string, n int) []string {
	var out []string
	for _, l := range strings.Split(strings.ToValidUTF8(s, "\uFFFD"), "\n") {
		l = strings.TrimRight(printableLine(l), " \t")
		if l != "" {
			out = append(out, l)
		}
	}
	if len(out) > n {
		out = out[len(out)-n:]
	}
	return out
}

// printableLine drops CSI escape sequences, every control character of a
// line but the tab, and format characters (bidirectional overrides).
func printableLine(l string) string {
	var b strings.Builder
	rs := []rune(l)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case r == 0x1b && i+1 < len(rs) && rs[i+1] == '[':
			i += 2
			for i < len(rs) && (rs[i] < 0x40 || rs[i] > 0x7e) {
				i++
			}
		case r == '\t':
			b.WriteRune(r)
		case unicode.IsControl(r), unicode.Is(unicode.Cf, r):
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
