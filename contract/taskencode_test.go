package contract

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/git-agentmine/git-agentmine/bestof"
	"github.com/git-agentmine/git-agentmine/output"
	"github.com/git-agentmine/git-agentmine/sessions"
	"github.com/git-agentmine/git-agentmine/status"
	"github.com/git-agentmine/git-agentmine/tasks"
)

// printed is what output.Printer.PrintJSON writes for v.
func printed(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	err := enc.Encode(v)
	return buf.Bytes(), err
}

func randomText(rng *rand.Rand) string {
	pool := []string{"a", "Z", " ", "\"", "\\", "\n", "\t", "\b", "\f", "\r", "\x00", "\x1f", "\x7f", "<", ">", "&",
		"\u2028", "\u2029", "é", "世", "😀", "\xff", "\xe2\x80", "\ufffd", "/"}
	var s string
	for range rng.IntN(8) {
		s += pool[rng.IntN(len(pool))]
	}
	return s
}

func randomTaskJSON(rng *rand.Rand) TaskJSON {
	str := func() string { return randomText(rng) }
	strs := func() []string {
		switch rng.IntN(3) {
		case 0:
			return nil
		case 1:
			return []string{}
		}
		return []string{str(), str()}
	}
	when := func() time.Time {
		years := []int{2026, 1, 9999, 10000, -1}
		return time.Date(years[rng.IntN(len(years))], 3, 4, 5, 6, 7, rng.IntN(2)*rng.IntN(1e9), time.FixedZone("", 3600*(rng.IntN(3)-1)))
	}
	fact := func() *tasks.Fact {
		if rng.IntN(2) == 0 {
			return nil
		}
		return &tasks.Fact{Time: when(), Author: str(), Reason: []string{"", str()}[rng.IntN(2)]}
	}
	j := TaskJSON{V: rng.IntN(3), ID: str(), ShortID: str(), Title: str(), Status: str(), StatusReason: str(),
		Blocked: rng.IntN(2) == 0, Ready: rng.IntN(2) == 0, WaitingOn: strs(), Description: str(), Type: str(),
		Priority: str(), Parent: str(), BlockedBy: strs(), Labels: strs(), Assignee: str(), DoD: strs(), Base: str(),
		Acceptance: strs(), MaxLoops: rng.IntN(3) - 1, BestOf: rng.IntN(3), Paths: strs(),
		Created: tasks.Stamp{Time: when(), Author: str()}, Updated: tasks.Stamp{Time: when(), Author: str()},
		Cancelled: fact(), Reopened: fact(), Exhausted: fact(), Commit: str(), Session: []string{"", str()}[rng.IntN(2)],
		BlockedByCancelled: strs()}
	if rng.IntN(2) == 0 {
		j.Criteria = []Criterion{}
		for range rng.IntN(3) {
			j.Criteria = append(j.Criteria, Criterion{ID: str(), Text: str()})
		}
	}
	if rng.IntN(2) == 0 {
		j.Children = &status.Progress{Done: 1, Total: 2, Failed: strs()}
	}
	if rng.IntN(2) == 0 {
		j.Extra = randomSessionJSON(rng, str, strs, when)
	}
	if rng.IntN(2) == 0 {
		j.Usage = &sessions.Usage{InputTokens: 5, CostUSD: 0.25}
	}
	if rng.IntN(2) == 0 {
		j.Review = &sessions.Review{Review: 1, Verdict: str(), Reasons: strs()}
	}
	if rng.IntN(2) == 0 {
		j.Rounds = []bestof.Round{{K: 2, Attempts: []bestof.Candidate{{Slot: 1, Session: str()}}}}
	}
	return j
}

// randomSessionJSON is a latest session with any field set or not.
func randomSessionJSON(rng *rand.Rand, str func() string, strs func() []string, when func() time.Time) *SessionJSON {
	maybe := func() string { return []string{"", str()}[rng.IntN(2)] }
	floats := []float64{0, 1, -2.5, 1e-7, 1.5e-9, 1e21, 123456789.125, rng.Float64() * 1e6, math.NaN(), math.Inf(1), 5e-324}
	raws := []json.RawMessage{nil, {}, json.RawMessage(`{"valid": true, "v" : [1, 2 ]}`), json.RawMessage(`"<&>"`), json.RawMessage(`{bad`)}
	s := &SessionJSON{V: rng.IntN(3), ID: str(), ShortID: str(), Task: str(), Agent: str(), Client: str(), Version: maybe(),
		Mode: str(), Branch: str(), BaseRef: str(), Base: str(), Worktree: str(), Host: str(), Pid: rng.IntN(3) - 1,
		Started: when(), Timeout: rng.IntN(3), State: str(), Elapsed: floats[rng.IntN(len(floats))], Log: str(),
		Tail: strs(), Sealed: rng.IntN(2) == 0, WorkerPid: rng.IntN(2), Role: maybe(), Reviews: maybe()}
	if rng.IntN(4) > 0 {
		valid := rng.IntN(2) == 0
		o := &sessions.Outcome{V: rng.IntN(2), Session: str(), ExitCode: rng.IntN(3) - 1, Signal: maybe(),
			TimedOut: rng.IntN(2) == 0, Finished: when(), Tip: maybe(), Reason: maybe(), Artifacts: strs(),
			Claimed: strs(), By: str(), DoDStatus: maybe(), Scope: raws[rng.IntN(len(raws))], DoD: raws[rng.IntN(len(raws))],
			Commits: rng.IntN(3)}
		if rng.IntN(2) == 0 {
			o.ScopeValid = &valid
		}
		if rng.IntN(4) == 0 {
			o.Usage = &sessions.Usage{InputTokens: 5, CostUSD: 0.25}
		}
		if rng.IntN(4) == 0 {
			until := when()
			o.RateLimit = &sessions.RateLimit{Until: []*time.Time{nil, &until}[rng.IntN(2)]}
		}
		if rng.IntN(4) == 0 {
			o.Supervisor = &sessions.Supervisor{Host: str(), Pid: 3, Nonce: str()}
		}
		s.Outcome = o
	}
	if rng.IntN(4) == 0 {
		s.Forged = []sessions.Forgery{{By: str(), Finished: when(), Reason: str()}}
	}
	if rng.IntN(4) == 0 {
		s.Isolation = &sessions.Isolation{Requested: str(), Level: str()}
	}
	if rng.IntN(4) == 0 {
		s.Review = &sessions.Review{Review: 1, Verdict: str(), Reasons: strs()}
	}
	if rng.IntN(4) == 0 {
		s.ForgedReviews = []sessions.Forgery{{By: str(), Finished: when(), Reason: str()}}
	}
	return s
}

// TestAppendTaskJSON: printed from AppendTaskJSON's bytes, a task reads
// byte for byte as printed by encoding/json from the value, for tasks with
// every field set or not, strings with every character JSON escapes (and
// invalid UTF-8), and times encoding/json refuses.
func TestAppendTaskJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	refused := 0
	for range 20000 {
		j := randomTaskJSON(rng)
		want, werr := printed(j)
		raw, gerr := AppendTaskJSON(nil, &j)
		if (werr != nil) != (gerr != nil) {
			t.Fatalf("errors differ: %v, %v for %#v", werr, gerr, j)
		}
		if werr != nil {
			refused++
			continue
		}
		got, err := printed(json.RawMessage(raw))
		if err != nil {
			t.Fatalf("%v: %s", err, raw)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("differs:\n%s\nwant:\n%s", got, want)
		}
	}
	if refused == 0 || refused == 20000 {
		t.Fatalf("%d of 20000 refused: the test must try both", refused)
	}
}

// TestAppendTaskJSONCompact: AppendTaskJSON's bytes are exactly those
// task list --json printed with output.MarshalCompact (compact, no HTML
// escaping), for every task encoding/json encodes.
func TestAppendTaskJSONCompact(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 3000 {
		j := randomTaskJSON(rng)
		want, werr := output.MarshalCompact(j)
		got, gerr := AppendTaskJSON([]byte("x"), &j)
		if (werr != nil) != (gerr != nil) {
			t.Fatalf("errors differ: %v, %v for %#v", werr, gerr, j)
		}
		if werr == nil && !bytes.Equal(got[1:], want) || got != nil && got[0] != 'x' {
			t.Fatalf("differs:\n%s\nwant:\n%s", got, want)
		}
	}
}
