package web

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/git-agentmine/git-agentmine/board"
	"github.com/git-agentmine/git-agentmine/launch"
	"github.com/git-agentmine/git-agentmine/pipeline"
	"github.com/git-agentmine/git-agentmine/sessions"
	"github.com/git-agentmine/git-agentmine/status"
)

// A supervisor run (`run`, package pipeline) has a log of its own, named
// by its record under refs/agentmine/runs. The Runs page shows it in a tab
// before the tabs of the run's workers, and it streams like a session's
// log (same events, same byte-offset resume), until the supervisor process
// is gone: it writes its last lines after recording that the run ended.

// recentRun is how long a run that is no longer running keeps its tab:
// counted from when it ended, or from its log's last write when its
// supervisor died without recording an end.
const recentRun = 10 * time.Minute

// endGrace bounds how long a stream waits for a supervisor that recorded
// the end of its run to exit (a foreground run prints its summary first;
// one that goes on living, e.g. a test's own process, must not hold the
// stream open for ever).
const endGrace = 2 * time.Second

// runRow is one supervisor on the Runs page.
type runRow struct {
	Name    string
	State   string // running, ended or dead (see runState)
	Pid     int
	Started time.Time
	Done    int
	Total   int
	// Progress draws Done of Total as the board draws a parent's.
	Progress *progress
	// Result and Reason say how an ended run ended.
	Result string
	Reason string
	// Lasted is how long an ended run ran; empty while it runs.
	Lasted string
	// Pauses say which clients a rate limit paused, and until when
	// (pipeline.Pause).
	Pauses []string
}

// runState names where a run is: "running" (its supervisor is alive),
// "ended" (it recorded its end) or "dead" (its supervisor is gone without
// recording one: starting the run again resumes it).
func runState(r pipeline.Record) string {
	switch {
	case r.Ended != nil:
		return "ended"
	case r.Alive():
		return "running"
	}
	return "dead"
}

// runLogRoot is the only directory a run's log is read from: where the
// supervisor writes it (the common git dir's agentmine/logs).
func runLogRoot(commonDir string) string { return filepath.Join(commonDir, "agentmine", "logs") }

// shownRuns returns the runs the Runs page shows, oldest first: those
// running, and those that ended (or whose supervisor died) within
// recentRun.
func shownRuns(recs []pipeline.Record, commonDir string, now time.Time) []pipeline.Record {
	var out []pipeline.Record
	for _, r := range recs {
		switch {
		case r.Ended == nil && r.Alive():
		case r.Ended != nil && now.Sub(r.Ended.Time) < recentRun:
		case r.Ended == nil:
			// Dead: shown while its log is recent. Only a log inside this
			// repository's logs is looked at.
			p, err := launch.LogPathWithin(runLogRoot(commonDir), "run "+r.Name, r.Log)
			if err != nil {
				continue
			}
			fi, err := os.Lstat(p)
			if err != nil || now.Sub(fi.ModTime()) >= recentRun {
				continue
			}
		default:
			continue
		}
		out = append(out, r)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Started.Before(out[j].Started) })
	return out
}

// newRunRow summarises a run for the Runs page: its targets done out of
// all, from the board's derived statuses.
func newRunRow(r pipeline.Record, b *board.Board) runRow {
	row := runRow{Name: r.Name, State: runState(r), Pid: r.Supervisor.Pid, Started: r.Started, Total: len(r.Targets)}
	for _, id := range r.Targets {
		if b.Status[id].Status == status.Done {
			row.Done++
		}
	}
	row.Progress = newProgress(row.Done, row.Total)
	for _, p := range r.RateLimits {
		row.Pauses = append(row.Pauses, p.String(time.Now()))
	}
	if r.Ended != nil {
		row.Result, row.Reason = r.Ended.Result, r.Ended.Reason
		row.Lasted = ago(r.Ended.Time.Sub(r.Started))
	}
	return row
}

// owns reports whether session rec is one of run r's worker attempts: a
// worker session of one of its targets started since the run started (as
// the run's supervisor counts attempts).
func owns(r pipeline.Record, rec sessions.Record) bool {
	if !pipeline.IsWorkerSession(rec.Session) || rec.Session.Started.Before(r.Started) {
		return false
	}
	for _, id := range r.Targets {
		if id == rec.Session.Task {
			return true
		}
	}
	return false
}

// runTab is the Runs page's tab of a supervisor's log.
func runTab(row runRow) tab {
	return tab{Kind: "supervisor", ID: "log-run-" + row.Name, Name: row.Name, Run: &row,
		Log: "r:" + row.Name}
}

// runEnd is the end event of a run's stream.
func runEnd(r pipeline.Record) endEvent {
	e := endEvent{Of: "run", State: runState(r)}
	switch {
	case r.Ended != nil:
		e.Verdict = fmt.Sprintf("%s, %d of %d done", r.Ended.Result, r.Ended.Done, r.Ended.Total)
		if r.Ended.Reason != "" {
			e.Verdict += " (" + r.Ended.Reason + ")"
		}
	default:
		e.Verdict = fmt.Sprintf("its supervisor (pid %d on %s) is gone before the run ended", r.Supervisor.Pid, r.Supervisor.Host)
	}
	return e
}

// runLogStream streams a run's supervisor log (GET /runs/{name}/log), as
// logStream does a session's.
func (s *Server) runLogStream(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	v, err := s.open(ctx)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	src, err := s.runLog(ctx, v, r.PathValue("name"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	off, err := startOffset(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	follow(w, r, src.path, off, src.ended, src.end)
}

// runLog finds run name's supervisor log. Its ended channel closes when
// the supervisor is gone (see waitRun) or ctx is done.
func (s *Server) runLog(ctx context.Context, v *view, name string) (logSource, error) {
	rec, err := pipeline.Get(ctx, v.st, name)
	if err != nil {
		return logSource{}, err
	}
	path, err := launch.LogPathWithin(runLogRoot(v.st.Location().CommonDir), "run "+name, rec.Log)
	if err != nil {
		return logSource{}, err
	}
	ended := make(chan struct{})
	latest := make(chan pipeline.Record, 1)
	s.spawn(func() {
		latest <- s.waitRun(ctx, v, rec)
		close(ended)
	})
	return logSource{path: path, ended: ended, end: func() endEvent { return runEnd(<-latest) }}, nil
}

// waitRun returns the run's record once its supervisor is gone, or once it
// recorded the run's end and endGrace passed, or when ctx is done. The
// record is read again whenever the refs change (a run taken over by a new
// supervisor goes on in the same log); whether the process lives is looked
// at every logPoll.
func (s *Server) waitRun(ctx context.Context, v *view, rec pipeline.Record) pipeline.Record {
	changes, done := s.live.subscribe()
	defer done()
	tick := time.NewTicker(logPoll)
	defer tick.Stop()
	var endSeen time.Time
	for {
		if rec.Ended != nil && endSeen.IsZero() {
			endSeen = time.Now()
		}
		if !endSeen.IsZero() && time.Since(endSeen) >= endGrace {
			return rec
		}
		if !rec.Alive() {
			// The supervisor records the end before it exits, and the
			// refs' change may not have reached us yet: read the record
			// once more so a run that ended is not called dead.
			if cur, err := pipeline.Get(ctx, v.st, rec.Name); err == nil {
				rec = cur
			}
			return rec
		}
		select {
		case <-ctx.Done():
			return rec
		case <-changes:
			if cur, err := pipeline.Get(ctx, v.st, rec.Name); err == nil {
				rec = cur
				if rec.Ended == nil {
					endSeen = time.Time{}
				}
			}
		case <-tick.C:
		}
	}
}
