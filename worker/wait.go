package worker

import (
	"context"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/git-agentmine/git-agentmine/board"
	"github.com/git-agentmine/git-agentmine/sessions"
	"github.com/git-agentmine/git-agentmine/verify"
)

// End records the outcome of a session whose worker was run by someone else
// (`session end`), judging its worktree like a supervised run. Without a
// watcher the live record is marked incomplete.
func (e *Env) End(ctx context.Context, rec sessions.Record, exit int, signal string, claimed []string, skipDoD bool) (sessions.Outcome, error) {
	out := sessions.Outcome{ExitCode: exit, Signal: signal, TimedOut: exit == 124, Finished: time.Now().UTC(),
		By: "session end", Claimed: claimed}
	if skipDoD {
		rec.Session.SkipDoD = true
	}
	spec := specOf(rec.Session)
	if rec.Session.Worktree != "" {
		if _, err := os.Stat(rec.Session.Worktree); err == nil {
			live := verify.Unsupervised("the worker ran outside agentmine's supervision: no live record")
			if err := e.judge(ctx, rec, spec, live, nil, &out, func(string, ...any) {}); err != nil {
				out.Reason = firstLine(err.Error())
			}
		}
	}
	if out.Tip == "" && rec.Session.Branch != "" {
		if tip, err := e.St.Git().Output(ctx, "rev-parse", "--verify", "-q", "refs/heads/"+rec.Session.Branch); err == nil {
			out.Tip = tip
		}
	}
	err := sessions.RecordOutcome(ctx, e.St, rec, &out)
	return out, err
}

// Wait blocks until none of the sessions with the given ids is live. It does
// not poll: it sleeps on the supervisors' pidfds (the kernel says when they
// exit), on changes to the notes ref (outcomes of manual and remote
// sessions), and on the deadline of sessions from other hosts.
func (e *Env) Wait(ctx context.Context, ids []string) ([]sessions.Record, error) {
	notesDir := filepath.Join(e.St.Location().CommonDir, "refs", "notes")
	os.MkdirAll(notesDir, 0o755)
	w, err := fsnotify.NewWatcher()
	if err == nil {
		defer w.Close()
		w.Add(notesDir)
		w.Add(e.St.Location().CommonDir) // packed-refs
	}
	here := board.HereOf(e.St)
	for {
		recs, err := e.Records(ctx, ids)
		if err != nil {
			return nil, err
		}
		// A supervisor that recorded its outcome and exited after the
		// read above must not come back as lost.
		if err := board.Settle(ctx, e.St, recs, here, time.Now()); err != nil {
			return nil, err
		}
		wake := make(chan struct{}, 1)
		poke := func() {
			select {
			case wake <- struct{}{}:
			default:
			}
		}
		stop := make(chan struct{})
		var deadline time.Time
		pending := 0
		for _, r := range recs {
			live, _ := board.Liveness(r, here, time.Now())
			if !live {
				continue
			}
			pending++
			s := r.Session
			switch {
			case s.Mode != sessions.ModeManual && here.Judges(s) && s.Pid > 0:
				go waitPid(s.Pid, stop, poke)
			case s.Mode != sessions.ModeManual:
				d := board.Deadline(s)
				if deadline.IsZero() || d.Before(deadline) {
					deadline = d
				}
			}
		}
		if pending == 0 {
			close(stop)
			return recs, nil
		}
		var timer <-chan time.Time
		if !deadline.IsZero() {
			timer = time.After(time.Until(deadline) + time.Second)
		}
		var events <-chan fsnotify.Event
		if w != nil {
			events = w.Events
		}
		select {
		case <-ctx.Done():
			close(stop)
			return recs, ctx.Err()
		case <-wake:
		case <-timer:
		case <-events:
		}
		close(stop)
	}
}

// Records reads the sessions with the given ids (all sessions when none).
func (e *Env) Records(ctx context.Context, ids []string) ([]sessions.Record, error) {
	all, _, err := sessions.LoadAll(ctx, e.St)
	if err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return all, nil
	}
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	var out []sessions.Record
	for _, r := range all {
		if want[r.Session.ID] {
			out = append(out, r)
		}
	}
	return out, nil
}
