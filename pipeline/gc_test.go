package pipeline

import (
	"runtime/debug"
	"testing"

	"github.com/git-agentmine/git-agentmine/board"
	"github.com/git-agentmine/git-agentmine/tasks"
)

// gcPercent reads the process's garbage collection target.
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

func TestGCTunerRaisesForSmallBoardsOnly(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	small := &board.Board{Tasks: &tasks.Board{IDs: []string{"a", "b"}}}
	large := &board.Board{Tasks: &tasks.Board{IDs: make([]string, smallBoardDocs+1)}}
	var g gcTuner
	g.fit(small)
	if got := gcPercent(); got != smallBoardGCPercent {
		t.Fatalf("small board: target %d, want %d", got, smallBoardGCPercent)
	}
	g.fit(large)
	if got := gcPercent(); got != 100 {
		t.Fatalf("large board: target %d, want the process's own 100", got)
	}
	g.fit(small)
	g.restore()
	if got := gcPercent(); got != 100 {
		t.Fatalf("after the loop: target %d, want 100", got)
	}
}

func TestGCTunerKeepsAHigherOrDisabledTarget(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	small := &board.Board{Tasks: &tasks.Board{IDs: []string{"a"}}}
	for _, own := range []int{-1, 800} {
		debug.SetGCPercent(own)
		var g gcTuner
		g.fit(small)
		if got := gcPercent(); got != own {
			t.Fatalf("own target %d: fit set %d", own, got)
		}
		g.restore()
		if got := gcPercent(); got != own {
			t.Fatalf("own target %d: restore set %d", own, got)
		}
	}
}
