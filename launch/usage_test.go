package launch

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

// Output as the pinned clients printed it against the scripted model
// server (trimmed to the parts that matter).
const (
	claudeResultSample = `{"type":"result","subtype":"success","is_error":false,"total_cost_usd":0.014664,"usage":{"input_tokens":3321,"cache_creation_input_tokens":5,"cache_read_input_tokens":7,"output_tokens":69},"result":"Done: wrote hello.txt and committed it."}`
	codexEventsSample  = `{"type":"thread.started","thread_id":"t"}
{"type":"item.completed","item":{"id":"item_0","type":"error","message":"Model metadata for ` + "`scripted-model`" + ` not found."}}
{"type":"turn.started"}
{"type":"item.completed","item":{"id":"item_1","type":"command_execution","command":"echo api key","aggregated_output":"permission denied\n","exit_code":1,"status":"failed"}}
{"type":"turn.completed","usage":{"input_tokens":3321,"cached_input_tokens":21,"output_tokens":69,"reasoning_output_tokens":0}}
`
	geminiJSONSample = `YOLO mode is enabled. All tool calls will be automatically approved.
{
  "session_id": "s",
  "response": "Done",
  "stats": {
    "models": {
      "scripted-model": {
        "tokens": {"input": 3300, "prompt": 3321, "candidates": 69, "total": 3390, "cached": 21, "thoughts": 0, "tool": 0}
      }
    }
  }
}`
	// Gemini -o stream-json (0.61.0): events as they happen, then the result.
	geminiStreamSample = `Warning: 256-color support not detected. Using a terminal with at least 256-color support is recommended for a better visual experience.
YOLO mode is enabled. All tool calls will be automatically approved.
{"type":"init","timestamp":"2026-11-27T09:38:50.600Z","session_id":"s","model":"scripted-model"}
{"type":"message","timestamp":"2026-11-27T09:38:50.624Z","role":"user","content":"Write notes/hello.txt"}
{"type":"tool_use","timestamp":"2026-11-27T09:38:52.308Z","tool_name":"write_file","tool_id":"w0","parameters":{"content":"hello\n","file_path":"/wt/notes/hello.txt"}}
{"type":"tool_result","timestamp":"2026-11-27T09:38:52.923Z","tool_id":"w0","status":"success"}
{"type":"message","timestamp":"2026-11-27T09:38:54.750Z","role":"assistant","content":"Done: wrote notes/hello.txt and committed it.","delta":true}
{"type":"result","timestamp":"2026-11-27T09:38:54.802Z","status":"success","stats":{"total_tokens":3390,"input_tokens":3321,"output_tokens":69,"cached":21,"input":3300,"duration_ms":4203,"tool_calls":2,"models":{"scripted-model":{"total_tokens":3390,"input_tokens":3321,"output_tokens":69,"cached":21,"input":3300}}}}
`
	opencodeEventsSample = `{"type":"step_finish","part":{"type":"step-finish","tokens":{"total":1130,"input":1107,"output":23,"reasoning":0,"cache":{"write":0,"read":0}},"cost":0}}
{"type":"tool_use","part":{"tool":"bash","state":{"output":"Not logged in"}}}
{"type":"step_finish","part":{"type":"step-finish","tokens":{"total":1233,"input":1207,"output":26,"reasoning":2,"cache":{"write":3,"read":4}},"cost":0.5}}
`
)

func TestReadUsage(t *testing.T) {
	for _, tc := range []struct {
		c    Client
		out  string
		want Usage
	}{
		{ClaudeCode, "noise\n" + claudeResultSample + "\n", Usage{InputTokens: 3321, OutputTokens: 69, CacheReadTokens: 7, CacheWriteTokens: 5, CostUSD: 0.014664}},
		{Codex, codexEventsSample + codexEventsSample, Usage{InputTokens: 2 * 3300, OutputTokens: 2 * 69, CacheReadTokens: 2 * 21}},
		{Gemini, geminiJSONSample, Usage{InputTokens: 3300, OutputTokens: 69, CacheReadTokens: 21}},
		{Gemini, geminiStreamSample, Usage{InputTokens: 3300, OutputTokens: 69, CacheReadTokens: 21}},
		{OpenCode, opencodeEventsSample, Usage{InputTokens: 2314, OutputTokens: 51, CacheReadTokens: 4, CacheWriteTokens: 3, CostUSD: 0.5}},
	} {
		got, ok := ReadUsage(tc.c, []byte(tc.out))
		if !ok || got != tc.want {
			t.Errorf("%s: ReadUsage = %+v, %v; want %+v", tc.c, got, ok, tc.want)
		}
	}
	for _, c := range []Client{ClaudeCode, Codex, Gemini, OpenCode, Aider, Custom} {
		if u, ok := ReadUsage(c, []byte("Error: something\n{\"type\":\"other\"}\n")); ok {
			t.Errorf("%s: usage %+v read from output without a report", c, u)
		}
	}
}

func TestReadVerdictReasons(t *testing.T) {
	for _, tc := range []struct {
		c    Client
		exit int
		out  string
		want string
	}{
		// Claude Code puts the API's JSON error body into its result text.
		{ClaudeCode, 1, `{"type":"result","subtype":"success","is_error":true,"result":"Failed to authenticate. API Error: 401 {\"type\":\"error\",\"error\":{\"type\":\"authentication_error\",\"message\":\"invalid x-api-key\"}}"}`,
			"Failed to authenticate. API Error: 401 invalid x-api-key"},
		// Codex --json: the error event's message, not the tool output
		// ("permission denied") or the prompt.
		{Codex, 1, codexEventsSample + `{"type":"error","message":"unexpected status 401 Unauthorized: bad key"}
{"type":"turn.failed","error":{"message":"unexpected status 401 Unauthorized: bad key"}}
`, "unexpected status 401 Unauthorized: bad key"},
		// Gemini -o json: the API's error body inside the error message.
		{Gemini, 1, "Attempt 1 failed\n{\n  \"error\": {\n    \"type\": \"Error\",\n    \"message\": \"{\\\"error\\\":{\\\"code\\\":401,\\\"message\\\":\\\"invalid API key\\\",\\\"status\\\":\\\"UNAUTHENTICATED\\\"}}\",\n    \"code\": 401\n  }\n}",
			"invalid API key"},
		// opencode colours its error even with NO_COLOR.
		{OpenCode, 1, "\x1b[91m\x1b[1mError: \x1b[0mIncorrect API key provided\x1b[0m\n", "Error: Incorrect API key provided"},
		{OpenCode, 1, `{"type":"error","error":{"name":"APIError","data":{"message":"Unauthorized: bad key"}}}` + "\n", "Unauthorized: bad key"},
	} {
		v := ReadVerdict(tc.c, tc.exit, []byte(tc.out))
		if !v.Failed || v.Reason != tc.want {
			t.Errorf("%s: verdict %+v, want reason %q", tc.c, v, tc.want)
		}
	}
}

func TestClipAtWordBoundary(t *testing.T) {
	long := strings.Repeat("word ", 100)
	got := clip(long, MaxReasonBytes)
	if len(got) > MaxReasonBytes || !strings.HasSuffix(got, "word…") {
		t.Fatalf("clip cut inside a word or too long (%d bytes): %q", len(got), got)
	}
	one := strings.Repeat("x", 300)
	if got := clip(one, 50); len(got) > 50 || !strings.HasSuffix(got, "…") {
		t.Fatalf("clip of one long word: %q", got)
	}
}

// A client that prints a stall phrase is stopped at once and the line is
// kept, instead of running into its timeout.
func TestStallPhraseStopsWorker(t *testing.T) {
	scrubEnv(t)
	dir := t.TempDir()
	script := writeScript(t, dir, "stall", `printf 'starting\n\033[2mReconnecting... 1/5 (waiting for network)\033[0m\n'; exec sleep 600`)
	p, err := Start(context.Background(), Spec{Argv: []string{script}, LogPath: dir + "/log", Timeout: 10 * time.Minute,
		Grace: time.Second, Stalls: StallPhrases(Codex)})
	if err != nil {
		t.Fatal(err)
	}
	res := p.Wait()
	if res.TimedOut || !res.Stopped || res.Stalled != "Reconnecting... 1/5 (waiting for network)" {
		t.Fatalf("result %+v", res)
	}
	assertGroupGone(t, p.Pid())
	waitForLog(t, dir+"/log", "no progress possible")

	// Without stall phrases the same output is just output.
	p, err = Start(context.Background(), Spec{Argv: []string{writeScript(t, dir, "quiet", `echo "waiting for network"; exit 3`)}, Grace: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res := p.Wait(); res.Stopped || res.Stalled != "" || res.ExitCode != 3 {
		t.Fatalf("result %+v", res)
	}
}

// opencode keeps its reason in its own log directory.
func TestClientLogReason(t *testing.T) {
	home := t.TempDir()
	dir := home + "/.local/share/opencode/log"
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	start := time.Now().Add(-time.Minute)
	log := `timestamp=2026-11-23T09:19:19.452Z level=INFO run=b1 message="creating instance" directory=/tmp/r
timestamp=2026-11-23T09:19:20.452Z level=ERROR run=b1 message="stream error" error="AI_APICallError: Incorrect API key provided"
timestamp=2026-11-23T09:19:21.452Z level=INFO run=b1 message=done
`
	if err := os.WriteFile(dir+"/2026.log", []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"HOME=" + home, "XDG_DATA_HOME="}
	if got := ClientLogReason(OpenCode, env, start); got != "stream error: AI_APICallError: Incorrect API key provided" {
		t.Fatalf("ClientLogReason = %q", got)
	}
	if got := ClientLogReason(OpenCode, env, time.Now().Add(time.Hour)); got != "" {
		t.Fatalf("a log from before the run was read: %q", got)
	}
	if got := ClientLogReason(ClaudeCode, env, start); got != "" {
		t.Fatalf("claude has no such log: %q", got)
	}
}

// stall_timeout counts every streamed event as progress: a client that
// prints an event more often than the stall timeout runs to its end, one
// that goes silent after its first event is stopped as idle.
func TestStallTimeoutCountsStreamedEvents(t *testing.T) {
	scrubEnv(t)
	dir := t.TempDir()
	events := writeScript(t, dir, "events", `i=0
while [ $i -lt 15 ]; do
  printf '{"type":"system","subtype":"api_retry","attempt":%d,"max_retries":10,"error_status":500}\n' $i
  i=$((i+1)); sleep 0.2
done`)
	p, err := Start(context.Background(), Spec{Argv: []string{events}, LogPath: dir + "/events.log", Timeout: 10 * time.Minute,
		Grace: time.Second, StallTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res := p.Wait(); res.Idle || res.Stopped || res.ExitCode != 0 {
		t.Fatalf("a client streaming events was stopped: %+v", res)
	}
	silent := writeScript(t, dir, "silent", `printf '{"type":"system","subtype":"init"}\n'; exec sleep 600`)
	p, err = Start(context.Background(), Spec{Argv: []string{silent}, LogPath: dir + "/silent.log", Timeout: 10 * time.Minute,
		Grace: time.Second, StallTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res := p.Wait(); !res.Idle || !res.Stopped {
		t.Fatalf("a client silent after its first event was not stopped as idle: %+v", res)
	}
	assertGroupGone(t, p.Pid())
}

// Usage is read as the output streams: opencode's step_finish events are
// all counted even when the tool output between them has rotated the
// log, where reading the log's tail misses most of them.
func TestUsageReadWhileStreaming(t *testing.T) {
	scrubEnv(t)
	dir := t.TempDir()
	filler := strings.Repeat("x", 4000)
	script := writeScript(t, dir, "steps", `i=0
while [ $i -lt 40 ]; do
  printf '{"type":"tool_use","part":{"tool":"read","state":{"output":"%s"}}}\n' '`+filler+`'
  printf '{"type":"step_finish","part":{"type":"step-finish","tokens":{"input":100,"output":2,"reasoning":1,"cache":{"read":3,"write":0}},"cost":0.25}}\n'
  i=$((i+1))
done
printf '{"type":"step_finish","part":{"type":"step-finish","tokens":{"input":7,"output":0,"reasoning":0,"cache":{"read":0,"write":0}},"cost":0}}'`)
	log := dir + "/log"
	p, err := Start(context.Background(), Spec{Argv: []string{script}, LogPath: log, MaxLogBytes: 16 << 10, Grace: time.Second, Client: OpenCode})
	if err != nil {
		t.Fatal(err)
	}
	res := p.Wait()
	want := Usage{InputTokens: 40*100 + 7, OutputTokens: 40 * 3, CacheReadTokens: 40 * 3, CostUSD: 10}
	if res.Usage == nil || *res.Usage != want {
		t.Fatalf("usage %+v, want %+v", res.Usage, want)
	}
	tail, err := TailBytes(log, 64<<10)
	if err != nil {
		t.Fatal(err)
	}
	if u, _ := ReadUsage(OpenCode, tail); u.InputTokens >= want.InputTokens {
		t.Fatalf("the rotated log still held every report (%+v): the test proves nothing", u)
	}
	// A client without usage reports, or none named, reads none.
	p, err = Start(context.Background(), Spec{Argv: []string{script}, Grace: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res := p.Wait(); res.Usage != nil {
		t.Fatalf("usage %+v read without a client", res.Usage)
	}
}
