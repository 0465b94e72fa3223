package sessions

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"time"
	"unicode/utf8"

	fastjson "github.com/goccy/go-json"
)

// Forgery is an outcome line rejected as a session's verdict.
type Forgery struct {
	// By and Finished are the line's own recorded_by and finished.
	By       string    `json:"recorded_by"`
	Finished time.Time `json:"finished"`
	// Reason says why the line is not the verdict.
	Reason string `json:"reason"`
}

// Why outcome lines of a sealed session are rejected.
const (
	// ReasonUnsealed: the line claims success (exit 0, no signal, no
	// timeout) without the supervisor's nonce.
	ReasonUnsealed = "claims success without the supervisor's seal"
	// ReasonCopied: a second, different line carries the nonce, which is
	// public once the supervisor's line is written; which one is the
	// supervisor's cannot be told, so neither's tip is trusted.
	ReasonCopied = "a second line carries the supervisor's seal (a copy of its published nonce)"
)

// ParseLine decodes one outcome line; lines that do not parse, or carry a
// schema version this binary does not know, are not outcomes.
func ParseLine(l string) (Outcome, bool) {
	var o Outcome
	// The canonical decoder reads the lines as recorders write them, and
	// accepts only valid JSON (FuzzOutcomeDecodeCanonical holds it to
	// that), so a line it reads needs no json.Valid pass first. It leaves
	// anything else (and invalid UTF-8) to the fast decoder, which must
	// never see broken JSON: a key ending in a lone backslash makes it read
	// past the end of the line and panic, and any worker can append such a
	// line to its note.
	if !utf8.ValidString(l) || !o.decodeCanonical([]byte(l)) {
		if !json.Valid([]byte(l)) {
			return Outcome{}, false
		}
		o = Outcome{}
		if fastjson.Unmarshal([]byte(l), &o) != nil {
			return Outcome{}, false
		}
	}
	if o.V == 0 || o.V > SchemaVersion {
		return Outcome{}, false
	}
	return o, true
}

// ClaimsSuccess reports whether an outcome line says the worker succeeded
// (exit 0, no signal, no timeout), whatever its verdicts say. Every other
// line records a failure, which can never make work mergeable.
func (o *Outcome) ClaimsSuccess() bool {
	return o.ExitCode == 0 && o.Signal == "" && !o.TimedOut
}

type parsed struct {
	o    Outcome
	text string
}

// later orders lines by finish time, then by text, so that every clone
// picks the same line whatever order the notes were merged in.
func (a parsed) later(b parsed) bool {
	return a.o.Finished.After(b.o.Finished) || a.o.Finished.Equal(b.o.Finished) && a.text > b.text
}

func latest(ls []parsed) *parsed {
	var best *parsed
	for i := range ls {
		if best == nil || ls[i].later(*best) {
			best = &ls[i]
		}
	}
	return best
}

// Verdict chooses a session's verdict among the lines of its outcome note
// (selectOutcome), for a caller that holds the lines itself.
func Verdict(seal *Seal, lines []string) (*Outcome, []Forgery) {
	return selectOutcome(seal, lines)
}

// selectOutcome chooses a session's verdict among its outcome lines.
//
// Without a seal (manual sessions, and sessions recorded before seals
// existed) the verdict is the latest line, as it always was: a manual
// session's outcome is an orchestrator's report, not a supervised verdict.
//
// With a seal, only a line that carries the sealing supervisor's nonce is
// a verdict:
//   - one such line: it is the verdict; every other line that claims
//     success is forged;
//   - several different such lines: the nonce was copied after it was
//     published; the verdict is the latest of those that record a failure
//     (else the latest), without a tip, and the others are forged;
//   - none: lines that record a failure (exit code, signal, timeout: `worker
//     done --force`, a supervisor that could not start) are facts and the
//     latest is the verdict; lines that claim success are forged and are
//     no verdict at all (a session with only those is still running, or
//     lost).
//
// Lines that record a failure next to the supervisor's verdict are
// ignored: they can only make a session look worse, never mergeable.
// A verdict next to forged lines carries a forged-outcome violation per
// forged line (markForged), so that status, merge and task show see it.
func selectOutcome(seal *Seal, lines []string) (*Outcome, []Forgery) {
	if len(lines) == 0 {
		return nil, nil
	}
	all := make([]parsed, 0, len(lines))
next:
	for i, l := range lines {
		// a note holds a handful of lines: no map needed to drop copies
		for _, prev := range lines[:i] {
			if prev == l {
				continue next
			}
		}
		if o, ok := ParseLine(l); ok {
			all = append(all, parsed{o: o, text: l})
		}
	}
	if seal == nil {
		if best := latest(all); best != nil {
			o := best.o
			return &o, nil
		}
		return nil, nil
	}
	var auth, failures []parsed
	var forged []Forgery
	for _, p := range all {
		switch {
		case seal.Authenticates(p.o.Supervisor):
			auth = append(auth, p)
		case p.o.ClaimsSuccess():
			forged = append(forged, Forgery{By: p.o.By, Finished: p.o.Finished, Reason: ReasonUnsealed})
		default:
			failures = append(failures, p)
		}
	}
	var verdict *parsed
	copied := false
	switch {
	case len(auth) == 1:
		verdict = &auth[0]
	case len(auth) > 1:
		copied = true
		var failed []parsed
		for _, p := range auth {
			if !p.o.ClaimsSuccess() {
				failed = append(failed, p)
			}
		}
		if verdict = latest(failed); verdict == nil {
			verdict = latest(auth)
		}
		for _, p := range auth {
			if p.text != verdict.text {
				forged = append(forged, Forgery{By: p.o.By, Finished: p.o.Finished, Reason: ReasonCopied})
			}
		}
	default:
		verdict = latest(failures)
	}
	sort.Slice(forged, func(i, j int) bool {
		a, b := forged[i], forged[j]
		if !a.Finished.Equal(b.Finished) {
			return a.Finished.Before(b.Finished)
		}
		if a.By != b.By {
			return a.By < b.By
		}
		return a.Reason < b.Reason
	})
	if verdict == nil {
		return nil, forged
	}
	o := verdict.o
	if copied {
		o.Tip = ""
	}
	if len(forged) > 0 {
		markForged(&o, forged)
	}
	return &o, forged
}

// ForgedReason is the one-line reason naming forged lines, for status and
// merge: `forged outcome line (recorded_by "x", finished t): why (+n more)`.
func ForgedReason(fs []Forgery) string {
	if len(fs) == 0 {
		return ""
	}
	f := fs[0]
	s := fmt.Sprintf("forged outcome line (recorded_by %s, finished %s): %s", strconv.Quote(f.By), f.Finished.UTC().Format(time.RFC3339), f.Reason)
	if len(fs) > 1 {
		s += fmt.Sprintf(" (+%d more)", len(fs)-1)
	}
	return s
}

// markForged turns a verdict into a failed one: a forged-outcome violation
// per forged line in its scope verdict (which becomes invalid), and the
// forgery named first in its reason. The scope verdict's format belongs to
// the verify package, which reads it; this writes only the three fields
// documented for every reader (valid, violations, and a finding's type and
// reason) and keeps the rest as it is.
func markForged(o *Outcome, fs []Forgery) {
	reason := ForgedReason(fs)
	if o.Reason != "" {
		reason += "; " + o.Reason
	}
	o.Reason = reason
	scope := map[string]json.RawMessage{}
	if len(o.Scope) > 0 && fastjson.Unmarshal(o.Scope, &scope) != nil {
		scope = map[string]json.RawMessage{}
	}
	var violations []json.RawMessage
	if raw, ok := scope["violations"]; ok {
		fastjson.Unmarshal(raw, &violations)
	}
	for _, f := range fs {
		v, _ := json.Marshal(struct {
			Type   string `json:"type"`
			Reason string `json:"reason"`
		}{ForgedOutcome, fmt.Sprintf("outcome line recorded_by %s, finished %s: %s", strconv.Quote(f.By), f.Finished.UTC().Format(time.RFC3339), f.Reason)})
		violations = append(violations, v)
	}
	scope["violations"], _ = json.Marshal(violations)
	scope["valid"] = json.RawMessage("false")
	o.Scope, _ = json.Marshal(scope)
	if o.ScopeValid != nil {
		f := false
		o.ScopeValid = &f
	}
}
