package replica

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/git-agentmine/git-agentmine/exitcode"
)

// Remote claims (design §8): a claim is a ref created on the remote with an
// atomic push that succeeds only if the ref is where the claimer last saw it
// (absent, or a stale claim being replaced), so of two clones racing for one
// claim exactly one wins: the remote's ref update is the arbiter. What a
// claim means (which task, when it goes stale) is the caller's business.

// ErrAlreadyClaimed is wrapped by TakeClaim's error when the claim lost: the
// remote's claim ref was not where the claimer expected it.
var ErrAlreadyClaimed = errors.New("already claimed")

// UnreachableError is a claim remote that could not be reached (or refused
// to talk): the caller may go on without a claim.
type UnreachableError struct {
	Remote string
	Err    error
}

// Error returns git's message, unchanged.
func (e *UnreachableError) Error() string { return e.Err.Error() }

// Unwrap returns git's error.
func (e *UnreachableError) Unwrap() error { return e.Err }

// ExitCode is the exit code of a failed git invocation.
func (e *UnreachableError) ExitCode() int { return exitcode.Git }

// Transient reports whether err is a remote that answered and then went
// quiet — a connection reset or cut off, a transfer that timed out — as a
// remote too busy to answer does, rather than one that refused (no such
// repository, no credentials) or that nothing answers at (connection
// refused, unknown host). Only git's words tell them apart.
func Transient(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	msg := strings.ToLower(err.Error())
	for _, w := range []string{"connection reset", "deadline exceeded", "timed out", "hung up unexpectedly",
		"early eof", "broken pipe", "killed", "operation too slow"} {
		if strings.Contains(msg, w) {
			return true
		}
	}
	return false
}

// Claim is one claim to take.
type Claim struct {
	// Remote is the remote to claim on; empty means DefaultRemote.
	Remote string
	// Ref is the claim ref (a full ref name): the lock.
	Ref string
	// Commit is what Ref, and every ref in Also, will point at.
	Commit string
	// Old is where Ref is expected on the remote: empty for "absent", or
	// the stale claim being replaced.
	Old string
	// Also names refs created at Commit in the same atomic push, e.g. the
	// session the claim is for.
	Also []string
}

// TakeClaim pushes the claim atomically with a lease on its ref. A lost
// claim is a State error wrapping ErrAlreadyClaimed; a remote that could
// not be reached is an *UnreachableError.
func TakeClaim(ctx context.Context, st Store, c Claim) error {
	remote, err := claimRemote(st, c.Remote, c.Ref)
	if err != nil {
		return err
	}
	args := []string{"push", "--atomic", "--porcelain", "--no-verify", "--no-recurse-submodules", "--force-with-lease=" + c.Ref + ":" + c.Old, remote, c.Commit + ":" + c.Ref}
	for _, r := range c.Also {
		args = append(args, c.Commit+":"+r)
	}
	out, err := st.Git().Run(ctx, args...)
	if err == nil {
		return nil
	}
	rejected, reason, moved := parsePushRejections(string(out))
	switch {
	case moved || rejected == "" && pushLostLockRace(err):
		return exitcode.New(exitcode.State, fmt.Errorf("claiming %s on %s: %w", c.Ref, remote, ErrAlreadyClaimed), "")
	case rejected != "":
		return exitcode.New(exitcode.State, fmt.Errorf("claiming %s on %s: the remote refused %s (%s)", c.Ref, remote, rejected, reason), "")
	}
	return &UnreachableError{Remote: remote, Err: err}
}

// ReadClaim returns the commit the remote's claim ref points at ("" when
// there is no claim) and the content of file in that commit's tree (nil
// when the commit holds no such file). It fetches the claim's objects
// without writing any local ref. A remote that cannot be listed is an
// *UnreachableError; a claim whose objects cannot be fetched is a plain
// error, since the remote did answer that the claim exists.
func ReadClaim(ctx context.Context, st Store, remote, ref, file string) (commit string, data []byte, err error) {
	remote, err = claimRemote(st, remote, ref)
	if err != nil {
		return "", nil, err
	}
	g := st.Git()
	out, err := g.Output(ctx, "ls-remote", "--refs", remote, ref)
	if err != nil {
		return "", nil, &UnreachableError{Remote: remote, Err: err}
	}
	if out == "" {
		return "", nil, nil
	}
	commit = strings.Fields(out)[0]
	// The remote answered and holds a claim: a fetch that fails now is not
	// a reason to go on without one. It fails for local reasons too: while
	// git creates a worktree (another task starting in this clone), that
	// worktree's HEAD names no object for a moment, and fetch refuses the
	// repository. It is tried again, then the claim is an error.
	var ferr error
	for attempt := 0; attempt < 4; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return "", nil, ctx.Err()
			case <-time.After(time.Duration(attempt) * 100 * time.Millisecond):
			}
		}
		if _, ferr = g.Run(ctx, "fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--no-recurse-submodules", remote, ref); ferr == nil {
			break
		}
	}
	if ferr != nil {
		return "", nil, fmt.Errorf("reading the claim %s on %s: %w", ref, remote, ferr)
	}
	data, err = g.Run(ctx, "cat-file", "blob", commit+":"+file)
	if err != nil {
		return commit, nil, nil
	}
	return commit, data, nil
}

// ReleaseClaim gives back a claim taken at commit: it puts the remote's
// claim ref back at restore (the claim it replaced; deleted when restore is
// empty) and deletes the refs in also, each only if it still points at
// commit. Each ref is updated on its own (the push is not atomic): a ref
// that moved on, or is gone, is left alone and is not an error.
func ReleaseClaim(ctx context.Context, st Store, remote, ref, commit, restore string, also ...string) error {
	remote, err := claimRemote(st, remote, ref)
	if err != nil {
		return err
	}
	args := []string{"push", "--porcelain", "--no-verify", "--no-recurse-submodules", remote}
	args = append(args, "--force-with-lease="+ref+":"+commit, restore+":"+ref)
	for _, r := range also {
		args = append(args, "--force-with-lease="+r+":"+commit, ":"+r)
	}
	out, err := st.Git().Run(ctx, args...)
	if err == nil {
		return nil
	}
	if rejected, _, moved := parsePushRejections(string(out)); moved && rejected == "" {
		return nil
	}
	return fmt.Errorf("releasing the claim %s on %s: %w", ref, remote, err)
}

// claimRemote defaults a claim's remote and checks the ref. The remote is
// not looked up in the configuration: a URL works, and a remote that does
// not answer is an *UnreachableError like any other.
func claimRemote(st Store, remote, ref string) (string, error) {
	if remote == "" {
		remote = DefaultRemote(st)
	}
	if strings.HasPrefix(remote, "-") {
		return "", exitcode.New(exitcode.Usage, fmt.Errorf("invalid remote name %q", remote), "")
	}
	if !strings.HasPrefix(ref, "refs/") {
		return "", exitcode.New(exitcode.Usage, fmt.Errorf("claiming %q: not a full ref name", ref), "")
	}
	return remote, nil
}

// ListClaims lists the remote's claim refs under prefix (a full ref prefix
// ending in "/") with one listing, and returns each one's name below prefix
// and the commit it points at. It fetches nothing. A remote that cannot be
// listed is an *UnreachableError.
func ListClaims(ctx context.Context, st Store, remote, prefix string) (map[string]string, error) {
	remote, err := claimRemote(st, remote, prefix)
	if err != nil {
		return nil, err
	}
	out, err := st.Git().Output(ctx, "ls-remote", "--refs", remote, prefix+"*")
	if err != nil {
		return nil, &UnreachableError{Remote: remote, Err: err}
	}
	claims := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) != 2 || !strings.HasPrefix(f[1], prefix) {
			continue
		}
		claims[strings.TrimPrefix(f[1], prefix)] = f[0]
	}
	return claims, nil
}
