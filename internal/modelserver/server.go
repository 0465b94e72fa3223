// Package modelserver owns a scripted model server for tests: an HTTP
// server on 127.0.0.1 that speaks enough of the Anthropic Messages API, the
// OpenAI Responses and Chat Completions APIs and Gemini's
// streamGenerateContent for the real AI coding clients to run against it,
// and answers them from a script (edit a file and commit, write outside the
// scope, refuse the key, fail then succeed, cut a stream, never finish).
//
// It is imported only by tests; the shipped binary never contains it.
package modelserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Script is what the server does with a client's requests.
type Script string

// The scripts.
const (
	// Edit answers the first request with a call of the client's own write
	// tool (or its shell) that writes Options.File, the tool's result with a
	// shell call that commits, and then ends the turn.
	Edit Script = "edit"
	// OutOfScope is Edit writing Options.OutOfScopeFile instead.
	OutOfScope Script = "out-of-scope"
	// Unauthorized answers every model request with HTTP 401 and the
	// vendor's own error body.
	Unauthorized Script = "unauthorized"
	// Flaky answers the first model request with 429, the second with 500,
	// and then plays Edit.
	Flaky Script = "flaky"
	// RateLimited answers every model request with HTTP 429, the vendor's
	// rate-limit error body, Retry-After: 0 and X-Should-Retry: false, as
	// an account whose quota is used up.
	RateLimited Script = "rate-limited"
	// Cut cuts the first answer's stream mid-answer (the connection drops),
	// then plays Edit.
	Cut Script = "cut"
	// Endless starts every answer and never ends it, sending keep-alives
	// until the client goes away.
	Endless Script = "endless"
)

// Scripts lists every script.
func Scripts() []Script {
	return []Script{Edit, OutOfScope, Unauthorized, Flaky, RateLimited, Cut, Endless}
}

// Options configure a server.
type Options struct {
	// Script is what to play (Edit if empty).
	Script Script
	// Dir is the client's working directory, for tools that want absolute
	// paths.
	Dir string
	// File and Content are what the edit writes (relative to Dir).
	File, Content string
	// OutOfScopeFile is what the OutOfScope script writes instead of File.
	OutOfScopeFile string
	// CommitMessage is the message of the commit the script asks for.
	CommitMessage string
	// Model is the model name reported in answers.
	Model string
	// Hold, when not nil, makes the answer that ends a turn (text to a
	// request that offers tools, after the tool calls) wait until Hold is
	// closed: a test holds the client's last step until it has seen the
	// client's earlier steps in the session log, which proves that the
	// client's output reached the log while it ran, not at exit.
	Hold <-chan struct{}
}

// Usage is token usage, as the server reports it in an answer.
type Usage struct {
	Input  int64
	Output int64
}

// Entry is one request the server saw.
type Entry struct {
	Time   time.Time
	Method string
	Path   string
	// API names the API the request was taken for ("anthropic",
	// "responses", "chat", "gemini"), or "" when not understood.
	API string
	// Step is the script step answered (0 = the first request of a turn).
	Step int
	// Tools lists the tool names the request offered.
	Tools []string
	// Status is the HTTP status answered.
	Status int
	// Note says what was answered, or why the request was not understood.
	Note string
	// Body is the start of the request body.
	Body string
}

// Server is a running scripted model server.
type Server struct {
	opts Options
	ln   net.Listener
	srv  *http.Server

	mu      sync.Mutex
	entries []Entry
	calls   int // model requests seen
	served  Usage
	answers int
	closing chan struct{}
	once    sync.Once
}

// DefaultContent is what the edit writes when Options.Content is empty.
const DefaultContent = "hello from the scripted model"

// APIKey is the key clients are given; the server accepts any key except
// under the Unauthorized script.
const APIKey = "agentmine-test-key"

// Start starts a server on a free port of 127.0.0.1.
func Start(opts Options) (*Server, error) {
	if opts.Script == "" {
		opts.Script = Edit
	}
	if opts.File == "" {
		opts.File = "hello.txt"
	}
	if opts.Content == "" {
		opts.Content = DefaultContent
	}
	if opts.OutOfScopeFile == "" {
		opts.OutOfScopeFile = "outside/secret.txt"
	}
	if opts.CommitMessage == "" {
		opts.CommitMessage = "Add " + opts.File
	}
	if opts.Model == "" {
		opts.Model = "scripted-model"
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("start model server: %w", err)
	}
	s := &Server{opts: opts, ln: ln, closing: make(chan struct{})}
	s.srv = &http.Server{Handler: http.HandlerFunc(s.serve), ReadHeaderTimeout: 10 * time.Second}
	go s.srv.Serve(ln)
	return s, nil
}

// URL is the server's base URL, http://127.0.0.1:PORT.
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() }

// Close stops the server, ending streams that are still open.
func (s *Server) Close() {
	s.once.Do(func() { close(s.closing) })
	s.srv.Close()
}

// Served is the sum of the usage reported in every answer the server
// completed, side requests without tools (a title, a summary) included:
// every request a client makes must be in the usage it reports.
func (s *Server) Served() Usage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.served
}

// Answers counts the model answers the server completed.
func (s *Server) Answers() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.answers
}

// Entries returns a copy of the request log.
func (s *Server) Entries() []Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Entry(nil), s.entries...)
}

// Log renders the request log for a failing test: one line per request,
// and the body of every request the server did not understand.
func (s *Server) Log() string {
	var b strings.Builder
	for _, e := range s.Entries() {
		api := e.API
		if api == "" {
			api = "NOT UNDERSTOOD"
		}
		fmt.Fprintf(&b, "%s %s %s -> %d [%s step %d tools %s] %s\n", e.Time.Format("15:04:05.000"), e.Method, e.Path,
			e.Status, api, e.Step, strings.Join(e.Tools, ","), e.Note)
		if e.API == "" && e.Body != "" {
			fmt.Fprintf(&b, "    body: %s\n", e.Body)
		}
	}
	return b.String()
}

func (s *Server) record(e Entry) {
	e.Time = time.Now()
	s.mu.Lock()
	s.entries = append(s.entries, e)
	s.mu.Unlock()
}

// usageFor is the usage reported by the n-th completed answer (from 0):
// distinct numbers, so a client that drops or double-counts an answer is
// caught.
func usageFor(n int) Usage {
	return Usage{Input: int64(1000 + 100*n + 7), Output: int64(20 + 3*n)}
}

// nextUsage reserves the usage of the next completed answer.
func (s *Server) nextUsage() (Usage, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.answers
	u := usageFor(n)
	s.answers++
	s.served.Input += u.Input
	s.served.Output += u.Output
	return u, n
}

const maxLoggedBody = 4 << 10

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 32<<20))
	e := Entry{Method: r.Method, Path: r.URL.RequestURI(), Body: clipBody(body)}
	path := r.URL.Path
	var api protocol
	switch {
	case r.Method == http.MethodHead || r.Method == http.MethodGet && (path == "/" || path == ""):
		e.API, e.Status, e.Note = "probe", http.StatusOK, "probe answered"
		s.record(e)
		w.WriteHeader(http.StatusOK)
		return
	case r.Method == http.MethodGet && strings.HasSuffix(path, "/models"):
		e.API, e.Status, e.Note = "models", http.StatusOK, "model list"
		s.record(e)
		writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []any{map[string]any{"id": s.opts.Model, "object": "model", "owned_by": "agentmine"}},
			"models": []any{map[string]any{"slug": s.opts.Model, "display_name": s.opts.Model}}})
		return
	case r.Method == http.MethodPost && strings.HasSuffix(path, "/messages/count_tokens"):
		e.API, e.Status, e.Note = "anthropic", http.StatusOK, "count_tokens"
		s.record(e)
		writeJSON(w, http.StatusOK, map[string]any{"input_tokens": 1000})
		return
	case r.Method == http.MethodPost && strings.HasSuffix(path, "/messages"):
		api = anthropic{}
	case r.Method == http.MethodPost && strings.HasSuffix(path, "/responses"):
		api = responses{}
	case r.Method == http.MethodPost && strings.HasSuffix(path, "/chat/completions"):
		api = chat{}
	case r.Method == http.MethodPost && strings.Contains(path, ":countTokens"):
		e.API, e.Status, e.Note = "gemini", http.StatusOK, "countTokens"
		s.record(e)
		writeJSON(w, http.StatusOK, map[string]any{"totalTokens": 1000})
		return
	case r.Method == http.MethodPost && (strings.Contains(path, ":streamGenerateContent") || strings.Contains(path, ":generateContent")):
		api = gemini{stream: strings.Contains(path, ":streamGenerateContent")}
	default:
		e.Status, e.Note = http.StatusNotFound, "no such endpoint"
		s.record(e)
		http.Error(w, "scripted model server: no such endpoint", http.StatusNotFound)
		return
	}
	req, err := api.parse(body)
	e.API = api.name()
	if err != nil {
		e.API, e.Status, e.Note = "", http.StatusBadRequest, api.name()+" request not understood: "+err.Error()
		s.record(e)
		http.Error(w, e.Note, http.StatusBadRequest)
		return
	}
	e.Step, e.Tools = req.step, req.tools
	s.mu.Lock()
	call := s.calls
	s.calls++
	s.mu.Unlock()

	if s.refuse(w, api, e, call) {
		return
	}
	a := s.answerFor(req)
	e.Status = http.StatusOK
	switch {
	case s.opts.Script == Endless:
		e.Note = "endless answer"
		s.record(e)
		api.writeEndless(w, r, s.opts.Model, s.closing)
		return
	case s.opts.Script == Cut && call == 0:
		e.Note = "answer cut mid-stream"
		s.record(e)
		api.writeCut(w, s.opts.Model, a)
		panic(http.ErrAbortHandler)
	}
	e.Note = a.describe()
	if s.opts.Hold != nil && a.tool == "" && len(req.tools) > 0 && req.step > 0 {
		if !s.hold(r, &e) {
			return
		}
	}
	s.record(e)
	u, n := s.nextUsage()
	a.id = fmt.Sprintf("scripted%d", n)
	api.writeAnswer(w, s.opts.Model, a, u, req.stream)
}

// refuse answers the calls the script fails on purpose (a refused key, a
// rate limit, an internal error) and reports whether it did; e is the
// log entry of the call, the call-th one.
func (s *Server) refuse(w http.ResponseWriter, api protocol, e Entry, call int) bool {
	switch {
	case s.opts.Script == Unauthorized:
		e.Status, e.Note = http.StatusUnauthorized, "refused the key"
		s.record(e)
		// As the vendors' APIs do: a refused key is not worth a retry.
		w.Header().Set("X-Should-Retry", "false")
		api.writeError(w, http.StatusUnauthorized, "invalid API key: the scripted model server rejects the key "+APIKey)
		return true
	case s.opts.Script == Flaky && call == 0:
		e.Status, e.Note = http.StatusTooManyRequests, "rate limited (first call)"
		s.record(e)
		w.Header().Set("Retry-After", "1")
		api.writeError(w, http.StatusTooManyRequests, "rate limit reached: the scripted model server asks to retry after 1 second")
		return true
	case s.opts.Script == RateLimited:
		e.Status, e.Note = http.StatusTooManyRequests, "rate limited (every call)"
		s.record(e)
		// A used-up quota is not worth an immediate retry: the clients that
		// honour X-Should-Retry give up at once, the others after their
		// own retries.
		w.Header().Set("Retry-After", "0")
		w.Header().Set("X-Should-Retry", "false")
		api.writeError(w, http.StatusTooManyRequests, "rate limit reached: the scripted model server's quota is used up")
		return true
	case s.opts.Script == Flaky && call == 1:
		e.Status, e.Note = http.StatusInternalServerError, "internal error (second call)"
		s.record(e)
		api.writeError(w, http.StatusInternalServerError, "internal error: the scripted model server failed on purpose")
		return true
	}
	return false
}

// hold keeps the final answer back until the test releases it, and
// reports false when the client or the server went away meanwhile (the
// entry e recorded then says so).
func (s *Server) hold(r *http.Request, e *Entry) bool {
	held := *e
	held.Status, held.Note = 0, "final answer held"
	s.record(held)
	select {
	case <-s.opts.Hold:
		e.Note += " (released)"
	case <-r.Context().Done():
		e.Status, e.Note = 0, "client went away while the final answer was held"
		s.record(*e)
		return false
	case <-s.closing:
		e.Status, e.Note = 0, "server closed while the final answer was held"
		s.record(*e)
		return false
	}
	return true
}

func clipBody(b []byte) string {
	if len(b) > maxLoggedBody {
		return string(b[:maxLoggedBody]) + "…"
	}
	return string(b)
}

// request is what the server needs from a model request.
type request struct {
	// step counts the tool results in the conversation so far.
	step int
	// tools are the tools offered, with their parameter schemas.
	tools  []string
	schema map[string]json.RawMessage
	stream bool
}

// answer is what the model says: text, or one tool call.
type answer struct {
	text string
	tool string
	args map[string]any
	// id is unique per answer; clients match tool results to calls by it.
	id string
}

func (a answer) describe() string {
	if a.tool == "" {
		return "text: " + a.text
	}
	b, _ := json.Marshal(a.args)
	return "call " + a.tool + " " + string(b)
}

// answerFor plays the script's next step for a request.
func (s *Server) answerFor(req request) answer {
	file := s.opts.File
	if s.opts.Script == OutOfScope {
		file = s.opts.OutOfScopeFile
	}
	if len(req.tools) == 0 {
		// A side request (a title, a summary): plain words.
		return answer{text: "Scripted answer."}
	}
	switch req.step {
	case 0:
		if a, ok := writeCall(req, s.opts.Dir, file, s.opts.Content); ok {
			return a
		}
		dir := ""
		if i := strings.LastIndexByte(file, '/'); i > 0 {
			dir = "mkdir -p " + shellQuote(file[:i]) + " && "
		}
		if a, ok := shellCall(req, dir+"printf '%s\\n' "+shellQuote(s.opts.Content)+" > "+shellQuote(file), "write "+file); ok {
			return a
		}
		return answer{text: "I have no tool to write files with."}
	case 1:
		if a, ok := shellCall(req, "git add -A && git commit -q -m "+shellQuote(s.opts.CommitMessage), "commit the change"); ok {
			return a
		}
		return answer{text: "I have no tool to run git with."}
	}
	return answer{text: "Done: wrote " + file + " and committed it."}
}

// writeCall builds a call of the request's file-writing tool, reading the
// parameter names from the tool's schema.
func writeCall(req request, dir, file, content string) (answer, bool) {
	for _, name := range []string{"Write", "write_file", "write"} {
		props, ok := toolProps(req, name)
		if !ok {
			continue
		}
		pathKey := pick(props, "file_path", "filePath", "absolute_path", "path")
		contentKey := pick(props, "content", "contents", "text")
		if pathKey == "" || contentKey == "" {
			continue
		}
		p := file
		if dir != "" {
			p = strings.TrimRight(dir, "/") + "/" + file
		}
		return answer{tool: name, args: map[string]any{pathKey: p, contentKey: content + "\n"}}, true
	}
	return answer{}, false
}

// shellCall builds a call of the request's shell tool.
func shellCall(req request, command, why string) (answer, bool) {
	for _, name := range []string{"Bash", "run_shell_command", "bash", "exec_command", "shell", "local_shell"} {
		props, ok := toolProps(req, name)
		if !ok {
			continue
		}
		args := map[string]any{}
		switch {
		case props["command"] != nil && strings.Contains(string(props["command"]), `"array"`):
			args["command"] = []string{"bash", "-lc", command}
		case props["command"] != nil:
			args["command"] = command
		case props["cmd"] != nil:
			args["cmd"] = command
		default:
			continue
		}
		if props["description"] != nil {
			args["description"] = why
		}
		return answer{tool: name, args: args}, true
	}
	return answer{}, false
}

func pick(props map[string]json.RawMessage, keys ...string) string {
	for _, k := range keys {
		if props[k] != nil {
			return k
		}
	}
	return ""
}

// toolProps returns the properties of a tool's parameter schema.
func toolProps(req request, name string) (map[string]json.RawMessage, bool) {
	raw, ok := req.schema[name]
	if !ok {
		return nil, false
	}
	var sch struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(raw, &sch); err != nil {
		return nil, false
	}
	if sch.Properties == nil {
		sch.Properties = map[string]json.RawMessage{}
	}
	return sch.Properties, true
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// sse writes server-sent events and flushes each one.
type sse struct {
	w http.ResponseWriter
}

func startSSE(w http.ResponseWriter) sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	return sse{w: w}
}

func (s sse) event(name string, v any) {
	var b bytes.Buffer
	if name != "" {
		b.WriteString("event: " + name + "\n")
	}
	data, ok := v.(string)
	if !ok {
		d, _ := json.Marshal(v)
		data = string(d)
	}
	b.WriteString("data: " + data + "\n\n")
	s.w.Write(b.Bytes())
	http.NewResponseController(s.w).Flush()
}

func (s sse) raw(text string) {
	io.WriteString(s.w, text)
	http.NewResponseController(s.w).Flush()
}

// keepAlive sends comment lines until the client or the server goes away.
func keepAlive(s sse, r *http.Request, closing <-chan struct{}, ping func()) {
	t := time.NewTicker(2 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-closing:
			return
		case <-t.C:
			ping()
		}
	}
}

// protocol is one vendor API.
type protocol interface {
	name() string
	parse(body []byte) (request, error)
	writeAnswer(w http.ResponseWriter, model string, a answer, u Usage, stream bool)
	writeCut(w http.ResponseWriter, model string, a answer)
	writeEndless(w http.ResponseWriter, r *http.Request, model string, closing <-chan struct{})
	writeError(w http.ResponseWriter, status int, msg string)
}

var errNoMessages = errors.New("no messages")

func argsJSON(a answer) string {
	b, _ := json.Marshal(a.args)
	return string(b)
}
