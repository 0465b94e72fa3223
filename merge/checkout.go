package merge

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/gitcmd"
	"github.com/git-agentmine/git-agentmine/gitstore"
)

// CheckoutError is a refusal to merge because a checkout of the base
// branch holds a person's work that the merge would overwrite or disturb
// (exit code State): changed, staged, untracked or ignored files at paths
// the merge changes, unmerged paths, an operation in progress there (a
// merge, revert, rebase…), or an update that an interrupted merge left
// undone beside other changes. Nothing was changed; once that is out of
// the way the same merge goes through. Paths lists what is in the way,
// first path first; Why says how (see Error).
type CheckoutError struct {
	Task    string
	Session string
	Base    string
	Dir     string
	Paths   []string
	// Why completes "<base> is checked out in <dir> with uncommitted
	// changes ...": "the merge would overwrite" when the merge and the
	// person's changes touch the same paths.
	Why string
}

// Why a checkout stops a merge (CheckoutError.Why).
const (
	WhyOverwrite   = "the merge would overwrite"
	WhyUnmerged    = "left unmerged"
	WhyInProgress  = "during an operation in progress"
	WhyInterrupted = "beside an update an interrupted merge left undone"
)

func (e *CheckoutError) Error() string {
	why := e.Why
	if why == "" {
		why = WhyOverwrite
	}
	s := fmt.Sprintf("%s is checked out in %s with uncommitted changes %s: %s", e.Base, e.Dir, why, strings.Join(first(e.Paths, maxNamed), ", "))
	if n := len(e.Paths); n > maxNamed {
		s += fmt.Sprintf(" (+%d more)", n-maxNamed)
	}
	return s
}

// ExitCode is exitcode.State: the repository's state, not the session,
// stops the merge.
func (e *CheckoutError) ExitCode() int { return exitcode.State }

func first(xs []string, n int) []string {
	if len(xs) > n {
		return xs[:n]
	}
	return xs
}

// checkoutsAllow checks that updating each checkout in wts (which have
// ref checked out) from baseTip to tree loses none of a person's work
// there, as git checkout would: the merge may go on beside uncommitted
// and untracked files as long as it changes none of their paths. It
// returns those paths, as Result.Kept lists them.
func checkoutsAllow(ctx context.Context, g gitcmd.Runner, st *gitstore.Store, ref string, wts []string, baseTip, tree string) (kept []string, err error) {
	if len(wts) == 0 {
		return nil, nil
	}
	out, err := g.Run(ctx, "diff-tree", "-r", "-z", "--name-only", "--no-renames", baseTip, tree)
	if err != nil {
		return nil, fmt.Errorf("listing what the merge changes: %w", err)
	}
	changed := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	sort.Strings(changed)
	base := strings.TrimPrefix(ref, "refs/heads/")
	for _, w := range wts {
		if ops, err := operations(ctx, g.In(w), w); err != nil || len(ops) > 0 {
			if err != nil {
				return nil, err
			}
			return nil, &CheckoutError{Base: base, Dir: w, Paths: ops, Why: WhyInProgress}
		}
		mine, unmerged, shown, tracked, err := personPaths(ctx, g.In(w))
		if err != nil {
			return nil, err
		}
		if len(unmerged) > 0 {
			return nil, &CheckoutError{Base: base, Dir: w, Paths: unmerged, Why: WhyUnmerged}
		}
		if tracked {
			if undone := undoneUpdate(ctx, g.In(w), st, w, baseTip); len(undone) > 0 {
				return nil, &CheckoutError{Base: base, Dir: w, Paths: undone, Why: WhyInterrupted}
			}
		}
		if hit := overlap(mine, changed); len(hit) > 0 {
			return nil, &CheckoutError{Base: base, Dir: w, Paths: hit, Why: WhyOverwrite}
		}
		for _, p := range shown {
			kept = append(kept, w+": "+p)
		}
	}
	return kept, nil
}

// operations names the operations in progress in the checkout at dir (g
// runs there): the files of inProgress its git dir holds.
func operations(ctx context.Context, g gitcmd.Runner, dir string) ([]string, error) {
	paths, err := g.Output(ctx, append([]string{"rev-parse"}, gitPaths(inProgress)...)...)
	if err != nil {
		return nil, fmt.Errorf("checking %s: %w", dir, err)
	}
	var ops []string
	for i, p := range strings.Split(paths, "\n") {
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		if _, err := os.Lstat(p); err == nil && i < len(inProgress) {
			ops = append(ops, inProgress[i])
		}
	}
	return ops, nil
}

// undoneUpdate returns the paths of an update of the checkout at dir (g
// runs there) that a merge moved to head and that was interrupted before
// its files followed, and that finishMove could not finish because
// something else is in the checkout too: the journal records moving the
// checkout from some commit to head, and the index still holds that
// commit's version of paths the move changed. Merging on top would leave
// that undoing staged as if it were the person's. nil when there is none
// or nothing says so.
func undoneUpdate(ctx context.Context, g gitcmd.Runner, st *gitstore.Store, dir, head string) []string {
	entries, err := st.ReadJournal(time.Time{})
	if err != nil {
		return nil
	}
	from := ""
	for i := len(entries) - 1; i >= 0 && from == ""; i-- {
		if e := entries[i]; e.Op == gitstore.JournalCheckout && e.Checkout == dir && e.New == head {
			from = e.Old
		}
	}
	if from == "" {
		return nil
	}
	moved, err := g.Run(ctx, "diff-tree", "-r", "-z", "--name-only", "--no-renames", from, head)
	if err != nil {
		return nil
	}
	// Paths whose index entry is not from's.
	differ, err := g.Run(ctx, "diff-index", "--cached", "-z", "--name-only", "--no-renames", from, "--")
	if err != nil {
		return nil
	}
	notFrom := map[string]bool{}
	for _, p := range strings.Split(string(differ), "\x00") {
		notFrom[p] = true
	}
	var undone []string
	for _, p := range strings.Split(strings.TrimSuffix(string(moved), "\x00"), "\x00") {
		if p != "" && !notFrom[p] {
			undone = append(undone, p)
		}
	}
	return undone
}

// personPaths lists the paths of the checkout g runs in that differ from
// its HEAD: changed or staged, untracked and ignored ones (an untracked or
// ignored directory as "dir/"); separately the unmerged ones, and the
// ones a person sees as changes (all but the ignored). tracked says some
// tracked path differs.
func personPaths(ctx context.Context, g gitcmd.Runner) (paths, unmerged, shown []string, tracked bool, err error) {
	out, err := g.Run(ctx, "status", "--porcelain=v1", "-z", "--untracked-files=normal", "--ignored=matching", "--no-renames")
	if err != nil {
		return nil, nil, nil, false, fmt.Errorf("checking %s: %w", g.Dir, err)
	}
	for _, e := range strings.Split(string(out), "\x00") {
		if len(e) < 4 {
			continue
		}
		xy, p := e[:2], e[3:]
		switch xy {
		case "DD", "AU", "UD", "UA", "DU", "AA", "UU":
			unmerged = append(unmerged, p)
		case "??", "!!":
		default:
			tracked = true
		}
		paths = append(paths, p)
		if xy != "!!" {
			shown = append(shown, p)
		}
	}
	return paths, unmerged, shown, tracked, nil
}

// overlap returns the paths of mine that the merge's changes touch: the
// same path, a directory of mine ("dir/") holding a changed path, or a
// path of mine beneath a changed path (a file the merge turns into a
// directory or back). changed is sorted.
func overlap(mine, changed []string) []string {
	var hit []string
	for _, m := range mine {
		dir := strings.TrimSuffix(m, "/")
		if touches(dir, changed) {
			hit = append(hit, m)
		}
	}
	sort.Strings(hit)
	return hit
}

// touches reports whether p, a changed path beneath it, or a changed
// path that is one of its parents, is in changed (sorted).
func touches(p string, changed []string) bool {
	if i := sort.SearchStrings(changed, p); i < len(changed) && changed[i] == p {
		return true
	}
	if i := sort.SearchStrings(changed, p+"/"); i < len(changed) && strings.HasPrefix(changed[i], p+"/") {
		return true
	}
	for d := p; ; {
		j := strings.LastIndexByte(d, '/')
		if j < 0 {
			return false
		}
		d = d[:j]
		if k := sort.SearchStrings(changed, d); k < len(changed) && changed[k] == d {
			return true
		}
	}
}
