package pipeline

import (
	"testing"

	"github.com/git-agentmine/git-agentmine/sessions"
)

// A start under way takes its slots once: the session it already recorded,
// running on the board, is its own, not one more. Counted twice, a slot
// stayed empty until a worker's end, as no look follows a start that got
// its session started.
func TestBusySlotsCountsAStartOnce(t *testing.T) {
	s := &Supervisor{starting: map[string]bool{"a": true, "b": true}, bo: roundState{k: map[string]int{"b": 3}}}
	running := []sessions.Record{
		{Session: sessions.Session{ID: "s1", Task: "a"}}, // a's start, recorded
		{Session: sessions.Session{ID: "s2", Task: "b"}}, // one of b's round of 3
		{Session: sessions.Session{ID: "s3", Task: "c"}}, // running on its own
	}
	if got := s.busySlots(running); got != 1+3+1 {
		t.Errorf("busy slots %d, want 5 (a: 1, b's round: 3, c: 1)", got)
	}
	s.starting = map[string]bool{}
	if got := s.busySlots(running); got != 3 {
		t.Errorf("busy slots with no start under way %d, want 3", got)
	}
}
