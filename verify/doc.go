// Package verify owns judging a worker's run by observable facts: the live
// file-system watcher that records every change in the worktree while the
// worker runs (so that out-of-scope changes undone before the end are still
// caught), the post-run verification of everything the worker changed
// (committed, staged, unstaged, untracked) against its scope, and the
// Definition-of-Done runner that judges the committed tip in a clean
// checkout.
//
// Sparse checkout and read-only modes in a worktree are guard rails;
// this package is the enforcement.
package verify
