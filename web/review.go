package web

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/git-agentmine/git-agentmine/board"
	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/merge"
	"github.com/git-agentmine/git-agentmine/pipeline"
	"github.com/git-agentmine/git-agentmine/sessions"
	"github.com/git-agentmine/git-agentmine/status"
	"github.com/git-agentmine/git-agentmine/tasks"
	"github.com/git-agentmine/git-agentmine/worker"
)

// Review from the board. A session in review is approved (an OK review,
// then a merge when asked for) or sent back: the person's comments become
// an NG review of the session, recorded by sessions.RecordReview as the
// reviewer agent's verdicts are, and a new attempt starts at once with the
// feedback run's retries give a task reviewed NG (pipeline.RetryFeedback),
// so its prompt carries the comments. The reviewer is the board's user
// (git's author identity); the line says it was recorded by the board.

// reviewedBy is the recorded_by of a review written from the board.
const reviewedBy = "agentmine serve"

// maxComment bounds one comment of a review, in bytes.
const maxComment = 4000

// mergeControl is what the task page offers to merge the latest session:
// the gate is asked (merge.Check), never second-guessed.
type mergeControl struct {
	// Offer is "merge" (the gate lets the session through), "skipped"
	// (only with its skipped DoD accepted: the explicit control) or ""
	// (no control).
	Offer string
	// Refusal is the gate's reason when it refuses, "" otherwise.
	Refusal string
}

// reviewControl is the review form of a task's latest session.
type reviewControl struct {
	// Session is the reviewed session (the form names it, so that a page
	// left open while a newer attempt started reviews nothing).
	Session, Short string
	// Key changes when the form must be drawn again.
	Key string
}

// mergeOffer asks the gate what merging the task's latest session would
// give, once as merge would and once accepting a skipped DoD.
func mergeOffer(b *board.Board, id string, running bool) mergeControl {
	st := b.Status[id].Status
	rec, ok := b.Latest(id)
	if running || !ok || st == status.Done || st == status.Cancelled {
		return mergeControl{}
	}
	short := b.Tasks.ShortID(id)
	err := merge.Check(rec, short, merge.Options{})
	if err == nil {
		return mergeControl{Offer: "merge"}
	}
	if merge.Check(rec, short, merge.Options{AllowSkipped: true}) == nil {
		return mergeControl{Offer: "skipped"}
	}
	return mergeControl{Refusal: firstLine(err.Error())}
}

// reviewOffer returns the review form of a task in review whose latest
// session can be reviewed, nil otherwise.
func reviewOffer(b *board.Board, id string, running bool) *reviewControl {
	rec, err := reviewable(b, id, "", running)
	if err != nil {
		return nil
	}
	key := rec.Session.ID
	if rec.Review != nil {
		key += " " + rec.Review.Verdict + " " + rec.Review.Finished.String()
	}
	return &reviewControl{Session: rec.Session.ID, Short: rec.Session.ID[:8], Key: key}
}

// reviewable returns the task's latest session when a person may review
// it: the task is in review, nothing runs on it, the session has a verdict
// a review can be proved against, and it is the session the form named
// (session "" takes the latest).
func reviewable(b *board.Board, id, session string, running bool) (sessions.Record, error) {
	short := b.Tasks.ShortID(id)
	res := b.Status[id]
	if running {
		return sessions.Record{}, exitcode.New(exitcode.State, fmt.Errorf("task %s has a running worker: stop it or wait for its end", short), "")
	}
	if res.Status != status.Review {
		return sessions.Record{}, exitcode.New(exitcode.State, fmt.Errorf("task %s is %s, not in review: only a session in review can be reviewed", short, res.Status), "")
	}
	rec, ok := b.Latest(id)
	if !ok {
		return sessions.Record{}, exitcode.New(exitcode.State, fmt.Errorf("task %s has no session to review", short), "")
	}
	if session != "" && session != rec.Session.ID {
		return sessions.Record{}, exitcode.New(exitcode.State, fmt.Errorf("session %s is no longer task %s's latest: reload the page and review the latest", shortID(session), short), "")
	}
	if _, err := sessions.ReviewProof(rec); err != nil {
		return sessions.Record{}, exitcode.New(exitcode.State, err, "")
	}
	return rec, nil
}

func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// taskRunning reports whether a session of the task is running.
func taskRunning(b *board.Board, id string, now time.Time) bool {
	for _, rec := range b.SessionsOf(id) {
		if live, _ := board.Liveness(rec, b.Here, now); live {
			return true
		}
	}
	return false
}

// reviewComments reads a review form: the comment (one reason), then one
// reason per line comment ("path:line: text"), in the order given.
func reviewComments(r *http.Request) ([]string, error) {
	var out []string
	add := func(c string) error {
		c = strings.TrimSpace(strings.ReplaceAll(c, "\r\n", "\n"))
		if c == "" {
			return nil
		}
		if len(c) > maxComment {
			return exitcode.New(exitcode.Usage, fmt.Errorf("a comment is %d bytes, more than %d", len(c), maxComment), "")
		}
		out = append(out, c)
		return nil
	}
	if err := add(r.PostFormValue("comment")); err != nil {
		return nil, err
	}
	for _, l := range r.PostForm["line"] {
		if err := add(l); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// loadFor reads the board for an action on the task id (any prefix).
func (v *view) loadFor(id string) (*worker.Env, *board.Board, string, error) {
	env, err := v.env()
	if err != nil {
		return nil, nil, "", err
	}
	b, err := board.Load(v.ctx, v.st, env.Cfg.Base)
	if err != nil {
		return nil, nil, "", err
	}
	tid, err := b.Tasks.Resolve(id)
	if err != nil {
		return nil, nil, "", err
	}
	return env, b, tid, nil
}

// approve records an OK review of the task's latest session by the
// board's user and, when the form asks, merges it. A merge the gate would
// refuse is refused before anything is recorded.
func (s *Server) approve(v *view, id string, r *http.Request) (string, error) {
	env, b, tid, err := v.loadFor(id)
	if err != nil {
		return "", err
	}
	rec, err := reviewable(b, tid, r.PostFormValue("session"), taskRunning(b, tid, time.Now()))
	if err != nil {
		return "", err
	}
	reasons, err := reviewComments(r)
	if err != nil {
		return "", err
	}
	short := b.Tasks.ShortID(tid)
	mergeToo := r.PostFormValue("merge") == "1"
	mo := merge.Options{AllowSkipped: r.PostFormValue("allow_skipped") == "1"}
	if mergeToo {
		if err := merge.Check(rec, short, mo); err != nil {
			return "", err
		}
	}
	rv := sessions.Review{Verdict: sessions.VerdictOK, Reasons: reasons, Agent: v.st.Author().Name, By: reviewedBy}
	if err := sessions.RecordReview(v.ctx, v.st, rec, &rv); err != nil {
		return "", err
	}
	if !mergeToo {
		return "approved", nil
	}
	if _, err := merge.Task(v.ctx, env.St, env.Cfg.Base, tid, mo); err != nil {
		return "", fmt.Errorf("approved, but %w", err)
	}
	return "approved-merged", nil
}

// requestChanges records the person's comments as an NG review of the
// task's latest session and starts a new attempt whose prompt carries
// them, as run's retry of a task reviewed NG does.
func (s *Server) requestChanges(v *view, id string, r *http.Request) error {
	env, b, tid, err := v.loadFor(id)
	if err != nil {
		return err
	}
	rec, err := reviewable(b, tid, r.PostFormValue("session"), taskRunning(b, tid, time.Now()))
	if err != nil {
		return err
	}
	reasons, err := reviewComments(r)
	if err != nil {
		return err
	}
	if len(reasons) == 0 {
		return exitcode.New(exitcode.Usage, errors.New("requesting changes needs a comment: say what the next attempt must change"), "")
	}
	rv := sessions.Review{Verdict: sessions.VerdictNG, Reasons: reasons, Agent: v.st.Author().Name, By: reviewedBy}
	if err := sessions.RecordReview(v.ctx, v.st, rec, &rv); err != nil {
		return err
	}
	if err := s.retry(v, env, tid, rec.Session.Agent); err != nil {
		return fmt.Errorf("changes requested (review recorded), but the new attempt did not start: %w", err)
	}
	return nil
}

// retry starts the next attempt of the task with the feedback run would
// give it, with the agent of the attempt before.
func (s *Server) retry(v *view, env *worker.Env, tid, agent string) error {
	b, err := board.Load(v.ctx, v.st, env.Cfg.Base)
	if err != nil {
		return err
	}
	latest, ok := b.Latest(tid)
	if !ok {
		return fmt.Errorf("task %s has no session", b.Tasks.ShortID(tid))
	}
	task := b.Tasks.Tasks[tid].Task
	attempt := attempts(b, tid, task) + 1
	maxLoops := task.MaxLoops
	if maxLoops <= 0 {
		maxLoops = pipeline.DefaultMaxLoops
	}
	// A person asked for this attempt: it is numbered past the limit
	// rather than refused.
	maxLoops = max(maxLoops, attempt)
	fb := pipeline.RetryFeedback(v.ctx, v.st, b.Status[tid], &latest, attempt, maxLoops)
	p, err := env.Prepare(v.ctx, worker.RunOptions{Task: tid, Agent: agent, Exec: true, Detach: true, Replace: true, Feedback: fb.Text()})
	if err != nil {
		return err
	}
	if p.ClaimNote != "" {
		fmt.Fprintf(s.opts.Log, "warning: %s\n", p.ClaimNote)
	}
	_, err = env.StartDetached(v.ctx, p, s.opts.Supervisor(env.Top, p.Rec.Session.ID))
	return err
}

// attempts counts the task's attempts since it was last reopened, as run
// counts them: worker sessions that started (not a start failure) and were
// not stopped.
func attempts(b *board.Board, id string, t tasks.Task) int {
	var since time.Time
	if t.Reopened != nil {
		since = t.Reopened.Time
	}
	now := time.Now()
	n := 0
	for _, r := range b.SessionsOf(id) {
		if r.Session.Started.Before(since) || !pipeline.IsWorkerSession(r.Session) || pipeline.IsStartFailure(r, b.Here, now) ||
			pipeline.IsStopped(r) {
			continue
		}
		n++
	}
	return n
}

// diffLineRef names a diff line for a line comment: the path and the
// line's number on the new side, or on the old side for a removed line.
func diffLineRef(path string, l diffLine) string {
	switch {
	case l.New > 0:
		return path + ":" + strconv.Itoa(l.New)
	case l.Old > 0:
		return path + ":" + strconv.Itoa(l.Old) + " (removed line)"
	}
	return ""
}

// steerAction returns the review and steering actions on a task by name
// (review.go, edit.go), nil for a name it does not know. An action that
// succeeds may rename itself for the notice shown after it.
func (s *Server) steerAction(action *string, r *http.Request) func(*view, string) error {
	named := func(f func(*view, string, *http.Request) (string, error)) func(*view, string) error {
		return func(v *view, id string) error {
			did, err := f(v, id, r)
			if err == nil {
				*action = did
			}
			return err
		}
	}
	plain := func(f func(*view, string, *http.Request) error) func(*view, string) error {
		return func(v *view, id string) error { return f(v, id, r) }
	}
	switch *action {
	case "approve":
		return named(s.approve)
	case "changes":
		return plain(s.requestChanges)
	case "edit":
		return named(s.editTask)
	case "reopen":
		return plain(s.reopen)
	case "unblock":
		return plain(s.unblock)
	}
	return nil
}
