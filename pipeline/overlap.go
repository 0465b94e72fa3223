package pipeline

import (
	"fmt"
	"slices"
	"time"

	"github.com/git-agentmine/git-agentmine/board"
	"github.com/git-agentmine/git-agentmine/scope"
	"github.com/git-agentmine/git-agentmine/sessions"
	"github.com/git-agentmine/git-agentmine/status"
)

// Scope-aware scheduling: a task may declare the paths it expects to
// change (tasks.Task.Paths). The run never starts a task whose paths
// overlap (scope.Overlap) the paths of a target that holds them: one with
// a worker running or starting, or, in a run that merges, one whose work
// passed and waits for its review or merge in this run (its changes are not
// on the base yet, so work started beside it would conflict). A task
// without declared paths neither waits nor holds anything.

// Overlap is why a ready target waits: its paths overlap those of a target
// that holds them.
type Overlap struct {
	// Task waits for With.
	Task string `json:"task"`
	With string `json:"with"`
	// On is Task's pattern that overlaps WithOn, With's.
	On     string `json:"on"`
	WithOn string `json:"with_on"`
}

// String says why the task waits, as the run's log and `run status` do:
// "waiting: overlaps with 3f2a1b2c on src/auth/**".
func (o Overlap) String() string {
	s := fmt.Sprintf("waiting: overlaps with %s on %s", short(o.With), o.On)
	if o.WithOn != o.On {
		s += fmt.Sprintf(" (its %s)", o.WithOn)
	}
	return s
}

// holder is a target holding its declared paths.
type holder struct {
	id    string
	paths []string
}

// clash returns the first holder whose paths overlap paths.
func clash(held []holder, id string, paths []string) (Overlap, bool) {
	for _, h := range held {
		if h.id == id {
			continue
		}
		if on, with, ok := scope.FirstOverlap(paths, h.paths); ok {
			return Overlap{Task: id, With: h.id, On: on, WithOn: with}, true
		}
	}
	return Overlap{}, false
}

// holders lists the targets of r that hold their declared paths at this
// look: those with a worker session live (running, or in starting), and,
// when the run merges, those whose passing work waits for its review or
// merge (merging, except the ones in waiting, which may wait for a person
// for the rest of the run).
func holders(b *board.Board, r Record, live map[string]bool, waiting map[string]bool) []holder {
	var out []holder
	for _, id := range r.Targets {
		e, ok := b.Tasks.Tasks[id]
		if !ok || len(e.Task.Paths) == 0 {
			continue
		}
		res := b.Status[id]
		pending := r.Merge && res.Status == status.Review && e.Task.Exhausted == nil && !waiting[id]
		if live[id] || pending {
			out = append(out, holder{id: id, paths: e.Task.Paths})
		}
	}
	return out
}

// admit picks, in order, the starts of reqs that may begin now: at most
// free of them, none whose declared paths overlap a holder's or an
// earlier admitted start's. The ones held back are logged when their
// reason is new.
func (s *Supervisor) admit(b *board.Board, running []sessions.Record, reqs []startReq, free int) []startReq {
	live := map[string]bool{}
	for _, r := range running {
		live[r.Session.Task] = true
	}
	for id := range s.starting {
		live[id] = true
	}
	waiting := map[string]bool{}
	for id := range s.waits {
		waiting[id] = true
	}
	held := holders(b, s.rec, live, waiting)
	now := map[string]Overlap{}
	out := make([]startReq, 0, min(free, len(reqs)))
	for _, r := range reqs {
		paths := r.ts.task.Paths
		if o, ok := clash(held, r.ts.id, paths); ok && len(paths) > 0 {
			now[r.ts.id] = o
			continue
		}
		if len(out) == free {
			continue // no slot: waits for one, not for a task
		}
		out = append(out, r)
		if len(paths) > 0 {
			held = append(held, holder{id: r.ts.id, paths: paths})
		}
	}
	for _, id := range sortedKeys(now) {
		if o := now[id]; s.overlaps[id] != o {
			fmt.Fprintf(s.log, "%s task %s: %s\n", time.Now().Format("15:04:05"), short(id), o)
		}
	}
	s.overlaps = now
	return out
}

// OverlapWaits says, for a run's record and the board, which of its ready
// targets wait because their declared paths overlap those of a target that
// holds them (as the run's loop decides it): task id to why. `run status`
// shows them.
func OverlapWaits(b *board.Board, r Record) map[string]Overlap {
	now := time.Now()
	live := map[string]bool{}
	for _, id := range r.Targets {
		for _, x := range b.SessionsOf(id) {
			if !IsWorkerSession(x.Session) || x.Session.Started.Before(r.Started) {
				continue
			}
			if ok, _ := board.Liveness(x, b.Here, now); ok {
				live[id] = true
			}
		}
	}
	held := holders(b, r, live, nil)
	out := map[string]Overlap{}
	for _, id := range r.Targets {
		e, ok := b.Tasks.Tasks[id]
		if !ok || live[id] || len(e.Task.Paths) == 0 || e.Task.Exhausted != nil || !startable(b.Status[id]) {
			continue
		}
		if o, ok := clash(held, id, e.Task.Paths); ok {
			out[id] = o
		}
	}
	return out
}

// startable reports whether a target of this status is one the loop may
// start: open and ready, or failed and not blocked (a retry).
func startable(res status.Result) bool {
	switch res.Status {
	case status.Open:
		return res.Ready
	case status.Failed, status.DoDFailed:
		return !res.Blocked
	}
	return false
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
