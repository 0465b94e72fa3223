package contract

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/git-agentmine/git-agentmine/sessions"
	"github.com/git-agentmine/git-agentmine/tasks"
)

// AppendTaskJSON appends j as compact JSON to dst, the same tokens
// encoding/json writes for it without HTML escaping, written by hand: a
// command that prints one task (task show) no longer pays encoding/json's
// first walk of every type TaskJSON can hold. The latest session is written
// by hand too (appendSessionJSON); the other nested values only some tasks
// carry (children, usage, review, best-of rounds) are still encoded by
// encoding/json when present.
func AppendTaskJSON(dst []byte, j *TaskJSON) ([]byte, error) {
	b := append(dst, `{"v":`...)
	b = strconv.AppendInt(b, int64(j.V), 10)
	b = appendKeyString(b, "id", j.ID)
	b = appendKeyString(b, "short_id", j.ShortID)
	b = appendKeyString(b, "title", j.Title)
	b = appendKeyString(b, "status", j.Status)
	b = appendKeyString(b, "status_reason", j.StatusReason)
	b = strconv.AppendBool(append(b, `,"blocked":`...), j.Blocked)
	b = strconv.AppendBool(append(b, `,"ready":`...), j.Ready)
	b = appendKeyStrings(b, "waiting_on", j.WaitingOn)
	b = appendKeyString(b, "description", j.Description)
	b = appendKeyString(b, "type", j.Type)
	b = appendKeyString(b, "priority", j.Priority)
	b = appendKeyString(b, "parent", j.Parent)
	b = appendKeyStrings(b, "blocked_by", j.BlockedBy)
	b = appendKeyStrings(b, "labels", j.Labels)
	b = appendKeyString(b, "assignee", j.Assignee)
	b = appendKeyStrings(b, "dod", j.DoD)
	b = appendKeyString(b, "base", j.Base)
	b = appendKeyStrings(b, "acceptance", j.Acceptance)
	b = append(b, `,"criteria":`...)
	if j.Criteria == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, c := range j.Criteria {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(append(b, `{"id":`...), c.ID)
			b = append(appendKeyString(b, "text", c.Text), '}')
		}
		b = append(b, ']')
	}
	if j.MaxLoops != 0 {
		b = strconv.AppendInt(append(b, `,"max_loops":`...), int64(j.MaxLoops), 10)
	}
	if j.BestOf != 0 {
		b = strconv.AppendInt(append(b, `,"best_of":`...), int64(j.BestOf), 10)
	}
	if len(j.Paths) > 0 {
		b = appendKeyStrings(b, "paths", j.Paths)
	}
	var err error
	if j.Children != nil {
		if b, err = appendKeyValue(b, "children", j.Children); err != nil {
			return nil, err
		}
	}
	return appendTaskTail(b, j)
}

// appendTaskTail appends TaskJSON's fields from created on, and the
// closing brace.
func appendTaskTail(b []byte, j *TaskJSON) ([]byte, error) {
	var err error
	if b, err = appendStamp(append(b, `,"created":`...), j.Created); err != nil {
		return nil, err
	}
	if b, err = appendStamp(append(b, `,"updated":`...), j.Updated); err != nil {
		return nil, err
	}
	if b, err = appendFact(append(b, `,"cancelled":`...), j.Cancelled); err != nil {
		return nil, err
	}
	if b, err = appendFact(append(b, `,"reopened":`...), j.Reopened); err != nil {
		return nil, err
	}
	if j.Exhausted != nil {
		if b, err = appendFact(append(b, `,"exhausted":`...), j.Exhausted); err != nil {
			return nil, err
		}
	}
	b = appendKeyString(b, "commit", j.Commit)
	if j.Session != "" {
		b = appendKeyString(b, "session", j.Session)
	}
	if j.Extra != nil {
		if b, err = appendSessionJSON(append(b, `,"latest_session":`...), j.Extra); err != nil {
			return nil, err
		}
	}
	for _, f := range []struct {
		key  string
		v    any
		omit bool
	}{
		{"usage", j.Usage, j.Usage == nil},
		{"review", j.Review, j.Review == nil},
		{"best_of_rounds", j.Rounds, len(j.Rounds) == 0},
	} {
		if f.omit {
			continue
		}
		if b, err = appendKeyValue(b, f.key, f.v); err != nil {
			return nil, err
		}
	}
	if len(j.BlockedByCancelled) > 0 {
		b = appendKeyStrings(b, "blocked_by_cancelled", j.BlockedByCancelled)
	}
	return append(b, '}'), nil
}

func appendStamp(b []byte, s tasks.Stamp) ([]byte, error) {
	t, err := s.Time.MarshalJSON()
	if err != nil {
		return nil, err
	}
	b = append(append(b, `{"time":`...), t...)
	return append(appendKeyString(b, "author", s.Author), '}'), nil
}

func appendFact(b []byte, f *tasks.Fact) ([]byte, error) {
	if f == nil {
		return append(b, "null"...), nil
	}
	t, err := f.Time.MarshalJSON()
	if err != nil {
		return nil, err
	}
	b = append(append(b, `{"time":`...), t...)
	b = appendKeyString(b, "author", f.Author)
	if f.Reason != "" {
		b = appendKeyString(b, "reason", f.Reason)
	}
	return append(b, '}'), nil
}

// appendKeyValue appends ,"key": and v as encoding/json writes it without
// HTML escaping.
func appendKeyValue(b []byte, key string, v any) ([]byte, error) {
	return appendValue(append(append(append(b, ",\""...), key...), "\":"...), v)
}

// appendValue appends v as encoding/json writes it without HTML escaping.
func appendValue(b []byte, v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...), nil
}

// appendSessionJSON appends a session (task show's latest session) as
// encoding/json writes it without HTML escaping, by hand: encoding/json's
// first walk of the session's and its outcome's types was a twentieth of
// task show. What only some sessions carry (forgeries, isolation, review,
// usage, rate limit, supervisor) is still encoded by encoding/json.
func appendSessionJSON(b []byte, s *SessionJSON) ([]byte, error) {
	orig := b
	if math.IsNaN(s.Elapsed) || math.IsInf(s.Elapsed, 0) {
		return appendValue(b, s) // encoding/json's error
	}
	b = strconv.AppendInt(append(b, `{"v":`...), int64(s.V), 10)
	b = appendKeyString(b, "id", s.ID)
	b = appendKeyString(b, "short_id", s.ShortID)
	b = appendKeyString(b, "task", s.Task)
	b = appendKeyString(b, "agent", s.Agent)
	b = appendKeyString(b, "client", s.Client)
	if s.Version != "" {
		b = appendKeyString(b, "client_version", s.Version)
	}
	b = appendKeyString(b, "mode", s.Mode)
	b = appendKeyString(b, "branch", s.Branch)
	b = appendKeyString(b, "base_ref", s.BaseRef)
	b = appendKeyString(b, "base_commit", s.Base)
	b = appendKeyString(b, "worktree", s.Worktree)
	b = appendKeyString(b, "host", s.Host)
	if s.Pid != 0 {
		b = strconv.AppendInt(append(b, `,"pid":`...), int64(s.Pid), 10)
	}
	t, err := s.Started.MarshalJSON()
	if err != nil {
		return appendValue(orig, s) // encoding/json's error
	}
	b = append(append(b, `,"started":`...), t...)
	b = strconv.AppendInt(append(b, `,"timeout":`...), int64(s.Timeout), 10)
	b = appendKeyString(b, "state", s.State)
	b = appendFloat(append(b, `,"elapsed_seconds":`...), s.Elapsed)
	b = appendKeyString(b, "log", s.Log)
	if len(s.Tail) > 0 {
		b = appendKeyStrings(b, "log_tail", s.Tail)
	}
	if b, err = appendOutcome(append(b, `,"outcome":`...), s.Outcome); err != nil {
		return appendValue(orig, s) // encoding/json's error
	}
	b = strconv.AppendBool(append(b, `,"sealed":`...), s.Sealed)
	if len(s.Forged) > 0 {
		if b, err = appendKeyValue(b, "forged", s.Forged); err != nil {
			return nil, err
		}
	}
	if s.WorkerPid != 0 {
		b = strconv.AppendInt(append(b, `,"worker_pid":`...), int64(s.WorkerPid), 10)
	}
	if s.Isolation != nil {
		if b, err = appendKeyValue(b, "isolation", s.Isolation); err != nil {
			return nil, err
		}
	}
	if s.Role != "" {
		b = appendKeyString(b, "role", s.Role)
	}
	if s.Reviews != "" {
		b = appendKeyString(b, "reviews", s.Reviews)
	}
	if s.Review != nil {
		if b, err = appendKeyValue(b, "review", s.Review); err != nil {
			return nil, err
		}
	}
	if len(s.ForgedReviews) > 0 {
		if b, err = appendKeyValue(b, "forged_reviews", s.ForgedReviews); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// appendOutcome appends a session's outcome (null when nil) as
// encoding/json writes it without HTML escaping.
func appendOutcome(b []byte, o *sessions.Outcome) ([]byte, error) {
	if o == nil {
		return append(b, "null"...), nil
	}
	orig := b
	t, err := o.Finished.MarshalJSON()
	if err != nil {
		return appendValue(b, o) // encoding/json's error
	}
	b = strconv.AppendInt(append(b, `{"v":`...), int64(o.V), 10)
	b = appendKeyString(b, "session", o.Session)
	b = strconv.AppendInt(append(b, `,"exit_code":`...), int64(o.ExitCode), 10)
	if o.Signal != "" {
		b = appendKeyString(b, "signal", o.Signal)
	}
	b = strconv.AppendBool(append(b, `,"timed_out":`...), o.TimedOut)
	b = append(append(b, `,"finished":`...), t...)
	if o.Tip != "" {
		b = appendKeyString(b, "tip", o.Tip)
	}
	if o.Reason != "" {
		b = appendKeyString(b, "reason", o.Reason)
	}
	b = appendKeyStrings(b, "artifacts", o.Artifacts)
	if len(o.Claimed) > 0 {
		b = appendKeyStrings(b, "claimed_artifacts", o.Claimed)
	}
	b = appendKeyString(b, "recorded_by", o.By)
	if o.ScopeValid != nil {
		b = strconv.AppendBool(append(b, `,"scope_valid":`...), *o.ScopeValid)
	}
	if o.DoDStatus != "" {
		b = appendKeyString(b, "dod_status", o.DoDStatus)
	}
	for _, raw := range []struct {
		key string
		v   json.RawMessage
	}{{"scope", o.Scope}, {"dod", o.DoD}} {
		if len(raw.v) == 0 {
			continue
		}
		b = append(append(append(b, ",\""...), raw.key...), "\":"...)
		var buf bytes.Buffer
		if err := json.Compact(&buf, raw.v); err != nil {
			return appendValue(orig, o) // encoding/json's error
		}
		b = append(b, buf.Bytes()...)
	}
	b = strconv.AppendInt(append(b, `,"commits":`...), int64(o.Commits), 10)
	for _, f := range []struct {
		key  string
		v    any
		omit bool
	}{
		{"usage", o.Usage, o.Usage == nil},
		{"rate_limited", o.RateLimit, o.RateLimit == nil},
		{"supervisor", o.Supervisor, o.Supervisor == nil},
	} {
		if f.omit {
			continue
		}
		if b, err = appendKeyValue(b, f.key, f.v); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// appendFloat appends f as encoding/json writes a float64 (f finite).
func appendFloat(b []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// e-09 as e-9, as encoding/json writes it.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

func appendKeyString(b []byte, key, s string) []byte {
	b = append(append(append(b, ",\""...), key...), "\":"...)
	return appendString(b, s)
}

func appendKeyStrings(b []byte, key string, list []string) []byte {
	b = append(append(append(b, ",\""...), key...), "\":"...)
	if list == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, s := range list {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, s)
	}
	return append(b, ']')
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string the way encoding/json writes it
// without HTML escaping: invalid UTF-8 as U+FFFD, U+2028 and U+2029
// escaped, control characters as \b, \f, \n, \r, \t or \u00XX.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(append(b, s[start:i]...), `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(append(b, s[start:i]...), '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	return append(append(b, s[start:]...), '"')
}
