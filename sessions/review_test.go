package sessions

import (
	"encoding/json"
	"testing"
	"time"
)

func reviewLine(t *testing.T, r Review) string {
	t.Helper()
	r.Review = ReviewVersion
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestSelectReview(t *testing.T) {
	seal, nonce, err := NewSeal("h", 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	proof := nonce.Proof(seal)
	verdict := &Outcome{V: 1, Finished: time.Unix(100, 0), Supervisor: proof}
	t1, t2 := time.Unix(200, 0), time.Unix(300, 0)
	ng := reviewLine(t, Review{Verdict: VerdictNG, Reasons: []string{"no test"}, Agent: "r", Finished: t1, Proof: proof.ReviewKey})
	ok := reviewLine(t, Review{Verdict: VerdictOK, Reasons: []string{}, Agent: "r", Finished: t2, Proof: proof.ReviewKey})
	// The nonce was in the supervisor's memory during the run (a worker
	// running as root can read it there): it proves nothing once the
	// verdict has a review key.
	byNonce := reviewLine(t, Review{Verdict: VerdictOK, Agent: "worker", Finished: time.Unix(902, 0), Proof: proof.Nonce})
	forged := reviewLine(t, Review{Verdict: VerdictOK, Agent: "worker", Finished: time.Unix(900, 0)})
	wrong := reviewLine(t, Review{Verdict: VerdictOK, Agent: "worker", Finished: time.Unix(901, 0), Proof: "00"})
	outcome, _ := json.Marshal(Outcome{V: 1, Session: "s", Finished: time.Unix(100, 0)})

	t.Run("the latest proven review counts", func(t *testing.T) {
		r, f := SelectReview(&seal, verdict, []string{ok, ng, string(outcome)})
		if r == nil || r.Verdict != VerdictOK || len(f) != 0 {
			t.Fatalf("review %+v forged %v", r, f)
		}
	})
	t.Run("lines without the nonce are forgeries, never the review", func(t *testing.T) {
		r, f := SelectReview(&seal, verdict, []string{ng, forged, wrong, byNonce})
		if r == nil || r.Verdict != VerdictNG || len(f) != 3 || f[0].Reason != ReasonReviewUnproven {
			t.Fatalf("review %+v forged %v", r, f)
		}
	})
	t.Run("a verdict without a review key is proved by its nonce", func(t *testing.T) {
		old := *proof
		old.ReviewKey = ""
		r, f := SelectReview(&seal, &Outcome{V: 1, Finished: time.Unix(100, 0), Supervisor: &old}, []string{byNonce, ng})
		if r == nil || r.Agent != "worker" || len(f) != 1 {
			t.Fatalf("review %+v forged %v", r, f)
		}
	})
	t.Run("no verdict, no review", func(t *testing.T) {
		if r, _ := SelectReview(&seal, nil, []string{ok}); r != nil {
			t.Fatalf("review of a running session: %+v", r)
		}
	})
	t.Run("an unsealed session takes reviews as they are", func(t *testing.T) {
		r, f := SelectReview(nil, &Outcome{V: 1}, []string{forged, ng})
		if r == nil || r.Agent != "worker" || len(f) != 0 {
			t.Fatalf("review %+v forged %v", r, f)
		}
	})
	t.Run("review lines are never outcomes, outcome lines never reviews", func(t *testing.T) {
		if _, isOutcome := ParseLine(ok); isOutcome {
			t.Fatal("a review line parsed as an outcome")
		}
		if _, isReview := ParseReview(string(outcome)); isReview {
			t.Fatal("an outcome line parsed as a review")
		}
		for _, bad := range []string{`{"review":1,"verdict":"MAYBE"}`, `{"review":2,"verdict":"OK"}`, `{"review":1,"verdict":"OK"`, `{"verdict":"OK"}`} {
			if _, isReview := ParseReview(bad); isReview {
				t.Errorf("%s parsed as a review", bad)
			}
		}
	})
	t.Run("the review key is found as JSON finds it", func(t *testing.T) {
		// encoding/json matches keys whatever their case and reads escapes
		// in them: a line the shortcut passes over must not be a review.
		for _, l := range []string{`{"Review":1,"verdict":"OK"}`, `{"REVIEW":1,"verdict":"NG"}`,
			`{"\u0072eview":1,"verdict":"OK"}`, `{"verdict":"OK","reVieW":1}`} {
			if _, isReview := ParseReview(l); !isReview {
				t.Errorf("%s is a review to encoding/json but did not parse as one", l)
			}
		}
	})
}
