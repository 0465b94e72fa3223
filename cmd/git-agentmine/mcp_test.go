package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

// mcpAgent is the scripted worker of the MCP tests: it says it started,
// waits until the file named by MCP_TEST_RELEASE exists (so a test sees it
// running, however slow the machine), prints three steps, commits a file in
// its scope and says it finished.
const mcpAgent = `client = "custom"
command = ["sh", "-c", "echo started {task}; while [ ! -e \"$MCP_TEST_RELEASE\" ]; do sleep 0.05; done; for i in 1 2 3; do echo \"step $i of {task}\"; done; echo ok > src/out-{task}.txt && git add src && git commit -qm 'work on {task}' && echo finished {task}"]
[scope]
write = ["src/**"]
`

// mcpRepo makes a repository set up for agentmine with the scripted agent
// committed, and returns it.
func mcpRepo(t *testing.T) string {
	t.Helper()
	repo := gittest.NewRepo(t)
	gittest.CommitFiles(t, repo, "source", map[string]string{"src/a.txt": "a\n"})
	if out, err := exec.Command("git", "-C", repo, "agentmine", "init").CombinedOutput(); err != nil {
		t.Fatalf("init: %v\n%s", err, out)
	}
	gittest.WriteFiles(t, repo, map[string]string{".agentmine/agents/scripted.toml": mcpAgent})
	gittest.Git(t, repo, "add", "-A")
	gittest.Git(t, repo, "commit", "-q", "-m", "agentmine")
	return repo
}

// mcpClient is an MCP client connected over stdio to a `git agentmine mcp`
// process, with the tools it listed and their schemas resolved.
type mcpClient struct {
	t       *testing.T
	cs      *mcp.ClientSession
	stderr  *bytes.Buffer
	tools   []*mcp.Tool
	outputs map[string]*jsonschema.Resolved
}

// startMCP starts `git agentmine mcp` in dir, as an MCP client configured
// with that command line would, with extra environment variables, and
// lists its tools.
func startMCP(t *testing.T, dir string, env ...string) *mcpClient {
	t.Helper()
	cmd := exec.Command("git", "agentmine", "mcp")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	c := &mcpClient{t: t, stderr: &bytes.Buffer{}, outputs: map[string]*jsonschema.Resolved{}}
	cmd.Stderr = c.stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "agentmine-test", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connecting to git agentmine mcp: %v\nstderr: %s", err, c.stderr)
	}
	c.cs = cs
	t.Cleanup(func() { cs.Close() })
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	c.tools = res.Tools
	for _, tool := range res.Tools {
		if _, err := resolveSchema(tool.InputSchema); err != nil {
			t.Errorf("tool %s: input schema: %v", tool.Name, err)
		}
		out, err := resolveSchema(tool.OutputSchema)
		if err != nil {
			t.Errorf("tool %s: output schema: %v", tool.Name, err)
			continue
		}
		c.outputs[tool.Name] = out
	}
	return c
}

// resolveSchema reads a schema as tools/list gave it and resolves it: a
// schema that does not resolve is invalid.
func resolveSchema(s any) (*jsonschema.Resolved, error) {
	if s == nil {
		return nil, fmt.Errorf("missing")
	}
	data, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	var schema jsonschema.Schema
	if err := json.Unmarshal(data, &schema); err != nil {
		return nil, err
	}
	if schema.Type != "object" {
		return nil, fmt.Errorf("type %q, want object", schema.Type)
	}
	return schema.Resolve(nil)
}

// call calls a tool and returns its result: on success the structured
// content, which must match the tool's output schema and equal the text
// content; on a tool error "" and the error text. A protocol error fails
// the test.
func (c *mcpClient) call(name string, args any) (out map[string]any, errText string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		c.t.Fatalf("%s: protocol error: %v\nserver stderr: %s", name, err, c.stderr)
	}
	if len(res.Content) != 1 {
		c.t.Fatalf("%s: %d content blocks, want 1", name, len(res.Content))
	}
	text := res.Content[0].(*mcp.TextContent).Text
	if res.IsError {
		if res.StructuredContent != nil {
			c.t.Errorf("%s: a tool error with structured content", name)
		}
		return nil, text
	}
	data, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(data, &out); err != nil {
		c.t.Fatalf("%s: structured content is not an object: %s", name, data)
	}
	var fromText map[string]any
	if err := json.Unmarshal([]byte(text), &fromText); err != nil {
		c.t.Fatalf("%s: the text content is not the JSON result: %v", name, err)
	}
	if a, b := fmt.Sprint(out), fmt.Sprint(fromText); a != b {
		c.t.Errorf("%s: text and structured content differ:\n%s\n%s", name, a, b)
	}
	if schema := c.outputs[name]; schema != nil {
		if err := schema.Validate(out); err != nil {
			c.t.Errorf("%s: result does not match its output schema: %v", name, err)
		}
	}
	return out, ""
}

// must calls a tool that has to succeed.
func (c *mcpClient) must(name string, args any) map[string]any {
	c.t.Helper()
	out, errText := c.call(name, args)
	if errText != "" {
		c.t.Fatalf("%s %v: %s", name, args, errText)
	}
	return out
}

// taskIDs returns the ids of a task_list or task_ready result.
func taskIDs(out map[string]any) []string {
	var ids []string
	for _, x := range out["tasks"].([]any) {
		ids = append(ids, x.(map[string]any)["id"].(string))
	}
	return ids
}

// follow reads a session's log with session_output from cursor 0 until
// the session has ended and nothing more is there, as a client follows a
// run, and returns everything it read.
func (c *mcpClient) follow(session string) string {
	c.t.Helper()
	var text strings.Builder
	cursor := 0.0
	for {
		out := c.must("session_output", map[string]any{"session": session, "cursor": cursor, "wait_seconds": 5})
		text.WriteString(out["text"].(string))
		if next := out["cursor"].(float64); next < cursor {
			c.t.Fatalf("session_output: cursor went back from %v to %v", cursor, next)
		}
		cursor = out["cursor"].(float64)
		if out["ended"].(bool) && !out["more"].(bool) {
			return text.String()
		}
	}
}

// TestMCPServerDrivesWorkers drives a real `git agentmine mcp` process with
// the SDK's client over stdio through a whole lifecycle: tasks with a
// blocker, task_ready changing once the blocker is done, a worker started
// (returning while it runs) and followed with session_output until it
// ends, its verdict, a merge, and the refused merge of a dod_failed one.
func TestMCPServerDrivesWorkers(t *testing.T) {
	gittest.SkipShort(t, "real workers started and waited for through MCP")
	repo := mcpRepo(t)
	release := filepath.Join(t.TempDir(), "release")
	c := startMCP(t, repo, "MCP_TEST_RELEASE="+release)

	var names []string
	for _, tool := range c.tools {
		names = append(names, tool.Name)
	}
	for _, want := range []string{"context", "task_list", "task_ready", "task_show", "task_create", "task_update",
		"task_cancel", "worker_start", "session_status", "session_output", "merge", "memory_add", "memory_list"} {
		if !strings.Contains(" "+strings.Join(names, " ")+" ", " "+want+" ") {
			t.Errorf("tools/list has no %s (has %v)", want, names)
		}
	}

	a := c.must("task_create", map[string]any{"title": "Write the output", "assignee": "scripted",
		"dod": []string{"grep -rq ok src"}, "labels": []string{"mcp"}, "paths": []string{"src/**"}})
	aID := a["id"].(string)
	if p, _ := a["paths"].([]any); len(p) != 1 || p[0] != "src/**" {
		t.Errorf("task_create with paths: paths %v", a["paths"])
	}
	b := c.must("task_create", map[string]any{"title": "Needs the output", "blocked_by": []string{a["short_id"].(string)},
		"dod": []string{"false"}, "assignee": "scripted", "priority": "high", "best_of": 2})
	if b["best_of"] != 2.0 {
		t.Errorf("task_create with best_of: best_of %v", b["best_of"])
	}
	bID := b["id"].(string)
	if b["blocked"] != true || b["status"] != "open" {
		t.Errorf("task_create with a blocker: blocked %v, status %v", b["blocked"], b["status"])
	}
	if got := taskIDs(c.must("task_ready", nil)); strings.Join(got, ",") != aID {
		t.Errorf("task_ready before the blocker is done: %v, want only %s", got, aID)
	}
	c.must("memory_add", map[string]any{"category": "convention", "title": "Outputs go under src", "summary": "write src/out-*"})
	ctx := c.must("context", nil)
	if mems := ctx["memories"].([]any); len(mems) != 1 || mems[0].(map[string]any)["title"] != "Outputs go under src" {
		t.Errorf("context: memories %v", mems)
	}
	if ready := ctx["ready"].([]any); len(ready) != 1 || ready[0].(map[string]any)["id"] != aID {
		t.Errorf("context: ready %v", ready)
	}

	// worker_start returns while the worker waits for its release: the
	// run is started, not awaited.
	run := c.must("worker_start", map[string]any{"task": aID})
	sid := run["session"].(string)
	if run["branch"] == "" || run["pid"].(float64) <= 0 {
		t.Errorf("worker_start: branch %v, pid %v", run["branch"], run["pid"])
	}
	if h, ok := run["hint"]; ok {
		t.Errorf("worker_start in a repository without a remote gives a share hint: %v", h)
	}
	st := c.must("session_status", map[string]any{"session": sid[:8]})
	if st["verdict"] != "running" || st["task_status"] != "in_progress" {
		t.Errorf("session_status right after worker_start: verdict %v, task %v; want running, in_progress", st["verdict"], st["task_status"])
	}
	// Follow the log while it runs: the first line arrives before the
	// release, so the wait in session_output is what delivers it.
	first := c.must("session_output", map[string]any{"session": sid, "wait_seconds": 30})
	for !strings.Contains(first["text"].(string), "started") {
		first = c.must("session_output", map[string]any{"session": sid, "wait_seconds": 30})
	}
	if first["ended"] != false {
		t.Errorf("session_output while the worker waits: ended %v", first["ended"])
	}
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	text := c.follow(sid)
	log, err := os.ReadFile(run["log"].(string))
	if err != nil {
		t.Fatal(err)
	}
	if text != string(log) {
		t.Errorf("following with session_output read %q, the log holds %q", text, log)
	}
	for _, want := range []string{"started " + aID, "step 3 of " + aID, "finished " + aID} {
		if !strings.Contains(text, want) {
			t.Errorf("the followed output lacks %q:\n%s", want, text)
		}
	}
	st = c.must("session_status", map[string]any{"task": aID})
	if st["verdict"] != "review" || st["task_status"] != "review" {
		t.Errorf("session_status after the run: verdict %v, task %v; want review", st["verdict"], st["task_status"])
	}
	if o := st["session"].(map[string]any)["outcome"].(map[string]any); o["exit_code"] != 0.0 || o["dod_status"] != "passed" || o["scope_valid"] != true {
		t.Errorf("outcome: %v", o)
	}

	m := c.must("merge", map[string]any{"task": aID})
	if m["commit"] == "" || m["session"] != sid {
		t.Errorf("merge: %v", m)
	}
	if s := c.must("task_show", map[string]any{"id": aID})["status"]; s != "done" {
		t.Errorf("task_show after merge: status %v, want done", s)
	}
	if got := taskIDs(c.must("task_ready", nil)); strings.Join(got, ",") != bID {
		t.Errorf("task_ready after the blocker is done: %v, want only %s", got, bID)
	}

	// B's DoD fails: dod_failed, and merge refuses without changing a ref.
	runB := c.must("worker_start", map[string]any{"task": bID[:6]})
	c.follow(runB["session"].(string))
	st = c.must("session_status", map[string]any{"task": bID})
	if v := st["verdict"].(string); !strings.HasPrefix(v, "dod_failed") || st["task_status"] != "dod_failed" {
		t.Errorf("session_status of the failing DoD: verdict %q, task %v", v, st["task_status"])
	}
	before := gittest.Git(t, repo, "for-each-ref")
	_, errText := c.call("merge", map[string]any{"task": bID})
	if !strings.HasPrefix(errText, "error: ") || !strings.Contains(errText, "DoD failed") ||
		!strings.Contains(errText, "\nexit: failed (1)") || !strings.Contains(errText, "\nhint: ") {
		t.Errorf("merge of a dod_failed task: %q; want a tool error naming the DoD, exit failed (1) and a hint", errText)
	}
	if after := gittest.Git(t, repo, "for-each-ref"); after != before {
		t.Errorf("a refused merge changed refs:\n%s\n%s", before, after)
	}
	show := c.must("task_show", map[string]any{"id": bID})
	if show["status"] != "dod_failed" || show["latest_session"].(map[string]any)["id"] != runB["session"] {
		t.Errorf("task_show of the dod_failed task: status %v", show["status"])
	}
}

// TestMCPBadInput sends a real `git agentmine mcp` process what a confused
// model might: each call is a tool error with one clear line, the exit
// code's name and number, and at most a hint; nothing in the repository
// changes; and the server keeps serving.
func TestMCPBadInput(t *testing.T) {
	gittest.SkipShort(t, "a server session per bad input")
	repo := mcpRepo(t)
	// ids 0000…: "0000" is an ambiguous prefix
	buildTaskFixtureIDs(t, repo, 3, func(i int) string { return fmt.Sprintf("0000%016x", uint64(i)*0x9E3779B97F4A7C15) })
	c := startMCP(t, repo)
	refs := func() string { return gittest.Git(t, repo, "for-each-ref") }
	before := refs()
	for _, tc := range []struct {
		tool string
		args any
		want string // in the error line
		exit string
	}{
		{"task_delete", map[string]any{"id": "0000"}, `unknown tool "task_delete"; the tools are: context, task_list`, "usage (2)"},
		{"task_create", map[string]any{}, `task_create: missing required argument "title"`, "usage (2)"},
		{"task_create", map[string]any{"title": 7}, `task_create: argument "title" must be a string, not a number (7)`, "usage (2)"},
		{"task_create", map[string]any{"title": "x", "blocked_by": "0000"}, `argument "blocked_by" must be an array of strings, not a string`, "usage (2)"},
		{"task_create", map[string]any{"title": "x", "labels": []any{"a", 3}}, `argument "labels" must be an array of strings, not an array holding a number (3)`, "usage (2)"},
		{"task_create", map[string]any{"title": "x", "bogus": true}, `task_create: unknown argument "bogus" (it takes only title, description`, "usage (2)"},
		{"task_create", "just a title", `task_create: the arguments must be a JSON object, not a string`, "usage (2)"},
		{"task_create", map[string]any{"title": "x", "priority": "urgent"}, `priority "urgent"`, "usage (2)"},
		{"task_create", map[string]any{"title": "x", "paths": []string{"../x"}}, `invalid path "../x"`, "usage (2)"},
		{"task_create", map[string]any{"title": "x", "best_of": 11}, `invalid best-of 11`, "usage (2)"},
		{"task_create", map[string]any{"title": "x", "blocked_by": []string{"f00f"}}, `f00f`, "not_found (5)"},
		{"worker_start", map[string]any{"task": "0000", "timeout": "soon"}, `worker_start: argument "timeout" must be an integer, not a string`, "usage (2)"},
		{"session_output", map[string]any{"session": "abcd", "cursor": 1.5}, `argument "cursor" must be an integer, not a number (1.5)`, "usage (2)"},
		{"task_list", map[string]any{"limit": -1}, `task_list: limit must not be negative`, "usage (2)"},
		{"task_list", map[string]any{"status": "finished"}, `unknown status "finished"`, "usage (2)"},
		{"task_show", map[string]any{"id": "f00f"}, `task f00f not found`, "not_found (5)"},
		{"task_show", map[string]any{"id": "0000"}, `task id 0000 is ambiguous: candidates`, "usage (2)"},
		{"task_show", map[string]any{"id": "zz"}, `malformed task id "zz"`, "usage (2)"},
		{"task_update", map[string]any{"id": "0000", "title": "new"}, `is ambiguous`, "usage (2)"},
		{"session_status", map[string]any{}, `session_status: give either session or task`, "usage (2)"},
		{"session_status", map[string]any{"session": "abcd"}, `session abcd not found`, "not_found (5)"},
		{"merge", map[string]any{"task": "f00f"}, `task f00f not found`, "not_found (5)"},
		{"memory_add", map[string]any{"category": "a/b", "title": "x"}, `category`, "usage (2)"},
		{"memory_add", map[string]any{"category": "rules", "title": "x"}, `unknown memory category "rules" (known: architecture, tooling, convention, rule, domain, decision)`, "usage (2)"},
	} {
		_, errText := c.call(tc.tool, tc.args)
		lines := strings.Split(errText, "\n")
		if len(lines) < 2 || len(lines) > 3 || !strings.HasPrefix(lines[0], "error: ") || !strings.Contains(lines[0], tc.want) ||
			lines[1] != "exit: "+tc.exit || len(lines) == 3 && !strings.HasPrefix(lines[2], "hint: ") {
			t.Errorf("%s %v:\n%s\nwant \"error: …%s…\", \"exit: %s\" and at most a hint", tc.tool, tc.args, errText, tc.want, tc.exit)
		}
		// The server keeps serving, and nothing was written.
		if got := taskIDs(c.must("task_list", map[string]any{"limit": 0})); len(got) != 3 {
			t.Fatalf("after %s: task_list has %d tasks, want the 3 of the fixture", tc.tool, len(got))
		}
	}
	if after := refs(); after != before {
		t.Errorf("bad input changed refs:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	if _, errText := c.call("task_show", map[string]any{"id": "0000"}); !strings.Contains(errText, "\nhint: give more digits of the id") {
		t.Errorf("ambiguous id: %q has no hint to give more digits", errText)
	}
}

// inspectorBin is the MCP Inspector's launcher, installed by .ci/run
// (npm install in internal/mcpinspector, pinned by its package-lock.json).
const inspectorBin = "../../internal/mcpinspector/node_modules/.bin/mcp-inspector"

// TestMCPInspector runs a third-party client against the server: the MCP
// Inspector's command-line mode starts `git agentmine mcp` itself, lists
// the tools with its schema portability check, and calls task_create,
// whose task the command line then sees.
func TestMCPInspector(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: runs the MCP Inspector (node), seconds per call")
	}
	bin, err := filepath.Abs(inspectorBin)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("the MCP Inspector is not installed (%v): run `npm install` in internal/mcpinspector, as .ci/run does", err)
	}
	repo := mcpRepo(t)
	inspect := func(args ...string) (string, string, error) {
		t.Helper()
		full := append([]string{"--cli", "--cwd", repo, "git", "agentmine", "mcp"}, args...)
		cmd := exec.Command(bin, full...)
		cmd.Dir = repo
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		return out.String(), errb.String(), err
	}

	out, stderr, err := inspect("--method", "tools/list", "--strict")
	if err != nil {
		t.Fatalf("inspector tools/list --strict: %v\nstdout: %s\nstderr: %s", err, out, stderr)
	}
	var list struct{ Tools []mcp.Tool }
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("inspector tools/list: %v\n%s", err, out)
	}
	// The inspector must see every tool the Go SDK's client sees from the
	// same server: a count written here went stale each time a tool came.
	var want, got []string
	for _, tool := range startMCP(t, repo).tools {
		want = append(want, tool.Name)
	}
	for _, tool := range list.Tools {
		got = append(got, tool.Name)
	}
	sort.Strings(want)
	sort.Strings(got)
	if len(want) < 13 || strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("the inspector lists tools %v, the Go client %v", got, want)
	}
	if !strings.Contains(stderr, "0 errors") {
		t.Errorf("the inspector's schema check found errors:\n%s", stderr)
	}
	if strings.Contains(stderr, "Path: inputSchema") {
		t.Errorf("the inspector finds input schemas less portable than they can be:\n%s", stderr)
	}

	out, stderr, err = inspect("--method", "tools/call", "--tool-name", "task_create",
		"--tool-arg", "title=Created by the inspector", "--tool-arg", `labels=["third-party"]`, "--tool-arg", "priority=high")
	if err != nil {
		t.Fatalf("inspector task_create: %v\nstdout: %s\nstderr: %s", err, out, stderr)
	}
	var res struct {
		IsError           bool
		StructuredContent struct {
			ID, Title, Priority string
			Labels              []string
		}
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.IsError || res.StructuredContent.Title != "Created by the inspector" {
		t.Fatalf("inspector task_create: %v\n%s", err, out)
	}
	cli, err := exec.Command("git", "-C", repo, "agentmine", "task", "show", res.StructuredContent.ID, "--json").Output()
	if err != nil || !strings.Contains(string(cli), `"priority": "high"`) || !strings.Contains(string(cli), `"third-party"`) {
		t.Errorf("the CLI does not see the task the inspector created: %v\n%s", err, cli)
	}

	out, _, err = inspect("--method", "tools/call", "--tool-name", "task_show", "--tool-arg", "id=f00f")
	if err == nil || !strings.Contains(out, `error: task f00f not found\nexit: not_found (5)`) {
		t.Errorf("inspector task_show of an unknown id: %v\n%s", err, out)
	}
}

// TestMCPOutsideRepository: started outside a repository, the server says
// so in one error line and exits 6 before serving anything.
func TestMCPOutsideRepository(t *testing.T) {
	gittest.Scrub(t)
	code, out, errs := docsMain(t, t.TempDir(), "mcp")
	if code != 6 || out != "" || !strings.HasPrefix(errs, "error: ") || !strings.Contains(errs, "not a git repository") {
		t.Errorf("mcp outside a repository: exit %d, stdout %q, stderr %q; want 6 and one error line", code, out, errs)
	}
}

// TestMCPShareHint: in a repository with an origin and no sync remote,
// worker_start's result says that nothing is shared and how to share (the
// command line's hint: line, which an MCP client never sees on stderr).
func TestMCPShareHint(t *testing.T) {
	gittest.SkipShort(t, "starts a detached worker through git agentmine mcp")
	repo := mcpRepo(t)
	gittest.Git(t, repo, "remote", "add", "origin", filepath.Join(t.TempDir(), "elsewhere.git"))
	release := filepath.Join(t.TempDir(), "release")
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	c := startMCP(t, repo, "MCP_TEST_RELEASE="+release)
	id := c.must("task_create", map[string]any{"title": "Share me", "assignee": "scripted"})["id"].(string)
	run := c.must("worker_start", map[string]any{"task": id})
	hint, _ := run["hint"].(string)
	if !strings.Contains(hint, "nothing is shared through origin") || !strings.Contains(hint, "git agentmine init --remote origin") {
		t.Errorf("worker_start with an unshared origin: hint %q", hint)
	}
	c.follow(run["session"].(string))
}
