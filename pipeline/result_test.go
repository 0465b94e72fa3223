package pipeline

import "testing"

// TestRunResult: a run that does not merge ends passed when every target
// passed (approved, when it reviews), never failed; one that merges ends
// failed with what waits and why; an interruption is a stop.
func TestRunResult(t *testing.T) {
	for _, c := range []struct {
		name           string
		merge          bool
		stop           string
		waits          int
		sum            Summary
		approved       int
		result, reason string
	}{
		{name: "all done", sum: Summary{Total: 2, Done: 2}, result: "done"},
		{name: "passed, not asked to merge", sum: Summary{Total: 2, Done: 1, Waiting: 1}, approved: 1,
			result: "passed", reason: "1 passed, waiting to be merged (this run was not asked to merge)"},
		{name: "passed but not approved", sum: Summary{Total: 2, Waiting: 2}, approved: 1,
			result: "failed", reason: "2 passed, waiting to be merged (this run was not asked to merge)"},
		{name: "one failed", sum: Summary{Total: 2, Waiting: 1, Failed: 1}, approved: 1,
			result: "failed", reason: "1 passed, waiting to be merged (this run was not asked to merge)"},
		{name: "merge waits on the checkout", merge: true, waits: 1, sum: Summary{Total: 2, Done: 1, Waiting: 1}, approved: 1,
			result: "failed", reason: "1 passed, waiting to be merged (1 because of the main checkout)"},
		{name: "interrupted", stop: Interrupted, sum: Summary{Total: 2, Interrupted: 2},
			result: "stopped", reason: Interrupted},
	} {
		s := &Supervisor{rec: Record{Merge: c.merge}, stopReason: c.stop, waits: map[string]mergeWait{}}
		for i := 0; i < c.waits; i++ {
			s.waits[string(rune('a'+i))] = mergeWait{why: "x"}
		}
		result, reason := s.result(c.sum, c.approved)
		if result != c.result || reason != c.reason {
			t.Errorf("%s: %q, %q; want %q, %q", c.name, result, reason, c.result, c.reason)
		}
	}
}
