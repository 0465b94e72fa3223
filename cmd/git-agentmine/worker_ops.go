package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/git-agentmine/git-agentmine/board"
	"github.com/git-agentmine/git-agentmine/contract"
	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/launch"
	"github.com/git-agentmine/git-agentmine/output"
	"github.com/git-agentmine/git-agentmine/safefile"
	"github.com/git-agentmine/git-agentmine/sessions"
	"github.com/git-agentmine/git-agentmine/verify"
	"github.com/git-agentmine/git-agentmine/worker"
)

// WorkerCommandCmd is `worker command`.
type WorkerCommandCmd struct {
	ID    string `arg:"" help:"Task id."`
	Agent string `short:"a" help:"Agent definition."`
}

// Run prints the prompt, or the argv and prompt with --json.
func (c *WorkerCommandCmd) Run(a *App) error {
	env, err := workerEnv(a, nil)
	if err != nil {
		return err
	}
	p, err := env.PreviewRun(a.Ctx, c.ID, c.Agent)
	if err != nil {
		return err
	}
	if a.G.JSON {
		return a.P.PrintJSON(workerCommandJSON{V: output.SchemaVersion, Task: p.Task.ID, Agent: p.Agent.Name,
			Client: string(p.Client), Argv: p.Argv, Worktree: p.Worktree, Prompt: p.Prompt})
	}
	a.P.Printf("%s", p.Prompt)
	return nil
}

// latestOf returns the latest session of each task given (by id prefix),
// or every live session when none is given.
func latestOf(a *App, env *worker.Env, ids []string, liveOnly bool) (*board.Board, []sessions.Record, error) {
	b, err := board.Load(a.Ctx, env.St, env.Cfg.Base)
	if err != nil {
		return nil, nil, err
	}
	var out []sessions.Record
	if len(ids) == 0 {
		for _, r := range b.Sessions {
			if live, _ := board.Liveness(r, a.here(), time.Now()); live || !liveOnly {
				out = append(out, r)
			}
		}
		return b, out, nil
	}
	for _, p := range ids {
		tid, err := b.Tasks.Resolve(p)
		if err != nil {
			return nil, nil, err
		}
		rec, ok := b.Latest(tid)
		if !ok {
			return nil, nil, exitcode.New(exitcode.State, fmt.Errorf("task %s has no session", b.Tasks.ShortID(tid)), "start one with: git agentmine worker run "+b.Tasks.ShortID(tid))
		}
		out = append(out, rec)
	}
	return b, out, nil
}

func sessionState(a *App, r sessions.Record) string {
	return contract.SessionState(r, a.here(), time.Now())
}

func toSessionJSON(a *App, r sessions.Record, tail int) sessionJSON {
	return contract.NewSession(r, a.here(), time.Now(), tail)
}

// WorkerStatusCmd is `worker status`.
type WorkerStatusCmd struct {
	All   bool `short:"a" help:"Include ended sessions."`
	Lines int  `short:"n" default:"3" help:"Log lines to show per session."`
}

// Run shows live sessions.
func (c *WorkerStatusCmd) Run(a *App) error {
	env, err := workerEnv(a, nil)
	if err != nil {
		return err
	}
	b, recs, err := latestOf(a, env, nil, !c.All)
	if err != nil {
		return err
	}
	if a.G.JSON {
		return a.P.PrintJSONList(len(recs), func(i int) any { return toSessionJSON(a, recs[i], c.Lines) })
	}
	if a.G.Quiet {
		for _, r := range recs {
			a.P.Printf("%s\n", r.Session.ID)
		}
		return nil
	}
	if len(recs) == 0 {
		a.P.Notef("no running workers\n")
		return nil
	}
	for _, r := range recs {
		j := toSessionJSON(a, r, c.Lines)
		title := ""
		if t, ok := b.Tasks.Tasks[r.Session.Task]; ok {
			title = t.Task.Title
		}
		a.P.Printf("%s %s %s  agent %s  pid %d  %s/%ds  %s\n", a.P.Paint(output.Yellow, j.ShortID),
			b.Tasks.ShortID(r.Session.Task), title, agentLabel(j.Agent, j.Role), j.Pid, time.Duration(j.Elapsed*float64(time.Second)), j.Timeout, j.State)
		if o := r.Outcome; o != nil {
			// An ended session (with -a) says why, in the client's own
			// words where it gave any, as task show does.
			if why := outcomeReason(*o, verify.ParseVerdicts(o)); why != "" {
				a.P.Printf("    reason: %s\n", why)
			}
		}
		for _, l := range j.Tail {
			a.P.Printf("    %s\n", a.P.Paint(output.Gray, l))
		}
	}
	return nil
}

// WorkerWaitCmd is `worker wait`.
type WorkerWaitCmd struct {
	IDs     []string      `arg:"" name:"id" optional:"" help:"Task ids (default: every running session)."`
	Timeout time.Duration `placeholder:"DURATION" help:"Give up after this long (exit 124): 90, 90s, 5m."`
}

// Run blocks until the sessions end and reports their outcomes.
func (c *WorkerWaitCmd) Run(a *App) error {
	env, err := workerEnv(a, nil)
	if err != nil {
		return err
	}
	b, recs, err := latestOf(a, env, c.IDs, len(c.IDs) == 0)
	if err != nil {
		return err
	}
	var ids []string
	for _, r := range recs {
		ids = append(ids, r.Session.ID)
	}
	if len(ids) == 0 {
		if a.G.JSON {
			return a.P.PrintJSONList(0, nil)
		}
		a.P.Notef("no running workers\n")
		return nil
	}
	ctx := a.Ctx
	if c.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}
	stopProgress := waitProgress(a, b, recs)
	ended, err := env.Wait(ctx, ids)
	stopProgress()
	if errors.Is(err, context.DeadlineExceeded) {
		// Name what is still running, so the next step (wait longer,
		// worker logs, worker stop) can be aimed at it.
		if ended == nil {
			ended = recs // the deadline struck while reading them again
		}
		var running []string
		for _, r := range ended {
			if live, _ := board.Liveness(r, a.here(), time.Now()); live {
				running = append(running, fmt.Sprintf("%s (task %s)", r.Session.ID[:8], b.Tasks.ShortID(r.Session.Task)))
			}
		}
		return exitcode.New(exitcode.Timeout, fmt.Errorf("waiting for workers: %s still running after %s: %s",
			plural(len(running), "session", "sessions"), seconds(c.Timeout), strings.Join(running, ", ")), "")
	}
	if err != nil {
		return err
	}
	failed := 0
	var out []sessionJSON
	for _, r := range ended {
		j := toSessionJSON(a, r, 0)
		out = append(out, j)
		verdict := sessionVerdict(a, r, false)
		if verdict != "review" {
			failed++
		}
		if !a.G.JSON && !a.G.Quiet {
			reason := ""
			if r.Outcome != nil && r.Outcome.Reason != "" {
				reason = " — " + r.Outcome.Reason
			}
			a.P.Printf("%s task %s: %s%s\n", j.ShortID, r.Session.Task[:8], verdict, reason)
		}
	}
	if a.G.JSON {
		a.P.PrintJSONList(len(out), func(i int) any { return out[i] })
	} else if a.G.Quiet {
		for _, j := range out {
			a.P.Printf("%s\n", j.ID)
		}
	}
	if failed > 0 {
		return silentError{exitcode.Failed}
	}
	return nil
}

// sessionVerdict names what a finished session means for its task; merged
// says its work reached the base.
func sessionVerdict(a *App, r sessions.Record, merged bool) string {
	if !r.Session.IsAttempt() {
		// a planner's or reviewer's run: its own exit, never a task verdict
		switch o := r.Outcome; {
		case o == nil:
			return sessionState(a, r)
		case o.TimedOut:
			return r.Session.Role + " timed out"
		case o.ExitCode != 0:
			return fmt.Sprintf("%s failed (exit %d)", r.Session.Role, o.ExitCode)
		}
		return r.Session.Role + " answered"
	}
	return contract.Verdict(r, sessionState(a, r), merged)
}

// agentLabel names a session's agent, with the role of a planner's or
// reviewer's run: "reviewer [reviewer]".
func agentLabel(agent, role string) string {
	if role == "" || role == "worker" {
		return agent
	}
	return agent + " [" + role + "]"
}

// WorkerLogsCmd is `worker logs`.
type WorkerLogsCmd struct {
	ID     string `arg:"" help:"Task id."`
	Follow bool   `short:"f" help:"Keep printing until the session ends."`
	Lines  int    `short:"n" default:"0" help:"Only the last N lines."`
}

// Run prints the log.
func (c *WorkerLogsCmd) Run(a *App) error {
	env, err := workerEnv(a, nil)
	if err != nil {
		return err
	}
	_, recs, err := latestOf(a, env, []string{c.ID}, false)
	if err != nil {
		return err
	}
	r := recs[0]
	path := r.Session.Log
	if c.Lines > 0 {
		lines, err := launch.Tail(path, c.Lines)
		if err != nil {
			return err
		}
		for _, l := range lines {
			a.P.Printf("%s\n", l)
		}
		if !c.Follow {
			return nil
		}
	}
	var off int64
	if c.Lines <= 0 {
		for _, p := range []string{path + ".1", path} {
			// Streamed from a non-blocking open of a regular file: a log
			// replaced by a FIFO or a device is not waited on or read.
			f, _, err := safefile.Open(p, -1)
			if err != nil {
				continue
			}
			n, _ := io.Copy(a.P.Out, f)
			f.Close()
			if p == path {
				off = n
			}
		}
	} else if fi, err := os.Stat(path); err == nil {
		off = fi.Size()
	}
	if !c.Follow {
		return nil
	}
	return followLog(a, env, r, path, off)
}

// followLog prints what is appended to path until the session ends, woken
// by file-system events rather than polling.
func followLog(a *App, env *worker.Env, r sessions.Record, path string, off int64) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	defer w.Close()
	w.Add(filepath.Dir(path))
	done := make(chan struct{})
	go func() {
		env.Wait(a.Ctx, []string{r.Session.ID})
		close(done)
	}()
	flush := func() {
		f, _, err := safefile.Open(path, -1)
		if err != nil {
			return
		}
		defer f.Close()
		if fi, err := f.Stat(); err == nil && fi.Size() < off {
			off = 0 // rotated
		}
		f.Seek(off, 0)
		buf := make([]byte, 64<<10)
		for {
			n, err := f.Read(buf)
			if n > 0 {
				a.P.Out.Write(buf[:n])
				off += int64(n)
			}
			if err != nil {
				return
			}
		}
	}
	for {
		select {
		case <-done:
			flush()
			return nil
		case <-a.Ctx.Done():
			return nil
		case ev := <-w.Events:
			if strings.HasPrefix(ev.Name, path) {
				flush()
			}
		}
	}
}

// WorkerStopCmd is `worker stop`.
type WorkerStopCmd struct {
	IDs []string `arg:"" name:"id" help:"Task ids."`
}

// Run sends SIGTERM to each session's supervisor and waits for the outcome.
func (c *WorkerStopCmd) Run(a *App) error {
	env, err := workerEnv(a, nil)
	if err != nil {
		return err
	}
	_, recs, err := latestOf(a, env, c.IDs, false)
	if err != nil {
		return err
	}
	var wait []string
	for _, r := range recs {
		s := r.Session
		res, err := env.Stop(a.Ctx, r, a.here())
		if len(res.Ended) > 0 {
			a.P.Notef("session %s of task %s was lost; ended %s it left running\n", s.ID[:8], s.Task[:8], worker.LeftoverText(res.Ended))
		}
		if err != nil {
			return err
		}
		switch {
		case res.NotRunning:
			a.P.Notef("session %s of task %s is not running\n", s.ID[:8], s.Task[:8])
		case res.Recorded:
			a.P.Notef("recorded session %s as stopped (it was run by hand)\n", s.ID[:8])
		case res.Signalled:
			wait = append(wait, s.ID)
			a.P.Notef("sent SIGTERM to session %s (pid %d)\n", s.ID[:8], s.Pid)
		}
	}
	if len(wait) > 0 {
		ctx, cancel := context.WithTimeout(a.Ctx, time.Duration(env.Cfg.Grace)+60*time.Second)
		defer cancel()
		if _, err := env.Wait(ctx, wait); err != nil {
			return fmt.Errorf("waiting for the stopped sessions: %w", err)
		}
	}
	if a.G.JSON || a.G.Quiet {
		var ids []string
		for _, r := range recs {
			ids = append(ids, r.Session.ID)
		}
		after, err := env.Records(a.Ctx, ids)
		if err != nil {
			return err
		}
		if a.G.Quiet {
			for _, r := range after {
				a.P.Printf("%s\n", r.Session.ID)
			}
			return nil
		}
		return a.P.PrintJSONList(len(after), func(i int) any { return toSessionJSON(a, after[i], 0) })
	}
	return nil
}

// WorkerDoneCmd is `worker done`.
type WorkerDoneCmd struct {
	IDs   []string `arg:"" name:"id" help:"Task ids."`
	Force bool     `short:"f" help:"Delete the branch even if unmerged; remove a live session's worktree."`
}

// Run removes the worktrees.
func (c *WorkerDoneCmd) Run(a *App) error {
	env, err := workerEnv(a, nil)
	if err != nil {
		return err
	}
	b, recs, err := latestOf(a, env, c.IDs, false)
	if err != nil {
		return err
	}
	var done []doneJSON
	for _, r := range recs {
		merged := false
		for _, at := range b.Facts.Attempts[r.Session.Task] {
			if at.Session == r.Session.ID && at.Merged {
				merged = true
			}
		}
		res, err := env.Done(a.Ctx, r, merged, c.Force)
		if len(res.Ended) > 0 {
			a.P.Notef("ended %s of session %s that were still running\n", worker.LeftoverText(res.Ended), r.Session.ID[:8])
		}
		if err != nil {
			if res.WorktreeRemoved {
				a.P.Notef("removed the worktree of task %s\n", b.Tasks.ShortID(r.Session.Task))
			}
			return err
		}
		done = append(done, doneJSON{V: output.SchemaVersion, Session: r.Session.ID, Task: r.Session.Task,
			Worktree: r.Session.Worktree, Branch: r.Session.Branch, WorktreeRemoved: res.WorktreeRemoved,
			BranchDeleted: res.BranchDeleted, BranchKept: res.BranchKept, EndedProcesses: procsJSON(res.Ended)})
		if a.G.Quiet {
			a.P.Printf("%s\n", r.Session.ID)
		} else if !a.G.JSON {
			a.P.Printf("%s\n", doneWords(b.Tasks.ShortID(r.Session.Task), r.Session.Branch, res))
		}
	}
	if a.G.JSON {
		return a.P.PrintJSONList(len(done), func(i int) any { return done[i] })
	}
	return nil
}

// doneWords says exactly what worker done removed for one task, and that
// nothing was when nothing was there to remove.
func doneWords(task, branch string, res worker.DoneResult) string {
	var did []string
	if res.WorktreeRemoved {
		did = append(did, "removed worktree")
	}
	if res.BranchDeleted {
		did = append(did, "deleted branch "+branch)
	}
	kept := ""
	if res.BranchKept {
		kept = "kept branch " + branch + " (not merged; --force deletes it)"
	}
	if len(did) == 0 {
		if kept != "" {
			return "task " + task + ": nothing to remove (worktree already removed); " + kept
		}
		return "task " + task + ": nothing to remove (worktree and branch already removed)"
	}
	line := "task " + task + ": " + strings.Join(did, ", ")
	if kept != "" {
		line += "; " + kept
	}
	return line
}
