package bestof

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

// TestRoundsAndOneDecision: rounds are added in order and found by their
// sessions; a round is decided once, even by writers racing to decide it.
func TestRoundsAndOneDecision(t *testing.T) {
	ctx := context.Background()
	st, err := gitstore.Open(ctx, gittest.NewRepo(t))
	if err != nil {
		t.Fatal(err)
	}
	const task = "0123456789abcdef0123"
	if _, ok, err := Get(ctx, st, task); ok || err != nil {
		t.Fatalf("a task without rounds: ok %v, err %v", ok, err)
	}
	for i, sids := range [][]string{{"s1", "s2"}, {"s3", "s4", "s5"}} {
		rd := Round{K: len(sids)}
		for j, sid := range sids {
			rd.Attempts = append(rd.Attempts, Candidate{Slot: j + 1, Session: sid, Agent: "a"})
		}
		rec, err := AddRound(ctx, st, task, rd)
		if err != nil || len(rec.Rounds) != i+1 {
			t.Fatalf("round %d: %v, %d rounds", i+1, err, len(rec.Rounds))
		}
	}
	rec, ok, err := Get(ctx, st, task)
	if err != nil || !ok || rec.RoundOf("s4") != 1 || rec.RoundOf("s1") != 0 || rec.RoundOf("s9") != -1 {
		t.Fatalf("rounds %+v (%v, %v)", rec, ok, err)
	}
	if got := rec.Rounds[1].Summary(); got != "running" {
		t.Errorf("an undecided round: %q", got)
	}
	// Three writers decide round 2 at once: one decision is kept.
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i, w := range []string{"s3", "s4", "s5"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := Decision{Winner: w, By: "smallest diff", Reasons: []string{"smallest"},
				Candidates: []Judged{{Slot: i + 1, Session: w, Passed: true, Chosen: true}}}
			_, errs[i] = Decide(ctx, st, task, 1, d)
		}()
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, ErrDecided):
			t.Fatalf("deciding: %v", err)
		}
	}
	rec, _, _ = Get(ctx, st, task)
	d := rec.Rounds[1].Decided
	if won != 1 || d == nil || rec.Rounds[0].Decided != nil {
		t.Fatalf("%d decisions kept; round 2 %+v", won, d)
	}
	if got, want := rec.Rounds[1].Summary(), "attempt "+map[string]string{"s3": "1", "s4": "2", "s5": "3"}[d.Winner]+" chosen by smallest diff: smallest"; got != want {
		t.Errorf("summary %q, want %q", got, want)
	}
	if _, err := Decide(ctx, st, task, 5, Decision{}); err == nil {
		t.Error("a round that does not exist was decided")
	}
}
