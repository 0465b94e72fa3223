package pipeline

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/git-agentmine/git-agentmine/bestof"
	"github.com/git-agentmine/git-agentmine/board"
	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/merge"
	"github.com/git-agentmine/git-agentmine/sessions"
	"github.com/git-agentmine/git-agentmine/status"
	"github.com/git-agentmine/git-agentmine/tasks"
	"github.com/git-agentmine/git-agentmine/worker"
)

// Best of N (run --best-of K, a task's own best_of, run --agents): K
// attempts of one task start at once, each a session of its own with its
// own branch and worktree (task-<id>-<slot>), each verified as usual. When
// all of them ended, one that passed its facts (what a merge demands) is
// chosen: by the reviewer when the run reviews (one reviewer run is shown
// every attempt that passed, numbered, and answers with the number of the
// one it picks, or 0 for none: roles.Compare), else the smallest diff
// (fewest added plus deleted lines, then fewest files, then the lowest
// slot). Only the winner is merged; the other attempts' branches stay
// until `worker prune` removes them. The choice, with each attempt's
// verdict, diff size and usage, is recorded in the task's best-of record
// (package bestof).
//
// A round counts as one loop against max_loops, whatever K is: a round in
// which no attempt passed (or the reviewer chose none) is one failed loop,
// and the next round gets its feedback. A round takes K of the run's
// --parallel slots (the run raises --parallel to its --best-of); a task
// whose own best_of is more than --parallel starts when nothing else runs.

// EvChosen is the event of a best-of round decided: Session is the
// winner ("" when none passed or the reviewer chose none), Reason why.
const EvChosen = "chosen"

// Comparison is what the reviewer comparing a round's attempts answered
// (Hooks.Compare): the chosen attempt's number and session (0 and "" for
// none), and why.
type Comparison struct {
	Choice   int      `json:"choice"`
	Session  string   `json:"session,omitempty"`
	Reasons  []string `json:"reasons"`
	FollowUp string   `json:"follow_up,omitempty"`
	Agent    string   `json:"agent"`
}

// roundState is what the supervisor holds of best-of rounds.
type roundState struct {
	records map[string]bestof.Record // task -> its record, as last read or written
	k       map[string]int           // task -> K of the round being started
}

// bestOf is K for task t in this run: its own best_of, else the run's.
func (s *Supervisor) bestOf(t tasks.Task) int {
	if t.BestOf > 0 {
		return t.BestOf
	}
	return max(s.rec.BestOf, 1)
}

// rounds returns the task's best-of record, read once and then kept as
// this supervisor writes it.
func (s *Supervisor) rounds(ctx context.Context, id string) bestof.Record {
	if s.bo.records == nil {
		s.bo.records, s.bo.k = map[string]bestof.Record{}, map[string]int{}
	}
	if r, ok := s.bo.records[id]; ok {
		return r
	}
	r, _, err := bestof.Get(ctx, s.st, id)
	if err != nil {
		fmt.Fprintf(s.log, "%s task %s: %v\n", time.Now().Format("15:04:05"), short(id), err)
		return bestof.Record{Task: id}
	}
	s.bo.records[id] = r
	return r
}

// loops counts the task's attempts as loops: all attempts of one round
// are one.
func (s *Supervisor) loops(ctx context.Context, ts taskState) int {
	if len(ts.attempts) == 0 {
		return 0
	}
	rec := s.rounds(ctx, ts.id)
	seen := map[int]bool{}
	n := 0
	for _, a := range ts.attempts {
		if i := rec.RoundOf(a.Session.ID); i >= 0 {
			if seen[i] {
				continue
			}
			seen[i] = true
		}
		n++
	}
	return n
}

// startingSlots is how many slots the starts under way take: a round K.
func (s *Supervisor) startingSlots() int {
	n := 0
	for id := range s.starting {
		n += max(s.bo.k[id], 1)
	}
	return n
}

// fit keeps the starts that fit in free slots, in order: a round takes K;
// a round larger than the run's --parallel starts alone, when nothing
// runs or starts.
func (s *Supervisor) fit(reqs []startReq, free, used int) []startReq {
	var out []startReq
	for _, r := range reqs {
		k := max(r.k, 1)
		switch {
		case k <= free:
			free -= k
		case used == 0 && len(out) == 0 && k > s.rec.Parallel:
			return []startReq{r}
		default:
			return out
		}
		out = append(out, r)
	}
	return out
}

// roundAct is what considerRound decided.
type roundAct int

const (
	roundNone  roundAct = iota // not in a round, or a round that failed: the usual path
	roundWait                  // handled: nothing more to do at this look
	roundRetry                 // the winner's merge conflicted: a new attempt with the feedback
)

// considerRound handles a target whose latest attempt belongs to a
// best-of round: it decides the round once every attempt ended, and has
// the winner merged (or waiting). A round decided without a winner goes
// the usual way: its attempts' statuses (failed, or reviewed NG) start the
// next round with their feedback.
func (s *Supervisor) considerRound(ctx context.Context, b *board.Board, ts *taskState, p *stepPlan) (*Feedback, roundAct) {
	if ts.latest == nil {
		return nil, roundNone
	}
	rec := s.rounds(ctx, ts.id)
	i := rec.RoundOf(ts.latest.Session.ID)
	if i < 0 {
		return nil, roundNone
	}
	rd := rec.Rounds[i]
	if rd.Decided == nil {
		if s.decide(ctx, b, *ts, i, rd) {
			p.progressed = true // look again at once: the decision is a fact now
		} else {
			p.next = earliest(p.next, s.notBefore[ts.id])
		}
		return nil, roundWait
	}
	if rd.Decided.Winner == "" {
		return nil, roundNone
	}
	w, ok := sessionIn(b, ts.id, rd.Decided.Winner)
	if !ok {
		return nil, roundWait
	}
	ts.latest, ts.winner = &w, w.Session.ID
	fb, retry := s.considerPassed(ctx, b, ts, p)
	if retry {
		return fb, roundRetry
	}
	return nil, roundWait
}

// sessionIn finds session sid among the task's sessions.
func sessionIn(b *board.Board, task, sid string) (sessions.Record, bool) {
	for _, r := range b.SessionsOf(task) {
		if r.Session.ID == sid {
			return r, true
		}
	}
	return sessions.Record{}, false
}

// decide chooses among the attempts of round i once all of them ended and
// records the choice. It reports whether a decision was recorded; false
// while an attempt runs, or while the reviewer's run failed and waits for
// its backoff.
func (s *Supervisor) decide(ctx context.Context, b *board.Board, ts taskState, i int, rd bestof.Round) bool {
	judged, passing, running := s.judgeRound(ctx, b, ts.id, rd)
	if running {
		return false
	}
	d := bestof.Decision{Candidates: judged}
	switch {
	case len(passing) == 0:
		d.By, d.Reasons = "none passed", []string{"no attempt of the round passed its checks"}
	case s.rec.Review && s.hooks.Compare != nil:
		if !s.compare(ctx, b, ts, i, &d, passing) {
			return false
		}
	default:
		smallest(&d, passing)
	}
	for j := range d.Candidates {
		c := &d.Candidates[j]
		c.Chosen = c.Session == d.Winner && d.Winner != ""
		switch {
		case c.Chosen:
		case !c.Passed:
			c.Why = "did not pass: " + c.Verdict
		case c.Why == "":
			c.Why = "not chosen"
		}
	}
	d.Time = time.Now().UTC()
	rec, err := bestof.Decide(context.WithoutCancel(ctx), s.st, ts.id, i, d)
	if err != nil && !errors.Is(err, bestof.ErrDecided) {
		fmt.Fprintf(s.log, "%s task %s: %v\n", time.Now().Format("15:04:05"), short(ts.id), err)
		s.notBefore[ts.id] = time.Now().Add(s.o.Backoff)
		return false
	}
	s.bo.records[ts.id] = rec
	why := d.By
	if len(d.Reasons) > 0 {
		why += ": " + strings.Join(d.Reasons, "; ")
	}
	s.emit(Event{Event: EvChosen, Task: ts.id, Title: ts.task.Title, Session: d.Winner, Reason: why, Running: len(s.live)})
	return true
}

// judgeRound judges every attempt of the round from its facts; running is
// set while one has not ended.
func (s *Supervisor) judgeRound(ctx context.Context, b *board.Board, task string, rd bestof.Round) (judged []bestof.Judged, passing []int, running bool) {
	for _, c := range rd.Attempts {
		j := bestof.Judged{Slot: c.Slot, Session: c.Session, Agent: c.Agent}
		r, ok := sessionIn(b, task, c.Session)
		switch {
		case !ok:
			j.Verdict = "its session is gone"
		case board.LiveNow(r, b.Here):
			return nil, nil, true
		case IsStopped(r):
			j.Verdict = "stopped before it finished"
		default:
			if err := merge.Check(r, short(task), merge.Options{AllowSkipped: true, AcceptMainChanges: true}); err != nil {
				if u := errors.Unwrap(err); u != nil {
					err = u // the gate's reason, without "not merging task …"
				}
				j.Verdict = firstLine(err.Error())
			} else {
				j.Passed, j.Verdict = true, "passed"
			}
			if r.Outcome != nil {
				j.Usage = r.Outcome.Usage
				j.Lines, j.Files = diffSize(ctx, s, r)
			}
		}
		if j.Passed {
			passing = append(passing, len(judged))
		}
		judged = append(judged, j)
	}
	return judged, passing, false
}

// diffSize is the added plus deleted lines and the files of a session's
// diff from its base commit to its tip, read from git.
func diffSize(ctx context.Context, s *Supervisor, r sessions.Record) (lines, files int) {
	tip := r.Outcome.Tip
	if tip == "" || tip == r.Session.BaseCommit {
		return 0, 0
	}
	out, err := s.st.Git().Output(ctx, "diff", "--numstat", r.Session.BaseCommit, tip, "--")
	if err != nil {
		return 0, 0
	}
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) < 3 {
			continue
		}
		files++
		add, _ := strconv.Atoi(f[0]) // "-" for a binary file: counted as a file only
		del, _ := strconv.Atoi(f[1])
		lines += add + del
	}
	return lines, files
}

// smallest chooses the passing attempt with the smallest diff.
func smallest(d *bestof.Decision, passing []int) {
	c := d.Candidates
	best := slices.MinFunc(passing, func(a, b int) int {
		return cmp.Or(cmp.Compare(c[a].Lines, c[b].Lines), cmp.Compare(c[a].Files, c[b].Files), cmp.Compare(c[a].Slot, c[b].Slot))
	})
	d.Winner, d.By = c[best].Session, "smallest diff"
	d.Reasons = []string{fmt.Sprintf("attempt %d has the smallest passing diff: %d line(s) in %d file(s)", c[best].Slot, c[best].Lines, c[best].Files)}
	c[best].Why = "smallest passing diff"
	for _, j := range passing {
		if j != best {
			c[j].Why = fmt.Sprintf("passed, larger diff (%d line(s) in %d file(s))", c[j].Lines, c[j].Files)
		}
	}
}

// compare has the reviewer choose among the passing attempts and fills d.
// A reviewer run that gave no answer is retried with backoff (never an
// attempt); after maxInfraRetries the task is exhausted, as for a review.
func (s *Supervisor) compare(ctx context.Context, b *board.Board, ts taskState, i int, d *bestof.Decision, passing []int) bool {
	var cands []Candidate
	for _, j := range passing {
		cands = append(cands, Candidate{Slot: d.Candidates[j].Slot, Session: d.Candidates[j].Session})
	}
	key := fmt.Sprintf("round:%s:%d", ts.id, i)
	c, err := s.hooks.Compare(ctx, cands)
	if err != nil {
		if ctx.Err() != nil {
			return false
		}
		s.reviewFails[key]++
		fmt.Fprintf(s.log, "%s task %s: the reviewer's comparison failed: %v\n", time.Now().Format("15:04:05"), short(ts.id), err)
		if s.hooks.Retryable != nil && !s.hooks.Retryable(err) || s.reviewFails[key] >= maxInfraRetries {
			s.exhaust(context.WithoutCancel(ctx), b, ts, fmt.Sprintf("the reviewer's comparison could not run (%d tries): %s", s.reviewFails[key], firstLine(err.Error())))
			return false
		}
		s.notBefore[ts.id] = time.Now().Add(s.o.Backoff << (s.reviewFails[key] - 1))
		return false
	}
	d.By, d.Reasons, d.Winner = "reviewer "+c.Agent, c.Reasons, c.Session
	for _, j := range passing {
		switch {
		case d.Candidates[j].Session == c.Session:
			d.Candidates[j].Why = "chosen by the reviewer"
		case c.Session == "":
			d.Candidates[j].Why = "the reviewer chose none"
		default:
			d.Candidates[j].Why = fmt.Sprintf("passed, the reviewer chose attempt %d", c.Choice)
		}
	}
	return true
}

// Candidate is an attempt shown to the comparing reviewer: its slot in the
// round and its session.
type Candidate struct {
	Slot    int
	Session string
}

// roundAgents names the agent of each of k slots: --agents in turn, else
// "" (the task's own agent).
func (s *Supervisor) roundAgents(k int) []string {
	out := make([]string, k)
	if len(s.rec.Agents) == 0 {
		return out
	}
	for i := range out {
		out[i] = s.rec.Agents[i%len(s.rec.Agents)]
	}
	return out
}

// startRound prepares the K sessions of a round one after the other (each
// knowing its prepared siblings), records the round, then hands each to a
// detached supervisor. A slot that cannot be prepared leaves the round
// smaller (the log says why); when none can, the first error is the
// start's. The result carries the other slots' results as siblings.
func (s *Supervisor) startRound(ctx context.Context, r startReq) startResult {
	id := r.ts.id
	agents := s.roundAgents(r.k)
	rd := bestof.Round{Started: time.Now().UTC(), K: r.k}
	var prepared []*worker.Prepared
	var firstErr error
	for slot := 1; slot <= r.k; slot++ {
		o := worker.RunOptions{Task: id, Agent: agents[slot-1], Exec: true, Detach: true, Replace: true,
			Slot: slot, Siblings: rd.Sessions(), NoClaim: len(prepared) > 0}
		if r.fb != nil {
			o.Feedback = r.fb.Text()
		}
		p, err := s.env.Prepare(ctx, o)
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			fmt.Fprintf(s.log, "%s task %s: best-of attempt %d of %d: %v\n", time.Now().Format("15:04:05"), short(id), slot, r.k, err)
			continue
		}
		prepared = append(prepared, p)
		rd.Attempts = append(rd.Attempts, bestof.Candidate{Slot: slot, Session: p.Rec.Session.ID, Agent: p.Agent.Name})
	}
	if len(prepared) == 0 {
		return startResult{req: r, err: firstErr}
	}
	// Recorded before any worker starts, so that a supervisor killed from
	// here on leaves a round whose attempts are known.
	rec, err := bestof.AddRound(ctx, s.st, id, rd)
	if err != nil {
		fmt.Fprintf(s.log, "%s task %s: %v\n", time.Now().Format("15:04:05"), short(id), err)
	}
	var out startResult
	for i, p := range prepared {
		res := startResult{req: r}
		res.rec, res.ev, res.ok, res.err = s.launch(ctx, r, p, &res.note)
		res.ev.Reason = fmt.Sprintf("best of %d: attempt %d (agent %s)", r.k, rd.Attempts[i].Slot, p.Agent.Name)
		if i == 0 {
			out = res
			if err == nil {
				out.round = &rec
			}
			continue
		}
		out.siblings = append(out.siblings, res)
	}
	return out
}

// compareSelf runs `run compare N:SESSION...` in a process of its own (as
// the Review hook runs `review`) and reads its answer.
func compareSelf(ctx context.Context, env *worker.Env, self func(args ...string) []string, cands []Candidate) (Comparison, error) {
	args := []string{"run", "compare"}
	for _, c := range cands {
		args = append(args, fmt.Sprintf("%d:%s", c.Slot, c.Session))
	}
	code, out, err := runSelf(ctx, env, self(args...))
	if err != nil {
		return Comparison{}, err
	}
	if code != 0 {
		err := fmt.Errorf("comparing %d attempt(s): %s", len(cands), out)
		switch code {
		case exitcode.Usage, exitcode.Config, exitcode.NotFound:
			return Comparison{}, exitcode.New(code, err, "")
		}
		return Comparison{}, &infraError{err}
	}
	var c Comparison
	if err := json.Unmarshal([]byte(out), &c); err != nil {
		return Comparison{}, &infraError{fmt.Errorf("comparing %d attempt(s): unreadable answer: %w", len(cands), err)}
	}
	return c, nil
}

// checkAgents refuses --agents naming an agent that does not resolve.
func checkAgents(env *worker.Env, names []string) error {
	for _, n := range names {
		if _, err := env.ResolveAgent(n, tasks.Task{}); err != nil {
			return fmt.Errorf("--agents: %w", err)
		}
	}
	return nil
}

// withoutLosers leaves out of recs the attempts of the task's best-of
// rounds that were not chosen.
func (s *Supervisor) withoutLosers(ctx context.Context, task string, recs []sessions.Record) []sessions.Record {
	rec := s.rounds(ctx, task)
	if len(rec.Rounds) == 0 {
		return recs
	}
	return slices.DeleteFunc(slices.Clone(recs), func(r sessions.Record) bool {
		i := rec.RoundOf(r.Session.ID)
		return i >= 0 && (rec.Rounds[i].Decided == nil || rec.Rounds[i].Decided.Winner != r.Session.ID)
	})
}

// winnerWaits fills t for a target whose latest attempt is in a best-of
// round with a winner that is not merged yet: the winner waits to be
// merged, whatever the round's latest attempt says. It reports whether it
// did, and whether the winner is approved (reviewed OK, or the run does
// not review).
func (s *Supervisor) winnerWaits(ctx context.Context, b *board.Board, ts taskState, t *TaskSummary) (approved, ok bool) {
	if ts.latest == nil || ts.task.Exhausted != nil {
		return false, false
	}
	switch ts.res.Status {
	case status.Done, status.Cancelled, status.Tainted, status.InProgress:
		return false, false
	}
	rec := s.rounds(ctx, ts.id)
	i := rec.RoundOf(ts.latest.Session.ID)
	if i < 0 || rec.Rounds[i].Decided == nil || rec.Rounds[i].Decided.Winner == "" {
		return false, false
	}
	w, found := sessionIn(b, ts.id, rec.Rounds[i].Decided.Winner)
	if !found {
		return false, false
	}
	t.Status = string(status.Review)
	t.Reason = fmt.Sprintf("best-of winner %s passed, waiting to be merged", short(w.Session.ID))
	if mw, waiting := s.waits[ts.id]; waiting {
		t.Reason += ": " + mw.why
		t.AcceptMainChanges = mw.acceptMain
	}
	return !s.rec.Review || w.Review != nil && w.Review.OK(), true
}

// roundFeedback says how the other attempts of the best-of round of the
// latest attempt ended, when the round chose none: the next round should
// not repeat any of them. Nil otherwise.
func (s *Supervisor) roundFeedback(ctx context.Context, ts taskState) []string {
	if ts.latest == nil {
		return nil
	}
	rec := s.rounds(ctx, ts.id)
	i := rec.RoundOf(ts.latest.Session.ID)
	if i < 0 || rec.Rounds[i].Decided == nil || rec.Rounds[i].Decided.Winner != "" {
		return nil
	}
	var out []string
	for _, c := range rec.Rounds[i].Decided.Candidates {
		if c.Session == ts.latest.Session.ID {
			continue
		}
		out = append(out, fmt.Sprintf("attempt %d (session %s, agent %s): %s", c.Slot, short(c.Session), c.Agent, c.Why))
	}
	return out
}
