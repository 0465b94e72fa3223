package launch

import (
	"strings"
	"testing"
)

// Output as the pinned clients printed it, in their streaming formats,
// against the scripted model server (trimmed; paths shortened).
const (
	claudeStreamRetrySample = `{"type":"system","subtype":"init","cwd":"/wt","session_id":"s","tools":["Bash","Edit","Write"],"model":"claude-opus-5-5","permissionMode":"bypassPermissions"}
{"type":"system","subtype":"api_retry","attempt":1,"max_retries":10,"retry_delay_ms":1066,"error_status":429,"error":"rate_limit","session_id":"s","uuid":"u1"}
{"type":"system","subtype":"api_retry","attempt":2,"max_retries":10,"retry_delay_ms":1119,"error_status":500,"error":"server_error","session_id":"s","uuid":"u2"}
`
	claudeStreamEditSample = `{"type":"system","subtype":"init","cwd":"/wt","session_id":"s","tools":["Bash","Edit","Write"],"model":"claude-opus-5-5"}
{"type":"assistant","message":{"content":[{"id":"toolu_0","input":{"file_path":"/wt/notes/hello.txt","content":"hello\n"},"name":"Write","type":"tool_use"}],"id":"msg","model":"scripted-model","role":"assistant","type":"message","usage":{"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"input_tokens":1007,"output_tokens":1}},"session_id":"s"}
{"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_0","type":"tool_result","content":"File created successfully at: /wt/notes/hello.txt"}]},"session_id":"s"}
{"type":"assistant","message":{"content":[{"id":"toolu_1","input":{"command":"git add -A && git commit -q -m 'Add notes/hello.txt'","description":"commit the change"},"name":"Bash","type":"tool_use"}],"id":"msg","model":"scripted-model","role":"assistant","type":"message","usage":{"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"input_tokens":1107,"output_tokens":1}},"session_id":"s"}
`
	geminiStreamRetrySample = `Warning: 256-color support not detected. Using a terminal with at least 256-color support is recommended for a better visual experience.
YOLO mode is enabled. All tool calls will be automatically approved.
Ripgrep is not available. Falling back to GrepTool.
{"type":"init","timestamp":"2026-11-27T09:44:35.300Z","session_id":"s","model":"scripted-model"}
{"type":"message","timestamp":"2026-11-27T09:44:35.314Z","role":"user","content":"Write notes/hello.txt"}
Attempt 2 failed with status 500. Retrying with backoff... _ApiError: {"error":{"code":500,"message":"internal error: the scripted model server failed on purpose","status":"INTERNAL"}}
    at throwErrorIfNotOK (file:///clients/node_modules/@google/gemini-cli/bundle/chunk-JDPZ4CE3.js:267833:24)
    at process.processTicksAndRejections (node:internal/process/task_queues:95:5)
    at async file:///clients/node_modules/@google/gemini-cli/bundle/chunk-JDPZ4CE3.js:267596:7
    at async retryWithBackoff (file:///clients/node_modules/@google/gemini-cli/bundle/chunk-JDPZ4CE3.js:308039:23)
    at async Turn.run (file:///clients/node_modules/@google/gemini-cli/bundle/chunk-JDPZ4CE3.js:333001:24) {
  status: 500
}
`
	geminiStreamUnauthorizedSample = `YOLO mode is enabled. All tool calls will be automatically approved.
{"type":"init","timestamp":"2026-11-27T09:40:24.579Z","session_id":"s","model":"scripted-model"}
Error when talking to Gemini API Full report available at: /tmp/gemini-client-error.json _ApiError: {"error":{"code":401,"message":"invalid API key: the scripted model server rejects the key","status":"UNAUTHENTICATED"}}
    at throwErrorIfNotOK (file:///clients/node_modules/@google/gemini-cli/bundle/chunk-JDPZ4CE3.js:267833:24)
  status: 401
}
{"type":"result","timestamp":"2026-11-27T09:40:26.784Z","status":"error","error":{"type":"unknown","message":"[API Error: {\"error\":{\"code\":401,\"message\":\"invalid API key: the scripted model server rejects the key\",\"status\":\"UNAUTHENTICATED\"}}]"},"stats":{"total_tokens":0,"input_tokens":0,"output_tokens":0,"cached":0,"input":0,"models":{}}}
`
	codexStreamSample = `WARNING: proceeding, even though we could not create PATH aliases: Refusing to create helper binaries under temporary dir "/tmp"
Reading additional input from stdin...
{"type":"thread.started","thread_id":"t"}
{"type":"item.completed","item":{"id":"item_0","type":"error","message":"Model metadata for ` + "`scripted-model`" + ` not found. Defaulting to fallback metadata; this can degrade performance and cause issues."}}
{"type":"turn.started"}
{"type":"item.started","item":{"id":"item_2","type":"command_execution","command":"/bin/bash -lc \"git add -A && git commit -q -m 'Add notes/hello.txt'\"","aggregated_output":"","exit_code":null,"status":"in_progress"}}
`
)

func TestReadVerdictTellingLine(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    Client
		exit int
		out  string
		want string
	}{
		{"claude retrying when the time ran out", ClaudeCode, 124, claudeStreamRetrySample + "[agentmine] timed out after 60s\n",
			"timed out; last error: Attempt 2 of 10 failed with status 500 (server_error); retrying"},
		{"claude silent in a tool call", ClaudeCode, 124, claudeStreamEditSample,
			"timed out; last event: assistant: Bash git add -A && git commit -q -m 'Add notes/hello.txt'"},
		{"gemini retrying, then a stack trace and a lone brace", Gemini, 124, geminiStreamRetrySample,
			"timed out; last error: Attempt 2 failed with status 500. Retrying with backoff... _ApiError: internal error: the scripted model server failed on purpose"},
		{"gemini refused key, stream-json result", Gemini, 1, geminiStreamUnauthorizedSample,
			"API Error: invalid API key: the scripted model server rejects the key"},
		{"codex in a command, stdin note and warning are noise", Codex, 124, codexStreamSample,
			`timed out; last event: item.started: command_execution /bin/bash -lc "git add -A && git commit -q -m 'Add notes/hello.txt'"`},
		{"codex retrying", Codex, 130, codexStreamSample + `{"type":"error","message":"Reconnecting... 1/5 (exceeded retry limit, last status: 429 Too Many Requests)"}` + "\n",
			"interrupted; last error: Reconnecting... 1/5 (exceeded retry limit, last status: 429 Too Many Requests)"},
		{"gemini stream cut", Gemini, 1, `{"type":"init","session_id":"s","model":"m"}
{"type":"result","status":"error","error":{"type":"unknown","message":"[API Error: terminated]"},"stats":{"input_tokens":0}}
`, "API Error: terminated"},
		{"gemini waiting for the model", Gemini, 124, `{"type":"init","session_id":"s","model":"m"}
{"type":"message","role":"user","content":"Write notes/hello.txt"}
`, "timed out; last event: message/user"},
		{"only noise", Custom, 3, "Warning: something is deprecated\n(node:12) ExperimentalWarning: fetch\nReading additional input from stdin...\n}\n", ""},
		{"a plain last line still explains", Custom, 3, "compiling\nlinker gave up on main.o\n}\n", "linker gave up on main.o"},
	} {
		v := ReadVerdict(tc.c, tc.exit, []byte(tc.out))
		if !v.Failed || v.Reason != tc.want {
			t.Errorf("%s:\n got  %q\n want %q", tc.name, v.Reason, tc.want)
		}
	}
}

func TestReadUsageFromStreams(t *testing.T) {
	// Claude Code's assistant events carry each request's usage; only the
	// result event's total counts.
	out := claudeStreamEditSample + claudeResultSample + "\n"
	u, ok := ReadUsage(ClaudeCode, []byte(out))
	if !ok || u.InputTokens != 3321 || u.OutputTokens != 69 {
		t.Fatalf("claude stream-json usage %+v, %v", u, ok)
	}
	if u, ok := ReadUsage(ClaudeCode, []byte(claudeStreamEditSample)); ok {
		t.Fatalf("usage %+v read from a stream without a result", u)
	}
}

func TestNoiseLine(t *testing.T) {
	for _, l := range []string{"}", "},", "])", "Reading additional input from stdin...", "WARNING: proceeding, even though",
		"at async file:///x/chunk.js:1:2", "at Object.<anonymous> (/x/y.js:3:4)", `{"type":"turn.started"}`} {
		if !noiseLine(l) {
			t.Errorf("%q is not noise", l)
		}
	}
	for _, l := range []string{"Error: Incorrect API key provided", "attempt 3 failed", "at least one test failed", "error: unknown option '--x'"} {
		if noiseLine(l) {
			t.Errorf("%q is noise", l)
		}
	}
	if !strings.Contains(lastEvent([]byte(codexStreamSample)), "command_execution") {
		t.Errorf("lastEvent of codex: %q", lastEvent([]byte(codexStreamSample)))
	}
}
