package worker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/git-agentmine/git-agentmine/board"
	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/launch"
	"github.com/git-agentmine/git-agentmine/sessions"
	"github.com/git-agentmine/git-agentmine/worktree"
)

// The kinds of left-over Prune removes.
const (
	LeftoverWorktree = "worktree"
	LeftoverBranch   = "branch"
)

// PruneOptions says which left-overs Prune removes.
type PruneOptions struct {
	// Before keeps every session that ended at or after it (zero: any
	// ended session qualifies).
	Before time.Time
	// Tasks, when not nil, limits Prune to these tasks' sessions
	// (canonical ids).
	Tasks map[string]bool
	// DryRun lists what would be removed and removes nothing.
	DryRun bool
	// Merged, when set, says whether a session's work reached its base;
	// it only informs the result.
	Merged func(sessions.Record) bool
}

// Leftover is a worktree or branch an ended session left behind.
type Leftover struct {
	// Kind is LeftoverWorktree or LeftoverBranch.
	Kind string
	// Name is the worktree's path or the branch's name.
	Name string
	// Task and Session are the canonical ids of its session.
	Task, Session string
	// Ended is when the session ended.
	Ended time.Time
	// Merged is set when the session's work reached its base.
	Merged bool
	// Removed is set once it is gone (never in a dry run).
	Removed bool
	// Err says why it could not be removed ("" when it was, or in a dry
	// run).
	Err string
}

// PruneResult is what Prune found and did.
type PruneResult struct {
	// Leftovers lists every worktree and branch that qualified, in the
	// order they were handled (worktrees first, then branches; each by
	// when its session ended).
	Leftovers []Leftover
	// Ended lists processes of the sessions that were still running (a
	// killed supervisor's workers) and were ended before their worktrees
	// were removed.
	Ended []launch.Proc
}

// Prune removes what ended sessions of this clone left behind: their
// worktrees and their branches, merged or not, when the session ended
// before opts.Before. It never touches a session that has not ended (a
// running or lost one, a manual one without an outcome, one of another
// clone), the worktree a later session of the task now uses, nor a branch
// checked out in a worktree that stays. A worktree that a process which is
// not the session's still uses is kept, with the reason in Err. recs are
// full session records (board.Load).
func (e *Env) Prune(ctx context.Context, recs []sessions.Record, opts PruneOptions) (PruneResult, error) {
	var res PruneResult
	sorted := append([]sessions.Record(nil), recs...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Session.Started.Before(sorted[j].Session.Started) })
	checkedOut, err := e.checkedOutBranches(ctx)
	if err != nil {
		return res, err
	}
	branches, err := e.localBranches(ctx)
	if err != nil {
		return res, err
	}
	wts, brs := e.pruneCandidates(sorted, opts, checkedOut, branches)
	gone := map[string]bool{} // worktrees removed (or, dry, that would be)
	for i := range wts {
		if !opts.DryRun {
			ended, err := e.pruneWorktree(ctx, sorted, wts[i])
			res.Ended = append(res.Ended, ended...)
			if err != nil {
				wts[i].Err = err.Error()
				continue
			}
			wts[i].Removed = true
		}
		gone[realPath(wts[i].Name)] = true
	}
	res.Leftovers = append(res.Leftovers, wts...)
	for _, b := range brs {
		if p, ok := checkedOut[b.Name]; ok && !gone[realPath(p)] {
			continue // a worktree that stays (the main one too) has it checked out
		}
		if !opts.DryRun {
			e.pruneBranch(ctx, &b)
		}
		res.Leftovers = append(res.Leftovers, b)
	}
	return res, nil
}

// pruneCandidates lists the worktrees and branches of sorted (oldest
// first) that Prune may remove: those of ended sessions of this clone that
// opts selects. The worktree at a path belongs to the latest session that
// recorded it (a new session is never prepared while an earlier one's
// worktree is still there), and never qualifies while another session's
// branch is checked out there (a session prepared since recs were read).
func (e *Env) pruneCandidates(sorted []sessions.Record, opts PruneOptions, checkedOut map[string]string, branches map[string]bool) (wts, brs []Leftover) {
	here := board.HereOf(e.St)
	owner := map[string]int{}
	for i, r := range sorted {
		if r.Session.Worktree != "" {
			owner[r.Session.Worktree] = i
		}
	}
	atPath := map[string]string{}
	for b, p := range checkedOut {
		atPath[realPath(p)] = b
	}
	for i, r := range sorted {
		s := r.Session
		if !prunable(r, opts, here) {
			continue
		}
		if s.Worktree != "" && owner[s.Worktree] == i {
			b, has := atPath[realPath(s.Worktree)]
			if _, err := os.Stat(s.Worktree); err == nil && (!has || b == s.Branch) {
				wts = append(wts, e.leftover(r, LeftoverWorktree, s.Worktree, opts))
			}
		}
		if s.Branch != "" && branches["refs/heads/"+s.Branch] {
			brs = append(brs, e.leftover(r, LeftoverBranch, s.Branch, opts))
		}
	}
	return wts, brs
}

// prunable reports whether what the session left may go: it ended (an
// outcome, and no process of it runs), here judges it (this clone's), opts
// selects its task, and it ended before opts.Before.
func prunable(r sessions.Record, opts PruneOptions, here board.Here) bool {
	s := r.Session
	if opts.Tasks != nil && !opts.Tasks[s.Task] {
		return false
	}
	if r.Outcome == nil || !here.Judges(s) || board.LiveNow(r, here) {
		return false
	}
	return opts.Before.IsZero() || r.Outcome.Finished.Before(opts.Before)
}

// pruneBranch deletes a left-over branch, through the store so that the
// journal records it, and notes in l whether it is gone.
func (e *Env) pruneBranch(ctx context.Context, l *Leftover) {
	switch err := e.St.DeleteRef(ctx, "refs/heads/"+l.Name); {
	case err != nil:
		l.Err = err.Error()
	case e.branchExists(ctx, l.Name):
		l.Err = "the branch is still there"
	default:
		l.Removed = true
	}
}

func (e *Env) leftover(r sessions.Record, kind, name string, opts PruneOptions) Leftover {
	l := Leftover{Kind: kind, Name: name, Task: r.Session.Task, Session: r.Session.ID, Ended: r.Outcome.Finished}
	if opts.Merged != nil {
		l.Merged = opts.Merged(r)
	}
	return l
}

// pruneWorktree removes one ended session's worktree as Done does: what
// is left of its processes is ended first, and a worktree that another
// process uses is kept.
func (e *Env) pruneWorktree(ctx context.Context, recs []sessions.Record, l Leftover) ([]launch.Proc, error) {
	var ended []launch.Proc
	for _, r := range recs {
		if r.Session.ID != l.Session {
			continue
		}
		ps, err := e.EndProcesses(ctx, r)
		ended = append(ended, ps...)
		if err != nil {
			return ended, err
		}
	}
	if err := refuseInUse(l.Name, l.Task[:8], l.Session[:8]); err != nil {
		return ended, err
	}
	// The supervisors of sessions running next to it excuse the removal
	// only if their witness heard of it, or if they start watching once
	// it is over: BeginWorktree makes it one or the other.
	end := e.St.BeginWorktree(gitstore.JournalWorktreeRemove, l.Name)
	err := worktree.Remove(ctx, e.Top, l.Name, "", true)
	end()
	if err != nil {
		return ended, fmt.Errorf("removing worktree %s: %w", l.Name, err)
	}
	return ended, nil
}

// checkedOutBranches maps each branch checked out in a linked worktree to
// that worktree's path.
func (e *Env) checkedOutBranches(ctx context.Context) (map[string]string, error) {
	out, err := e.St.Git().In(e.Top).Output(ctx, "worktree", "list", "--porcelain")
	if err != nil {
		return nil, fmt.Errorf("listing worktrees: %w", err)
	}
	m := map[string]string{}
	path := ""
	for _, line := range strings.Split(out, "\n") {
		if p, ok := strings.CutPrefix(line, "worktree "); ok {
			path = p
		} else if b, ok := strings.CutPrefix(line, "branch refs/heads/"); ok {
			m[b] = path
		}
	}
	return m, nil
}

// realPath is path with symbolic links resolved, path itself when that
// fails.
func realPath(path string) string {
	if p, err := filepath.EvalSymlinks(path); err == nil {
		return p
	}
	return path
}

// localBranches is the set of local branch refs (refs/heads/…).
func (e *Env) localBranches(ctx context.Context) (map[string]bool, error) {
	out, err := e.St.Git().In(e.Top).Output(ctx, "for-each-ref", "--format=%(refname)", "refs/heads/")
	if err != nil {
		return nil, fmt.Errorf("listing branches: %w", err)
	}
	m := map[string]bool{}
	for _, l := range strings.Split(out, "\n") {
		if l != "" {
			m[l] = true
		}
	}
	return m, nil
}
