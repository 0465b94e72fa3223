package verify

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"

	"github.com/git-agentmine/git-agentmine/gitcmd"
	"github.com/git-agentmine/git-agentmine/scope"
)

// DefaultExtras returns the locations outside a worktree that a run should
// watch: the repository's hooks directory, its shared config and info
// directory (info/exclude can hide files from git status), the worktree's
// own config.worktree and info directory (sparse-checkout patterns), all as
// KindGitInternals, and the directory holding the worktree, as KindOutside
// (a worker writing to ../ lands there). Sibling worktrees in that directory
// (entries holding a .git) are skipped.
//
// Only what these locations directly contain is seen: a write two levels
// up, or anywhere else on the machine, is not. Other workers share the
// common git directory, so an event there may come from any of them.
func DefaultExtras(ctx context.Context, worktree string) ([]Extra, error) {
	loc, err := gitcmd.Locate(ctx, worktree)
	if err != nil {
		return nil, fmt.Errorf("find git directories of %s: %w", worktree, err)
	}
	return ExtrasAt(ctx, loc, worktree), nil
}

// ExtrasAt is DefaultExtras for a worktree whose git directories (loc, as
// gitcmd.Locate gives them) are known already.
func ExtrasAt(ctx context.Context, loc gitcmd.Location, worktree string) []Extra {
	extras := []Extra{
		{Path: filepath.Join(loc.CommonDir, "hooks"), Kind: KindGitInternals},
		{Path: filepath.Join(loc.CommonDir, "config"), Kind: KindGitInternals},
		{Path: filepath.Join(loc.CommonDir, "info"), Kind: KindGitInternals},
	}
	if filepath.Clean(loc.GitDir) != filepath.Clean(loc.CommonDir) {
		extras = append(extras,
			Extra{Path: filepath.Join(loc.GitDir, "config.worktree"), Kind: KindGitInternals},
			Extra{Path: filepath.Join(loc.GitDir, "info"), Kind: KindGitInternals},
		)
	}
	top := loc.Top
	if top == "" {
		top = worktree
	}
	parent := filepath.Dir(top)
	self := filepath.Base(top)
	// Siblings are skipped only if git has them registered as worktrees
	// (other sessions'): a directory the worker makes and puts a .git in is
	// still reported. The list is read once, when the watch stops.
	var once sync.Once
	registered := map[string]bool{}
	extras = append(extras, Extra{Path: parent, Kind: KindOutside, Skip: func(name string) bool {
		if name == self {
			return true
		}
		once.Do(func() {
			out, err := (gitcmd.Runner{Dir: top}).Run(context.WithoutCancel(ctx), "worktree", "list", "--porcelain")
			if err != nil {
				return
			}
			for _, l := range strings.Split(string(out), "\n") {
				if p, ok := strings.CutPrefix(l, "worktree "); ok && filepath.Dir(p) == parent {
					registered[filepath.Base(p)] = true
				}
			}
		})
		return registered[name]
	}})
	return extras
}

// IgnoreGenerated returns an Ignore function for WatchOptions that matches
// the generated paths the same way Input.Generated does (a path, or
// everything beneath a directory).
func IgnoreGenerated(paths []string) func(rel string) bool {
	g := newGenerated(paths)
	return g.match
}

// EventJudge judges single live events against a scope, for --strict runs
// that stop the worker at the first out-of-scope change. It is not safe for
// concurrent use; the watcher calls OnEvent from one goroutine.
type EventJudge struct {
	c *checker
}

// NewEventJudge returns a judge for spec that never blames generated paths.
func NewEventJudge(spec scope.Spec, generated []string) *EventJudge {
	c := &checker{in: Input{Scope: spec}, gen: newGenerated(generated), found: map[string]int{},
		access: map[string]scope.Access{}, excluded: map[string]bool{}}
	return &EventJudge{c: c}
}

// Judge returns the violation e represents, if any.
func (j *EventJudge) Judge(e Event) (Violation, bool) {
	j.c.violations = j.c.violations[:0]
	clear(j.c.found)
	j.c.checkLive(Record{Touched: []Touch{{Path: e.Path, Kind: e.Kind, Ops: []string{e.Op}, Dir: e.Dir}}})
	if len(j.c.violations) == 0 {
		return Violation{}, false
	}
	return j.c.violations[0], true
}
