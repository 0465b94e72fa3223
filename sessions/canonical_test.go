package sessions

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	fastjson "github.com/goccy/go-json"

	"github.com/git-agentmine/git-agentmine/internal/jsonscan/jsonscantest"
)

func decodeSession(s *Session, data []byte) bool { return s.DecodeCanonical(data) }

func decodeOutcome(o *Outcome, data []byte) bool { return o.decodeCanonical(data) }

func randomTime(rng *rand.Rand) time.Time {
	return time.Date(2000+rng.IntN(50), time.Month(1+rng.IntN(12)), 1+rng.IntN(28), rng.IntN(24), rng.IntN(60), rng.IntN(60),
		rng.IntN(2)*rng.IntN(1e9), time.FixedZone("", 60*(rng.IntN(25)-12)*rng.IntN(2)))
}

// randomSession returns a session with every field set at random, some
// left zero.
func randomSession(rng *rand.Rand) Session {
	str := func() string { return jsonscantest.RandomString(rng, 10) }
	strs := func() []string { return jsonscantest.RandomStrings(rng, 4) }
	s := Session{V: 1 + rng.IntN(3), ID: str(), Task: str(), Agent: str(), Client: str(), ClientVersion: str(),
		Command: strs(), CommandEnv: strs(), CommandStdin: str(), Mode: str(), Branch: str(), BaseRef: str(),
		BaseCommit: str(), Worktree: str(), Host: str(), Pid: rng.IntN(1 << 20), PidStart: rng.Uint64(),
		Timeout: rng.IntN(100) - 1, StallTimeout: rng.IntN(100), Grace: rng.IntN(9), Started: randomTime(rng),
		Scope: Scope{Read: strs(), Write: strs(), Exclude: strs()}, Sparse: strs(), Generated: strs(),
		DoD: strs(), DoDTimeout: rng.IntN(9), SkipDoD: rng.IntN(2) == 0, Strict: rng.IntN(2) == 0, Log: str(),
		ClaimRemote: str(), Repo: str(), WorkerPid: rng.IntN(99), WorkerStart: rng.Uint64(), Role: str(), Reviews: str()}
	if rng.IntN(2) == 0 {
		s.GeneratedBlobs = map[string]string{}
		for range rng.IntN(3) {
			// Paths as agentmine writes them; keys with escapes are
			// left to the reflective decoder (the edits try them).
			s.GeneratedBlobs[fmt.Sprintf(".agentmine/p%d.md", rng.IntN(99))] = str()
		}
	}
	if rng.IntN(2) == 0 {
		s.Seal = &Seal{SHA256: str(), Host: str(), Pid: rng.IntN(99), PidStart: rng.Uint64()}
	}
	if rng.IntN(2) == 0 {
		s.Isolation = &Isolation{Requested: str(), Level: str(), Network: rng.IntN(2) == 0, Note: str()}
	}
	if rng.IntN(2) == 0 {
		s.Setup = &Setup{Commands: strs(), Timeout: rng.IntN(9), Include: strs(), Share: strs(), Prepared: strs()}
	}
	return s
}

// randomOutcome returns an outcome line with every field set at random,
// some left zero.
func randomOutcome(rng *rand.Rand) Outcome {
	str := func() string { return jsonscantest.RandomString(rng, 10) }
	strs := func() []string { return jsonscantest.RandomStrings(rng, 4) }
	o := Outcome{V: 1 + rng.IntN(2), Session: str(), ExitCode: rng.IntN(300) - 1, Signal: str(), TimedOut: rng.IntN(2) == 0,
		Finished: randomTime(rng), Tip: str(), Reason: str(), Artifacts: strs(), Claimed: strs(), By: str(),
		DoDStatus: str(), Commits: rng.IntN(9)}
	if rng.IntN(2) == 0 {
		b := rng.IntN(2) == 0
		o.ScopeValid = &b
	}
	if rng.IntN(2) == 0 {
		o.Scope = json.RawMessage(`{"valid":true,"violations":[{"path":"a","reason":"x"}]}`)
	}
	if rng.IntN(2) == 0 {
		o.DoD = json.RawMessage(`[{"command":"go test","exit_code":0,"passed":true}]`)
	}
	if rng.IntN(2) == 0 {
		o.Usage = &Usage{InputTokens: rng.Int64(), OutputTokens: rng.Int64N(1e6), CacheReadTokens: rng.Int64N(9),
			CacheWriteTokens: rng.Int64N(9), CostUSD: rng.Float64() * 100}
	}
	if rng.IntN(2) == 0 {
		o.RateLimit = &RateLimit{}
		if rng.IntN(2) == 0 {
			t := randomTime(rng)
			o.RateLimit.Until = &t
		}
	}
	if rng.IntN(2) == 0 {
		o.Supervisor = &Supervisor{Host: str(), Pid: rng.IntN(99), PidStart: rng.Uint64(), Nonce: str(), ReviewKey: str()}
	}
	return o
}

// checkCanonical encodes values from gen as stored (indented) and compact,
// checks that canon decodes each, and that whatever it decodes of
// thousands of edits of them it decodes as the reflective decoder does.
func checkCanonical[T any](t *testing.T, gen func(*rand.Rand) T, canon func(*T, []byte) bool) {
	rng := rand.New(rand.NewPCG(7, 8))
	accepted, refused := 0, 0
	for i := range 1500 {
		v := gen(rng)
		indented, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		compact, _ := json.Marshal(v)
		for _, doc := range [][]byte{indented, compact} {
			if !jsonscantest.Check(t, doc, canon) {
				t.Fatalf("%d: the canonical decoder refused a document as written:\n%s", i, doc)
			}
			for _, m := range jsonscantest.Mutations(doc, rng) {
				if jsonscantest.Check(t, m, canon) {
					accepted++
				} else {
					refused++
				}
			}
		}
	}
	if accepted == 0 || refused == 0 {
		t.Fatalf("edits accepted %d, refused %d: the edits must exercise both", accepted, refused)
	}
}

// TestSessionDecodeCanonicalMatches: every session as stored decodes
// canonically, and what the canonical decoder decodes of edits of them it
// decodes as the reflective decoder does.
func TestSessionDecodeCanonicalMatches(t *testing.T) {
	checkCanonical(t, randomSession, decodeSession)
}

// TestOutcomeDecodeCanonicalMatches is the same for outcome lines.
func TestOutcomeDecodeCanonicalMatches(t *testing.T) {
	checkCanonical(t, randomOutcome, decodeOutcome)
}

// TestParseLineUsesCanonical: ParseLine gives what the reflective decoder
// alone gave, for lines as written and for lines it leaves to that decoder
// (a key in another case, invalid UTF-8, a version it does not know).
func TestParseLineUsesCanonical(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	reflective := func(l string) (Outcome, bool) {
		var o Outcome
		if !json.Valid([]byte(l)) || fastjson.Unmarshal([]byte(l), &o) != nil || o.V == 0 || o.V > SchemaVersion {
			return Outcome{}, false
		}
		return o, true
	}
	for range 500 {
		o := randomOutcome(rng)
		o.V = 1 + rng.IntN(SchemaVersion+1)
		b, _ := json.Marshal(o)
		l := string(b)
		for _, line := range []string{l, strings.Replace(l, `"tip":`, `"Tip":`, 1), strings.Replace(l, `"session":"`, "\"session\":\"\xff", 1)} {
			got, gok := ParseLine(line)
			want, wok := reflective(line)
			if gok != wok || !reflect.DeepEqual(got, want) {
				t.Fatalf("ParseLine differs from the reflective decoder on %s:\n%#v %v\n%#v %v", line, got, gok, want, wok)
			}
		}
	}
}

// FuzzSessionDecodeCanonical: on any input, what the canonical decoder
// decodes, the reflective decoder decodes to the same session.
func FuzzSessionDecodeCanonical(f *testing.F) {
	rng := rand.New(rand.NewPCG(11, 12))
	for range 10 {
		doc, _ := json.MarshalIndent(randomSession(rng), "", "  ")
		f.Add(doc)
		for _, m := range jsonscantest.Mutations(doc, rng) {
			f.Add(m)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) { jsonscantest.Check(t, data, decodeSession) })
}

// FuzzOutcomeDecodeCanonical is the same for outcome lines.
func FuzzOutcomeDecodeCanonical(f *testing.F) {
	rng := rand.New(rand.NewPCG(13, 14))
	for range 10 {
		doc, _ := json.Marshal(randomOutcome(rng))
		f.Add(doc)
		for _, m := range jsonscantest.Mutations(doc, rng) {
			f.Add(m)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) { jsonscantest.Check(t, data, decodeOutcome) })
}

// TestParseReviewSkipsOutcomes: ParseReview, which passes over lines
// without a key that could be "review", answers as the full decode does,
// for reviews, their edits (the key in other cases, escaped, twice,
// replaced) and outcome lines.
func TestParseReviewSkipsOutcomes(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	var lines []string
	for range 300 {
		r := Review{Review: 1 + rng.IntN(ReviewVersion), Session: "s", Verdict: []string{VerdictOK, VerdictNG, "x"}[rng.IntN(3)],
			Reasons: jsonscantest.RandomStrings(rng, 2), Agent: "a", By: "b", Finished: randomTime(rng)}
		b, _ := json.Marshal(r)
		l := string(b)
		lines = append(lines, l, strings.Replace(l, `"review":`, `"Review":`, 1), strings.Replace(l, `"review":`, `"REVIEW":`, 1),
			strings.Replace(l, `"review":`, `"\u0072eview":`, 1), strings.Replace(l, `"review":`, `"reviews":`, 1),
			strings.Replace(l, `"review":`, `"rev\u0131ew":`, 1), strings.Replace(l, `{`, `{"review":0,`, 1), l[:len(l)-1]+`,"review":1}`)
		o, _ := json.Marshal(randomOutcome(rng))
		lines = append(lines, string(o), `[1]`, `"review"`, `{"a":{"review":1}}`)
	}
	reviews := 0
	for _, l := range lines {
		got, gok := ParseReview(l)
		want, wok := parseReviewFull(l)
		if gok != wok || !reflect.DeepEqual(got, want) {
			t.Fatalf("ParseReview differs from the full decode on %s: %v %v", l, gok, wok)
		}
		if gok {
			reviews++
		}
	}
	if reviews == 0 {
		t.Fatal("no line read as a review: the test checks nothing")
	}
}

// parseReviewFull is ParseReview without passing over any line.
func parseReviewFull(l string) (Review, bool) {
	var r Review
	if !json.Valid([]byte(l)) || json.Unmarshal([]byte(l), &r) != nil || r.Review == 0 || r.Review > ReviewVersion {
		return Review{}, false
	}
	if r.Verdict != VerdictOK && r.Verdict != VerdictNG {
		return Review{}, false
	}
	return r, true
}

// FuzzParseReview: on any line, ParseReview answers as the full decode.
func FuzzParseReview(f *testing.F) {
	f.Add(`{"review":1,"verdict":"ok"}`)
	f.Add(`{"REVIEW":1,"verdict":"ng","x":[1,{"y":null}]}`)
	f.Add(`{"v":1,"session":"s","exit_code":0}`)
	f.Fuzz(func(t *testing.T, l string) {
		got, gok := ParseReview(l)
		want, wok := parseReviewFull(l)
		if gok != wok || !reflect.DeepEqual(got, want) {
			t.Fatalf("ParseReview differs from the full decode on %q: %v %v", l, gok, wok)
		}
	})
}
