package verify

import (
	"encoding/json"
	"fmt"
	"strings"

	fastjson "github.com/goccy/go-json"

	"github.com/git-agentmine/git-agentmine/sessions"
)

// Verdicts are the scope verdict and DoD result stored in an outcome line.
// Record is their only writer and ParseVerdicts and Summarize their only
// readers, so the line's format (shared across clones) lives here alone.
type Verdicts struct {
	Scope    Verdict
	HasScope bool
	DoD      DoDResult
}

// Record writes the verdicts into an outcome line: the scope verdict when
// there is one, the DoD result when it has a status, and, when both are
// known, their summary (scope_valid, dod_status) that status reads without
// decoding the rest.
func (v Verdicts) Record(o *sessions.Outcome) {
	if v.HasScope {
		o.Scope, _ = json.Marshal(v.Scope)
	}
	if v.DoD.Status == "" {
		return
	}
	o.DoD, _ = json.Marshal(v.DoD)
	if v.HasScope {
		valid := v.Scope.Valid
		o.ScopeValid, o.DoDStatus = &valid, v.DoD.Status
	}
}

// ParseVerdicts reads the verdicts of an outcome line. A missing or
// unreadable scope verdict leaves HasScope false.
func ParseVerdicts(o *sessions.Outcome) Verdicts {
	var v Verdicts
	if o == nil {
		return v
	}
	if len(o.Scope) > 0 && fastjson.Unmarshal(o.Scope, &v.Scope) == nil {
		v.HasScope = true
	}
	if len(o.DoD) > 0 {
		fastjson.Unmarshal(o.DoD, &v.DoD)
	}
	return v
}

// Summary is what a task's status needs from an outcome's verdicts.
type Summary struct {
	// Verified is true when a scope verdict exists; ScopeValid is its
	// verdict.
	Verified   bool
	ScopeValid bool
	// DoD is the DoD status, "" when none was recorded.
	DoD string
	// Explained names the first failed fact (Explain); it is decoded only
	// for lines where something failed.
	Explained string
	// Acceptable is true when the scope verdict is invalid only because of
	// violations a person may accept when merging (AcceptableViolation).
	Acceptable bool
}

// MainCheckoutChanged is the finding type of a change in the main checkout
// during a supervised run. Where the worker could write there (isolation
// level none) nothing tells its writes from a person's: it is a violation
// that blocks merge until a person accepts it. Where it could not
// (landlock, bwrap, clone) the change is the person's: a warning, which
// neither fails the run nor blocks its merge.
const MainCheckoutChanged = "main-checkout-changed"

// AcceptableViolation reports whether a violation type is one a person may
// accept explicitly (`merge --accept-main-changes`): work that reached the
// base with only such violations was merged by a person who took them on.
func AcceptableViolation(typ string) bool { return typ == MainCheckoutChanged }

// OnlyAcceptable reports whether the scope verdict has violations and all of
// them are acceptable ones.
func (v Verdicts) OnlyAcceptable() bool {
	if !v.HasScope || v.Scope.Valid || len(v.Scope.Violations) == 0 {
		return false
	}
	for _, x := range v.Scope.Violations {
		if !AcceptableViolation(x.Type) {
			return false
		}
	}
	return true
}

// Summarize reads an outcome's verdict summary, decoding the full verdicts
// only for lines written without one.
func Summarize(o *sessions.Outcome) Summary {
	if o == nil {
		return Summary{}
	}
	if o.ScopeValid != nil {
		sum := Summary{Verified: true, ScopeValid: *o.ScopeValid, DoD: o.DoDStatus}
		if !sum.ScopeValid || (sum.DoD != "passed" && sum.DoD != "skipped") {
			// only failed lines need the reason, so only they are decoded
			v := ParseVerdicts(o)
			sum.Explained, sum.Acceptable = v.Explain(), v.OnlyAcceptable()
		}
		return sum
	}
	v := ParseVerdicts(o)
	return Summary{Verified: v.HasScope, ScopeValid: v.Scope.Valid, DoD: v.DoD.Status, Explained: v.Explain(), Acceptable: v.OnlyAcceptable()}
}

// Failed names what failed in a session that exited 0: "scope violations",
// "DoD failed" (or "DoD timeout"), both joined by "and", or "" when nothing
// did.
func (v Verdicts) Failed() string {
	var parts []string
	if v.HasScope && !v.Scope.Valid {
		parts = append(parts, "scope violations")
	}
	if v.DoD.Status == "failed" || v.DoD.Status == "timeout" {
		parts = append(parts, "DoD "+v.DoD.Status)
	}
	return strings.Join(parts, " and ")
}

// NoCommitReason is the DoD failure reason of a worker that exited 0 without
// committing anything beyond its base.
const NoCommitReason = "no commits beyond the base"

// Explain names the first fact that failed: a scope violation, a failing
// DoD command, the DoD result's own reason (a worker that made no commit, a
// DoD that could not run), or a DoD that never ran.
func (v Verdicts) Explain() string {
	if v.HasScope && !v.Scope.Valid && len(v.Scope.Violations) > 0 {
		x := v.Scope.Violations[0]
		s := x.Type
		if x.Path != "" {
			s += " " + x.Path
		}
		if n := len(v.Scope.Violations); n > 1 {
			s += fmt.Sprintf(" (+%d more)", n-1)
		}
		return s
	}
	for _, c := range v.DoD.Commands {
		if c.ExitCode != 0 || c.TimedOut {
			if c.TimedOut {
				return fmt.Sprintf("DoD `%s` timed out", c.Cmd)
			}
			return fmt.Sprintf("DoD `%s` exited %d", c.Cmd, c.ExitCode)
		}
	}
	if v.DoD.Status != "passed" && v.DoD.Status != "skipped" && v.DoD.Reason != "" {
		return v.DoD.Reason
	}
	if v.HasScope && v.DoD.Status == "" {
		return NoDoDReason
	}
	return ""
}

// NoDoDReason explains a verdict without a DoD result: the run was judged
// for its scope, and the DoD never ran.
const NoDoDReason = "the DoD did not run"
