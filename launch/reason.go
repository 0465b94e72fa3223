package launch

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/git-agentmine/git-agentmine/exitcode"
)

// Choosing the one line that explains a failure or a timeout when the
// client named no known failure: its last error or retry line, else its
// last line that is not noise, else what its last JSON event was doing.

// fallbackReason is ReadVerdict's reason when neither a result, nor a
// documented exit code, nor a known failure phrase explains the run.
func fallbackReason(exitCode int, lines []string, output []byte) string {
	line, telling := tellingLine(lines)
	event := ""
	if line == "" {
		event = lastEvent(output)
	}
	var what string
	switch {
	case telling:
		what = "last error: " + line
	case line != "":
		what = "last output: " + line
	case event != "":
		what = "last event: " + event
	}
	switch {
	case exitCode == exitcode.Timeout && what != "":
		return "timed out; " + what
	case exitCode == exitcode.Timeout:
		return "timed out with no output"
	case exitCode == exitcode.Interrupted && what != "":
		return "interrupted; " + what
	case exitCode == exitcode.Interrupted:
		return "interrupted with no output"
	case line != "":
		return line
	case event != "":
		return "last event: " + event
	}
	return ""
}

// tellingLine returns the client's last line that reports an error or a
// retry (telling is true), else its last line that is not noise, else "".
// JSON lines left in lines (Claude Code's result) are never chosen.
func tellingLine(lines []string) (line string, telling bool) {
	for i := len(lines) - 1; i >= 0; i-- {
		l := lines[i]
		if noiseLine(l) {
			continue
		}
		if tellsError(l) {
			return l, true
		}
		if line == "" {
			line = l
		}
	}
	return line, false
}

// tellsError reports whether a line of output reports an error, a failed
// attempt or a retry.
func tellsError(line string) bool {
	lower := strings.ToLower(line)
	for _, w := range []string{"error", "fail", "fatal", "exception", "panic", "retry", "retrying", "reconnecting",
		"attempt ", "refused", "denied", "unauthori", "forbidden", "invalid", "timed out", "timeout", "rate limit",
		"quota", "overloaded", "unavailable"} {
		if strings.Contains(lower, w) {
			return true
		}
	}
	return false
}

// noisePhrases are lines the clients print on every run, which never
// explain one (lower case; the version they were seen with).
func noisePhrases() []string {
	return []string{
		"reading additional input from stdin", // codex 0.169.0, stdin not a terminal
		"reading prompt from stdin",           // codex 0.169.0, prompt "-"
		"yolo mode is enabled",                // gemini 0.61.0
		"ripgrep is not available",            // gemini 0.61.0
		"loaded cached credentials",           // gemini
	}
}

// noiseLine reports whether a line never explains a run: a known startup
// line, a warning, a JavaScript stack frame, the closing punctuation of a
// printed object, or a JSON event (only the messages of error events are
// left in the lines by outputLines).
func noiseLine(line string) bool {
	lower := strings.ToLower(line)
	if strings.Trim(line, "{}[](),;") == "" || strings.HasPrefix(line, "{") {
		return true
	}
	for _, p := range []string{"warning:", "warning ", "warn:", "(node:", "deprecationwarning"} {
		if strings.HasPrefix(lower, p) {
			return true
		}
	}
	if strings.HasPrefix(line, "at ") && (strings.HasSuffix(line, ")") || strings.Contains(line, "file://") ||
		strings.Contains(line, "node:") || strings.Contains(line, ".js:")) {
		return true
	}
	for _, p := range noisePhrases() {
		if strings.Contains(lower, p) {
			return true
		}
	}
	return false
}

// lastEvent summarises the last JSON event of the output (Claude Code's
// stream-json, Codex's --json, Gemini's stream-json, opencode's --format
// json): its type (with its subtype or role) and, when it is a tool call,
// the tool and its command or file. "" when the output holds no event.
func lastEvent(output []byte) string {
	output = stripANSI(output)
	lines := bytes.Split(output, []byte("\n"))
	for i := len(lines) - 1; i >= 0; i-- {
		l := bytes.TrimSpace(lines[i])
		if len(l) < 2 || l[0] != '{' || l[len(l)-1] != '}' {
			continue
		}
		var ev map[string]any
		if json.Unmarshal(l, &ev) != nil {
			continue
		}
		typ, _ := ev["type"].(string)
		if typ == "" {
			continue
		}
		for _, k := range []string{"subtype", "role"} {
			if sub, _ := ev[k].(string); sub != "" {
				typ += "/" + sub
			}
		}
		if tool := eventTool(ev); tool != "" {
			typ += ": " + tool
		}
		return clip(strings.Join(strings.Fields(typ), " "), MaxReasonBytes/2)
	}
	return ""
}

// eventTool names the tool an event calls and what it works on, as the
// clients put them: Claude Code's message content (tool_use name and
// input), Gemini's tool_name and parameters, opencode's part.tool and
// part.state.input, Codex's item (command_execution and its command).
func eventTool(ev map[string]any) string {
	obj := func(m map[string]any, k string) map[string]any {
		v, _ := m[k].(map[string]any)
		return v
	}
	str := func(m map[string]any, k string) string {
		v, _ := m[k].(string)
		return v
	}
	name, input := str(ev, "tool_name"), obj(ev, "parameters")
	if part := obj(ev, "part"); part != nil && str(part, "tool") != "" {
		name, input = str(part, "tool"), obj(obj(part, "state"), "input")
	}
	if item := obj(ev, "item"); item != nil && str(item, "type") != "" {
		name, input = str(item, "type"), item
	}
	if msg := obj(ev, "message"); msg != nil {
		content, _ := msg["content"].([]any)
		for _, c := range content {
			if b, ok := c.(map[string]any); ok && str(b, "type") == "tool_use" {
				name, input = str(b, "name"), obj(b, "input")
			}
		}
	}
	if name == "" {
		return ""
	}
	for _, k := range []string{"command", "cmd", "file_path", "filePath", "path"} {
		if v := str(input, k); v != "" {
			return fmt.Sprintf("%s %s", name, v)
		}
	}
	return name
}
