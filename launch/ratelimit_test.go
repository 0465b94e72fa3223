package launch

import (
	"testing"
	"time"
)

func TestReadRateLimitClientsWords(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		name   string
		c      Client
		out    string
		until  time.Time
		reason string
	}{
		{"claude result", ClaudeCode, `{"type":"system","subtype":"init"}` + "\n" +
			`{"type":"result","subtype":"success","is_error":true,"result":"Claude AI usage limit reached|1764255600"}`,
			time.Unix(1764255600, 0), "Claude AI usage limit reached|1764255600"},
		{"claude api 429", ClaudeCode, `{"type":"result","subtype":"success","is_error":true,"result":"API Error: 429 {\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\",\"message\":\"Number of requests has exceeded your rate limit\"}}"}`,
			time.Time{}, "API Error: 429 Number of requests has exceeded your rate limit"},
		{"codex usage limit", Codex, `{"type":"thread.started"}` + "\n" +
			`{"type":"error","message":"You've hit your usage limit. Upgrade to Pro, or try again in 2 hours 30 minutes."}` + "\n" +
			`{"type":"turn.failed","error":{"message":"You've hit your usage limit. Upgrade to Pro, or try again in 2 hours 30 minutes."}}`,
			now.Add(150 * time.Minute), "You've hit your usage limit. Upgrade to Pro, or try again in 2 hours 30 minutes."},
		{"codex 429", Codex, `{"type":"error","message":"exceeded retry limit, last status: 429 Too Many Requests"}`,
			time.Time{}, "exceeded retry limit, last status: 429 Too Many Requests"},
		{"gemini quota", Gemini, "Attempt 1 failed with status 429. Retrying with backoff...\n" +
			`{"type":"result","status":"error","error":{"type":"Error","message":"[API Error: {\"error\":{\"code\":429,\"message\":\"Quota exceeded for metric generate_content. Please retry in 23.5s.\",\"status\":\"RESOURCE_EXHAUSTED\"}}]"}}`,
			now.Add(23500 * time.Millisecond), "API Error: Quota exceeded for metric generate_content. Please retry in 23.5s."},
		{"opencode", OpenCode, `{"type":"error","error":{"name":"APIError","data":{"message":"Usage limit reached. It will reset in 3 hours 5 minutes."}}}`,
			now.Add(3*time.Hour + 5*time.Minute), "Usage limit reached. It will reset in 3 hours 5 minutes."},
		{"custom report", Custom, "working\n" + `{"agentmine":"rate_limit","message":"quota used","retry_after":1.5}` + "\nbye",
			now.Add(1500 * time.Millisecond), "quota used"},
		{"custom reset", Custom, `{"agentmine":"rate_limit","reset":"2026-11-27T13:00:00Z"}`,
			time.Date(2026, 11, 27, 13, 0, 0, 0, time.UTC), "the client reported a rate limit"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rl, ok := ReadRateLimit(c.c, 1, []byte(c.out), now)
			if !ok {
				t.Fatalf("not recognised as a rate limit")
			}
			if !rl.Until.Equal(c.until) || rl.Reason != c.reason {
				t.Errorf("got until %v reason %q, want %v %q", rl.Until, rl.Reason, c.until, c.reason)
			}
			if _, ok := ReadRateLimit(c.c, 0, []byte(c.out), now); ok {
				t.Errorf("a run that exited 0 is never rate limited")
			}
		})
	}
}

func TestReadRateLimitOtherFailures(t *testing.T) {
	now := time.Now()
	for _, c := range []struct {
		c   Client
		out string
	}{
		{ClaudeCode, `{"type":"result","is_error":true,"result":"Invalid API key · Please run /login"}`},
		{Codex, `{"type":"error","message":"stream disconnected before completion"}`},
		{Custom, "write /x: disk quota exceeded\n"},
		{Custom, "rate limit exceeded\n"}, // a custom client reports it with its JSON line only
		{Gemini, "error at line 429 of foo.go\n"},
		// A 429 the client got past, then another error: not a limit.
		{Gemini, "Attempt 1 failed with status 429. Retrying with backoff...\nAttempt 2 failed with status 500. Retrying with backoff...\nError: internal error\n"},
		// Tool output inside events is not the client's words.
		{Codex, `{"type":"item.completed","item":{"type":"command_execution","aggregated_output":"TestRateLimit FAIL: too many requests"}}`},
	} {
		if rl, ok := ReadRateLimit(c.c, 1, []byte(c.out), now); ok {
			t.Errorf("%s %q: recognised as a rate limit (%+v)", c.c, c.out, rl)
		}
	}
}

func TestResetClock(t *testing.T) {
	now := time.Date(2026, 11, 27, 16, 0, 0, 0, time.UTC)
	got := resetTime("You've hit your usage limit. Try again at 3:04 PM.", now)
	if want := time.Date(2026, 11, 28, 15, 4, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("got %v, want %v", got, want)
	}
	got = resetTime("5-hour limit reached ∙ resets 7pm", now)
	if want := time.Date(2026, 11, 27, 19, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestCustomUsage(t *testing.T) {
	out := "hello\n" + `{"agentmine":"usage","input_tokens":100,"output_tokens":20,"cost_usd":0.5}` + "\n" +
		`{"agentmine":"usage","input_tokens":1,"output_tokens":2,"cache_read_tokens":3}` + "\n"
	u, ok := ReadUsage(Custom, []byte(out))
	if !ok || u != (Usage{InputTokens: 101, OutputTokens: 22, CacheReadTokens: 3, CostUSD: 0.5}) {
		t.Fatalf("got %+v %v", u, ok)
	}
	m := newUsageMeter(Custom)
	m.write([]byte(out[:30]))
	m.write([]byte(out[30:]))
	if got := m.usage(); got == nil || *got != u {
		t.Fatalf("meter got %+v", got)
	}
	if _, ok := ReadUsage(ClaudeCode, []byte(out)); ok {
		t.Fatalf("a built-in client's output is not read for custom reports")
	}
}
