package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

// TestSealedBoardStatus: the batch resolver judges the seals of a whole
// board at once (the fixture of BenchmarkStatus10kTasks30kSealedSessions,
// small): a session whose only extra line is a forged success is
// dod_failed, not review (tainted when it reached the base); failed,
// merged and honest sessions keep their status; and a forged success appended later to a failed session does not
// turn it into review.
func TestSealedBoardStatus(t *testing.T) {
	repo := gittest.Init(t)
	buildStatusFixtureWith(t, repo, 60, 1, true)
	tid := func(n int) string { return benchID(uint64(n + 1)) }
	show := func(n int) (status, reason string) {
		t.Helper()
		code, out, errs := docsMain(t, repo, "task", "show", tid(n), "--json")
		if code != 0 {
			t.Fatalf("task show: exit %d: %s", code, errs)
		}
		var j struct {
			Status string `json:"status"`
			Reason string `json:"status_reason"`
		}
		if err := json.Unmarshal([]byte(out), &j); err != nil {
			t.Fatal(err)
		}
		return j.Status, j.Reason
	}
	// session i: merged when (i+1)%3 == 0, exit 1 when i%7 == 1, a forged
	// line when i%50 == 0
	if st, why := show(0); st != "dod_failed" || !strings.Contains(why, `forged outcome line (recorded_by "agentmine detach", finished 2099-01-01T00:00:00Z)`) {
		t.Errorf("task 0 (forged line): %s (%s)", st, why)
	}
	// 50 reached the base, and a forged line makes its verdict invalid:
	// tainted, never done
	for n, want := range map[int]string{1: "failed", 2: "done", 3: "review", 50: "tainted"} {
		if st, why := show(n); st != want {
			t.Errorf("task %d: %s (%s), want %s", n, st, why, want)
		}
	}
	code, out, errs := docsMain(t, repo, "status", "--json")
	if code != 0 {
		t.Fatalf("status: exit %d: %s", code, errs)
	}
	var board struct {
		Counts map[string]int `json:"counts"`
	}
	if err := json.Unmarshal([]byte(out), &board); err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"done": 19, "tainted": 1, "failed": 6, "dod_failed": 1, "review": 33}
	for k, n := range want {
		if board.Counts[k] != n {
			t.Errorf("status counts %v, want %v", board.Counts, want)
			break
		}
	}

	// A second process appends a success line to the failed session 1.
	n := uint64(2)
	sid := benchID(n * 0xC2B2AE3D27D4EB4F)
	root := gittest.Git(t, repo, "rev-list", "--max-parents=0", "refs/agentmine/sessions/"+sid)
	line := fmt.Sprintf(`{"v":1,"session":%q,"exit_code":0,"timed_out":false,"finished":"2099-01-01T00:00:00Z","artifacts":[],"recorded_by":"agentmine detach","scope_valid":true,"dod_status":"passed","scope":{"valid":true,"violations":[]},"dod":{"status":"passed"},"commits":1}`, sid)
	gittest.Git(t, repo, "notes", "--ref", "agentmine", "append", "-m", line, root)
	if st, why := show(1); st != "failed" || !strings.Contains(why, "forged outcome line") {
		t.Errorf("task 1 after a forged success: %s (%s), want failed naming the forged line", st, why)
	}
}
