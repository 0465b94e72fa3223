package sessions

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/internal/jsonscan"
)

// Review lines. A reviewer's verdict on a session is one more JSON line in
// the session's note, next to its outcome lines: it syncs and merges with
// them (cat_sort_uniq) and needs no other ref. A review line has no "v"
// key, so ParseLine never takes it for an outcome, and binaries that
// predate reviews ignore it.
//
// A worker must not be able to forge an OK review of its own session. It
// runs as the same user and can append lines to its note while it runs,
// so a review line of a sealed session counts only when it carries the
// review key of the session's verdict (Review.Proof, Supervisor.ReviewKey):
// the supervisor draws it as it writes the verdict, after the worker and
// everything it and its DoD started have ended, so it never existed in any
// process while a process of the worker was alive (the nonce did: a worker
// running as root can read it from the supervisor's memory). A reviewer
// reads the key from the verdict and copies it into its line. Verdicts
// written before review keys existed are proved by their nonce. Once
// published, the key can be copied by anyone, as for outcome lines (see
// selectOutcome): it proves "written after every process of the run
// ended", not "written by a reviewer".
//
// Manual sessions (no seal) have no such proof: their outcome is an
// orchestrator's report, and so is any review of them.

// ReviewVersion is the schema version of review lines (their "review" key).
const ReviewVersion = 1

// The verdicts a review can give.
const (
	VerdictOK = "OK"
	VerdictNG = "NG"
)

// ReasonReviewUnproven is why a review line of a sealed session is not
// taken: it lacks the verdict's review key, so it may have been written by
// the worker during its run.
const ReasonReviewUnproven = "review line without the proof that it was written after the run"

// Review is one review line of a session's note.
type Review struct {
	// Review is ReviewVersion; a line without it is not a review.
	Review int `json:"review"`
	// Session is the reviewed session's id.
	Session string `json:"session"`
	// Verdict is VerdictOK or VerdictNG.
	Verdict string `json:"verdict"`
	// Reasons say why, one finding per entry.
	Reasons []string `json:"reasons"`
	// FollowUp is what the reviewer asks the next attempt to do.
	FollowUp string `json:"follow_up,omitempty"`
	// Met lists the acceptance criteria (AC-1, …) the reviewer found met;
	// nil when the reviewer did not say.
	Met []string `json:"criteria_met,omitempty"`
	// Agent is the reviewer agent's name (or a person's name).
	Agent string `json:"agent"`
	// Reviewer is the reviewer's own session, when it ran as one.
	Reviewer string `json:"reviewer_session,omitempty"`
	// By says which program wrote the line ("agentmine review").
	By string `json:"recorded_by"`
	// Finished is when the review ended.
	Finished time.Time `json:"finished"`
	// Proof is the review key of the reviewed session's verdict (its
	// supervisor's nonce for verdicts without one), copied from the
	// verdict; empty for sessions without a seal.
	Proof string `json:"proof,omitempty"`
}

// OK reports whether the review approved the session.
func (r *Review) OK() bool { return r != nil && r.Verdict == VerdictOK }

// ParseReview decodes one note line as a review; other lines (outcomes,
// broken JSON, unknown versions, unknown verdicts) are not reviews.
func ParseReview(l string) (Review, bool) {
	var r Review
	if !mayBeReview(l) || !json.Valid([]byte(l)) || json.Unmarshal([]byte(l), &r) != nil || r.Review == 0 || r.Review > ReviewVersion {
		return Review{}, false
	}
	if r.Verdict != VerdictOK && r.Verdict != VerdictNG {
		return Review{}, false
	}
	return r, true
}

// mayBeReview reports whether the line l may have a key that
// encoding/json could read into Review.Review: one equal to "review" in
// any case, or any key it cannot be sure of (non-ASCII, unreadable, or l
// not an object it can read). Every outcome line on a session's note has
// none, and is passed over without json.Valid's second pass over the line
// or the decode (whose first use costs a reflective walk of Review).
func mayBeReview(l string) bool {
	keys, ok := jsonscan.TopKeys([]byte(l))
	if !ok {
		return true
	}
	for _, k := range keys {
		if strings.EqualFold(k, "review") {
			return true
		}
		for i := 0; i < len(k); i++ {
			if k[i] >= utf8.RuneSelf {
				return true
			}
		}
	}
	return false
}

// SelectReview chooses a session's review among its note lines: the latest
// (by finish time, then text) of the lines that are proven. A review counts
// only for a session with a verdict; for a sealed session (seal not nil)
// only a line carrying the verdict's nonce is proven, and the others are
// returned as forgeries.
func SelectReview(seal *Seal, verdict *Outcome, lines []string) (*Review, []Forgery) {
	if verdict == nil {
		return nil, nil
	}
	var best *Review
	var bestText string
	var forged []Forgery
	for _, l := range lines {
		r, ok := ParseReview(l)
		if !ok {
			continue
		}
		if seal != nil {
			if verdict.Supervisor == nil || r.Proof == "" || r.Proof != reviewKey(verdict.Supervisor) {
				forged = append(forged, Forgery{By: r.By, Finished: r.Finished, Reason: ReasonReviewUnproven})
				continue
			}
		}
		if best == nil || r.Finished.After(best.Finished) || r.Finished.Equal(best.Finished) && l > bestText {
			rc := r
			best, bestText = &rc, l
		}
	}
	return best, forged
}

// ReviewProof returns what a review of rec must carry (Review.Proof): the
// nonce in its sealed verdict, "" for a session without a seal. A sealed
// session without a verdict from its supervisor cannot be reviewed.
func ReviewProof(rec Record) (string, error) {
	if rec.Outcome == nil {
		return "", fmt.Errorf("session %s has no outcome yet: only a finished session can be reviewed", short(rec.Session.ID))
	}
	if rec.Session.Seal == nil {
		return "", nil
	}
	if rec.Outcome.Supervisor == nil || !rec.Session.Seal.Authenticates(rec.Outcome.Supervisor) {
		return "", fmt.Errorf("session %s has no verdict from its supervisor: it cannot be reviewed", short(rec.Session.ID))
	}
	return reviewKey(rec.Outcome.Supervisor), nil
}

// reviewKey is what a review of a verdict signed by sup must carry: its
// review key, or its nonce for a verdict written before review keys.
func reviewKey(sup *Supervisor) string {
	if sup.ReviewKey != "" {
		return sup.ReviewKey
	}
	return sup.Nonce
}

// RecordReview completes r (version, session, proof, non-nil reasons) and
// appends it as one line to the session's note. The session must have a
// verdict (ReviewProof).
func RecordReview(ctx context.Context, st *gitstore.Store, rec Record, r *Review) error {
	proof, err := ReviewProof(rec)
	if err != nil {
		return err
	}
	if !ValidVerdict(r.Verdict) {
		return fmt.Errorf("recording review of session %s: verdict %q is not OK or NG", short(rec.Session.ID), r.Verdict)
	}
	r.Review = ReviewVersion
	r.Session = rec.Session.ID
	r.Proof = proof
	if r.Reasons == nil {
		r.Reasons = []string{}
	}
	if r.Finished.IsZero() {
		r.Finished = time.Now().UTC()
	}
	line, err := json.Marshal(r)
	if err != nil {
		return err
	}
	root := rec.Root
	if root == "" {
		if root, err = st.Root(ctx, Kind, rec.Session.ID); err != nil {
			return err
		}
	}
	if err := st.AppendNote(ctx, root, line); err != nil {
		return fmt.Errorf("recording review of session %s: %w", short(rec.Session.ID), err)
	}
	return nil
}

// ForgedReviewReason is the one-line reason naming rejected review lines,
// for status and merge: `forged review line (recorded_by "x", finished t):
// why (+n more)`.
func ForgedReviewReason(fs []Forgery) string {
	if len(fs) == 0 {
		return ""
	}
	f := fs[0]
	s := fmt.Sprintf("forged review line (recorded_by %s, finished %s): %s", strconv.Quote(f.By), f.Finished.UTC().Format(time.RFC3339), f.Reason)
	if len(fs) > 1 {
		s += fmt.Sprintf(" (+%d more)", len(fs)-1)
	}
	return s
}

// reviewOf attaches the selected review to a record read in batch.
func reviewOf(rec *Record, lines []string) {
	rec.Review, rec.ForgedReviews = SelectReview(rec.Session.Seal, rec.Outcome, lines)
}

// verdicts lists the valid verdicts, for messages.
var verdicts = []string{VerdictOK, VerdictNG}

// ValidVerdict reports whether v is OK or NG.
func ValidVerdict(v string) bool { return slices.Contains(verdicts, v) }
