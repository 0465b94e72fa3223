package launch

import (
	"bytes"
	"encoding/json"
	"strings"
)

// Usage is what a client reported, in its machine-readable output, about
// the tokens a run used and what it cost. Fields a client does not report
// stay zero.
type Usage struct {
	// InputTokens counts prompt tokens that were not read from a cache.
	InputTokens int64
	// OutputTokens counts generated tokens.
	OutputTokens int64
	// CacheReadTokens and CacheWriteTokens count prompt tokens read from
	// and written to the provider's prompt cache.
	CacheReadTokens  int64
	CacheWriteTokens int64
	// CostUSD is the cost the client computed, in US dollars.
	CostUSD float64
}

// ReadUsage reads the usage client c reported in its output (the session
// log): Claude Code's result event (usage, total_cost_usd; stream-json or
// json), Codex's --json turn.completed events (summed), Gemini's
// stream-json result event (its stats; or the -o json document's stats,
// summed over models) and opencode's --format json step_finish events
// (summed). ok is false when the output holds no usage report.
func ReadUsage(c Client, output []byte) (u Usage, ok bool) {
	output = stripANSI(output)
	switch c {
	case ClaudeCode:
		return claudeUsage(output)
	case Codex:
		return codexUsage(output)
	case Gemini:
		return geminiUsage(output)
	case OpenCode:
		return opencodeUsage(output)
	case Custom:
		return customUsage(output)
	}
	return Usage{}, false
}

// jsonLines calls f with every line of output that is a JSON object.
func jsonLines(output []byte, f func(line []byte)) {
	for _, l := range bytes.Split(output, []byte("\n")) {
		l = bytes.TrimSpace(l)
		if len(l) > 1 && l[0] == '{' && l[len(l)-1] == '}' {
			f(l)
		}
	}
}

func claudeUsage(output []byte) (Usage, bool) {
	var found *Usage
	jsonLines(output, func(l []byte) {
		if !bytes.Contains(l, []byte(`"result"`)) {
			return
		}
		var r struct {
			Type  string `json:"type"`
			Usage *struct {
				Input      int64 `json:"input_tokens"`
				Output     int64 `json:"output_tokens"`
				CacheRead  int64 `json:"cache_read_input_tokens"`
				CacheWrite int64 `json:"cache_creation_input_tokens"`
			} `json:"usage"`
			Cost float64 `json:"total_cost_usd"`
		}
		if json.Unmarshal(l, &r) != nil || r.Type != "result" || r.Usage == nil {
			return
		}
		found = &Usage{InputTokens: r.Usage.Input, OutputTokens: r.Usage.Output, CacheReadTokens: r.Usage.CacheRead,
			CacheWriteTokens: r.Usage.CacheWrite, CostUSD: r.Cost}
	})
	if found == nil {
		return Usage{}, false
	}
	return *found, true
}

func codexUsage(output []byte) (Usage, bool) {
	var u Usage
	ok := false
	jsonLines(output, func(l []byte) {
		var ev struct {
			Type  string `json:"type"`
			Usage *struct {
				Input      int64 `json:"input_tokens"`
				Cached     int64 `json:"cached_input_tokens"`
				CacheWrite int64 `json:"cache_write_input_tokens"`
				Output     int64 `json:"output_tokens"`
			} `json:"usage"`
		}
		if json.Unmarshal(l, &ev) != nil || ev.Type != "turn.completed" || ev.Usage == nil {
			return
		}
		ok = true
		// Codex counts cached tokens inside input_tokens.
		u.InputTokens += ev.Usage.Input - ev.Usage.Cached
		u.CacheReadTokens += ev.Usage.Cached
		u.CacheWriteTokens += ev.Usage.CacheWrite
		u.OutputTokens += ev.Usage.Output
	})
	return u, ok
}

// geminiUsage reads the stats of Gemini's last stream-json "result" event
// or, failing that, of the last JSON document it printed (-o json prints one
// indented object at the end).
func geminiUsage(output []byte) (Usage, bool) {
	if u, ok := geminiStreamUsage(output); ok {
		return u, true
	}
	var doc struct {
		Stats *struct {
			Models map[string]struct {
				Tokens struct {
					Input      int64 `json:"input"`
					Prompt     int64 `json:"prompt"`
					Candidates int64 `json:"candidates"`
					Cached     int64 `json:"cached"`
					Thoughts   int64 `json:"thoughts"`
				} `json:"tokens"`
			} `json:"models"`
		} `json:"stats"`
	}
	if !lastJSONDocument(output, &doc) || doc.Stats == nil {
		return Usage{}, false
	}
	var u Usage
	for _, m := range doc.Stats.Models {
		t := m.Tokens
		in := t.Input
		if in == 0 && t.Prompt > 0 {
			in = t.Prompt - t.Cached
		}
		u.InputTokens += in
		u.OutputTokens += t.Candidates + t.Thoughts
		u.CacheReadTokens += t.Cached
	}
	return u, true
}

// geminiStreamUsage reads the stats of the last "result" event of Gemini's
// -o stream-json: input_tokens counts every prompt token, cached the ones
// read from the cache, and input the others.
func geminiStreamUsage(output []byte) (Usage, bool) {
	var found *Usage
	jsonLines(output, func(l []byte) {
		if !bytes.Contains(l, []byte(`"result"`)) || !bytes.Contains(l, []byte(`"stats"`)) {
			return
		}
		var ev struct {
			Type  string `json:"type"`
			Stats *struct {
				InputTokens  int64  `json:"input_tokens"`
				OutputTokens int64  `json:"output_tokens"`
				Cached       int64  `json:"cached"`
				Input        *int64 `json:"input"`
			} `json:"stats"`
		}
		if json.Unmarshal(l, &ev) != nil || ev.Type != "result" || ev.Stats == nil {
			return
		}
		st := ev.Stats
		in := st.InputTokens - st.Cached
		if st.Input != nil {
			in = *st.Input
		}
		found = &Usage{InputTokens: in, OutputTokens: st.OutputTokens, CacheReadTokens: st.Cached}
	})
	if found == nil {
		return Usage{}, false
	}
	return *found, true
}

// lastJSONDocument decodes into v the last JSON object in output that
// starts at the beginning of a line and runs to the end of the output (or
// to the next line that starts another object).
func lastJSONDocument(output []byte, v any) bool {
	starts := []int{}
	if bytes.HasPrefix(output, []byte("{")) {
		starts = append(starts, 0)
	}
	for i := 0; i+1 < len(output); i++ {
		if output[i] == '\n' && output[i+1] == '{' {
			starts = append(starts, i+1)
		}
	}
	for i := len(starts) - 1; i >= 0; i-- {
		dec := json.NewDecoder(bytes.NewReader(output[starts[i]:]))
		if dec.Decode(v) == nil {
			return true
		}
	}
	return false
}

func opencodeUsage(output []byte) (Usage, bool) {
	var u Usage
	ok := false
	jsonLines(output, func(l []byte) {
		if !bytes.Contains(l, []byte(`"step_finish"`)) {
			return
		}
		var ev struct {
			Type string `json:"type"`
			Part struct {
				Tokens *struct {
					Input  int64 `json:"input"`
					Output int64 `json:"output"`
					Reason int64 `json:"reasoning"`
					Cache  struct {
						Read  int64 `json:"read"`
						Write int64 `json:"write"`
					} `json:"cache"`
				} `json:"tokens"`
				Cost float64 `json:"cost"`
			} `json:"part"`
		}
		if json.Unmarshal(l, &ev) != nil || ev.Type != "step_finish" || ev.Part.Tokens == nil {
			return
		}
		ok = true
		t := ev.Part.Tokens
		u.InputTokens += t.Input
		u.OutputTokens += t.Output + t.Reason
		u.CacheReadTokens += t.Cache.Read
		u.CacheWriteTokens += t.Cache.Write
		u.CostUSD += ev.Part.Cost
	})
	return u, ok
}

// jsonMessage returns the "message" of a JSON error object embedded in a
// line (`API Error: 401 {"type":"error","error":{"message":"…"}}`), and
// the line with the object replaced by it; ok is false when the line holds
// no such object.
func jsonMessage(line string) (string, bool) {
	i := strings.IndexByte(line, '{')
	if i < 0 {
		return line, false
	}
	dec := json.NewDecoder(strings.NewReader(line[i:]))
	var v any
	if dec.Decode(&v) != nil {
		return line, false
	}
	msg := findMessage(v)
	if msg == "" {
		return line, false
	}
	prefix := strings.TrimSpace(line[:i])
	rest := strings.TrimSpace(line[i+int(dec.InputOffset()):])
	out := msg
	if prefix != "" {
		out = prefix + " " + msg
	}
	if rest != "" {
		out += " " + rest
	}
	return out, true
}

// findMessage looks for an error message in a decoded JSON value:
// "message" (also under "error"), else "error" when it is a string.
func findMessage(v any) string {
	m, ok := v.(map[string]any)
	if !ok {
		return ""
	}
	if s, ok := m["message"].(string); ok && s != "" {
		return s
	}
	switch e := m["error"].(type) {
	case string:
		return e
	case map[string]any:
		if s := findMessage(e); s != "" {
			return s
		}
	}
	if d, ok := m["data"].(map[string]any); ok {
		return findMessage(d)
	}
	return ""
}
