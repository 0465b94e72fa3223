package main

import (
	"fmt"
	"strings"
	"testing"
)

// TestMCPBlockedByCancelled: through a real `git agentmine mcp` process, a
// task whose blocker was cancelled says so in task_show
// (blocked_by_cancelled), worker_start refuses it naming the cancelled
// blocker with a hint to remove it, and once it is removed the task is
// ready.
func TestMCPBlockedByCancelled(t *testing.T) {
	repo := mcpRepo(t)
	c := startMCP(t, repo)
	a := c.must("task_create", map[string]any{"title": "blocker"})["id"].(string)
	b := c.must("task_create", map[string]any{"title": "blocked", "blocked_by": []string{a}})["id"].(string)
	if got := c.must("task_show", map[string]any{"id": b})["blocked_by_cancelled"]; got != nil {
		t.Fatalf("before the cancel: blocked_by_cancelled %v, want none", got)
	}
	c.must("task_cancel", map[string]any{"id": a})
	got := c.must("task_show", map[string]any{"id": b})["blocked_by_cancelled"]
	if fmt.Sprint(got) != fmt.Sprint([]any{a}) {
		t.Fatalf("after the cancel: blocked_by_cancelled %v, want [%s]", got, a)
	}
	_, errText := c.call("worker_start", map[string]any{"task": b})
	lines := strings.Split(errText, "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], "is blocked by cancelled task "+a[:4]) ||
		lines[1] != "exit: state (6)" || !strings.HasPrefix(lines[2], "hint: remove the cancelled blocker with task_update and remove_blocked_by") {
		t.Fatalf("worker_start of the blocked task:\n%s", errText)
	}
	c.must("task_update", map[string]any{"id": b, "remove_blocked_by": []string{a}})
	if got := c.must("task_show", map[string]any{"id": b}); got["blocked_by_cancelled"] != nil || got["ready"] != true {
		t.Fatalf("after removing the blocker: %v", got)
	}
}
