package worker

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	"github.com/git-agentmine/git-agentmine/gitcmd"
	"github.com/git-agentmine/git-agentmine/verify"
)

// WarningMainCheckout is the warning type for a change in the main checkout
// during a run. Worktrees live inside the main checkout, so a worker can
// write there through ../../..; the watcher does not cover the main checkout
// (it is not watched recursively), so its state is compared before and
// after the run. It is a warning, not a violation: someone else may be
// working in the main checkout at the same time.
const WarningMainCheckout = "main-checkout-changed"

// checkoutState is what `git status` says of each changed path in the main
// checkout, with the file's modification time, so that a path already
// modified before the run but written again during it still differs.
type checkoutState map[string]string

// snapshotCheckout records the main checkout's changed and untracked paths.
// It returns nil when the state cannot be read (then nothing is compared).
func snapshotCheckout(ctx context.Context, g gitcmd.Runner) checkoutState {
	top := g.Dir
	out, err := g.Run(ctx, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames")
	if err != nil {
		return nil
	}
	st := checkoutState{}
	for _, rec := range strings.Split(string(out), "\x00") {
		if len(rec) < 4 {
			continue
		}
		path := rec[3:]
		stamp := rec[:2]
		if fi, err := os.Lstat(filepath.Join(top, filepath.FromSlash(path))); err == nil {
			stamp += " " + fi.ModTime().String() + " " + fi.Mode().String()
		}
		st[path] = stamp
	}
	return st
}

// checkoutWarnings compares two snapshots of the main checkout.
func checkoutWarnings(before, after checkoutState) []verify.Violation {
	if before == nil || after == nil {
		return nil
	}
	var ws []verify.Violation
	for p, a := range after {
		if b, ok := before[p]; !ok || b != a {
			ws = append(ws, verify.Violation{Type: WarningMainCheckout, Path: p,
				Reason: "changed in the main checkout during the run (by the worker, or by someone working there)"})
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			ws = append(ws, verify.Violation{Type: WarningMainCheckout, Path: p,
				Reason: "restored or removed in the main checkout during the run"})
		}
	}
	return ws
}
