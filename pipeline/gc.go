package pipeline

import (
	"runtime/debug"

	"github.com/git-agentmine/git-agentmine/board"
)

// The supervisor lives for the whole run and reads the board again at
// every look (after a worker that touched the local caches they are
// dropped, and most of it comes from git): each look allocates several times what the
// supervisor keeps, and at Go's default target of 100 a small board's
// heap is collected over and over. Profiled on no-op workers (24 tasks,
// --parallel 4), the collector was 2-3 ms of the supervisor's CPU per
// task; with a target of 400 the supervisor used about 3 ms less per task.
// A large board keeps the default, so that the heap stays within twice
// what the supervisor holds.

// smallBoardGCPercent is the garbage collection target
// (debug.SetGCPercent) of a supervisor whose board is small.
const smallBoardGCPercent = 400

// smallBoardDocs is the most tasks and sessions a board may hold for its
// supervisor to collect at smallBoardGCPercent: a few megabytes of
// documents, so even five times its live heap stays small.
const smallBoardDocs = 2000

// gcTuner raises the supervisor's garbage collection target while its
// board is small, and gives back the process's own target when the board
// grows or the loop ends. A process whose own target is off or higher
// already keeps it.
type gcTuner struct {
	// orig is the process's own target while raised is set.
	orig   int
	raised bool
	// keep is set once the process's own target was found off or higher.
	keep bool
}

// fit sets the target for board b.
func (g *gcTuner) fit(b *board.Board) {
	if b == nil || b.Tasks == nil || g.keep {
		return
	}
	small := len(b.Tasks.IDs)+len(b.Sessions) <= smallBoardDocs
	switch {
	case small && !g.raised:
		prev := debug.SetGCPercent(smallBoardGCPercent)
		if prev < 0 || prev >= smallBoardGCPercent {
			debug.SetGCPercent(prev)
			g.keep = true
			return
		}
		g.orig, g.raised = prev, true
	case !small && g.raised:
		g.restore()
	}
}

// restore gives back the process's own target.
func (g *gcTuner) restore() {
	if g.raised {
		debug.SetGCPercent(g.orig)
		g.raised = false
	}
}
