// Package merge owns the gated merge: a task's latest session is merged into
// its base branch only when the facts allow it (the worker exited 0, the
// scope verdict is valid, the DoD passed or was explicitly skipped). The
// merge is computed with `git merge-tree --write-tree` and lands with a
// compare-and-swap update of the base ref, so the user's checkout is never
// disturbed unless the base is checked out there, clean, and can follow.
package merge

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/git-agentmine/git-agentmine/board"
	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/gitcmd"
	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/sessions"
	"github.com/git-agentmine/git-agentmine/verify"
)

// Options tune a merge.
type Options struct {
	// AllowSkipped accepts a session whose DoD was skipped.
	AllowSkipped bool
	// Attempts bounds the retries when the base moves meanwhile (default 5).
	Attempts int
	// beforeUpdate, when set (tests), runs between computing the merge and
	// the ref update, to simulate a base that moves meanwhile.
	beforeUpdate func()
}

// Result describes a merge that landed.
type Result struct {
	Task      string   `json:"task"`
	Session   string   `json:"session"`
	Base      string   `json:"base"`
	Commit    string   `json:"commit"`
	Tip       string   `json:"tip"`
	Already   bool     `json:"already_merged"`
	Worktrees []string `json:"updated_worktrees,omitempty"`
	Retries   int      `json:"retries"`
}

// ConflictError lists the paths a merge could not combine.
type ConflictError struct {
	Base  string
	Paths []string
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("merging into %s conflicts in %d path(s): %s", e.Base, len(e.Paths), strings.Join(e.Paths, ", "))
}

// ExitCode makes a conflict a failed verdict (1).
func (e *ConflictError) ExitCode() int { return exitcode.Failed }

// Why merge refuses before looking at a verdict: the Reason of a
// RefusedError, for errors.Is.
var (
	// ErrNoSession: the task has never had a session.
	ErrNoSession = errors.New("no session to merge")
	// ErrNotEnded: the latest session has no outcome yet.
	ErrNotEnded = errors.New("session has not ended")
)

// VerdictError is a refusal to merge because the session's facts failed
// (exit code Failed); Task is the task's id as a user may type it, so the
// CLI can name the next step.
type VerdictError struct {
	Task string
	Err  error
}

func (e *VerdictError) Error() string { return e.Err.Error() }

// Unwrap returns the message's error.
func (e *VerdictError) Unwrap() error { return e.Err }

// ExitCode makes a failed verdict exit 1.
func (e *VerdictError) ExitCode() int { return exitcode.Failed }

// RefusedError is a refusal to merge a task in its current state (exit
// code State). Reason is ErrNoSession or ErrNotEnded; Task and Session are
// the ids concerned, as a user may type them; Err is the message.
type RefusedError struct {
	Reason  error
	Task    string
	Session string
	Err     error
}

func (e *RefusedError) Error() string { return e.Err.Error() }

// Unwrap returns the message's error.
func (e *RefusedError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, e.Reason) true.
func (e *RefusedError) Is(target error) bool { return target == e.Reason }

// ExitCode is exitcode.State.
func (e *RefusedError) ExitCode() int { return exitcode.State }

// Task merges the latest session of the task (any id prefix) in st's
// repository. defaultBase is the configured base for sessions that recorded
// none.
func Task(ctx context.Context, st *gitstore.Store, defaultBase, prefix string, o Options) (Result, error) {
	b, err := board.Load(ctx, st, defaultBase)
	if err != nil {
		return Result{}, err
	}
	tid, err := b.Tasks.Resolve(prefix)
	if err != nil {
		return Result{}, err
	}
	short := b.Tasks.ShortID(tid)
	rec, ok := b.Latest(tid)
	if !ok {
		return Result{}, &RefusedError{Reason: ErrNoSession, Task: short, Err: fmt.Errorf("task %s has no session to merge", short)}
	}
	if err := gate(rec, short, o.AllowSkipped); err != nil {
		return Result{}, fmt.Errorf("not merging task %s: %w", short, err)
	}
	task := b.Tasks.Tasks[tid].Task
	return land(ctx, st.Git(), st, rec, task.Title, o)
}

// gate checks the facts of the session's outcome.
func gate(rec sessions.Record, task string, allowSkipped bool) error {
	o := rec.Outcome
	s := rec.Session
	if o == nil {
		return &RefusedError{Reason: ErrNotEnded, Task: task, Session: s.ID[:8], Err: fmt.Errorf("session %s has not ended", s.ID[:8])}
	}
	fail := func(format string, a ...any) error {
		return &VerdictError{Task: task, Err: fmt.Errorf(format, a...)}
	}
	switch {
	case o.TimedOut:
		return fail("session %s timed out", s.ID[:8])
	case o.Signal != "":
		return fail("session %s was killed by %s", s.ID[:8], o.Signal)
	case o.ExitCode != 0:
		return fail("session %s exited %d", s.ID[:8], o.ExitCode)
	}
	v := verify.ParseVerdicts(o)
	if !v.HasScope {
		return fail("session %s has no scope verdict", s.ID[:8])
	}
	noCommit := o.Tip == "" || o.Tip == s.BaseCommit
	if !v.Scope.Valid {
		return fail("session %s broke its scope: %s", s.ID[:8], v.Explain())
	}
	switch v.DoD.Status {
	case "passed":
	case "skipped":
		if !allowSkipped {
			reason := v.DoD.Reason
			if reason == "" {
				reason = "no reason recorded"
			}
			return exitcode.New(exitcode.Failed, fmt.Errorf("session %s skipped its DoD (%s)", s.ID[:8], reason), "pass --allow-skipped to merge anyway")
		}
	default:
		reason := v.Explain()
		if reason == "" && noCommit {
			reason = verify.NoCommitReason
		}
		if reason == "" {
			reason = "no failing command recorded"
		}
		return fail("session %s DoD %s: %s", s.ID[:8], v.DoD.Status, reason)
	}
	if noCommit {
		return fail("session %s made no commit: %s", s.ID[:8], verify.NoCommitReason)
	}
	return nil
}

// land merges the session's recorded tip (the commit that was judged) into
// its base branch with retries on a moving base.
func land(ctx context.Context, g gitcmd.Runner, st *gitstore.Store, rec sessions.Record, title string, o Options) (Result, error) {
	s := rec.Session
	tip := rec.Outcome.Tip
	ref, err := g.Output(ctx, "rev-parse", "--symbolic-full-name", s.BaseRef)
	if err != nil || !strings.HasPrefix(ref, "refs/heads/") {
		return Result{}, exitcode.New(exitcode.State, fmt.Errorf("base %q is not a local branch", s.BaseRef), "merge by hand, or set the task's base to a branch")
	}
	res := Result{Task: s.Task, Session: s.ID, Base: ref, Tip: tip}
	attempts := o.Attempts
	if attempts <= 0 {
		attempts = 5
	}
	for attempt := 0; attempt < attempts; attempt++ {
		res.Retries = attempt
		baseTip, err := g.Output(ctx, "rev-parse", "--verify", ref)
		if err != nil {
			return res, fmt.Errorf("reading %s: %w", ref, err)
		}
		if _, err := g.Run(ctx, "merge-base", "--is-ancestor", tip, baseTip); err == nil {
			res.Already, res.Commit = true, baseTip
			return res, nil
		}
		wts, err := checkedOut(ctx, g, ref)
		if err != nil {
			return res, err
		}
		for _, w := range wts {
			dirty, err := g.In(w).Output(ctx, "status", "--porcelain", "--untracked-files=no")
			if err != nil {
				return res, fmt.Errorf("checking %s: %w", w, err)
			}
			if dirty != "" {
				return res, exitcode.New(exitcode.State, fmt.Errorf("%s is checked out in %s with uncommitted changes", strings.TrimPrefix(ref, "refs/heads/"), w), "commit or stash them, then merge again")
			}
		}
		tree, conflicts, err := st.MergeTrees(ctx, baseTip, tip)
		if err != nil {
			return res, err
		}
		if tree == "" {
			return res, &ConflictError{Base: strings.TrimPrefix(ref, "refs/heads/"), Paths: uniq(conflicts)}
		}
		msg := fmt.Sprintf("Merge task %s: %s\n\nAgentmine-Task: %s\nAgentmine-Session: %s\n", s.Task[:8], title, s.Task, s.ID)
		res.Commit, err = st.CommitTree(ctx, tree, []string{baseTip, tip}, msg)
		if err != nil {
			return res, fmt.Errorf("writing the merge commit: %w", err)
		}
		if o.beforeUpdate != nil {
			o.beforeUpdate()
		}
		err = st.Transact(ctx, []gitstore.RefOp{{Verb: "update", Ref: ref, New: res.Commit, Old: baseTip}})
		if errors.Is(err, gitstore.ErrConflict) {
			time.Sleep(time.Duration(attempt+1) * 20 * time.Millisecond)
			continue
		}
		if err != nil {
			return res, err
		}
		for _, w := range wts {
			st.RecordCheckout(w, baseTip, res.Commit)
			if _, err := g.In(w).Run(ctx, "read-tree", "-m", "-u", baseTip, res.Commit); err != nil {
				return res, fmt.Errorf("merged, but updating the checkout in %s failed (run git checkout -f there): %w", w, err)
			}
			res.Worktrees = append(res.Worktrees, w)
		}
		return res, nil
	}
	return res, exitcode.New(exitcode.State, fmt.Errorf("%s kept moving during %d merge attempts", ref, attempts), "try again")
}

// checkedOut lists the worktrees that have ref checked out.
func checkedOut(ctx context.Context, g gitcmd.Runner, ref string) ([]string, error) {
	out, err := g.Run(ctx, "worktree", "list", "--porcelain")
	if err != nil {
		return nil, fmt.Errorf("listing worktrees: %w", err)
	}
	var dirs []string
	cur := ""
	for _, l := range strings.Split(string(out), "\n") {
		switch {
		case strings.HasPrefix(l, "worktree "):
			cur = strings.TrimPrefix(l, "worktree ")
		case l == "branch "+ref:
			dirs = append(dirs, cur)
		}
	}
	return dirs, nil
}

func uniq(xs []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range xs {
		x = strings.TrimSpace(x)
		if x != "" && !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}
