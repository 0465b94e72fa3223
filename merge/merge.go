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
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/git-agentmine/git-agentmine/bestof"
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
	// AcceptMainChanges accepts a session whose only violations are
	// changes of the main checkout during its run (MainCheckoutChanged):
	// the person merging says they made them. The accepted paths are
	// recorded in the merge commit's trailers and in Result.
	AcceptMainChanges bool
	// Attempts bounds the retries when the base moves meanwhile (default 5).
	Attempts int
	// Session, when set, merges that session of the task (a best-of
	// round's winner) rather than its latest.
	Session string
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
	// Accepted lists the main-checkout changes accepted with
	// AcceptMainChanges (paths, or what happened when no single path
	// changed), as the merge commit records them.
	Accepted []string `json:"accepted_main_changes,omitempty"`
	// Finished lists the checkouts of the base whose update an earlier,
	// interrupted merge left undone and this one completed (finishMove).
	Finished []string `json:"finished_checkouts,omitempty"`
	// Kept lists the uncommitted and untracked paths of the updated
	// checkouts that the merge left as they were (none of them is a path
	// it changes), as "<checkout>: <path>".
	Kept []string `json:"kept_changes,omitempty"`
}

// MainCheckoutChanged is the violation type of a change in the main
// checkout during a session's run, the one kind a person can accept as
// their own (Options.AcceptMainChanges). The worker package records it.
const MainCheckoutChanged = verify.MainCheckoutChanged

// maxAcceptedTrailers bounds the Agentmine-Accepted-Main-Change trailers of
// one merge commit; the rest are counted in a last one.
const maxAcceptedTrailers = 20

// MainCheckoutError is a refusal to merge a session whose only violations
// are changes of the main checkout during its run (exit code Failed): a
// person who made them can accept them. Task and Session are the ids as a
// user may type them; Paths lists what changed, first path first.
type MainCheckoutError struct {
	Task    string
	Session string
	Paths   []string
}

func (e *MainCheckoutError) Error() string {
	s := fmt.Sprintf("session %s: the main checkout changed during its run: %s", e.Session, e.Paths[0])
	if n := len(e.Paths); n > 1 {
		s += fmt.Sprintf(" (+%d more)", n-1)
	}
	return s
}

// ExitCode makes the refusal a failed verdict (1).
func (e *MainCheckoutError) ExitCode() int { return exitcode.Failed }

// ConflictError lists the paths a merge could not combine. Task is the
// task's id as a user may type it, so the CLI can name the command that
// runs it again on the fresh base.
type ConflictError struct {
	Task  string
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
	if o.Session == "" && ok {
		// The latest attempt of a decided best-of round: its winner is
		// what the round offers to merge.
		if o.Session, err = winnerOf(ctx, st, tid, rec.Session.ID); err != nil {
			return Result{}, err
		}
	}
	if o.Session != "" {
		rec, ok = sessionOf(b, tid, o.Session)
	}
	if !ok {
		return Result{}, &RefusedError{Reason: ErrNoSession, Task: short, Err: fmt.Errorf("task %s has no session to merge", short)}
	}
	accepted, err := gate(rec, short, o)
	if err != nil {
		return Result{}, fmt.Errorf("not merging task %s: %w", short, err)
	}
	task := b.Tasks.Tasks[tid].Task
	res, err := land(ctx, st.Git(), st, rec, task.Title, accepted, o)
	var (
		ce *ConflictError
		se *ScopeError
		ke *CheckoutError
	)
	switch {
	case errors.As(err, &ce):
		ce.Task = short
	case errors.As(err, &se):
		se.Task = short
		err = fmt.Errorf("not merging task %s: %w", short, err)
	case errors.As(err, &ke):
		ke.Task, ke.Session = short, rec.Session.ID[:8]
	}
	return res, err
}

// sessionOf finds session sid among the sessions of task tid.
func sessionOf(b *board.Board, tid, sid string) (sessions.Record, bool) {
	for _, r := range b.SessionsOf(tid) {
		if r.Session.ID == sid {
			return r, true
		}
	}
	return sessions.Record{}, false
}

// winnerOf returns the winner of the best-of round of task tid that holds
// session sid, "" when sid is in no round or its round has no winner.
func winnerOf(ctx context.Context, st *gitstore.Store, tid, sid string) (string, error) {
	rec, ok, err := bestof.Get(ctx, st, tid)
	if err != nil || !ok {
		return "", err
	}
	if i := rec.RoundOf(sid); i >= 0 && rec.Rounds[i].Decided != nil {
		return rec.Rounds[i].Decided.Winner, nil
	}
	return "", nil
}

// Check asks the gate what it would say of merging rec, the latest session
// of the task whose short id is task, with o, and merges nothing: nil when
// the gate lets it through, else the refusal Task would return. Conflicts
// with the base and the base's checkouts are found only by merging.
func Check(rec sessions.Record, task string, o Options) error {
	if _, err := gate(rec, task, o); err != nil {
		return fmt.Errorf("not merging task %s: %w", task, err)
	}
	return nil
}

// gate checks the facts of the session's outcome. Changes of the main
// checkout are looked at last, so that a refusal for them means that
// accepting them (o.AcceptMainChanges) is all the merge needs; it returns
// the accepted ones.
func gate(rec sessions.Record, task string, opts Options) (accepted []string, err error) {
	o := rec.Outcome
	s := rec.Session
	if o == nil {
		return nil, &RefusedError{Reason: ErrNotEnded, Task: task, Session: s.ID[:8], Err: fmt.Errorf("session %s has not ended", s.ID[:8])}
	}
	fail := func(format string, a ...any) error {
		return &VerdictError{Task: task, Err: fmt.Errorf(format, a...)}
	}
	if len(rec.Forged) > 0 {
		return nil, fail("session %s has a %s", s.ID[:8], sessions.ForgedReason(rec.Forged))
	}
	if len(rec.ForgedReviews) > 0 {
		return nil, fail("session %s has a %s", s.ID[:8], sessions.ForgedReviewReason(rec.ForgedReviews))
	}
	switch {
	case o.TimedOut:
		return nil, fail("session %s timed out", s.ID[:8])
	case o.Signal != "":
		return nil, fail("session %s was killed by %s", s.ID[:8], o.Signal)
	case o.ExitCode != 0:
		return nil, fail("session %s exited %d", s.ID[:8], o.ExitCode)
	}
	v := verify.ParseVerdicts(o)
	if !v.HasScope {
		return nil, fail("session %s has no scope verdict", s.ID[:8])
	}
	// rest is the verdict without the main checkout's changes.
	rest := v
	rest.Scope.Violations = nil
	var main []verify.Violation
	for _, x := range v.Scope.Violations {
		if x.Type == MainCheckoutChanged {
			main = append(main, x)
		} else {
			rest.Scope.Violations = append(rest.Scope.Violations, x)
		}
	}
	rest.Scope.Valid = v.Scope.Valid || len(rest.Scope.Violations) == 0 && len(main) > 0
	noCommit := o.Tip == "" || o.Tip == s.BaseCommit
	if !rest.Scope.Valid {
		return nil, fail("session %s broke its scope: %s", s.ID[:8], rest.Explain())
	}
	if err := dodGate(v, rest, o.Reason, noCommit, opts.AllowSkipped, task, s.ID[:8]); err != nil {
		return nil, err
	}
	if noCommit {
		return nil, fail("session %s made no commit: %s", s.ID[:8], verify.NoCommitReason)
	}
	if r := rec.Review; r != nil && !r.OK() {
		why := strings.Join(r.Reasons, "; ")
		if why == "" {
			why = "no reason given"
		}
		return nil, fail("session %s was reviewed NG by %s: %s", s.ID[:8], r.Agent, why)
	}
	for _, x := range main {
		what := x.Path
		if what == "" {
			what = x.Reason
		}
		accepted = append(accepted, what)
	}
	if len(accepted) > 0 && !opts.AcceptMainChanges {
		return nil, &MainCheckoutError{Task: task, Session: s.ID[:8], Paths: accepted}
	}
	return accepted, nil
}

// dodGate refuses a session whose Definition of Done did not pass: it never
// ran (with the reason the outcome recorded), it was skipped (unless
// allowSkipped), or it failed. rest is the verdict without the main
// checkout's changes; sid is the session's short id.
func dodGate(v, rest verify.Verdicts, outcomeReason string, noCommit, allowSkipped bool, task, sid string) error {
	fail := func(format string, a ...any) error {
		return &VerdictError{Task: task, Err: fmt.Errorf(format, a...)}
	}
	switch v.DoD.Status {
	case "passed":
	case "":
		// Judged for its scope, but the DoD never ran: say why when the
		// outcome recorded it, never an empty reason.
		reason := outcomeReason
		if reason == "" {
			reason = verify.NoDoDReason
		}
		return fail("session %s has no DoD result: %s", sid, reason)
	case "skipped":
		if !allowSkipped {
			reason := v.DoD.Reason
			if reason == "" {
				reason = "no reason recorded"
			}
			return exitcode.New(exitcode.Failed, fmt.Errorf("session %s skipped its DoD (%s)", sid, reason), "pass --allow-skipped to merge anyway")
		}
	default:
		reason := rest.Explain()
		if reason == "" && noCommit {
			reason = verify.NoCommitReason
		}
		if reason == "" {
			reason = "no failing command recorded"
		}
		return fail("session %s DoD %s: %s", sid, v.DoD.Status, reason)
	}
	return nil
}

// acceptedTrailers are the merge commit's trailer lines recording accepted
// main-checkout changes, one per path.
func acceptedTrailers(accepted []string) string {
	var b strings.Builder
	for i, p := range accepted {
		if i == maxAcceptedTrailers {
			fmt.Fprintf(&b, "Agentmine-Accepted-Main-Change: (%d more)\n", len(accepted)-i)
			break
		}
		fmt.Fprintf(&b, "Agentmine-Accepted-Main-Change: %s\n", strings.Join(strings.Fields(p), " "))
	}
	return b.String()
}

// land merges the session's recorded tip (the commit that was judged) into
// its base branch with retries on a moving base.
func land(ctx context.Context, g gitcmd.Runner, st *gitstore.Store, rec sessions.Record, title string, accepted []string, o Options) (Result, error) {
	s := rec.Session
	tip := rec.Outcome.Tip
	ref, err := g.Output(ctx, "rev-parse", "--symbolic-full-name", s.BaseRef)
	if err != nil || !strings.HasPrefix(ref, "refs/heads/") {
		return Result{}, exitcode.New(exitcode.State, fmt.Errorf("base %q is not a local branch", s.BaseRef), "merge by hand, or set the task's base to a branch")
	}
	res := Result{Task: s.Task, Session: s.ID, Base: ref, Tip: tip, Accepted: accepted}
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
		_, err = g.Run(ctx, "merge-base", "--is-ancestor", tip, baseTip)
		already := err == nil
		wts, err := checkedOut(ctx, g, ref)
		if err != nil {
			return res, err
		}
		// A checkout left behind by an interrupted merge is finished
		// first, also when this session is already in: running the merge
		// again is how a user repairs it.
		for _, w := range wts {
			dirty, err := uncommitted(ctx, g.In(w))
			if err != nil {
				return res, err
			}
			if !dirty {
				continue
			}
			finished, err := finishMove(ctx, g.In(w), st, w, baseTip)
			if err != nil {
				return res, err
			}
			if finished {
				res.Finished = append(res.Finished, w)
			}
		}
		if already {
			res.Already, res.Commit, res.Accepted = true, baseTip, nil
			return res, nil
		}
		if err := checkCommitted(ctx, g, rec, strings.TrimPrefix(ref, "refs/heads/"), baseTip, tip); err != nil {
			return res, err
		}
		tree, conflicts, err := st.MergeTrees(ctx, baseTip, tip)
		if err != nil {
			return res, err
		}
		if tree == "" {
			return res, &ConflictError{Base: strings.TrimPrefix(ref, "refs/heads/"), Paths: uniq(conflicts)}
		}
		if res.Kept, err = checkoutsAllow(ctx, g, st, ref, wts, baseTip, tree); err != nil {
			return res, err
		}
		msg := fmt.Sprintf("Merge task %s: %s\n\nAgentmine-Task: %s\nAgentmine-Session: %s\n", s.Task[:8], title, s.Task, s.ID) + acceptedTrailers(accepted)
		res.Commit, err = st.CommitTree(ctx, tree, []string{baseTip, tip}, msg)
		if err != nil {
			return res, fmt.Errorf("writing the merge commit: %w", err)
		}
		// The ref and then the files of each checkout move under its
		// checkout lock, so that no supervisor's snapshot of that checkout
		// falls between the two.
		release := lockCheckouts(ctx, st, wts)
		if o.beforeUpdate != nil {
			o.beforeUpdate()
		}
		err = st.Transact(ctx, []gitstore.RefOp{{Verb: "update", Ref: ref, New: res.Commit, Old: baseTip}})
		if errors.Is(err, gitstore.ErrConflict) {
			release()
			time.Sleep(time.Duration(attempt+1) * 20 * time.Millisecond)
			continue
		}
		if err != nil {
			release()
			return res, err
		}
		for _, w := range wts {
			st.RecordCheckout(w, baseTip, res.Commit)
			if _, err := g.In(w).Run(ctx, "read-tree", "-m", "-u", baseTip, res.Commit); err != nil {
				release()
				return res, fmt.Errorf("merged, but updating the checkout in %s failed (its files are still those of %s; once your changes there are out of the way, run git read-tree -m -u %s %s there): %w", w, baseTip[:12], baseTip[:12], res.Commit[:12], err)
			}
			res.Worktrees = append(res.Worktrees, w)
		}
		release()
		return res, nil
	}
	return res, exitcode.New(exitcode.State, fmt.Errorf("%s kept moving during %d merge attempts", ref, attempts), "try again")
}

// uncommitted reports whether the checkout g runs in has changes to
// tracked files, staged or not.
func uncommitted(ctx context.Context, g gitcmd.Runner) (bool, error) {
	out, err := g.Output(ctx, "status", "--porcelain", "--untracked-files=no")
	if err != nil {
		return false, fmt.Errorf("checking %s: %w", g.Dir, err)
	}
	return out != "", nil
}

// inProgress are the files, in a checkout's git dir, of an operation a
// person is in the middle of there.
var inProgress = []string{"MERGE_HEAD", "REVERT_HEAD", "CHERRY_PICK_HEAD", "rebase-merge", "rebase-apply", "sequencer", "BISECT_LOG"}

// finishMove completes the update of the checkout in dir (g runs there)
// when an earlier merge moved its branch to tip and was stopped — killed,
// or its machine went down — between the ref update and the files
// following, which leaves the checkout looking as if someone had staged
// the merge's undoing. It acts only when every fact says that is what
// happened: the journal holds the record of moving that checkout to tip
// from some commit; under the checkout's lock, HEAD is tip, no merge,
// revert, cherry-pick, rebase or bisect is in progress there, the index
// is exactly the tree of the commit it came from, and the files match the
// index or are what the update stopped partway leaves (halfUpdated). Then
// nothing in the checkout is anyone's work and the update that was cut
// short is the one to run; anything else is left to the user, and
// finishMove reports false.
func finishMove(ctx context.Context, g gitcmd.Runner, st *gitstore.Store, dir, tip string) (bool, error) {
	entries, err := st.ReadJournal(time.Time{})
	if err != nil {
		return false, nil // no evidence: the user decides
	}
	from := ""
	for i := len(entries) - 1; i >= 0 && from == ""; i-- {
		if e := entries[i]; e.Op == gitstore.JournalCheckout && e.Checkout == dir && e.New == tip {
			from = e.Old
		}
	}
	if from == "" {
		return false, nil
	}
	release := lockCheckouts(ctx, st, []string{dir})
	defer release()
	if head, err := g.Output(ctx, "rev-parse", "--verify", "-q", "HEAD"); err != nil || head != tip {
		return false, nil
	}
	paths, err := g.Output(ctx, append([]string{"rev-parse"}, gitPaths(inProgress)...)...)
	if err != nil {
		return false, fmt.Errorf("checking %s: %w", dir, err)
	}
	for _, p := range strings.Split(paths, "\n") {
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		if _, err := os.Lstat(p); err == nil {
			return false, nil
		}
	}
	// Exit 1 is a difference; any other failure (the commit missing, say)
	// is no evidence either.
	if _, err := g.Run(ctx, "diff-index", "--cached", "--quiet", from, "--"); err != nil {
		return false, nil
	}
	differ, err := g.Run(ctx, "diff", "--name-only", "-z", "--no-renames")
	if err != nil {
		return false, nil
	}
	args := []string{"read-tree", "-m", "-u", from, tip}
	if len(differ) > 0 {
		// Some files differ from the index: an update cut short while it
		// wrote them, or someone's edits.
		if half, err := halfUpdated(ctx, g, dir, from, tip, differ); err != nil || !half {
			return false, nil
		}
		// Every file is from's or tip's: making them all tip's loses
		// nothing. read-tree -m would refuse the files already moved.
		args = []string{"read-tree", "--reset", "-u", tip}
	}
	st.RecordCheckout(dir, from, tip)
	if _, err := g.Run(ctx, args...); err != nil {
		return false, fmt.Errorf("finishing the update of %s that an interrupted merge left undone: %w", dir, err)
	}
	return true, nil
}

// halfUpdated reports whether the files of the checkout in dir (g runs
// there), whose index is from's tree, are what an update from from to tip
// stopped partway leaves (read-tree writes the files, then the index):
// every file that differs from the index (differ, as `git diff --name-only
// -z` lists them) is one the update changes, and every file the update
// changes holds either from's content and mode or tip's (absent where that
// side has none). Symbolic links and submodules among the changes, and
// anything it cannot read, count as no.
func halfUpdated(ctx context.Context, g gitcmd.Runner, dir, from, tip string, differ []byte) (bool, error) {
	type side struct{ mode, blob string }
	out, err := g.Run(ctx, "diff-tree", "-r", "-z", "--no-renames", from, tip)
	if err != nil {
		return false, err
	}
	changed := map[string][2]side{}
	fields := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	for i := 0; i+1 < len(fields); i += 2 {
		meta := strings.Fields(strings.TrimPrefix(fields[i], ":"))
		if len(meta) != 5 {
			return false, fmt.Errorf("reading diff-tree: unexpected line %q", fields[i])
		}
		changed[fields[i+1]] = [2]side{{meta[0], meta[2]}, {meta[1], meta[3]}}
	}
	for _, p := range strings.Split(string(differ), "\x00") {
		if _, ok := changed[p]; p != "" && !ok {
			return false, nil
		}
	}
	// What each changed path holds now: a mode and a blob, or nothing.
	var hashed []string
	now := map[string]side{}
	for p, c := range changed {
		if strings.Contains(p, "\n") { // hash-object reads paths a line each
			return false, nil
		}
		for _, s := range c {
			if s.mode == "120000" || s.mode == "160000" {
				return false, nil
			}
		}
		fi, err := os.Lstat(filepath.Join(dir, p))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			now[p] = side{"000000", strings.Repeat("0", len(c[0].blob))}
		case err != nil || !fi.Mode().IsRegular():
			return false, nil
		default:
			mode := "100644"
			if fi.Mode()&0o111 != 0 {
				mode = "100755"
			}
			now[p] = side{mode: mode}
			hashed = append(hashed, p)
		}
	}
	if len(hashed) > 0 {
		out, err := g.RunInput(ctx, strings.NewReader(strings.Join(hashed, "\n")+"\n"), "hash-object", "--stdin-paths")
		if err != nil {
			return false, err
		}
		blobs := strings.Fields(string(out))
		if len(blobs) != len(hashed) {
			return false, fmt.Errorf("hash-object gave %d ids for %d files", len(blobs), len(hashed))
		}
		for i, p := range hashed {
			s := now[p]
			s.blob = blobs[i]
			now[p] = s
		}
	}
	for p, c := range changed {
		if now[p] != c[0] && now[p] != c[1] {
			return false, nil
		}
	}
	return true, nil
}

// gitPaths is rev-parse's arguments resolving each name in the git dir.
func gitPaths(names []string) []string {
	var args []string
	for _, n := range names {
		args = append(args, "--git-path", n)
	}
	return args
}

// lockCheckouts takes the checkout locks of dirs (gitstore.LockCheckout) in
// a fixed order and returns what releases them all.
func lockCheckouts(ctx context.Context, st *gitstore.Store, dirs []string) func() {
	sorted := append([]string(nil), dirs...)
	sort.Strings(sorted)
	var releases []func()
	for _, d := range sorted {
		release, _ := st.LockCheckout(ctx, d, gitstore.CheckoutLockWait)
		releases = append(releases, release)
	}
	return func() {
		for i := len(releases) - 1; i >= 0; i-- {
			releases[i]()
		}
	}
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
