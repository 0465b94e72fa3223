// Package verify owns judging a worker's run by observable facts: the live
// file-system watcher that records every change in the worktree while the
// worker runs (so that out-of-scope changes undone before the end are still
// caught), the post-run verification of everything the worker changed
// (committed, staged, unstaged, untracked, ignored) against its scope, and
// the Definition-of-Done runner that judges the committed tip.
//
// Sparse checkout and read-only modes in a worktree are guard rails (root
// ignores modes, `git add --sparse` stages excluded paths, the object store
// is shared); this package is the enforcement.
//
// Decisions:
//
//   - Uncommitted leftovers inside the write scope are reported as warnings
//     (type "uncommitted"), not violations: only the committed tip is
//     merged and judged by the DoD, so a leftover cannot reach the base
//     branch. Leftovers outside the write scope are violations like any
//     other out-of-scope change.
//   - The DoD never runs in the worker's worktree. RunDoD adds a detached
//     worktree of the tip in a temporary directory under the common git
//     directory, with the same sparse patterns, runs the commands there and
//     removes it: leftovers cannot make it pass, and cannot be lost.
//   - The live record is evidence the verdict needs. When the watcher
//     cannot watch everything (inotify limits, queue overflow, a watcher
//     that did not start) the run goes on and post-run verification still
//     runs, but a change made and undone in the gap cannot be ruled out, so
//     the gap is a violation (watch-overflow, watch-incomplete) unless
//     nothing missed could have been one: only the worktree's own files
//     were unwatched (the git internals and the worktree's surroundings
//     have their own kernel queue) and the scope lets the worker write all
//     of them. Verdict.LiveGap says which. A worker run outside agentmine
//     (session end) has no live record by design, and that is not held
//     against it.
//   - A committed path is judged as a path too: names git refuses to check
//     out are bad-path violations (badpath.go), and a committed symbolic
//     link is judged by where it leads (links.go).
//   - Generated files are exempt only as agentmine wrote them, byte for
//     byte (generated.go).
//   - The watcher sees only the worktree and the extra locations it is
//     given (DefaultExtras: the repository's hooks, config and info
//     directory, the worktree's own config and info, the directory holding
//     the worktree). A write elsewhere on the machine is not seen; the
//     common git directory is shared with other workers, so an event there
//     may come from any of them.
package verify
