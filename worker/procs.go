package worker

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/git-agentmine/git-agentmine/board"
	"github.com/git-agentmine/git-agentmine/launch"
	"github.com/git-agentmine/git-agentmine/scope"
	"github.com/git-agentmine/git-agentmine/sessions"
	"github.com/git-agentmine/git-agentmine/verify"
)

// markerOf is the environment entry every worker of session s runs with
// (workerEnv sets it): a process started with it is the session's.
func markerOf(s sessions.Session) string { return board.SessionMarker(s) }

// identityOf is what tells session s's processes apart once its
// supervisor is gone (board.RunIdentity).
func identityOf(s sessions.Session) launch.Identity { return board.RunIdentity(s) }

// recordWorker writes the worker's pid and start time into the sealed
// session, so that whoever finds the session lost (its supervisor killed)
// can end what is left of it, and returns the Sealed to check at the end.
func (e *Env) recordWorker(ctx context.Context, sealed sessions.Sealed, p *launch.Process) (sessions.Sealed, error) {
	out, err := sealed.Amend(ctx, e.St, "session: worker started", func(s *sessions.Session) {
		s.WorkerPid, s.WorkerStart = p.Pid(), p.StartTime()
	})
	if err != nil {
		return sealed, fmt.Errorf("recording the worker's pid: %w", err)
	}
	return out, nil
}

// EndProcesses ends what is still running of a session that is not live
// any more — its supervisor was killed, or it ended but something of it
// survived — and returns the processes it ended: those in the worker's
// session and process group while the worker's own process lives (and
// still has the marker), those
// whose environment holds the session's marker, and their descendants
// (launch.FindRun; nothing else is provably the session's). It does
// nothing for a live session (its supervisor ends its processes), for a
// session run by hand (agentmine never started its worker) and for one
// that another host or clone judges.
func (e *Env) EndProcesses(ctx context.Context, rec sessions.Record) ([]launch.Proc, error) {
	s := rec.Session
	here := board.HereOf(e.St)
	if s.Mode == sessions.ModeManual || !here.Judges(s) || s.PidStart == 0 {
		return nil, nil
	}
	if board.LiveNow(rec, here) {
		return nil, nil
	}
	grace := time.Duration(s.Grace) * time.Second
	if grace <= 0 {
		grace = launch.DefaultGrace
	}
	ended, err := launch.EndRun(identityOf(s), grace)
	if err != nil {
		return ended, fmt.Errorf("ending the processes of session %s: %w", s.ID[:8], err)
	}
	return ended, nil
}

// judgeContained judges the run (judge) while this process is the child
// subreaper of the commands it runs: the DoD runs the worker's code, and a
// daemon a test started with setsid must not outlive the verdict either.
// What they left running is ended before the outcome is recorded. Both
// those and the worker's leftovers (ended before verification, so
// whatever they changed is judged) become leftover-processes warnings of
// the verdict: not violations, since an honest worker may leave a test
// server behind.
func (e *Env) judgeContained(ctx context.Context, reaper *launch.Reaper, rec sessions.Record, spec scope.Spec, live *verify.Record, main *mainCheckout, leftovers []launch.Proc, out *sessions.Outcome, say func(string, ...any)) error {
	var err error
	grace := time.Duration(rec.Session.Grace) * time.Second
	left := reaper.Contain(grace, func() { err = e.judge(ctx, rec, spec, live, main, out, say) })
	var ws []verify.Violation
	if len(leftovers) > 0 {
		ws = append(ws, verify.Violation{Type: verify.WarningLeftoverProcesses,
			Reason: LeftoverText(leftovers) + " still running when the worker ended: ended before verification"})
	}
	if len(left) > 0 {
		say("ended %s the DoD commands left running", LeftoverText(left))
		ws = append(ws, verify.Violation{Type: verify.WarningLeftoverProcesses,
			Reason: LeftoverText(left) + " left running by the DoD commands: ended before the outcome was recorded"})
	}
	if v := verify.ParseVerdicts(out); len(ws) > 0 && v.HasScope {
		v.Scope.Warnings = append(v.Scope.Warnings, ws...)
		v.Record(out)
	}
	return err
}

// LeftoverText names processes for a message: "2 processes (pid 12 (sleep
// 60), pid 13 (sh -c …))", the first five of them.
func LeftoverText(ps []launch.Proc) string {
	n := "processes"
	if len(ps) == 1 {
		n = "process"
	}
	var names []string
	for i, p := range ps {
		if i == 5 {
			names = append(names, fmt.Sprintf("and %d more", len(ps)-5))
			break
		}
		names = append(names, p.String())
	}
	return fmt.Sprintf("%d %s (%s)", len(ps), n, strings.Join(names, ", "))
}
