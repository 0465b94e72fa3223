package pipeline

import (
	"testing"

	"github.com/git-agentmine/git-agentmine/bestof"
)

// TestFit: a best-of round takes K slots; starts are taken in order while
// they fit, and a round larger than --parallel starts alone when nothing
// runs.
func TestFit(t *testing.T) {
	req := func(id string, k int) startReq { return startReq{ts: taskState{id: id}, k: k} }
	ids := func(rs []startReq) (out string) {
		for _, r := range rs {
			out += r.ts.id
		}
		return out
	}
	for _, c := range []struct {
		name       string
		parallel   int
		reqs       []startReq
		free, used int
		want       string
	}{
		{"singles", 2, []startReq{req("a", 1), req("b", 0), req("c", 1)}, 2, 0, "ab"},
		{"a round and a single", 4, []startReq{req("a", 3), req("b", 1), req("c", 1)}, 4, 0, "ab"},
		{"a round waits for its slots, and so does what follows", 4, []startReq{req("a", 3), req("b", 1)}, 2, 2, ""},
		{"a round above --parallel starts alone", 2, []startReq{req("a", 3), req("b", 1)}, 2, 0, "a"},
		{"not while something runs", 2, []startReq{req("a", 3)}, 1, 1, ""},
	} {
		s := &Supervisor{rec: Record{Parallel: c.parallel}}
		if got := ids(s.fit(c.reqs, c.free, c.used)); got != c.want {
			t.Errorf("%s: started %q, want %q", c.name, got, c.want)
		}
	}
}

// TestSmallest: without a reviewer the passing attempt with the fewest
// changed lines wins, then the fewest files, then the lowest slot; the
// others say why they lost.
func TestSmallest(t *testing.T) {
	d := bestof.Decision{Candidates: []bestof.Judged{
		{Slot: 1, Session: "s1", Passed: true, Lines: 4, Files: 1},
		{Slot: 2, Session: "s2", Lines: 0, Files: 0, Verdict: "exited 1"},
		{Slot: 3, Session: "s3", Passed: true, Lines: 4, Files: 2},
		{Slot: 4, Session: "s4", Passed: true, Lines: 4, Files: 1},
	}}
	smallest(&d, []int{0, 2, 3})
	if d.Winner != "s1" || d.By != "smallest diff" || d.Candidates[0].Why != "smallest passing diff" {
		t.Fatalf("winner %q by %q (%q)", d.Winner, d.By, d.Candidates[0].Why)
	}
	if d.Candidates[2].Why != "passed, larger diff (4 line(s) in 2 file(s))" || d.Candidates[1].Why != "" {
		t.Errorf("reasons: %+v", d.Candidates)
	}
}
