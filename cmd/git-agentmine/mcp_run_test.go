package main

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

// TestMCPDrivesARun: an orchestrator drives the loop through a real `git
// agentmine mcp` process: it creates a task, starts a run on it with
// run_start (which returns while the run goes on), follows run_status's
// log with the cursor until the worker started, stops the run with
// run_stop, and finds it ended stopped, with nothing left running.
func TestMCPDrivesARun(t *testing.T) {
	gittest.SkipShort(t, "a real run started, followed and stopped through MCP")
	repo := mcpRepo(t)
	release := filepath.Join(t.TempDir(), "release") // never created: the worker waits until stopped
	c := startMCP(t, repo, "MCP_TEST_RELEASE="+release)

	task := c.must("task_create", map[string]any{"title": "Run through MCP", "assignee": "scripted"})
	id := task["id"].(string)
	if _, errText := c.call("run_stop", map[string]any{"name": "nope"}); !strings.Contains(errText, "run nope not found") ||
		!strings.Contains(errText, "exit: not_found (5)") {
		t.Errorf("run_stop of a run that does not exist: %q", errText)
	}

	run := c.must("run_start", map[string]any{"tasks": []string{task["short_id"].(string)}, "name": "mcp", "max_loops": 1})
	if run["name"] != "mcp" || run["state"] != "running" || run["targets"].([]any)[0] != id {
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
	for !strings.Contains(log.String(), "started task "+id[:8]) {
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
