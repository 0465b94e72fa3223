package worker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/git-agentmine/git-agentmine/board"
	"github.com/git-agentmine/git-agentmine/config"
	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/gitcmd"
	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/sessions"
)

// Remote claims (design §8): with a sync remote, `worker run` first pushes
// the new session to the remote together with a claim ref for the task,
// refs/agentmine-claims/<task>, in one atomic push that succeeds only if no
// claim is there (a lease expecting the ref absent, or expecting the stale
// claim it replaces). Two clones racing for one task cannot both win: the
// remote's ref update is the arbiter. The claim is released (deleted, with a
// lease) when the session's outcome is recorded; a claim whose session
// should have ended long ago (timeout plus grace plus a margin) is stale and
// may be replaced. Claim refs live outside refs/agentmine/, so sync never
// copies them.

// ClaimPrefix is where claim refs live, local and remote.
const ClaimPrefix = "refs/agentmine-claims/"

// ErrClaimed is returned when another clone holds the task's claim.
var ErrClaimed = gitstore.ErrAlreadyClaimed

// claimRemoteFor picks the remote to claim on: an explicit --claim, else the
// sync remote when it was configured (flag, environment, git config or
// config.toml) rather than merely detected.
func (e *Env) claimRemoteFor(o RunOptions) string {
	if o.NoClaim {
		return ""
	}
	if o.Claim != "" {
		return o.Claim
	}
	switch e.Cfg.Sources["remote"] {
	case config.FromFlag, config.FromEnv, config.FromGitConfig, config.FromFile:
		return e.Cfg.Remote
	}
	return ""
}

// claim tries to take the task's claim on remote with the session's creation
// commit. It returns (false, nil-or-offline-error) when the remote could not
// be reached: the run goes on locally without a claim. A claim held by a live
// session elsewhere is a State error naming its host and session.
func (e *Env) claim(ctx context.Context, remote string, s sessions.Session, root string) (bool, error) {
	g := e.St.Git()
	ref := ClaimPrefix + s.Task
	for attempt := 0; attempt < 3; attempt++ {
		old, holder, err := e.remoteClaim(ctx, remote, ref)
		if err != nil {
			return false, err
		}
		if holder != nil {
			if !claimStale(*holder, time.Now()) {
				return false, exitcode.New(exitcode.State, fmt.Errorf("task %s is claimed on %s by session %s on host %s (started %s): %w",
					s.Task[:8], remote, holder.ID[:8], holder.Host, holder.Started.Format(time.RFC3339), ErrClaimed), "wait for it, or sync to see its outcome")
			}
		}
		_, err = g.Run(ctx, "push", "--atomic", "--quiet", "--no-verify", remote,
			"--force-with-lease="+ref+":"+old,
			root+":"+ref, root+":"+sessions.Kind.Ref(s.ID))
		if err == nil {
			return true, nil
		}
		if !isRejected(err) {
			return false, offline(remote, err)
		}
		// Someone else got there first: look again (and name them).
	}
	return false, exitcode.New(exitcode.State, fmt.Errorf("task %s: the claim on %s kept changing", s.Task[:8], remote), "try again")
}

// remoteClaim reads the remote's claim ref and the session it points at.
func (e *Env) remoteClaim(ctx context.Context, remote, ref string) (old string, holder *sessions.Session, err error) {
	g := e.St.Git()
	out, err := g.Output(ctx, "ls-remote", "--refs", remote, ref)
	if err != nil {
		return "", nil, offline(remote, err)
	}
	if out == "" {
		return "", nil, nil
	}
	old = strings.Fields(out)[0]
	tmp := "refs/agentmine-remote-claims/" + strings.TrimPrefix(ref, ClaimPrefix)
	if _, err := g.Run(ctx, "fetch", "--quiet", "--no-tags", "--no-write-fetch-head", remote, "+"+ref+":"+tmp); err != nil {
		return "", nil, offline(remote, err)
	}
	defer g.Run(context.WithoutCancel(ctx), "update-ref", "-d", tmp)
	data, err := g.Run(ctx, "cat-file", "blob", old+":"+sessions.Kind.File)
	if err != nil {
		// Not a session commit: treat as a foreign, unexpiring claim.
		return old, &sessions.Session{ID: old, Host: "unknown", Started: time.Now(), Timeout: 1 << 30}, nil
	}
	s, err := sessions.Decode(data)
	if err != nil {
		return old, &sessions.Session{ID: old, Host: "unknown", Started: time.Now(), Timeout: 1 << 30}, nil
	}
	return old, &s, nil
}

// claimStale reports whether a claim's session must have ended by now.
func claimStale(s sessions.Session, now time.Time) bool {
	return now.After(board.Deadline(s))
}

// releaseClaim deletes the task's claim on the session's claim remote if it
// still points at the session's creation commit. Best effort: a claim left
// behind expires.
func (e *Env) releaseClaim(ctx context.Context, rec sessions.Record) {
	s := rec.Session
	if s.ClaimRemote == "" || rec.Root == "" {
		return
	}
	ref := ClaimPrefix + s.Task
	e.St.Git().Run(ctx, "push", "--quiet", "--no-verify", s.ClaimRemote, "--force-with-lease="+ref+":"+rec.Root, ":"+ref)
}

func isRejected(err error) bool {
	var ge *gitcmd.Error
	if !errors.As(err, &ge) {
		return false
	}
	for _, w := range []string{"stale info", "rejected", "already exists", "fetch first"} {
		if strings.Contains(ge.Stderr, w) {
			return true
		}
	}
	return false
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
