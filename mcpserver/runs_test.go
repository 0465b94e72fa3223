package mcpserver

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/internal/gittest"
	"github.com/git-agentmine/git-agentmine/pipeline"
	"github.com/git-agentmine/git-agentmine/tasks"
)

// TestRunStatus: run_status shows a run as run status --json does, with the
// clients a rate limit paused, and follows its log from cursor to cursor;
// a run that does not exist, a negative cursor and a log outside the
// repository are refused.
func TestRunStatus(t *testing.T) {
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
	logs, err := st.LocalDir("logs")
	if err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(logs, "run-nightly.log")
	if err := os.WriteFile(log, []byte("10:00:00 started task one\n10:00:05 rate_limited task one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	until := time.Date(2099, 1, 2, 3, 4, 5, 0, time.UTC)
	forge := func(name, log string) {
		r := pipeline.Record{V: pipeline.SchemaVersion, Name: name, Targets: []string{task.ID}, Parallel: 2, MaxLoops: 3,
			Started: time.Now().UTC(), Log: log, Ended: &pipeline.End{Time: time.Now().UTC(), Result: "stopped"},
			RateLimits: []pipeline.Pause{{Client: "codex", Limits: 1, Session: "s1", Task: task.ID, Reason: "rate limited: usage limit",
				Until: until, FromClient: true, Parallel: 1}}}
		data, _ := json.Marshal(r)
		if _, err := st.Create(ctx, pipeline.Kind, name, gitstore.Change{Data: data, Message: "run: " + name}); err != nil {
			t.Fatal(err)
		}
	}
	forge("nightly", log)
	forge("elsewhere", filepath.Join(t.TempDir(), "run.log"))
	cs := connect(t, repo)

	failed, text := callText(t, cs, "run_status", map[string]any{"name": "nightly", "max_bytes": 26})
	var got struct {
		Run struct {
			State      string           `json:"state"`
			Total      int              `json:"total"`
			RateLimits []pipeline.Pause `json:"rate_limits"`
		} `json:"run"`
		Text   string `json:"text"`
		Cursor int64  `json:"cursor"`
		More   bool   `json:"more"`
		Ended  bool   `json:"ended"`
	}
	if failed || json.Unmarshal([]byte(text), &got) != nil {
		t.Fatalf("run_status: %s", text)
	}
	if got.Run.State != "ended" || got.Run.Total != 1 || !got.Ended || len(got.Run.RateLimits) != 1 ||
		got.Run.RateLimits[0].Client != "codex" || !got.Run.RateLimits[0].Until.Equal(until) {
		t.Errorf("run_status: %s", text)
	}
	if got.Text != "10:00:00 started task one\n" || got.Cursor != 26 || !got.More {
		t.Errorf("first part of the log: %q cursor %d more %v", got.Text, got.Cursor, got.More)
	}
	_, text = callText(t, cs, "run_status", map[string]any{"name": "nightly", "cursor": got.Cursor})
	if err := json.Unmarshal([]byte(text), &got); err != nil || got.Text != "10:00:05 rate_limited task one\n" || got.More {
		t.Errorf("rest of the log: %s", text)
	}

	for _, c := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"name": "nope"}, "run nope not found"},
		{map[string]any{"name": "nightly", "cursor": -1}, "cursor must not be negative"},
		{map[string]any{"name": "elsewhere"}, "refusing to read it"},
	} {
		if failed, text := callText(t, cs, "run_status", c.args); !failed || !strings.Contains(text, c.want) {
			t.Errorf("%v: %q, want a tool error with %q", c.args, text, c.want)
		}
	}
}
