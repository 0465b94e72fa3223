package worker

import (
	"context"
	"fmt"
	"syscall"

	"github.com/git-agentmine/git-agentmine/board"
	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/launch"
	"github.com/git-agentmine/git-agentmine/sessions"
)

// StopResult says what Stop did to one session.
type StopResult struct {
	// Signalled: SIGTERM went to the session's supervisor, which records
	// the outcome itself (wait for it with Wait).
	Signalled bool
	// Recorded: a manual session was recorded as stopped by SIGTERM.
	Recorded bool
	// Ended lists what a lost session left running and Stop ended.
	Ended []launch.Proc
	// NotRunning: the session had ended (or was lost) and left nothing.
	NotRunning bool
}

// Stop stops one session, judged from here: a running supervised session
// gets SIGTERM at its supervisor (which stops the worker through its grace
// period and records the signal); a manual session is recorded as ended by
// SIGTERM; a lost one has whatever it left running ended. A session that
// runs on another host or in another clone is refused: only there can it
// be stopped. The command line's worker stop and the web board share it.
func (e *Env) Stop(ctx context.Context, r sessions.Record, here board.Here) (StopResult, error) {
	s := r.Session
	live := board.LiveNow(r, here)
	switch {
	case !live:
		// Its supervisor may be gone while its worker runs on: end
		// whatever is left of it.
		ended, err := e.EndProcesses(ctx, r)
		return StopResult{Ended: ended, NotRunning: len(ended) == 0 && err == nil}, err
	case s.Mode == sessions.ModeManual:
		if _, err := e.End(ctx, r, 128+int(syscall.SIGTERM), "SIGTERM", nil, true); err != nil {
			return StopResult{}, err
		}
		return StopResult{Recorded: true}, nil
	case s.Host != here.Host:
		return StopResult{}, exitcode.New(exitcode.State, fmt.Errorf("session %s runs on another host (%s)", s.ID[:8], s.Host), "stop it there")
	case !here.Judges(s):
		return StopResult{}, exitcode.New(exitcode.State, fmt.Errorf("session %s runs in another clone on this host", s.ID[:8]), "stop it there")
	}
	if err := syscall.Kill(s.Pid, syscall.SIGTERM); err != nil {
		return StopResult{}, fmt.Errorf("stopping session %s (pid %d): %w", s.ID[:8], s.Pid, err)
	}
	return StopResult{Signalled: true}, nil
}
