package launch

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Verdict is what a client's own output says about its run.
type Verdict struct {
	// Failed is set when the exit code is not zero, or when the client
	// reported an error in spite of exiting zero (Claude Code's JSON result
	// with "is_error": true).
	Failed bool
	// Reason is the client's own words explaining a failure, one line of
	// at most MaxReasonBytes; "" when the run succeeded or nothing was found.
	Reason string
}

// MaxReasonBytes bounds Verdict.Reason.
const MaxReasonBytes = 200

// failureWords are phrases clients print when they cannot do the work,
// most specific first. They were collected from the clients named in the
// adapter table, run without credentials or network.
func failureWords() []string {
	return []string{
		"cannot be used with root/sudo privileges", // claude as root without IS_SANDBOX
		"not logged in",                      // claude
		"please set an auth method",          // gemini, exit 41
		"not running in a trusted directory", // gemini, exit 55
		"unknown option",                     // claude (commander)
		"unexpected argument",                // codex (clap), exit 2
		"unknown argument",                   // gemini, opencode (yargs)
		"unrecognized arguments",             // aider (argparse)
		"invalid value",
		"api key",
		"unauthorized",
		"authentication",
		"waiting for network", // codex retries forever
		"failed to lookup address",
		"name does not resolve",
		"enotfound",
		"econnrefused",
		"rate limit",
		"quota",
		"command not found",
		"permission denied",
	}
}

// stripANSI removes CSI escape sequences (colours, cursor moves).
func stripANSI(b []byte) []byte {
	if bytes.IndexByte(b, 0x1b) < 0 {
		return b
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] == 0x1b && i+1 < len(b) && b[i+1] == '[' {
			j := i + 2
			for j < len(b) && (b[j] < 0x40 || b[j] > 0x7e) {
				j++
			}
			i = j
			continue
		}
		out = append(out, b[i])
	}
	return out
}

// ReadVerdict judges a run of client c from its exit code and the tail of
// its output (for example TailBytes of the session log). Claude Code's
// verdict is its JSON result's is_error field, never its exit code alone:
// it can exit 1 with "subtype":"success", or report an error in a result.
// For a failure, Reason is taken from, in order: Claude Code's result text,
// Gemini's documented exit codes and error result, a line holding one of
// the clients' known failure phrases (auth, untrusted folder, unknown flag,
// network), the client's last error or retry line (Claude Code's api_retry
// events become "Attempt 3 of 10 failed with status 500 …"), its last line
// that is not noise (a startup warning, "Reading additional input from
// stdin...", a stack frame, a lone "}"), and a summary of its last JSON
// event; after "timed out" or "interrupted" for exit codes 124 and 130.
// Lines agentmine wrote into the log are skipped.
func ReadVerdict(c Client, exitCode int, output []byte) Verdict {
	lines := outputLines(output)
	v := Verdict{Failed: exitCode != 0}
	if c == ClaudeCode {
		if res, ok := claudeResult(lines); ok {
			if res.IsError {
				v.Failed = true
				v.Reason = res.reason()
				return v
			}
		}
	}
	if !v.Failed {
		return v
	}
	words := findFailureWords(lines)
	if c == Gemini {
		// -o json ends a failed run with an indented {"error": {...}}
		// whose message may itself be the API's JSON error body.
		var doc struct {
			Error *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if lastJSONDocument(stripANSI(output), &doc) && doc.Error != nil && doc.Error.Message != "" {
			first, _, _ := strings.Cut(strings.TrimSpace(apiErrorMessage(doc.Error.Message)), "\n")
			words = first
		}
		switch exitCode {
		case 41:
			v.Reason = "gemini exit 41: authentication not configured"
		case 55:
			v.Reason = "gemini exit 55: untrusted folder"
		}
		if v.Reason != "" && words != "" {
			v.Reason += ": " + words
		}
	}
	if v.Reason == "" {
		v.Reason = words
	}
	if v.Reason == "" {
		v.Reason = fallbackReason(exitCode, lines, output)
	}
	if m, ok := jsonMessage(v.Reason); ok {
		v.Reason = m
	}
	v.Reason = clip(v.Reason, MaxReasonBytes)
	return v
}

// outputLines splits output into trimmed, non-empty lines without ANSI
// escapes and without agentmine's own notes. A line that is a JSON event
// (Claude Code's stream-json, Codex --json, Gemini's stream-json, opencode
// --format json) is kept only when it reports an error or a retry, as the
// error's message: the other events carry tool output and the prompt,
// whose words are not the client's. Claude Code's result line is kept
// whole for claudeResult.
func outputLines(output []byte) []string {
	output = stripANSI(output)
	var lines []string
	for _, l := range bytes.Split(output, []byte("\n")) {
		s := strings.TrimSpace(strings.ReplaceAll(string(l), "\r", ""))
		if s == "" || strings.HasPrefix(s, NotePrefix) {
			continue
		}
		if strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}") {
			if msg, ok := eventError(s); ok {
				lines = append(lines, msg)
			} else if strings.Contains(s, `"type":"result"`) && strings.Contains(s, `"is_error"`) {
				lines = append(lines, s)
			}
			continue
		}
		lines = append(lines, s)
	}
	return lines
}

// eventError returns the message of a JSON event line that reports an
// error: a "type" naming an error or a failure (Codex's "error" and
// "turn.failed", opencode's "error"), with its message; Claude Code's
// api_retry event, as "Attempt N of M failed with status S (kind);
// retrying"; a "result" event whose status is "error" (Gemini's
// stream-json), with its message.
func eventError(line string) (string, bool) {
	var ev struct {
		Type    string `json:"type"`
		Subtype string `json:"subtype"`
		Status  any    `json:"status"`
	}
	if json.Unmarshal([]byte(line), &ev) != nil {
		return "", false
	}
	if ev.Type == "system" && ev.Subtype == "api_retry" {
		return apiRetry(line)
	}
	t := strings.ToLower(ev.Type)
	isError := strings.Contains(t, "error") || strings.Contains(t, "failed") || t == "result" && ev.Status == "error"
	if !isError {
		return "", false
	}
	var v any
	if json.Unmarshal([]byte(line), &v) != nil {
		return "", false
	}
	msg := apiErrorMessage(findMessage(v))
	return msg, msg != ""
}

// apiErrorMessage replaces the API's JSON error body inside a client's
// error message by the body's message. Gemini writes
// "[API Error: {\"error\":{…,\"message\":\"…\"}}]" or "[API Error:
// terminated]"; the brackets go too.
func apiErrorMessage(msg string) string {
	msg = strings.TrimSpace(msg)
	if m, ok := jsonMessage(msg); ok {
		msg = m
	}
	if strings.HasPrefix(msg, "[") && strings.HasSuffix(msg, "]") {
		msg = strings.TrimSpace(msg[1 : len(msg)-1])
	}
	return msg
}

// apiRetry renders Claude Code's stream-json api_retry event (one per
// retry of a failed model request) as a line a person reads.
func apiRetry(line string) (string, bool) {
	var r struct {
		Attempt    int    `json:"attempt"`
		MaxRetries int    `json:"max_retries"`
		Status     *int   `json:"error_status"`
		Error      string `json:"error"`
	}
	if json.Unmarshal([]byte(line), &r) != nil {
		return "", false
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Attempt %d", r.Attempt)
	if r.MaxRetries > 0 {
		fmt.Fprintf(&b, " of %d", r.MaxRetries)
	}
	b.WriteString(" failed")
	if r.Status != nil && *r.Status > 0 {
		fmt.Fprintf(&b, " with status %d", *r.Status)
	}
	if r.Error != "" {
		fmt.Fprintf(&b, " (%s)", r.Error)
	}
	b.WriteString("; retrying")
	return b.String(), true
}

func findFailureWords(lines []string) string {
	for _, w := range failureWords() {
		for i := len(lines) - 1; i >= 0; i-- {
			if strings.Contains(strings.ToLower(lines[i]), w) {
				return lines[i]
			}
		}
	}
	return ""
}

// claudeResultLine is the part of Claude Code's final JSON result (from
// --output-format json, or the last event of stream-json) that matters.
type claudeResultLine struct {
	Type    string `json:"type"`
	Subtype string `json:"subtype"`
	IsError bool   `json:"is_error"`
	Result  string `json:"result"`
}

func (r claudeResultLine) reason() string {
	s := strings.TrimSpace(r.Result)
	if first, _, _ := strings.Cut(s, "\n"); first != "" {
		if m, ok := jsonMessage(first); ok {
			s = m
		}
	}
	if s == "" {
		s = "claude reported an error"
		if r.Subtype != "" && r.Subtype != "success" {
			s = fmt.Sprintf("claude reported an error (%s)", r.Subtype)
		}
	}
	first, _, _ := strings.Cut(s, "\n")
	return clip(strings.TrimSpace(first), MaxReasonBytes)
}

// claudeResult finds the last JSON result object in the output.
func claudeResult(lines []string) (claudeResultLine, bool) {
	for i := len(lines) - 1; i >= 0; i-- {
		l := lines[i]
		if !strings.HasPrefix(l, "{") || !strings.Contains(l, `"result"`) {
			continue
		}
		var r claudeResultLine
		if json.Unmarshal([]byte(l), &r) == nil && r.Type == "result" {
			return r, true
		}
	}
	return claudeResultLine{}, false
}

// clip cuts s to at most n bytes, at a word boundary when there is one in
// the second half, else on a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	if sp := strings.LastIndexAny(s[:cut+1], " \t"); sp > n/2 {
		cut = sp
	}
	return strings.TrimRight(s[:cut], " \t,;:") + "…"
}
