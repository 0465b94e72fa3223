package main

import (
	"context"
	"time"

	"github.com/git-agentmine/git-agentmine/gitcmd"
	"github.com/git-agentmine/git-agentmine/replica"
	"github.com/git-agentmine/git-agentmine/sessions"
	"github.com/git-agentmine/git-agentmine/worker"
)

// shareTimeout bounds the sync that shares a session's outcome: a remote
// that does not answer costs the worker's end this long at most.
const shareTimeout = 4 * gitcmd.NetworkTimeout * time.Second

// shareOutcome sends the outcome of session s to the remote its claim
// pushed the session to (a sync of that session and the outcome notes,
// nothing else of the board): whatever
// pushes a session pushes its outcome once it has one, so that no other
// clone shows an ended session as running. Sessions that claimed nowhere
// share nothing. A remote that cannot be reached is one warning.
func shareOutcome(ctx context.Context, env *worker.Env, s sessions.Session, warn func(format string, a ...any)) {
	if s.ClaimRemote == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shareTimeout)
	defer cancel()
	ref := sessions.Kind.Ref(s.ID)
	only := func(r string) bool { return r == ref }
	if _, err := replica.Sync(ctx, env.St, replica.Options{Remote: s.ClaimRemote, Rules: syncRules(), Only: only}); err != nil {
		warn("could not share the outcome of session %s through %s: %s; it is recorded here: share it with: git agentmine sync %s",
			s.ID[:8], s.ClaimRemote, firstLine(err.Error()), s.ClaimRemote)
	}
}
