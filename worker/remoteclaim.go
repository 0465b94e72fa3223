package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/git-agentmine/git-agentmine/board"
	"github.com/git-agentmine/git-agentmine/config"
	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/gitcmd"
	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/replica"
	"github.com/git-agentmine/git-agentmine/sessions"
)

// Remote claims (design §8): with a sync remote, `worker run` first pushes
// the new session to the remote together with a claim ref for the task,
// refs/agentmine-claims/<task>, in one atomic push that succeeds only if no
// claim is there (a lease expecting the ref absent, or expecting the stale
// claim it replaces). Two clones racing for one task cannot both win: the
// remote's ref update is the arbiter. The claim outlives its session: it
// stays on the remote after the outcome is recorded, because a clone that
// has not synced that outcome would otherwise see an unclaimed task and run
// it again. A claim may be replaced (with a lease on it) by a clone that
// knows its session has ended (the session and its outcome are on the local
// board: the clone ran it, or synced it), or by anyone once the session
// should have ended long ago (timeout plus grace plus a margin). Claim refs
// live outside refs/agentmine/, so sync never copies them.

// ClaimPrefix is where claim refs live, local and remote.
const ClaimPrefix = "refs/agentmine-claims/"

// claimTimeout bounds the network part of taking a claim.
const claimTimeout = 4 * gitcmd.NetworkTimeout * time.Second

// ErrClaimed is returned when another clone holds the task's claim.
var ErrClaimed = replica.ErrAlreadyClaimed

// ErrClaimBusy is returned, with RunOptions.ClaimRequired, when the claim
// remote did not answer the claim: whether the task is ours is unknown, so
// it is not started (without a claim another clone could run it too).
var ErrClaimBusy = errors.New("the claim remote did not answer the claim")

// claimRemoteFor picks the remote to claim on: an explicit --claim, else the
// sync remote when one was configured (flag, environment, git config or
// config.toml). Sharing through a remote is opt-in: a repository that
// configured none claims nowhere and makes no network attempt, even when
// it has an origin (UnsharedRemote names it, for a hint).
func (e *Env) claimRemoteFor(o RunOptions) string {
	if o.NoClaim {
		return ""
	}
	if o.Claim != "" {
		return o.Claim
	}
	if e.sharing() {
		return e.Cfg.Remote
	}
	return ""
}

// sharing reports whether a sync remote was configured.
func (e *Env) sharing() bool {
	switch e.Cfg.Sources["remote"] {
	case config.FromFlag, config.FromEnv, config.FromGitConfig, config.FromFile:
		return e.Cfg.Remote != ""
	}
	return false
}

// UnsharedRemote names the remote sync would use by default (origin) when
// the repository has it but configured no sync remote: nothing is shared
// through it unless asked. "" when a sync remote is configured or there
// is no such remote.
func (e *Env) UnsharedRemote() string {
	if e.sharing() {
		return ""
	}
	r := replica.DefaultRemote(e.St)
	if _, ok := e.St.Config("remote." + r + ".url"); !ok {
		return ""
	}
	return r
}

// claim tries to take the task's claim on remote with the session's creation
// commit, pushing the session ref with it; unseen skips the first read of
// the claim (RunOptions.ClaimUnseen). On success it returns the claim
// it replaced ("" when there was none), for giveBack. It returns
// (false, "", nil-or-offline-error) when the remote could not be reached:
// the run goes on locally without a claim. A claim held by a session that
// may still be running, as far as this clone knows, is a State error naming
// its host and session.
func (e *Env) claim(parent context.Context, remote string, s sessions.Session, root string, unseen bool) (bool, string, error) {
	// A remote that never answers (a host that drops the connection
	// attempt) costs this long, then the run goes on locally.
	ctx, cancel := context.WithTimeout(parent, claimTimeout)
	defer cancel()
	ref := ClaimPrefix + s.Task
	for attempt := 0; attempt < 3; attempt++ {
		var old string
		var holder *sessions.Session
		if attempt > 0 || !unseen {
			var err error
			if old, holder, err = e.remoteClaim(ctx, remote, ref); err != nil {
				return false, "", err
			}
		}
		if holder != nil && !claimStale(*holder, time.Now()) && !e.endedHere(ctx, holder.ID) {
			return false, "", exitcode.New(exitcode.State, fmt.Errorf("task %s is claimed on %s by session %s on host %s (started %s): %w",
				s.Task[:8], remote, holder.ID[:8], holder.Host, holder.Started.Format(time.RFC3339), ErrClaimed), "wait for it, or sync to see its outcome")
		}
		err := replica.TakeClaim(ctx, e.St, replica.Claim{Remote: remote, Ref: ref, Commit: root, Old: old, Also: []string{sessions.Kind.Ref(s.ID)}})
		var ue *replica.UnreachableError
		switch {
		case err == nil:
			return true, old, nil
		case errors.As(err, &ue):
			// The push got no answer (a connection cut, a remote too busy
			// to answer in time): it may have taken the claim all the
			// same. Read it back: ours, someone else's (looked at by the
			// next attempt), or still free (pushed again).
			// The push's time may be spent: the read gets its own.
			rctx, rcancel := context.WithTimeout(parent, claimTimeout)
			got, rerr := replica.ListClaims(rctx, e.St, remote, ref)
			rcancel()
			if rerr != nil {
				return false, "", offline(remote, ue.Err)
			}
			if got[""] == root {
				return true, old, nil
			}
		case !errors.Is(err, replica.ErrAlreadyClaimed):
			return false, "", err
		}
		// Someone else got there first: look again (and name them).
	}
	return false, "", exitcode.New(exitcode.State, fmt.Errorf("task %s: the claim on %s kept changing", s.Task[:8], remote), "try again")
}

// endedHere reports whether the local board holds the session id with an
// outcome: this clone ran it to its end, or synced its outcome, so its
// claim no longer guards anything this clone does not know.
func (e *Env) endedHere(ctx context.Context, id string) bool {
	if !gitstore.ValidID(id) {
		return false
	}
	rec, err := sessions.Get(ctx, e.St, id)
	return err == nil && rec.Session.ID == id && rec.Outcome != nil
}

// remoteClaim reads the remote's claim ref and the session it points at.
func (e *Env) remoteClaim(ctx context.Context, remote, ref string) (old string, holder *sessions.Session, err error) {
	old, data, err := replica.ReadClaim(ctx, e.St, remote, ref, sessions.Kind.File)
	var ue *replica.UnreachableError
	if errors.As(err, &ue) {
		return "", nil, offline(remote, ue.Err)
	}
	if err != nil || old == "" {
		return "", nil, err
	}
	s, err := sessions.Decode(data)
	if data == nil || err != nil {
		// Not a session commit: treat as a foreign, unexpiring claim.
		return old, &sessions.Session{ID: old, Host: "unknown", Started: time.Now(), Timeout: 1 << 30}, nil
	}
	return old, &s, nil
}

// claimStale reports whether a claim's session must have ended by now.
func claimStale(s sessions.Session, now time.Time) bool {
	return now.After(board.Deadline(s))
}

// giveBack undoes a claim this clone took at root for a session that never
// started: the claim it replaced (old, "" for none) is put back and the
// session ref pushed with the claim is deleted, each only if still at root.
// Best effort: a claim left behind expires.
func (e *Env) giveBack(ctx context.Context, remote, task, root, old, sessionID string) {
	replica.ReleaseClaim(ctx, e.St, remote, ClaimPrefix+task, root, old, sessions.Kind.Ref(sessionID))
}

// offlineError says the claim remote could not be reached.
type offlineError struct {
	remote string
	err    error
}

func (o *offlineError) Error() string {
	return fmt.Sprintf("could not reach %s to claim the task: %v", o.remote, o.err)
}

func (o *offlineError) Unwrap() error { return o.err }

func offline(remote string, err error) error { return &offlineError{remote: remote, err: err} }

// IsOffline reports whether err means the claim remote was unreachable.
func IsOffline(err error) bool {
	var o *offlineError
	return errors.As(err, &o)
}

// ClaimRemote names the remote a start claims its task on when nothing
// else is asked (the configured sync remote), or "" when starts claim
// nowhere.
func (e *Env) ClaimRemote() string { return e.claimRemoteFor(RunOptions{}) }

// RemoteClaims reads every claim on remote with one listing and returns the
// commit each claimed task's claim points at, by task id. Nothing is
// fetched: a caller that needs to know who holds a claim starts the task,
// whose claim reads it. A remote that could not be reached is an error
// IsOffline accepts.
func (e *Env) RemoteClaims(ctx context.Context, remote string) (map[string]string, error) {
	ctx, cancel := context.WithTimeout(ctx, claimTimeout)
	defer cancel()
	claims, err := replica.ListClaims(ctx, e.St, remote, ClaimPrefix)
	var ue *replica.UnreachableError
	if errors.As(err, &ue) {
		return nil, offline(remote, ue.Err)
	}
	return claims, err
}
