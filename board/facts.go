package board

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/launch"
	"github.com/git-agentmine/git-agentmine/sessions"
	"github.com/git-agentmine/git-agentmine/status"
	"github.com/git-agentmine/git-agentmine/tasks"
	"github.com/git-agentmine/git-agentmine/verify"
)

// LostMargin is added to a foreign session's timeout and grace before it is
// declared lost: clocks differ and outcomes take a moment to record.
const LostMargin = 60 * time.Second

// Here is where liveness is judged from: this machine and this repository.
type Here struct {
	// Host is sessions.Host() of this machine.
	Host string
	// Repo is this repository's sessions.RepoID, "" when it could not be
	// read.
	Repo string
}

// HereOf returns this machine and st's repository. A repository id that
// cannot be read or created leaves Repo empty: then only sessions recorded
// without one are judged by their process.
func HereOf(st *gitstore.Store) Here {
	repo, err := sessions.RepoID(st)
	if err != nil {
		repo = ""
	}
	return Here{Host: sessions.Host(), Repo: repo}
}

// Judges reports whether here has the right to judge the session by its
// supervisor's process: the session ran on this host, for this repository
// (sessions recorded before the repository id existed count as this
// repository's, as they always did).
func (h Here) Judges(s sessions.Session) bool {
	return s.Host == h.Host && (s.Repo == "" || s.Repo == h.Repo)
}

// Liveness says whether a session without an outcome is still running.
// Judged here (same host, same repository): its supervisor process is alive
// (same pid and start time, so a recycled pid does not count). Anywhere
// else (another host, or another clone on this host, whose outcome may not
// have been synced yet): until its timeout plus grace (plus a margin) has
// passed. Manual sessions live until `session end`.
// A record Settle judged keeps that judgement.
func Liveness(r sessions.Record, here Here, now time.Time) (live, lost bool) {
	if r.Outcome != nil {
		return false, false
	}
	if r.Judged {
		return r.Live, r.Lost
	}
	s := r.Session
	if s.Mode == sessions.ModeManual {
		return true, false
	}
	if here.Judges(s) {
		if s.Pid > 0 && launch.Alive(s.Pid, s.PidStart) {
			return true, false
		}
		if s.Mode == sessions.ModeDetach && s.Seal == nil {
			// Until its detached supervisor seals it, the session names the
			// process that prepared it, which may die first (a run's
			// supervisor killed mid-start): the detached one, started with
			// the session id as its last argument, lives on.
			if _, ok := launch.WithLastArg(s.ID); ok {
				return true, false
			}
		}
		return false, true
	}
	if now.Before(Deadline(s)) {
		return true, false
	}
	return false, true
}

// LiveNow is Liveness's first answer judged at this moment, also for a
// record Settle judged: for acting on a session's processes (signalling
// them, or refusing because they run), where what was true when the board
// was read may be too old.
func LiveNow(r sessions.Record, here Here) bool {
	r.Judged = false
	live, _ := Liveness(r, here, time.Now())
	return live
}

// Settle judges once whether each record in recs still runs, as of now,
// and keeps the judgement in the record (Judged), so that every later
// Liveness of it agrees. A reader loads sessions first and looks at their
// processes after: a supervisor that records its outcome and exits in
// between would look lost though its outcome is in the repository. So the
// outcome of every record judged lost is read again (one batch) after its
// process was seen gone; a supervisor records before it exits. What is
// still running of a session that stays lost is then ended (sweepLost).
func Settle(ctx context.Context, st *gitstore.Store, recs []sessions.Record, here Here, now time.Time) error {
	var lost []*sessions.Record
	for i := range recs {
		if judge(&recs[i], here, now) {
			lost = append(lost, &recs[i])
		}
	}
	if err := settleLost(ctx, st, lost); err != nil {
		return err
	}
	sweepLost(lost, here)
	return nil
}

// RunIdentity is what tells session s's processes apart once its
// supervisor is gone: the worker's own process as the supervisor recorded
// it, the supervisor's start time (nothing of the session started before
// it) and the marker every worker of s runs with (SessionMarker).
func RunIdentity(s sessions.Session) launch.Identity {
	return launch.Identity{Leader: s.WorkerPid, LeaderStart: s.WorkerStart, Since: s.PidStart, Marker: SessionMarker(s),
		Span: time.Duration(s.Timeout+s.Grace)*time.Second + LostMargin}
}

// SessionMarker is the environment entry every worker of session s runs
// with: a process started with it is the session's.
func SessionMarker(s sessions.Session) string {
	return gitstore.SessionEnv + "=" + s.ID
}

// sweepLost ends what is left of the sessions found lost that this machine
// and repository judge and that agentmine supervised: the kernel killed
// each one's first process with its supervisor, and whoever records the
// loss ends the rest (launch.EndRuns: its session and group, its marker,
// their descendants), so that nothing of a worker outlives its supervisor
// for longer than it takes someone to look. Best effort: a process that
// survives is found again by the next reader, and worker done and worker
// stop report it.
func sweepLost(lost []*sessions.Record, here Here) {
	var ids []launch.Identity
	grace := time.Duration(0)
	for _, r := range lost {
		s := r.Session
		if !r.Lost || s.Mode == sessions.ModeManual || s.PidStart == 0 || !here.Judges(s) {
			continue
		}
		ids = append(ids, RunIdentity(s))
		if g := time.Duration(s.Grace) * time.Second; g > grace {
			grace = g
		}
	}
	if grace <= 0 {
		grace = launch.DefaultGrace
	}
	_, _ = launch.EndRuns(ids, grace)
}

// judge keeps in r whether it runs as of now, and reports whether it looks
// lost (settleLost has the last word on those).
func judge(r *sessions.Record, here Here, now time.Time) (lost bool) {
	r.Judged = false
	r.Live, r.Lost = Liveness(*r, here, now)
	r.Judged = true
	return r.Lost
}

// settleLost reads the outcomes of records judge found lost again; those
// that have one now have ended, the rest stay lost.
func settleLost(ctx context.Context, st *gitstore.Store, lost []*sessions.Record) error {
	if err := sessions.Reread(ctx, st, lost); err != nil {
		return err
	}
	for _, r := range lost {
		r.Lost = r.Outcome == nil
	}
	return nil
}

// Deadline is when a session judged from elsewhere counts as lost: its
// start plus timeout, grace and LostMargin.
func Deadline(s sessions.Session) time.Time {
	return s.Started.Add(time.Duration(s.Timeout+s.Grace)*time.Second + LostMargin)
}

func sortRecords(rs []sessions.Record) {
	sort.SliceStable(rs, func(i, j int) bool {
		if !rs[i].Session.Started.Equal(rs[j].Session.Started) {
			return rs[i].Session.Started.Before(rs[j].Session.Started)
		}
		return rs[i].Session.ID < rs[j].Session.ID
	})
}

// Gather turns sessions into the resolver's facts: liveness from /proc,
// outcomes from the notes already read, and "reached the base" for every
// session that produced commits, from the set of commits reachable from
// each base (mergedTips).
func Gather(ctx context.Context, st *gitstore.Store, tb *tasks.Board, recs []sessions.Record, defaultBase string, here Here) (status.Facts, error) {
	now := time.Now()
	tips := make([]tipFact, 0, len(recs))
	for i := range recs {
		if t, ok := tipOf(&recs[i]); ok {
			tips = append(tips, t)
		}
	}
	merged, err := mergedTips(ctx, st, tb, tips, defaultBase)
	if err != nil {
		return status.Facts{}, err
	}
	// Every task's attempts are carved from one array, each task's slice
	// exactly as long as its attempts: appending attempt by attempt grew
	// and copied tens of thousands of slices.
	count := map[string]int{}
	total := 0
	for i := range recs {
		if recs[i].Session.IsAttempt() {
			count[recs[i].Session.Task]++
			total++
		}
	}
	all := make([]status.Attempt, 0, total)
	f := status.Facts{Attempts: make(map[string][]status.Attempt, len(count))}
	for i := range recs {
		r := &recs[i]
		s := &r.Session
		if !s.IsAttempt() {
			// planner and reviewer runs never decide a task's status; a
			// live one says the task is being planned or reviewed
			if live, _ := Liveness(*r, here, now); live || answering(r, here, now) {
				addRole(&f, r)
			}
			continue
		}
		a := attemptOf(r, here, now)
		a.Merged = a.Ended && merged[s.ID]
		got, ok := f.Attempts[s.Task]
		if !ok {
			n := len(all)
			all = all[:n+count[s.Task]]
			got = all[n:n:len(all)]
		}
		f.Attempts[s.Task] = append(got, a)
	}
	return f, nil
}

// answering reports whether the process of a planner's or reviewer's run
// that has ended is still alive here: it records the answer (the plan's
// children, the verdict) after the run's outcome, so until it exits the
// decision is still being made. Only runs that ended in the last
// answerWindow are looked at: one process check each, not one per run
// ever made.
//
// A run made by this very process is never answering: the process asks
// after the call that ran it returned, and that call recorded the answer
// before it returned (a long-lived caller would otherwise see its own
// finished reviews as still under way for the whole window).
func answering(r *sessions.Record, here Here, now time.Time) bool {
	s := &r.Session
	return r.Outcome != nil && now.Sub(r.Outcome.Finished) < answerWindow && here.Judges(*s) && s.Pid > 0 &&
		s.Pid != os.Getpid() && launch.Alive(s.Pid, s.PidStart)
}

// answerWindow bounds how long after its outcome a planner's or reviewer's
// process is taken to be recording its answer.
const answerWindow = 10 * time.Minute

// addRole notes a live planner's or reviewer's run in f (the latest one
// of its task wins).
func addRole(f *status.Facts, r *sessions.Record) {
	s := &r.Session
	if s.Role != sessions.RolePlanner && s.Role != sessions.RoleReviewer {
		return
	}
	if f.Roles == nil {
		f.Roles = map[string]status.RoleRun{}
	}
	f.Roles[s.Task] = status.RoleRun{Role: s.Role, Agent: s.Agent, Session: s.ID}
}

// attemptOf is the resolver's fact of one attempt, but for Merged.
func attemptOf(r *sessions.Record, here Here, now time.Time) status.Attempt {
	s := &r.Session
	a := status.Attempt{Session: s.ID, Started: s.Started}
	a.Live, a.Lost = Liveness(*r, here, now)
	a.Forged = sessions.ForgedReason(r.Forged)
	if a.Forged == "" {
		// a review line the worker wrote for its own session
		a.Forged = sessions.ForgedReviewReason(r.ForgedReviews)
	}
	if o := r.Outcome; o != nil {
		a.Ended = true
		a.ExitCode = o.ExitCode
		a.Signal = o.Signal
		a.TimedOut = o.TimedOut
		a.RateLimited = o.RateLimited()
		a.Reason = o.Reason
		v := verify.Summarize(o)
		a.DoD, a.Verified, a.ScopeValid, a.Acceptable = v.DoD, v.Verified, v.ScopeValid, v.Acceptable
		if a.Reason == "" {
			a.Reason = v.Explained
		}
		if rv := r.Review; rv != nil {
			a.Review, a.Reviewer, a.ReviewReasons = rv.Verdict, rv.Agent, rv.Reasons
		}
	}
	return a
}

// tipFact is what mergedTips needs of a session that produced commits.
type tipFact struct {
	session, task, baseRef, tip string
}

// tipOf is the session's tipFact; ok is false when it ended without a
// commit beyond its base (or has not ended).
func tipOf(r *sessions.Record) (tipFact, bool) {
	o := r.Outcome
	if o == nil || o.Tip == "" || o.Tip == r.Session.BaseCommit {
		return tipFact{}, false
	}
	return tipFact{session: r.Session.ID, task: r.Session.Task, baseRef: r.Session.BaseRef, tip: o.Tip}, true
}

// mergedTips reports, per session id, whether the session's recorded tip
// has at least one commit beyond its base commit and is an ancestor of the
// base branch: a member of the set of commits reachable from the base
// (gitstore's Reachable, kept up to date incrementally; ReachableHas
// looks a few tips up without reading the set whole). A base that does
// not exist here is judged by the sync remote's remote-tracking branch of
// it; one that exists nowhere has nothing merged into it.
func mergedTips(ctx context.Context, st *gitstore.Store, tb *tasks.Board, tips []tipFact, defaultBase string) (map[string]bool, error) {
	out := map[string]bool{}
	// Indexes into tips, by base: usually one base holds them all.
	byBase := map[string][]int{}
	for i, t := range tips {
		base := t.baseRef
		if e, ok := tb.Tasks[t.task]; ok && e.Task.Base != "" {
			base = e.Task.Base
		}
		if base == "" {
			base = defaultBase
		}
		byBase[base] = append(byBase[base], i)
	}
	for base, rs := range byBase {
		ref, commit, ok := st.ResolveCommit(ctx, base)
		if !ok {
			// No such base here (a clone without the local branch): judge
			// against the remote-tracking branch of the sync remote.
			if ref, commit, ok = st.ResolveCommit(ctx, remoteTracking(st, base)); !ok {
				continue // the base ref is gone: nothing is merged into it
			}
		}
		ids := make([]string, len(rs))
		for j, i := range rs {
			ids[j] = tips[i].tip
		}
		in, err := st.ReachableHas(ctx, ref, commit, ids)
		if err != nil {
			return nil, fmt.Errorf("checking which sessions reached %s: %w", base, err)
		}
		for j, i := range rs {
			if in[j] {
				out[tips[i].session] = true
			}
		}
	}
	return out, nil
}

// remoteTracking names the remote-tracking branch of base on the sync remote
// (agentmine.remote, else origin), e.g. refs/remotes/origin/main.
func remoteTracking(st *gitstore.Store, base string) string {
	remote := "origin"
	if r, ok := st.Config("agentmine.remote"); ok && r != "" {
		remote = r
	}
	return "refs/remotes/" + remote + "/" + strings.TrimPrefix(base, "refs/heads/")
}
