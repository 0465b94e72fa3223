package web

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/git-agentmine/git-agentmine/bestof"
)

// bestOfPage: a task's page shows its best-of rounds, each attempt with
// its verdict, diff size and whether it was chosen and why; a round still
// running lists its attempts.
func bestOfPage(t *testing.T, f *fixture, ts *httptest.Server, c *http.Client) {
	ctx := context.Background()
	id, won, lost := f.ids["done"], f.sess["done"].Session, f.sess["dod_failed"].Session
	rd := bestof.Round{Started: time.Now().UTC(), K: 2, Attempts: []bestof.Candidate{{Slot: 1, Session: won.ID, Agent: won.Agent}, {Slot: 2, Session: lost.ID, Agent: "other"}}}
	if _, err := bestof.AddRound(ctx, f.st, id, rd); err != nil {
		t.Fatal(err)
	}
	if _, err := bestof.AddRound(ctx, f.st, id, bestof.Round{K: 3, Attempts: rd.Attempts}); err != nil {
		t.Fatal(err)
	}
	d := bestof.Decision{Time: time.Now().UTC(), Winner: won.ID, By: "smallest diff", Reasons: []string{"attempt 1 is smaller"},
		Candidates: []bestof.Judged{
			{Slot: 1, Session: won.ID, Agent: won.Agent, Passed: true, Verdict: "passed", Lines: 1, Files: 1, Chosen: true, Why: "smallest passing diff"},
			{Slot: 2, Session: lost.ID, Agent: "other", Verdict: "DoD failed", Lines: 4, Files: 2, Why: "did not pass: DoD failed"}}}
	if _, err := bestof.Decide(ctx, f.st, id, 0, d); err != nil {
		t.Fatal(err)
	}
	if _, err := bestof.Decide(ctx, f.st, id, 0, bestof.Decision{By: "again"}); err != bestof.ErrDecided {
		t.Fatalf("a second decision of one round: %v, want ErrDecided", err)
	}
	code, html := get(t, c, ts.URL+"/tasks/"+id[:6])
	if code != 200 {
		t.Fatalf("%d\n%s", code, html)
	}
	for _, w := range []string{"<h2>Best of N</h2>", "round 1 · best of 2 · attempt 1 chosen by smallest diff: attempt 1 is smaller",
		`<tr class="chosen"><td>1</td><td><code>` + won.ID[:8] + `</code>`, "1 line(s) in 1 file(s)", "smallest passing diff",
		"<td><code>" + lost.ID[:8], "4 line(s) in 2 file(s)", "did not pass: DoD failed",
		"round 2 · best of 3 · running", "attempt 2 <code>" + lost.ID[:8] + "</code> (other)"} {
		if !strings.Contains(html, w) {
			t.Errorf("the page lacks %q", w)
		}
	}
}
