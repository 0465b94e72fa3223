package launch

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// RateLimit is a client's report that a rate or usage limit refused its
// model requests: the run did no work for a reason that is not the task's.
type RateLimit struct {
	// Until is when the client said the limit resets; zero when it did not
	// say.
	Until time.Time
	// Reason is the client's words, one line of at most MaxReasonBytes.
	Reason string
}

// CustomReport is the JSON object a custom client prints on a line of its
// own (stdout or stderr) to report its usage or a rate limit; agentmine
// reads it only from agents whose client is custom. "agentmine" names the
// report: "usage" (the token counts and cost of the work it did, summed
// over every usage line) or "rate_limit" (a limit refused the work; reset
// is when it ends, RFC 3339, or retry_after the seconds until then).
type CustomReport struct {
	Agentmine        string  `json:"agentmine"`
	InputTokens      int64   `json:"input_tokens"`
	OutputTokens     int64   `json:"output_tokens"`
	CacheReadTokens  int64   `json:"cache_read_tokens"`
	CacheWriteTokens int64   `json:"cache_write_tokens"`
	CostUSD          float64 `json:"cost_usd"`
	Message          string  `json:"message"`
	Reset            string  `json:"reset"`
	RetryAfter       float64 `json:"retry_after"`
}

// The kinds of CustomReport.
const (
	ReportUsage     = "usage"
	ReportRateLimit = "rate_limit"
)

// customReport decodes a line that is a custom client's report.
func customReport(l []byte) (CustomReport, bool) {
	var r CustomReport
	if json.Unmarshal(l, &r) != nil || (r.Agentmine != ReportUsage && r.Agentmine != ReportRateLimit) {
		return CustomReport{}, false
	}
	return r, true
}

// customUsage sums the usage lines of a custom client's output.
func customUsage(output []byte) (Usage, bool) {
	var u Usage
	ok := false
	jsonLines(output, func(l []byte) {
		r, isReport := customReport(l)
		if !isReport || r.Agentmine != ReportUsage {
			return
		}
		ok = true
		u = u.add(Usage{InputTokens: r.InputTokens, OutputTokens: r.OutputTokens, CacheReadTokens: r.CacheReadTokens,
			CacheWriteTokens: r.CacheWriteTokens, CostUSD: r.CostUSD})
	})
	return u, ok
}

// rateLimitLines is how many of the last lines of a failed run's output
// are looked at for a client's rate-limit words: the limit is what ended
// the run, so the client says so at its end, in its last error line (an
// earlier 429 it recovered from, followed by another error, is not it).
const rateLimitLines = 12

// ReadRateLimit reports whether a failed run of client c ended because a
// rate or usage limit refused its requests, from the tail of its output
// (the session log) and, when the client said, when the limit resets
// (relative times are taken from now). A custom client reports it with a
// CustomReport line ("agentmine": "rate_limit"); the other clients are
// recognised by their own words in their last lines: Claude Code's
// rate_limit_error, "usage limit reached" and "… limit reached ∙ resets …",
// Codex's "You've hit your usage limit" and "exceeded retry limit, last
// status: 429", Gemini's RESOURCE_EXHAUSTED, "Quota exceeded" and "You have
// exhausted your daily quota", opencode's "Usage limit reached. It will
// reset in …", and any client's "rate limit", "too many requests" or HTTP
// status 429. A run that succeeded is never rate limited.
func ReadRateLimit(c Client, exitCode int, output []byte, now time.Time) (RateLimit, bool) {
	if exitCode == 0 {
		return RateLimit{}, false
	}
	output = stripANSI(output)
	if c == Custom {
		return customRateLimit(output, now)
	}
	lines := outputLines(output)
	for i, n := len(lines)-1, 0; i >= 0 && n < rateLimitLines; i-- {
		l := strings.TrimSpace(lines[i])
		if strings.HasPrefix(l, "{") {
			// Claude Code's result line, kept whole: its text, when it
			// reports an error.
			var r claudeResultLine
			if json.Unmarshal([]byte(l), &r) != nil || r.Type != "result" || !r.IsError {
				continue
			}
			l = firstLineOf(r.Result)
		}
		if l == "" {
			continue
		}
		n++
		if !saysRateLimit(l) {
			if tellsError(l) {
				return RateLimit{}, false // the last error is another one
			}
			continue
		}
		reason := l
		if m, ok := jsonMessage(l); ok {
			reason = m
		}
		reason = strings.Join(strings.Fields(reason), " ") // one line
		return RateLimit{Until: resetTime(l, now), Reason: clip(reason, MaxReasonBytes)}, true
	}
	return RateLimit{}, false
}

// customRateLimit reads a custom client's last rate_limit report.
func customRateLimit(output []byte, now time.Time) (RateLimit, bool) {
	var found *RateLimit
	jsonLines(output, func(l []byte) {
		r, ok := customReport(l)
		if !ok || r.Agentmine != ReportRateLimit {
			return
		}
		rl := RateLimit{Reason: clip(firstLineOf(r.Message), MaxReasonBytes)}
		if rl.Reason == "" {
			rl.Reason = "the client reported a rate limit"
		}
		if t, err := time.Parse(time.RFC3339, r.Reset); err == nil {
			rl.Until = t
		} else if r.RetryAfter > 0 {
			rl.Until = now.Add(time.Duration(r.RetryAfter * float64(time.Second)))
		}
		found = &rl
	})
	if found == nil {
		return RateLimit{}, false
	}
	return *found, true
}

func firstLineOf(s string) string {
	first, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(first)
}

// rateLimitWords are what the clients print when a limit refused them
// (lower case); see ReadRateLimit for who says which.
func rateLimitWords() []string {
	return []string{"rate limit", "rate_limit", "ratelimit", "too many requests", "usage limit", "resource_exhausted",
		"exhausted your daily quota", "exhausted your capacity", "quota exceeded"}
}

// status429 finds an HTTP status 429 in a line ("status 429", "API Error:
// 429", "last status: 429 Too Many Requests", `"code":429`). It is compiled
// on first use, not when the package initialises: every command links this
// package, and only a worker's output needs it.
var status429 = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)(status|error|code|http)["':\s]{0,4}429\b`)
})

// saysRateLimit reports whether a line says a limit refused the client.
func saysRateLimit(l string) bool {
	lower := strings.ToLower(l)
	if strings.Contains(lower, "disk quota") {
		return false
	}
	for _, w := range rateLimitWords() {
		if strings.Contains(lower, w) {
			return true
		}
	}
	if strings.Contains(lower, "limit reached") && strings.Contains(lower, "reset") {
		return true // Claude Code: "5-hour limit reached ∙ resets 3pm"
	}
	return status429().MatchString(l)
}

// resetPatterns are the ways a client says when its limit resets.
type resetPatterns struct {
	// "resets at 2026-11-27T15:00:00Z", "try again at 2026-…"
	abs *regexp.Regexp
	// Claude Code's older "Claude AI usage limit reached|1764255600"
	unix *regexp.Regexp
	// "try again in 2 hours 3 minutes", "Please retry in 23.4s", "reset in
	// 5m", "retry after 30 seconds", "retryDelay": "23s"
	in      *regexp.Regexp
	durPart *regexp.Regexp
	clock   *regexp.Regexp
}

// resets compiles the reset patterns on first use (see status429).
var resets = sync.OnceValue(func() resetPatterns {
	return resetPatterns{
		abs:     regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:\d\d)`),
		unix:    regexp.MustCompile(`\|(\d{10})\b`),
		in:      regexp.MustCompile(`(?i)(?:again in|retry in|reset in|resets in|retry after|retry-after|retrydelay"?:\s*"?)\s*((?:\d+(?:\.\d+)?\s*(?:ms|milliseconds?|s|secs?|seconds?|m|mins?|minutes?|h|hrs?|hours?|d|days?)\b[\s,and]*)+)`),
		durPart: regexp.MustCompile(`(?i)(\d+(?:\.\d+)?)\s*(ms|milliseconds?|s|secs?|seconds?|m|mins?|minutes?|h|hrs?|hours?|d|days?)\b`),
		clock:   regexp.MustCompile(`(?i)(?:again at|resets? at|resets)\s+(\d{1,2})(?::(\d\d))?\s*(am|pm)?\b`),
	}
})

// resetTime reads when the limit a line reports resets; zero when it does
// not say. A clock time without a date ("Try again at 3:04 PM", "resets
// 3pm") is the next such time in the local zone.
func resetTime(l string, now time.Time) time.Time {
	re := resets()
	if m := re.abs.FindString(l); m != "" {
		if t, err := time.Parse(time.RFC3339, m); err == nil {
			return t
		}
	}
	if m := re.unix.FindStringSubmatch(l); m != nil {
		if n, err := strconv.ParseInt(m[1], 10, 64); err == nil {
			return time.Unix(n, 0)
		}
	}
	if m := re.in.FindStringSubmatch(l); m != nil {
		var d time.Duration
		for _, p := range re.durPart.FindAllStringSubmatch(m[1], -1) {
			d += durationOf(p[1], p[2])
		}
		if d > 0 {
			return now.Add(d)
		}
	}
	if m := re.clock.FindStringSubmatch(l); m != nil && (m[2] != "" || m[3] != "") {
		return nextClock(m[1], m[2], m[3], now)
	}
	return time.Time{}
}

// durationOf is n of unit.
func durationOf(n, unit string) time.Duration {
	f, err := strconv.ParseFloat(n, 64)
	if err != nil {
		return 0
	}
	u := strings.ToLower(unit)
	var per time.Duration
	switch {
	case strings.HasPrefix(u, "ms"), strings.HasPrefix(u, "milli"):
		per = time.Millisecond
	case strings.HasPrefix(u, "s"):
		per = time.Second
	case strings.HasPrefix(u, "m"):
		per = time.Minute
	case strings.HasPrefix(u, "h"):
		per = time.Hour
	case strings.HasPrefix(u, "d"):
		per = 24 * time.Hour
	}
	return time.Duration(f * float64(per))
}

// nextClock is the next time after now at hour:minute (am/pm when given),
// in now's zone.
func nextClock(hour, minute, ampm string, now time.Time) time.Time {
	h, _ := strconv.Atoi(hour)
	m, _ := strconv.Atoi(minute)
	switch strings.ToLower(ampm) {
	case "pm":
		if h < 12 {
			h += 12
		}
	case "am":
		if h == 12 {
			h = 0
		}
	}
	if h > 23 || m > 59 {
		return time.Time{}
	}
	t := time.Date(now.Year(), now.Month(), now.Day(), h, m, 0, 0, now.Location())
	if !t.After(now) {
		t = t.AddDate(0, 0, 1)
	}
	return t
}
