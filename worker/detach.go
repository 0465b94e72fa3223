package worker

import (
	"context"
	"fmt"
	"time"

	"github.com/git-agentmine/git-agentmine/launch"
	"github.com/git-agentmine/git-agentmine/sessions"
)

// StartDetached hands a prepared session to a detached supervisor that
// outlives the caller and records the outcome itself. supervisor is the
// command line that runs the session's supervisor; the caller builds it,
// as only it knows how its own program is invoked. The client is checked
// first (CheckStartable), so a missing binary fails here rather than after
// "running detached"; a supervisor that cannot start gets a failed outcome
// recorded, so the session is never left looking live. It returns the
// supervisor's pid, which the session records for liveness: the
// supervisor's seal records it (the supervisor says it is ready only then,
// see launch.ReadyLater), else this does.
func (e *Env) StartDetached(ctx context.Context, p *Prepared, supervisor []string) (int, error) {
	s := p.Rec.Session
	if err := e.CheckStartable(ctx, p.Rec); err != nil {
		return 0, err
	}
	pid, start, err := launch.Detach(ctx, supervisor, e.Top, nil, s.Log+".supervisor")
	if err != nil {
		sessions.RecordOutcome(context.WithoutCancel(ctx), e.St, p.Rec, &sessions.Outcome{ExitCode: 127,
			Finished: time.Now().UTC(), Reason: "could not start the supervisor: " + err.Error(), By: "agentmine detach"})
		return 0, fmt.Errorf("starting the detached supervisor: %w", err)
	}
	if e.sealedBy(ctx, s.ID, pid, start) {
		// The supervisor said it was ready once its seal recorded its
		// pid: nothing to record.
		return pid, nil
	}
	if _, err := sessions.Update(ctx, e.St, s.ID, "session detached: supervisor started", func(x *sessions.Session) {
		x.Pid, x.PidStart = pid, start
	}); err != nil {
		return 0, err
	}
	return pid, nil
}

// sealedBy reports whether the session's document records a seal of
// process pid (started at start) and that pid as the session's.
func (e *Env) sealedBy(ctx context.Context, id string, pid int, start uint64) bool {
	doc, err := e.St.Get(ctx, sessions.Kind, id)
	if err != nil {
		return false
	}
	x, err := sessions.Decode(doc.Data)
	if err != nil || x.Seal == nil {
		return false
	}
	return x.Seal.Pid == pid && x.Seal.PidStart == start && x.Pid == pid && x.PidStart == start
}
