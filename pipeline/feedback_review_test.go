package pipeline

import (
	"context"
	"strings"
	"testing"

	"github.com/git-agentmine/git-agentmine/sessions"
	"github.com/git-agentmine/git-agentmine/status"
)

// TestRetryFeedbackCarriesAReviewNG: the feedback of the attempt after a
// session reviewed NG lists every reason, a reason of several lines as one
// item; a review of a session that no longer decides the status is left
// out.
func TestRetryFeedbackCarriesAReviewNG(t *testing.T) {
	rec := &sessions.Record{Session: sessions.Session{ID: "0123456789abcdef", Task: "t"},
		Review: &sessions.Review{Verdict: sessions.VerdictNG, Agent: "Ada", Reasons: []string{"first line\nsecond line", "src/a.go:3: wrong"}}}
	res := status.Result{Status: status.DoDFailed, Reason: "session 01234567 reviewed NG by Ada", Session: rec.Session.ID}
	text := RetryFeedback(context.Background(), nil, res, rec, 2, 3).Text()
	for _, want := range []string{"This is attempt 2 of 3.", "The previous attempt (session 01234567)", "- Review by Ada: NG\n",
		"  - first line\n    second line\n", "  - src/a.go:3: wrong\n"} {
		if !strings.Contains(text, want) {
			t.Errorf("feedback lacks %q:\n%s", want, text)
		}
	}
	res.Session = "fedcba9876543210"
	if text := RetryFeedback(context.Background(), nil, res, rec, 2, 3).Text(); strings.Contains(text, "Review by") {
		t.Errorf("the review of a session that does not decide the status is in the feedback:\n%s", text)
	}
}
