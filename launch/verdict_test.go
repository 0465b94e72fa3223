package launch

import (
	"strings"
	"testing"
)

func TestReadVerdict(t *testing.T) {
	claudeErr := `{"type":"result","subtype":"success","is_error":true,"result":"Not logged in · Please run /login","session_id":"x"}`
	claudeOK := `{"type":"result","subtype":"success","is_error":false,"result":"Done.\nAll tests pass."}`
	cases := []struct {
		name   string
		c      Client
		code   int
		out    string
		failed bool
		reason string
	}{
		{"claude not logged in", ClaudeCode, 1, "[agentmine] started\n" + claudeErr + "\n[agentmine] ended: exit code 1\n", true, "Not logged in · Please run /login"},
		{"claude error despite exit 0", ClaudeCode, 0, claudeErr, true, "Not logged in · Please run /login"},
		{"claude success", ClaudeCode, 0, claudeOK, false, ""},
		{"claude empty error result", ClaudeCode, 0, `{"type":"result","subtype":"error_max_turns","is_error":true}`, true, "claude reported an error (error_max_turns)"},
		{"claude as root", ClaudeCode, 1, "--dangerously-skip-permissions cannot be used with root/sudo privileges for security reasons", true, "--dangerously-skip-permissions cannot be used with root/sudo privileges for security reasons"},
		{"claude unknown flag", ClaudeCode, 1, "error: unknown option '--bogus'\n", true, "error: unknown option '--bogus'"},
		{"gemini auth", Gemini, 41, "YOLO mode is enabled.\nPlease set an Auth method in your settings.json\n", true, "gemini exit 41: authentication not configured: Please set an Auth method in your settings.json"},
		{"gemini untrusted", Gemini, 55, "\x1b[31mGemini CLI is not running in a trusted directory. To proceed...\x1b[0m\n", true, "gemini exit 55: untrusted folder: Gemini CLI is not running in a trusted directory. To proceed..."},
		{"gemini unknown arg", Gemini, 1, "Unknown argument: bogus\nUsage: gemini [options]\n  -d, --debug\n", true, "Unknown argument: bogus"},
		{"codex removed flag", Codex, 2, "error: unexpected argument '--full-auto' found\n\n  tip: ...\nUsage: codex exec\n", true, "error: unexpected argument '--full-auto' found"},
		{"codex no network", Codex, 124, "ERROR: Reconnecting... 5/5\nERROR: Reconnecting... waiting for network\n[agentmine] timed out after 8s\n", true, "ERROR: Reconnecting... waiting for network"},
		{"unknown words fall back to last line", Custom, 7, "step 1\nsomething odd\n", true, "something odd"},
		{"silent timeout", OpenCode, 124, "[agentmine] timed out after 8s\n", true, "timed out with no output"},
		{"timeout with output", OpenCode, 124, "> build · big-pickle\n[agentmine] timed out after 8s\n", true, "timed out; last output: > build · big-pickle"},
		{"interrupted", Custom, 130, "working\n", true, "interrupted; last output: working"},
		{"silent failure", Custom, 3, "", true, ""},
		{"success ignores scary words", Custom, 0, "checked: unknown option handling\n", false, ""},
	}
	for _, tc := range cases {
		v := ReadVerdict(tc.c, tc.code, []byte(tc.out))
		if v.Failed != tc.failed || v.Reason != tc.reason {
			t.Errorf("%s: got %+v, want failed=%v reason=%q", tc.name, v, tc.failed, tc.reason)
		}
	}
	long := strings.Repeat("é", 300)
	v := ReadVerdict(Custom, 1, []byte(long))
	if len(v.Reason) > MaxReasonBytes || !strings.HasSuffix(v.Reason, "…") || !strings.HasPrefix(v.Reason, "éé") {
		t.Errorf("long reason not clipped on a rune boundary: %d bytes", len(v.Reason))
	}
}
