package worktree

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/gitcmd"
)

// Remove deletes the linked worktree at path of the repository containing
// repo, then, when branch is not empty, the branch. Write permission is
// restored first (otherwise `git worktree remove --force` unregisters the
// worktree and then fails half-way, leaving an orphan directory).
//
// Untracked files (the generated prompt, memory and context files) never
// stop the removal. Without force, uncommitted changes to tracked files
// do, and the branch is deleted only if it is merged into the repository's
// HEAD (`git branch -d`); with force, the changes are discarded and the
// branch deleted regardless. A worktree directory that is already gone
// is pruned from git's records.
func Remove(ctx context.Context, repo, path, branch string, force bool) error {
	if path == "" {
		return exitcode.New(exitcode.Usage, errors.New("remove worktree: no path given"), "")
	}
	if repo == "" {
		repo = "."
	}
	loc, err := gitcmd.Locate(ctx, repo)
	if err != nil {
		return fmt.Errorf("remove worktree: %w", err)
	}
	// Run git from the main worktree, so that removing the worktree we
	// were called from does not pull the ground from under git.
	top := loc.Top
	if filepath.Base(loc.CommonDir) == ".git" {
		top = filepath.Dir(loc.CommonDir)
	}
	git := gitcmd.Runner{Dir: top}
	abs, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("remove worktree: %w", err)
	}
	lock, err := lockRepo(ctx, loc.CommonDir)
	if err != nil {
		return fmt.Errorf("remove worktree: %w", err)
	}
	defer lock.unlock()
	registered, err := isRegistered(ctx, git, abs)
	if err != nil {
		return fmt.Errorf("remove worktree: %w", err)
	}
	_, statErr := os.Lstat(abs)
	exists := statErr == nil
	switch {
	case !registered && !exists:
		return exitcode.New(exitcode.NotFound, fmt.Errorf("remove worktree: %s does not exist", abs), "")
	case !registered:
		return exitcode.New(exitcode.NotFound, fmt.Errorf("remove worktree: %s is not a worktree of this repository", abs), "")
	}
	if exists {
		if !force {
			wt := gitcmd.Runner{Dir: abs}
			out, err := wt.Output(ctx, "status", "--porcelain", "--untracked-files=no")
			if err != nil {
				return fmt.Errorf("remove worktree: %w", err)
			}
			if out != "" {
				return exitcode.New(exitcode.State,
					fmt.Errorf("remove worktree: %s has uncommitted changes", abs),
					"commit them in the worktree, or force the removal to discard them")
			}
		}
		if err := MakeWritable(abs); err != nil {
			return fmt.Errorf("remove worktree: %w", err)
		}
		if _, err := git.Run(ctx, "worktree", "remove", "--force", abs); err != nil {
			// Do not leave an orphan directory behind.
			if _, statErr := os.Lstat(abs); statErr == nil {
				if rmErr := os.RemoveAll(abs); rmErr != nil {
					return fmt.Errorf("remove worktree: %w (and deleting the directory failed: %v)", err, rmErr)
				}
			}
		}
	}
	if _, err := git.Run(ctx, "worktree", "prune"); err != nil {
		return fmt.Errorf("remove worktree: %w", err)
	}
	if branch == "" || !branchExists(ctx, git, branch) {
		return nil
	}
	flag := "-d"
	if force {
		flag = "-D"
	}
	if _, err := git.Run(ctx, "branch", flag, "--", branch); err != nil {
		if gitcmd.IsExit(err, 1) && !force {
			return exitcode.New(exitcode.State,
				fmt.Errorf("remove worktree: branch %s is not merged; the worktree is removed, the branch kept", branch),
				"merge it first, or force the removal to delete it")
		}
		return fmt.Errorf("remove worktree: delete branch %s: %w", branch, err)
	}
	return nil
}

// isRegistered reports whether git lists path as one of its worktrees.
func isRegistered(ctx context.Context, git gitcmd.Runner, path string) (bool, error) {
	out, err := git.Run(ctx, "worktree", "list", "--porcelain", "-z")
	if err != nil {
		return false, err
	}
	want := cleanAbs(path)
	for _, field := range strings.Split(string(out), "\x00") {
		if p, ok := strings.CutPrefix(field, "worktree "); ok && cleanAbs(p) == want {
			return true, nil
		}
	}
	return false, nil
}

// cleanAbs resolves symbolic links where possible, so that paths git
// prints compare equal to the caller's.
func cleanAbs(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
		// A deleted worktree: resolve its parent instead.
		if r, err := filepath.EvalSymlinks(filepath.Dir(p)); err == nil {
			return filepath.Join(r, filepath.Base(p))
		}
	}
	return filepath.Clean(p)
}
