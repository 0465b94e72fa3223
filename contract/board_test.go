package contract

import (
	"fmt"
	"testing"
	"time"

	"github.com/git-agentmine/git-agentmine/board"
	"github.com/git-agentmine/git-agentmine/sessions"
	"github.com/git-agentmine/git-agentmine/status"
	"github.com/git-agentmine/git-agentmine/tasks"
)

// TestBoardUsageIsEachTasks: the usage the board prints under each task
// in review and each failure is the sum TaskUsage gives for that task
// alone (sessions of other tasks, sessions without usage and sessions
// without an outcome left out), and none for a task whose sessions
// reported none.
func TestBoardUsageIsEachTasks(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tb := &tasks.Board{Tasks: map[string]tasks.Entry{}}
	st := map[string]status.Result{}
	var recs []sessions.Record
	for i := 0; i < 6; i++ {
		id := fmt.Sprintf("7a5c%016x", i)
		tb.Tasks[id] = tasks.Entry{Task: tasks.Task{ID: id, Title: "t"}}
		tb.IDs = append(tb.IDs, id)
		st[id] = status.Result{Status: status.Review}
		if i%2 == 1 {
			st[id] = status.Result{Status: status.Failed}
		}
		for s := 0; s < 3; s++ {
			r := sessions.Record{Session: sessions.Session{ID: fmt.Sprintf("5e55%08x%08x", i, s), Task: id, Started: at}}
			switch {
			case i == 4: // no usage reported at all
				r.Outcome = &sessions.Outcome{Finished: at}
			case s == 2: // still running: no outcome
			default:
				r.Outcome = &sessions.Outcome{Finished: at.Add(time.Duration(i) * time.Minute),
					Usage: &sessions.Usage{InputTokens: int64(100*i + s), OutputTokens: 1, CostUSD: 0.5}}
			}
			recs = append(recs, r)
		}
	}
	b := &board.Board{Tasks: tb, Sessions: recs, Status: st}
	j := NewBoard(b, 10, at)
	listed := append(append([]TaskJSON{}, j.Review...), j.Failures...)
	if len(listed) != 6 {
		t.Fatalf("%d tasks listed, want 6", len(listed))
	}
	for _, tj := range listed {
		want := TaskUsage(recs, tj.ID)
		switch {
		case (want == nil) != (tj.Usage == nil):
			t.Fatalf("task %s: usage %+v, want %+v", tj.ID, tj.Usage, want)
		case want != nil && *want != *tj.Usage:
			t.Fatalf("task %s: usage %+v, want %+v", tj.ID, *tj.Usage, *want)
		}
		if tj.ID == tb.IDs[4] && tj.Usage != nil {
			t.Fatalf("task without reported usage shows %+v", tj.Usage)
		}
		if tj.ID == tb.IDs[2] && (tj.Usage == nil || tj.Usage.InputTokens != 401 || tj.Usage.CostUSD != 1) {
			t.Fatalf("task 2: usage %+v, want 200+201 input tokens and $1", tj.Usage)
		}
	}
}
