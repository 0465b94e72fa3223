package contract

import (
	"bytes"
	"encoding/json"
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
		j.Extra = &SessionJSON{ID: str(), Started: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Elapsed: rng.Float64() * 1e6,
			Outcome: &sessions.Outcome{V: 1, Scope: json.RawMessage(`{"valid": true}`), Reason: str()}}
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

// TestAppendTaskJSON: printed from AppendTaskJSON's bytes, a task reads
// byte for byte as printed by encoding/json from the value, for tasks with
// every field set or not, strings with every character JSON escapes (and
// invalid UTF-8), and times encoding/json refuses.
func TestAppendTaskJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	refused := 0
	for range 3000 {
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
	if refused == 0 || refused == 3000 {
		t.Fatalf("%d of 3000 refused: the test must try both", refused)
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
