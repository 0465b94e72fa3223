package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

// mcpPlanner is the scripted planner of TestMCPDrivesARun: its plan is
// the file MCP_TEST_PLAN names.
const mcpPlanner = `role = "planner"
client = "custom"
command = ["sh", "-c", "cp \"$MCP_TEST_PLAN\" \"$1\"", "sh", "{output_file}"]
`

// TestMCPDrivesARun: an orchestrator drives the loop through a real `git
// agentmine mcp` process: it plans a goal with task_plan (the scripted
// planner creates one child) and imports a second child with plan_import,
// starts a run on the goal with run_start (which returns while the run
// goes on), follows run_status's log with the cursor until a worker
// started, stops the run with run_stop, and finds it ended stopped, with
// no attempt charged and nothing left running.
func TestMCPDrivesARun(t *testing.T) {
	gittest.SkipShort(t, "a real run planned, started, followed and stopped through MCP")
	repo := mcpRepo(t)
	gittest.WriteFiles(t, repo, map[string]string{".agentmine/agents/planner.toml": mcpPlanner})
	gittest.Git(t, repo, "add", "-A")
	gittest.Git(t, repo, "commit", "-q", "-m", "planner")
	dir := t.TempDir()
	release := filepath.Join(dir, "release") // never created: the workers wait until stopped
	planFile := filepath.Join(dir, "plan.json")
	if err := os.WriteFile(planFile, []byte(`{"v":1,"summary":"one step","tasks":[{"key":"step","title":"Planned step","agent":"scripted"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	c := startMCP(t, repo, "MCP_TEST_RELEASE="+release, "MCP_TEST_PLAN="+planFile)

	goal := c.must("task_create", map[string]any{"title": "Goal through MCP", "acceptance": []string{"it runs"}})
	goalID := goal["id"].(string)
	planned := c.must("task_plan", map[string]any{"task": goal["short_id"]})
	created := planned["created"].([]any)
	if planned["summary"] != "one step" || len(created) != 1 || created[0].(map[string]any)["title"] != "Planned step" ||
		created[0].(map[string]any)["parent"] != goalID {
		t.Fatalf("task_plan: %v", planned)
	}
	id := created[0].(map[string]any)["id"].(string)
	imported := c.must("plan_import", map[string]any{"parent": goalID, "plan": map[string]any{"v": 1, "summary": "more",
		"tasks": []any{map[string]any{"key": "more", "title": "Imported step", "agent": "scripted", "blocked_by": []string{}}}}})
	if created := imported["created"].([]any); len(created) != 1 || created[0].(map[string]any)["title"] != "Imported step" {
		t.Fatalf("plan_import: %v", imported)
	}
	if _, errText := c.call("plan_import", map[string]any{"plan": map[string]any{"v": 1, "tasks": []any{}}}); errText == "" {
		t.Errorf("plan_import of a plan without tasks succeeded")
	}
	if _, errText := c.call("run_stop", map[string]any{"name": "nope"}); !strings.Contains(errText, "run nope not found") ||
		!strings.Contains(errText, "exit: not_found (5)") {
		t.Errorf("run_stop of a run that does not exist: %q", errText)
	}

	run := c.must("run_start", map[string]any{"tasks": []string{goalID}, "name": "mcp", "max_loops": 1, "parallel": 1})
	if run["name"] != "mcp" || run["state"] != "running" || len(run["targets"].([]any)) != 2 || !strings.Contains(fmt.Sprint(run["targets"]), id) {
		t.Fatalf("run_start: %v", run)
	}
	if _, errText := c.call("run_start", map[string]any{"name": "mcp"}); !strings.Contains(errText, "run mcp is already running") {
		t.Errorf("a second run_start of a running run: %q", errText)
	}
	supervisor := int(run["supervisor"].(map[string]any)["pid"].(float64))

	// Follow the run's events until its worker started.
	var log strings.Builder
	cursor := 0.0
	deadline := time.Now().Add(2 * time.Minute)
	for !strings.Contains(log.String(), "started task ") {
		if time.Now().After(deadline) {
			t.Fatalf("the run's log never said its worker started: %q", log.String())
		}
		out := c.must("run_status", map[string]any{"name": "mcp", "cursor": cursor})
		if out["ended"].(bool) {
			t.Fatalf("the run ended before its worker started: %v", out)
		}
		log.WriteString(out["text"].(string))
		if next := out["cursor"].(float64); next < cursor {
			t.Fatalf("run_status: the cursor went back from %v to %v", cursor, next)
		}
		cursor = out["cursor"].(float64)
		if !out["more"].(bool) {
			time.Sleep(100 * time.Millisecond)
		}
	}

	stopped := c.must("run_stop", map[string]any{"name": "mcp", "reason": "enough through MCP"})
	ended, _ := stopped["ended"].(map[string]any)
	if stopped["state"] != "ended" || ended == nil || ended["result"] != "stopped" || !strings.Contains(ended["reason"].(string), "enough through MCP") {
		t.Errorf("run_stop: %v", stopped)
	}
	out := c.must("run_status", map[string]any{"name": "mcp", "cursor": cursor})
	r := out["run"].(map[string]any)
	if !out["ended"].(bool) || len(r["running"].([]any)) != 0 || r["attempts"].(float64) != 0 {
		t.Errorf("run_status after run_stop: %v", out)
	}
	// The run's supervisor ends after recording the end: wait for it, so
	// that nothing writes into the repository once the test returns.
	for syscall.Kill(supervisor, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("the run's supervisor (pid %d) is still running", supervisor)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
