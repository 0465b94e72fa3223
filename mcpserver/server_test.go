package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/internal/gittest"
	"github.com/git-agentmine/git-agentmine/launch"
	"github.com/git-agentmine/git-agentmine/sessions"
	"github.com/git-agentmine/git-agentmine/tasks"
)

// connect serves repo over an in-memory transport and returns a connected
// client session.
func connect(t *testing.T, repo string) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	s, err := New(ctx, Options{Dir: repo, Supervisor: func(top, session string) []string { return []string{"false"} }})
	if err != nil {
		t.Fatal(err)
	}
	st, ct := mcp.NewInMemoryTransports()
	go s.Serve(ctx, st)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// callText calls a tool and returns whether it failed and its text.
func callText(t *testing.T, cs *mcp.ClientSession, name string, args any) (bool, string) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res.IsError, res.Content[0].(*mcp.TextContent).Text
}

// TestToolsAndArgumentsAreDocumented fails when a tool, or an argument of
// one, is missing from docs/mcp.md, or the page names a tool the server
// does not have: the page cannot drift from the server.
func TestToolsAndArgumentsAreDocumented(t *testing.T) {
	data, err := os.ReadFile("../docs/mcp.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	cs := connect(t, gittest.NewRepo(t))
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tools) < 12 {
		t.Fatalf("tools/list has %d tools", len(res.Tools))
	}
	have := map[string]bool{}
	for _, tool := range res.Tools {
		have[tool.Name] = true
		sec := section(doc, "### `"+tool.Name+"`")
		if sec == "" {
			t.Errorf("docs/mcp.md has no section ### `%s`", tool.Name)
			continue
		}
		in := tool.InputSchema.(map[string]any)
		props, _ := in["properties"].(map[string]any)
		for name := range props {
			if !strings.Contains(sec, "`"+name+"`") {
				t.Errorf("docs/mcp.md: argument %q of %s is not in its section", name, tool.Name)
			}
		}
	}
	for _, m := range regexp.MustCompile("(?m)^### `([a-z_]+)`").FindAllStringSubmatch(doc, -1) {
		if !have[m[1]] {
			t.Errorf("docs/mcp.md documents tool %s, which the server does not have", m[1])
		}
	}
}

// section returns the text of the markdown section that starts with the
// heading line, up to the next heading of any level.
func section(doc, heading string) string {
	i := strings.Index(doc, "\n"+heading+"\n")
	if i < 0 {
		return ""
	}
	rest := doc[i+len(heading)+2:]
	if j := strings.Index(rest, "\n#"); j >= 0 {
		rest = rest[:j]
	}
	return rest
}

// TestInputSchemas checks what every tool's input schema says against the
// arguments struct it comes from: an object of exactly the struct's
// arguments, those without omitempty required, every argument described,
// and one type per argument (no nullable type arrays, which clients that
// map schemas onto Gemini's function declarations reject).
func TestInputSchemas(t *testing.T) {
	for _, in := range []any{ContextArgs{}, TaskListArgs{}, TaskReadyArgs{}, TaskIDArgs{}, TaskCreateArgs{}, TaskUpdateArgs{},
		TaskCancelArgs{}, WorkerStartArgs{}, SessionStatusArgs{}, SessionOutputArgs{}, MergeArgs{}, MemoryAddArgs{}, MemoryListArgs{}} {
		typ := reflect.TypeOf(in)
		s, err := jsonschema.ForType(typ, nil)
		if err != nil {
			t.Fatal(err)
		}
		notNull(s)
		if _, err := s.Resolve(nil); err != nil {
			t.Errorf("%s: %v", typ.Name(), err)
		}
		data, _ := json.Marshal(s)
		if bytes.Contains(data, []byte(`"type":[`)) {
			t.Errorf("%s: a type array in %s", typ.Name(), data)
		}
		var names, req []string
		for i := 0; i < typ.NumField(); i++ {
			name, opts, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
			if p := s.Properties[name]; p == nil || p.Description == "" {
				t.Errorf("%s: argument %s has no described property", typ.Name(), name)
			}
			names = append(names, name)
			if opts != "omitempty" {
				req = append(req, name)
			}
		}
		if len(s.Properties) != len(names) {
			t.Errorf("%s: %d properties for %d fields", typ.Name(), len(s.Properties), len(names))
		}
		if strings.Join(req, ",") != strings.Join(s.Required, ",") {
			t.Errorf("%s: schema requires %v, the struct %v", typ.Name(), s.Required, req)
		}
	}
}

// TestOutputSchemasTypeTheVerdicts checks that a session outcome's raw
// verdicts are published with the verdicts' own schemas, and that a real
// outcome line validates against them.
func TestOutputSchemasTypeTheVerdicts(t *testing.T) {
	s := schemaFor[struct {
		Outcome *sessions.Outcome `json:"outcome"`
	}]()
	o := s.Properties["outcome"]
	if o == nil || o.Properties["scope"] == nil || o.Properties["scope"].Properties["violations"] == nil ||
		o.Properties["dod"].Properties["commands"] == nil {
		data, _ := json.Marshal(s)
		t.Fatalf("the outcome's verdicts are not typed: %s", data)
	}
	r, err := s.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	line := `{"outcome":{"v":1,"session":"s","exit_code":0,"timed_out":false,"finished":"2026-01-02T03:04:05Z","artifacts":["src/a"],"recorded_by":"agentmine exec","commits":1,
		"scope":{"valid":false,"tip":"abc","violations":[{"type":"write-outside-scope","path":"docs/x","reason":"not writable"}],"changed":[],"live_events":2},
		"dod":{"status":"failed","commands":[{"cmd":"false","exit_code":1,"duration_ms":3,"output_tail":"","output_bytes":0}]}}}`
	if err := json.Unmarshal([]byte(line), &doc); err != nil {
		t.Fatal(err)
	}
	if err := r.Validate(doc); err != nil {
		t.Errorf("a real outcome does not validate: %v", err)
	}
	// A note from another release, with fields this one does not know and
	// without some it writes, still validates.
	doc["outcome"].(map[string]any)["scope"] = map[string]any{"valid": true, "future_field": 1}
	if err := r.Validate(doc); err != nil {
		t.Errorf("a verdict from another release does not validate: %v", err)
	}
	doc["outcome"].(map[string]any)["scope"] = "valid"
	if err := r.Validate(doc); err == nil {
		t.Error("a scope verdict that is a string validates")
	}
}

// TestSessionOutputRefusesLogsOutsideTheRepository records sessions the
// way a synced clone could hand them over, with a log outside this
// repository's agentmine directory or a log that is a symbolic link out of
// it: session_output refuses to read either, and reads a genuine one.
func TestSessionOutputRefusesLogsOutsideTheRepository(t *testing.T) {
	repo := gittest.NewRepo(t)
	ctx := context.Background()
	st, err := gitstore.Open(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	task, err := tasks.Add(ctx, st, tasks.New{Title: "t"})
	if err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("do not read\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	logs, err := st.LocalDir("logs")
	if err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(logs, "link.log")
	if err := os.Symlink(secret, link); err != nil {
		t.Fatal(err)
	}
	genuine := filepath.Join(logs, "genuine.log")
	if err := os.WriteFile(genuine, []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	record := func(log string) string {
		s, _, err := sessions.Create(ctx, st, sessions.Session{ID: gitstore.NewID(), Task: task.ID, Agent: "a", Client: "custom",
			Mode: sessions.ModeManual, Branch: "b", Started: time.Now().UTC(), Log: log})
		if err != nil {
			t.Fatal(err)
		}
		return s.ID
	}
	cs := connect(t, repo)
	for _, log := range []string{secret, logs + "/../../../.." + secret, "relative.log", link} {
		failed, text := callText(t, cs, "session_output", map[string]any{"session": record(log)})
		if !failed || !strings.Contains(text, "refusing to read it") || !strings.Contains(text, "\nexit: state (6)") || strings.Contains(text, "do not read") {
			t.Errorf("log %s: %q; want a refusal", log, text)
		}
	}
	failed, text := callText(t, cs, "session_output", map[string]any{"session": record(genuine)})
	if failed || !strings.Contains(text, `"text":"hello\n"`) || !strings.Contains(text, `"cursor":6`) {
		t.Errorf("genuine log: %q", text)
	}
}

// TestReadLog follows a log through a rotation and across a character cut
// by the byte limit: reading from cursor to cursor yields every byte once.
func TestReadLog(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.log")
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(path, "héllo wörld\n")
	var got strings.Builder
	cursor := int64(0)
	for i := 0; ; i++ {
		c, err := launch.ReadLog(path, cursor, 2)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix("héllo wörld\n"[cursor:], string(c.Text)) || !json.Valid(mustJSON(t, string(c.Text))) {
			t.Fatalf("read %q at %d", c.Text, cursor)
		}
		got.Write(c.Text)
		cursor = c.Next
		if !c.More {
			break
		}
		if i > 20 {
			t.Fatal("no progress")
		}
	}
	if got.String() != "héllo wörld\n" {
		t.Fatalf("read %q", got.String())
	}
	// Rotation: the file moves to .1 with one more line; the new file
	// starts afresh.
	write(path+".1", "héllo wörld\nlast of the old\n")
	write(path, "new\n")
	c, err := launch.ReadLog(path, cursor, 1<<10)
	if err != nil {
		t.Fatal(err)
	}
	if string(c.Text) != "last of the old\nnew\n" || !c.Rotated || c.Next != 4 || c.More {
		t.Errorf("across the rotation: %+v", c)
	}
	if _, err := launch.ReadLog(path, 1000, 10); err == nil || !strings.Contains(err.Error(), "past the end of the log") {
		t.Errorf("a cursor past the end: %v", err)
	}
	// A missing log reads as empty.
	if c, err := launch.ReadLog(filepath.Join(dir, "none.log"), 0, 10); err != nil || len(c.Text) != 0 || c.More {
		t.Errorf("missing log: %+v %v", c, err)
	}
}

func mustJSON(t *testing.T, s string) []byte {
	t.Helper()
	data, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), `\ufffd`) {
		t.Fatalf("%q holds a broken character", s)
	}
	return data
}
