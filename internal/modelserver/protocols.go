package modelserver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// anthropic is the Messages API (Claude Code).
type anthropic struct{}

func (anthropic) name() string { return "anthropic" }

func (anthropic) parse(body []byte) (request, error) {
	var in struct {
		Stream   bool `json:"stream"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"input_schema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return request{}, err
	}
	if len(in.Messages) == 0 {
		return request{}, errNoMessages
	}
	req := request{stream: in.Stream, schema: map[string]json.RawMessage{}}
	for _, t := range in.Tools {
		req.tools = append(req.tools, t.Name)
		req.schema[t.Name] = t.InputSchema
	}
	for _, m := range in.Messages {
		var blocks []struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(m.Content, &blocks) == nil {
			for _, b := range blocks {
				if b.Type == "tool_result" {
					req.step++
				}
			}
		}
	}
	return req, nil
}

func (anthropic) message(model string, a answer, u Usage) map[string]any {
	content := []any{}
	stop := "end_turn"
	if a.tool != "" {
		content = append(content, map[string]any{"type": "tool_use", "id": "toolu_" + a.id, "name": a.tool, "input": a.args})
		stop = "tool_use"
	} else {
		content = append(content, map[string]any{"type": "text", "text": a.text})
	}
	return map[string]any{"id": "msg_scripted", "type": "message", "role": "assistant", "model": model, "content": content,
		"stop_reason": stop, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": u.Input, "output_tokens": u.Output, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}
}

func (p anthropic) start(s sse, model string, input int64) {
	s.event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": "msg_scripted", "type": "message", "role": "assistant", "model": model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": input, "output_tokens": 1, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}})
}

func (p anthropic) writeAnswer(w http.ResponseWriter, model string, a answer, u Usage, stream bool) {
	if !stream {
		writeJSON(w, http.StatusOK, p.message(model, a, u))
		return
	}
	s := startSSE(w)
	p.start(s, model, u.Input)
	stop := "end_turn"
	if a.tool != "" {
		stop = "tool_use"
		s.event("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "tool_use", "id": "toolu_" + a.id, "name": a.tool, "input": map[string]any{}}})
		s.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "input_json_delta", "partial_json": argsJSON(a)}})
	} else {
		s.event("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "text", "text": ""}})
		s.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "text_delta", "text": a.text}})
	}
	s.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	s.event("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"input_tokens": u.Input, "output_tokens": u.Output, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}})
	s.event("message_stop", map[string]any{"type": "message_stop"})
}

func (p anthropic) writeCut(w http.ResponseWriter, model string, a answer) {
	s := startSSE(w)
	p.start(s, model, 1)
	s.event("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
		"content_block": map[string]any{"type": "text", "text": ""}})
	s.raw("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"I will wr")
}

func (p anthropic) writeEndless(w http.ResponseWriter, r *http.Request, model string, closing <-chan struct{}) {
	s := startSSE(w)
	p.start(s, model, 1)
	s.event("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
		"content_block": map[string]any{"type": "text", "text": ""}})
	keepAlive(s, r, closing, func() { s.event("ping", map[string]any{"type": "ping"}) })
}

func (anthropic) writeError(w http.ResponseWriter, status int, msg string) {
	typ := map[int]string{401: "authentication_error", 429: "rate_limit_error", 500: "api_error"}[status]
	writeJSON(w, status, map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}})
}

// responses is the OpenAI Responses API (Codex).
type responses struct{}

func (responses) name() string { return "responses" }

func (responses) parse(body []byte) (request, error) {
	var in struct {
		Stream bool `json:"stream"`
		Input  []struct {
			Type string `json:"type"`
		} `json:"input"`
		Tools []struct {
			Type       string          `json:"type"`
			Name       string          `json:"name"`
			Parameters json.RawMessage `json:"parameters"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return request{}, err
	}
	if len(in.Input) == 0 {
		return request{}, errNoMessages
	}
	req := request{stream: in.Stream, schema: map[string]json.RawMessage{}}
	for _, t := range in.Tools {
		name := t.Name
		if name == "" {
			name = t.Type
		}
		req.tools = append(req.tools, name)
		if t.Type == "function" {
			req.schema[name] = t.Parameters
		}
	}
	for _, it := range in.Input {
		if strings.HasSuffix(it.Type, "call_output") {
			req.step++
		}
	}
	return req, nil
}

func (responses) item(a answer) map[string]any {
	if a.tool != "" {
		return map[string]any{"type": "function_call", "id": "fc_" + a.id, "call_id": "call_" + a.id, "name": a.tool,
			"arguments": argsJSON(a), "status": "completed"}
	}
	return map[string]any{"type": "message", "id": "msg_scripted", "role": "assistant", "status": "completed",
		"content": []any{map[string]any{"type": "output_text", "text": a.text, "annotations": []any{}}}}
}

func (responses) usage(u Usage) map[string]any {
	return map[string]any{"input_tokens": u.Input, "input_tokens_details": map[string]any{"cached_tokens": 0},
		"output_tokens": u.Output, "output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": u.Input + u.Output}
}

func (p responses) writeAnswer(w http.ResponseWriter, model string, a answer, u Usage, stream bool) {
	resp := map[string]any{"id": "resp_scripted", "object": "response", "model": model, "status": "completed",
		"output": []any{p.item(a)}, "usage": p.usage(u)}
	if !stream {
		writeJSON(w, http.StatusOK, resp)
		return
	}
	s := startSSE(w)
	s.event("response.created", map[string]any{"type": "response.created", "response": map[string]any{"id": "resp_scripted", "object": "response", "model": model, "status": "in_progress", "output": []any{}}})
	it := p.item(a)
	s.event("response.output_item.added", map[string]any{"type": "response.output_item.added", "output_index": 0, "item": it})
	if a.tool == "" {
		s.event("response.output_text.delta", map[string]any{"type": "response.output_text.delta", "item_id": "msg_scripted", "output_index": 0, "content_index": 0, "delta": a.text})
	}
	s.event("response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": 0, "item": it})
	s.event("response.completed", map[string]any{"type": "response.completed", "response": resp})
}

func (p responses) writeCut(w http.ResponseWriter, model string, a answer) {
	s := startSSE(w)
	s.event("response.created", map[string]any{"type": "response.created", "response": map[string]any{"id": "resp_scripted", "object": "response", "model": model, "status": "in_progress", "output": []any{}}})
	s.raw("event: response.output_item.added\ndata: {\"type\":\"response.output_item.added\",\"output_index\":0,\"item\":{\"type\":\"mess")
}

func (p responses) writeEndless(w http.ResponseWriter, r *http.Request, model string, closing <-chan struct{}) {
	s := startSSE(w)
	s.event("response.created", map[string]any{"type": "response.created", "response": map[string]any{"id": "resp_scripted", "object": "response", "model": model, "status": "in_progress", "output": []any{}}})
	keepAlive(s, r, closing, func() { s.raw(": keep-alive\n\n") })
}

func (responses) writeError(w http.ResponseWriter, status int, msg string) {
	code := map[int]string{401: "invalid_api_key", 429: "rate_limit_exceeded", 500: "server_error"}[status]
	writeJSON(w, status, map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error", "param": nil, "code": code}})
}

// chat is the OpenAI Chat Completions API (opencode through
// @ai-sdk/openai-compatible).
type chat struct{}

func (chat) name() string { return "chat" }

func (chat) parse(body []byte) (request, error) {
	var in struct {
		Stream   bool `json:"stream"`
		Messages []struct {
			Role string `json:"role"`
		} `json:"messages"`
		Tools []struct {
			Function struct {
				Name       string          `json:"name"`
				Parameters json.RawMessage `json:"parameters"`
			} `json:"function"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return request{}, err
	}
	if len(in.Messages) == 0 {
		return request{}, errNoMessages
	}
	req := request{stream: in.Stream, schema: map[string]json.RawMessage{}}
	for _, t := range in.Tools {
		req.tools = append(req.tools, t.Function.Name)
		req.schema[t.Function.Name] = t.Function.Parameters
	}
	for _, m := range in.Messages {
		if m.Role == "tool" {
			req.step++
		}
	}
	return req, nil
}

func (chat) chunk(model string, choices []any) map[string]any {
	return map[string]any{"id": "chatcmpl-scripted", "object": "chat.completion.chunk", "created": 1767225600, "model": model, "choices": choices}
}

func (chat) usage(u Usage) map[string]any {
	return map[string]any{"prompt_tokens": u.Input, "completion_tokens": u.Output, "total_tokens": u.Input + u.Output}
}

func (p chat) writeAnswer(w http.ResponseWriter, model string, a answer, u Usage, stream bool) {
	finish := "stop"
	msg := map[string]any{"role": "assistant", "content": a.text}
	if a.tool != "" {
		finish = "tool_calls"
		msg = map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"id": "call_" + a.id, "type": "function",
			"function": map[string]any{"name": a.tool, "arguments": argsJSON(a)}}}}
	}
	if !stream {
		writeJSON(w, http.StatusOK, map[string]any{"id": "chatcmpl-scripted", "object": "chat.completion", "created": 1767225600, "model": model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}}, "usage": p.usage(u)})
		return
	}
	s := startSSE(w)
	delta := map[string]any{"role": "assistant", "content": a.text}
	if a.tool != "" {
		delta = map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{"index": 0, "id": "call_" + a.id, "type": "function",
			"function": map[string]any{"name": a.tool, "arguments": argsJSON(a)}}}}
	}
	s.event("", p.chunk(model, []any{map[string]any{"index": 0, "delta": delta, "finish_reason": nil}}))
	s.event("", p.chunk(model, []any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": finish}}))
	last := p.chunk(model, []any{})
	last["usage"] = p.usage(u)
	s.event("", last)
	s.event("", "[DONE]")
}

func (p chat) writeCut(w http.ResponseWriter, model string, a answer) {
	s := startSSE(w)
	s.event("", p.chunk(model, []any{map[string]any{"index": 0, "delta": map[string]any{"role": "assistant", "content": "I will wr"}, "finish_reason": nil}}))
	s.raw("data: {\"id\":\"chatcmpl-scripted\",\"object\":\"chat.comp")
}

func (p chat) writeEndless(w http.ResponseWriter, r *http.Request, model string, closing <-chan struct{}) {
	s := startSSE(w)
	s.event("", p.chunk(model, []any{map[string]any{"index": 0, "delta": map[string]any{"role": "assistant", "content": ""}, "finish_reason": nil}}))
	keepAlive(s, r, closing, func() { s.raw(": keep-alive\n\n") })
}

func (chat) writeError(w http.ResponseWriter, status int, msg string) {
	responses{}.writeError(w, status, msg)
}

// gemini is the Gemini API's generateContent and streamGenerateContent
// (Gemini CLI).
type gemini struct{ stream bool }

func (gemini) name() string { return "gemini" }

func (g gemini) parse(body []byte) (request, error) {
	var in struct {
		Contents []struct {
			Parts []struct {
				FunctionResponse json.RawMessage `json:"functionResponse"`
			} `json:"parts"`
		} `json:"contents"`
		Tools []struct {
			FunctionDeclarations []struct {
				Name                 string          `json:"name"`
				Parameters           json.RawMessage `json:"parameters"`
				ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema"`
			} `json:"functionDeclarations"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return request{}, err
	}
	if len(in.Contents) == 0 {
		return request{}, errNoMessages
	}
	req := request{stream: g.stream, schema: map[string]json.RawMessage{}}
	for _, t := range in.Tools {
		for _, f := range t.FunctionDeclarations {
			req.tools = append(req.tools, f.Name)
			sch := f.Parameters
			if len(f.ParametersJSONSchema) > 0 {
				sch = f.ParametersJSONSchema
			}
			req.schema[f.Name] = sch
		}
	}
	for _, c := range in.Contents {
		for _, p := range c.Parts {
			if len(p.FunctionResponse) > 0 {
				req.step++
			}
		}
	}
	return req, nil
}

func (gemini) candidate(a answer, finish bool) map[string]any {
	part := map[string]any{"text": a.text}
	if a.tool != "" {
		part = map[string]any{"functionCall": map[string]any{"name": a.tool, "args": a.args}}
	}
	c := map[string]any{"content": map[string]any{"role": "model", "parts": []any{part}}, "index": 0}
	if finish {
		c["finishReason"] = "STOP"
	}
	return c
}

func (gemini) usage(u Usage) map[string]any {
	return map[string]any{"promptTokenCount": u.Input, "candidatesTokenCount": u.Output, "totalTokenCount": u.Input + u.Output}
}

func (g gemini) writeAnswer(w http.ResponseWriter, model string, a answer, u Usage, stream bool) {
	resp := map[string]any{"candidates": []any{g.candidate(a, true)}, "usageMetadata": g.usage(u), "modelVersion": model}
	if !stream {
		writeJSON(w, http.StatusOK, resp)
		return
	}
	s := startSSE(w)
	s.event("", resp)
}

func (g gemini) writeCut(w http.ResponseWriter, model string, a answer) {
	s := startSSE(w)
	s.event("", map[string]any{"candidates": []any{g.candidate(answer{text: "I will wr"}, false)}, "modelVersion": model})
	s.raw("data: {\"candidates\": [{\"content\": {\"ro")
}

func (g gemini) writeEndless(w http.ResponseWriter, r *http.Request, model string, closing <-chan struct{}) {
	s := startSSE(w)
	s.event("", map[string]any{"candidates": []any{g.candidate(answer{text: "Working"}, false)}, "modelVersion": model})
	keepAlive(s, r, closing, func() { s.raw(": keep-alive\n\n") })
}

func (gemini) writeError(w http.ResponseWriter, status int, msg string) {
	st := map[int]string{401: "UNAUTHENTICATED", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL"}[status]
	writeJSON(w, status, map[string]any{"error": map[string]any{"code": status, "message": msg, "status": st}})
}

// String renders a usage for messages.
func (u Usage) String() string {
	return fmt.Sprintf("%d in, %d out", u.Input, u.Output)
}
