package contract

import (
	"fmt"
	"slices"
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

// TestReadyOrder: task ready lists the ready tasks highest priority first,
// each priority in id order (an unknown priority last), the tasks that are
// not ready left out; with one priority throughout, in id order.
func TestReadyOrder(t *testing.T) {
	prios := []string{"low", "critical", "medium", "", "high", "critical", "low", "medium", "high", "low"}
	board2 := func(prio func(i int) string) (*board.Board, []string) {
		tb := &tasks.Board{Tasks: map[string]tasks.Entry{}}
		st := map[string]status.Result{}
		for i := range prios {
			id := fmt.Sprintf("7a5c%016x", i)
			tb.Tasks[id] = tasks.Entry{Task: tasks.Task{ID: id, Title: "t", Priority: prio(i)}}
			tb.IDs = append(tb.IDs, id)
			st[id] = status.Result{Status: status.Open, Ready: i != 2 && i != 7}
		}
		return &board.Board{Tasks: tb, Status: st}, tb.IDs
	}
	b, ids := board2(func(i int) string { return prios[i] })
	want := []string{ids[1], ids[5], ids[4], ids[8], ids[0], ids[6], ids[9], ids[3]}
	if got := Ready(b); !slices.Equal(got, want) {
		t.Errorf("Ready = %q, want %q", got, want)
	}
	b, ids = board2(func(int) string { return "medium" })
	want = []string{ids[0], ids[1], ids[3], ids[4], ids[5], ids[6], ids[8], ids[9]}
	if got := Ready(b); !slices.Equal(got, want) {
		t.Errorf("one priority: Ready = %q, want %q", got, want)
	}
}
