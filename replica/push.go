package replica

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/gitcmd"
	"github.com/git-agentmine/git-agentmine/gitstore"
)

// pushRefs pushes refspecs to the remote as fast-forwards with --atomic.
// It reports moved=true when the remote rejected them because it moved
// meanwhile; any other refusal is an error.
func pushRefs(ctx context.Context, st Store, remote string, refspecs []string) (moved bool, err error) {
	args := append([]string{"push", "--atomic", "--porcelain", "--no-recurse-submodules", remote}, refspecs...)
	out, err := st.Git().Run(ctx, args...)
	if err == nil {
		return false, nil
	}
	rejected, reason, moved := parsePushRejections(string(out))
	if moved || rejected == "" && pushLostLockRace(err) {
		return true, nil
	}
	if rejected != "" {
		return false, exitcode.New(exitcode.State, fmt.Errorf("pushing agentmine state to %s: the remote refused %s (%s)", remote, rejected, reason), "the remote must accept "+gitstore.RefRoot+"* and "+gitstore.NotesRef+" (check its hooks and receive settings); local state is unchanged")
	}
	return false, exitcode.New(exitcode.Git, fmt.Errorf("pushing agentmine state to %s: %w", remote, err), "")
}

// pushLostLockRace recognises a push that failed on the remote because
// another push held or moved a ref at the same moment (an atomic push then
// reports every ref as "atomic transaction failed").
func pushLostLockRace(err error) bool {
	var ge *gitcmd.Error
	if !errors.As(err, &ge) {
		return false
	}
	for _, w := range []string{"cannot lock ref", "Unable to create", "but expected", "is at "} {
		if strings.Contains(ge.Stderr, w) {
			return true
		}
	}
	return false
}

// parsePushRejections reads `git push --porcelain` output. It returns the
// first ref refused for a reason other than "the remote moved", or
// moved=true when every rejection says the remote moved.
func parsePushRejections(out string) (ref, reason string, moved bool) {
	for _, l := range strings.Split(out, "\n") {
		if !strings.HasPrefix(l, "!\t") {
			continue
		}
		f := strings.SplitN(l, "\t", 3)
		if len(f) < 3 {
			continue
		}
		_, dst, _ := strings.Cut(f[1], ":")
		why := f[2]
		if i := strings.Index(why, "("); i >= 0 {
			why = strings.TrimSuffix(why[i+1:], ")")
		}
		switch {
		case strings.Contains(why, "atomic"):
			continue
		case strings.Contains(f[2], "[rejected]") && (why == "fetch first" || why == "non-fast-forward" || why == "stale info" || why == "already exists"),
			strings.Contains(why, "failed to update ref"), strings.Contains(why, "cannot lock ref"), strings.Contains(why, "incorrect old value"):
			moved = true
		default:
			if ref == "" {
				ref, reason = dst, why
			}
		}
	}
	if ref != "" {
		return ref, reason, false
	}
	return "", "", moved
}
