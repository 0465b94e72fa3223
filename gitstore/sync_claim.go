package gitstore

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/git-agentmine/git-agentmine/exitcode"
)

// ErrAlreadyClaimed is wrapped by Claim's error when the claim lost.
var ErrAlreadyClaimed = errors.New("already claimed")

// Claim creates ref on the remote pointing at newCommit, only if ref does
// not exist there yet, with an atomic push (a lease expecting no ref). The
// create itself is the atomic guarantee, so the claimed ref should be the
// lock (e.g. one ref per claimed task). mustNotExist names further remote
// refs whose presence means the claim is already taken; they are checked
// with ls-remote just before the push, which is not atomic with it. A lost
// claim is a State error wrapping ErrAlreadyClaimed.
func (s *Store) Claim(ctx context.Context, remote, ref, newCommit string, mustNotExist []string) error {
	if remote == "" {
		remote = s.SyncRemote()
	}
	if err := s.checkRemote(ctx, remote); err != nil {
		return err
	}
	if !strings.HasPrefix(ref, "refs/") {
		return exitcode.New(exitcode.Usage, fmt.Errorf("claiming %q: not a full ref name", ref), "")
	}
	if len(mustNotExist) > 0 {
		args := append([]string{"ls-remote", "--refs", remote}, mustNotExist...)
		lines, err := s.git.Lines(ctx, args...)
		if err != nil {
			return exitcode.New(exitcode.Git, fmt.Errorf("claiming %s on %s: %w", ref, remote, err), "")
		}
		for _, l := range lines {
			if _, name, ok := strings.Cut(l, "\t"); ok {
				for _, m := range mustNotExist {
					if name == m {
						return exitcode.New(exitcode.State, fmt.Errorf("claiming %s on %s: %w (%s exists)", ref, remote, ErrAlreadyClaimed, name), "")
					}
				}
			}
		}
	}
	out, err := s.git.Run(ctx, "push", "--atomic", "--porcelain", "--no-recurse-submodules", "--force-with-lease="+ref+":", remote, newCommit+":"+ref)
	if err == nil {
		return nil
	}
	rejected, reason, moved := parsePushRejections(string(out))
	if moved {
		return exitcode.New(exitcode.State, fmt.Errorf("claiming %s on %s: %w", ref, remote, ErrAlreadyClaimed), "")
	}
	if rejected != "" {
		return exitcode.New(exitcode.State, fmt.Errorf("claiming %s on %s: the remote refused it (%s)", ref, remote, reason), "")
	}
	return exitcode.New(exitcode.Git, fmt.Errorf("claiming %s on %s: %w", ref, remote, err), "")
}
