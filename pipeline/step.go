package pipeline

import (
	"context"
	"fmt"
	"time"

	"github.com/git-agentmine/git-agentmine/board"
	"github.com/git-agentmine/git-agentmine/sessions"
	"github.com/git-agentmine/git-agentmine/status"
)

// stepPlan is what one look at the targets decided.
type stepPlan struct {
	toStart  []startReq
	toReview []taskState
	// progressed is set when a merge landed: it may unblock dependents,
	// so the loop looks again at once.
	progressed bool
	// next is the earliest end of a backoff (zero: none pending).
	next time.Time
}

// step looks at every target once and acts: it reports the next time a
// backoff ends (zero: none), the running sessions, and whether the run is
// over. A merge waiting on the person's checkout keeps no run alive: it is
// tried again at every look while other work goes on, and the run ends
// with it waiting when nothing else is left.
func (s *Supervisor) step(ctx context.Context, b *board.Board) (next time.Time, running []sessions.Record, done bool) {
	jctx := context.WithoutCancel(ctx)
	now := time.Now()
	running = s.noteEnded(b, now)
	if s.stopReason != "" {
		if len(running) > 0 || len(s.starting) > 0 {
			s.stopAll(jctx, b, running)
			return time.Time{}, nil, false
		}
		return time.Time{}, nil, true
	}
	budgetOut := ""
	if s.budget != (Budget{}) {
		if over, why := s.budget.Exceeded(UsageOf(b, s.rec).Usage); over {
			budgetOut = why
		}
	}
	var p stepPlan
	for _, id := range s.order(b) {
		s.consider(jctx, b, id, now, &p)
	}
	// A client a limit refused waits (ratelimit.go).
	var held time.Time
	p.toStart, held = s.limitStarts(jctx, b, running, p.toStart, now)
	p.next = earliest(p.next, held)
	if budgetOut != "" && len(p.toStart) > 0 {
		// No new attempt starts; running ones finish.
		s.budgetStop = budgetOut
		p.toStart = nil
	}
	started := false
	if free := s.rec.Parallel - s.busySlots(running); free > 0 && len(p.toStart) > 0 && ctx.Err() == nil {
		// Tasks other clones claimed meanwhile: one listing (fleet.go).
		p.toStart = s.dropClaimed(jctx, b, p.toStart)
		// Declared paths that overlap wait (overlap.go); a best-of round
		// takes K slots (bestof.go).
		p.toStart = s.fit(s.admit(b, running, p.toStart, len(p.toStart)), free, len(running)+len(s.starting))
		if len(p.toStart) > 0 {
			s.startAll(ctx, b, p.toStart)
			started = true
		}
	}
	// Reviews run one at a time, after the starts, so that workers are
	// not kept waiting for a reviewer; none once the budget is used.
	if budgetOut == "" {
		for _, ts := range p.toReview {
			if ctx.Err() != nil {
				break
			}
			if s.review(ctx, b, ts) {
				p.progressed = true
			} else {
				p.next = earliest(p.next, s.notBefore[ts.id])
			}
		}
	}
	switch {
	case started && p.progressed:
		return now, running, false
	case started:
		return time.Time{}, running, false
	case len(running) == 0 && len(s.starting) == 0 && len(p.toStart) == 0 && p.next.IsZero() && !p.progressed:
		// Nothing runs, nothing starts, no backoff is pending and nothing
		// was merged: a blocked task whose blockers will never be done is
		// settled, and so is a merge that waits on the person's checkout.
		return p.next, nil, true
	case p.progressed:
		return now, running, false
	}
	return p.next, running, false
}

// busySlots is how many of the run's slots are taken: one by each running
// session and K by each start under way (startingSlots). The session a
// start under way recorded is already on the board, running: it counts as
// its start's, once. Counted twice, it kept a slot empty until the next
// worker's end, as no look follows a start that got its session started.
func (s *Supervisor) busySlots(running []sessions.Record) int {
	n := s.startingSlots()
	for _, r := range running {
		if !s.starting[r.Session.Task] {
			n++
		}
	}
	return n
}

// noteEnded tells which sessions ended since the last look and returns
// the ones running now.
func (s *Supervisor) noteEnded(b *board.Board, now time.Time) []sessions.Record {
	nowLive := map[string]sessions.Record{}
	for _, id := range s.rec.Targets {
		for _, r := range b.SessionsOf(id) {
			if !r.Session.IsAttempt() {
				continue // a reviewer or planner run, waited for where it runs
			}
			if live, _ := board.Liveness(r, b.Here, now); live {
				nowLive[r.Session.ID] = r
			}
		}
	}
	for sid, r := range s.live {
		if _, ok := nowLive[sid]; !ok {
			res := b.Status[r.Session.Task]
			s.emit(Event{Event: EvEnded, Task: r.Session.Task, Title: b.Tasks.Tasks[r.Session.Task].Task.Title, Session: sid,
				Status: string(res.Status), Reason: res.Reason, Running: len(nowLive)})
		}
	}
	s.live = nowLive
	running := make([]sessions.Record, 0, len(nowLive))
	for _, r := range nowLive {
		running = append(running, r)
	}
	return running
}

// consider decides what to do with one target: nothing, a start (with the
// feedback of what went wrong before), a review, or a merge, done here.
func (s *Supervisor) consider(ctx context.Context, b *board.Board, id string, now time.Time, p *stepPlan) {
	ts := s.stateOf(b, id)
	if s.settled(ctx, b, ts) || s.waitsForRole(ts, now, p) {
		return
	}
	if at, wait := s.backoff(ctx, b, ts, now); wait {
		p.next = earliest(p.next, at)
		return
	}
	if s.planFirst(ctx, b, ts, now, p) {
		return
	}
	// A best-of round's decision and its winner's merge (bestof.go).
	fb, act := s.considerRound(ctx, b, &ts, p)
	if act == roundWait {
		return
	}
	loops := s.loops(ctx, ts)
	switch {
	case act == roundRetry:
	case ts.interrupted():
		// The last session was stopped (Ctrl-C, SIGTERM, a stop): not an
		// attempt; start again with what the last real attempt left.
		fb = ts.feedbackAfterStop()
	case ts.res.Status == status.Review:
		var retry bool
		if fb, retry = s.considerPassed(ctx, b, &ts, p); !retry {
			return
		}
	case ts.res.Status == status.Failed, ts.res.Status == status.DoDFailed:
		fb = &Feedback{Status: string(ts.res.Status), StatusReason: ts.res.Reason}
		if l := ts.latest; fb.addReview(ts.res, l) {
			if loops < s.maxLoops(ts.task) && s.replan(ctx, b, ts, l, "review NG", l.Review.Reasons) {
				p.progressed = true // split: its children run instead, starting at the next look
				return
			}
		} else if s.replanFailures(ctx, b, ts, loops) {
			p.progressed = true
			return
		}
	case ts.res.Status == status.Open:
		if len(ts.attempts) > 0 || ts.res.Reason != "no session yet" {
			fb = &Feedback{Status: string(ts.res.Status), StatusReason: ts.res.Reason}
		}
	default:
		return
	}
	if max := s.maxLoops(ts.task); loops >= max {
		why := fmt.Sprintf("%d of %d attempts used", loops, max)
		if fb != nil && fb.StatusReason != "" {
			why += "; last: " + fb.StatusReason
		}
		s.exhaust(ctx, b, ts, why)
		return
	}
	if fb != nil {
		fb.complete(ctx, s.st, ts.latest, loops+1, s.maxLoops(ts.task))
		fb.Round = s.roundFeedback(ctx, ts)
	}
	p.toStart = append(p.toStart, startReq{ts: ts, fb: fb, k: s.bestOf(ts.task), loop: loops + 1})
}

// settled reports whether a target needs nothing from this look: done
// (its Task Note is written), cancelled, exhausted, tainted, running,
// blocked, held by another clone, or split into children.
func (s *Supervisor) settled(ctx context.Context, b *board.Board, ts taskState) bool {
	if _, ok := s.claimed[ts.id]; ok || s.starting[ts.id] {
		return true
	}
	if _, ok := s.setupFails[ts.id]; ok {
		return true // a setup failure: not retried in this run
	}
	if len(b.Tasks.Children(ts.id)) > 0 {
		return true // split by a replan: its children are targets now
	}
	switch {
	case ts.res.Status == status.Done:
		s.writeNote(ctx, ts.id, "")
		return true
	case ts.res.Status == status.Cancelled, ts.task.Exhausted != nil && ts.res.Status != status.InProgress,
		ts.res.Status == status.Tainted:
		if ts.task.Exhausted != nil {
			s.writeNote(ctx, ts.id, ts.task.Exhausted.Reason)
		}
		return true
	case ts.res.Status == status.InProgress, ts.res.Blocked:
		return true
	}
	return false
}

// backoff reports whether the target waits: after start failures (never
// attempts; exhausted after maxInfraRetries of them) or until the backoff
// of a failed preparation, review or merge ends.
func (s *Supervisor) backoff(ctx context.Context, b *board.Board, ts taskState, now time.Time) (time.Time, bool) {
	if ts.starts > 0 && (ts.latest == nil || ts.lastFail.Session.Started.After(ts.latest.Session.Started)) {
		if ts.starts >= maxInfraRetries {
			s.exhaust(ctx, b, ts, fmt.Sprintf("could not start a worker %d times: %s", ts.starts, firstLine(startFailure(*ts.lastFail))))
			return time.Time{}, true
		}
		if at := startFailedAt(*ts.lastFail).Add(s.o.Backoff << (ts.starts - 1)); at.After(now) {
			return at, true
		}
	}
	if at, ok := s.notBefore[ts.id]; ok && at.After(now) {
		return at, true
	}
	return time.Time{}, false
}

// considerPassed handles a target whose latest session passed its facts:
// it is reviewed (queued on p), merged when the run merges, or waits. It
// returns the feedback of a new attempt and true when the work conflicts
// with the base.
func (s *Supervisor) considerPassed(ctx context.Context, b *board.Board, ts *taskState, p *stepPlan) (*Feedback, bool) {
	if ts.winner == "" && (ts.latest == nil || ts.latest.Session.ID != ts.res.Session) {
		// Passing work from before this run: judge it as it is (a
		// best-of round's winner is not the latest: it is judged).
		rec, ok := b.Latest(ts.id)
		if !ok {
			return nil, false
		}
		ts.latest = &rec
	}
	if s.rec.Review && ts.latest.Review == nil && s.hooks.Review != nil {
		// Reviewed after the starts; the verdict is a fact the next look
		// reads.
		p.toReview = append(p.toReview, *ts)
		return nil, false
	}
	if !s.o.Merge {
		return nil, false // passed: waits for a person to merge
	}
	if paths, ok := s.conflicts[ts.latest.Session.ID]; ok {
		return &Feedback{Conflicts: paths, Status: "merge conflict", StatusReason: "the base moved: merging conflicted"}, true
	}
	paths, merged := s.merge(ctx, b, *ts)
	switch {
	case merged:
		p.progressed = true
		return nil, false
	case paths == nil:
		if _, waiting := s.waits[ts.id]; !waiting {
			p.next = earliest(p.next, s.notBefore[ts.id])
		}
		return nil, false // refused: the reason is in the log
	}
	return &Feedback{Conflicts: paths, Status: "merge conflict", StatusReason: "merging into the base conflicted"}, true
}
