package worktree

import (
	"context"
	"fmt"

	"github.com/git-agentmine/git-agentmine/gitcmd"
)

// AddDetached checks out commit in a new detached worktree at dir (which
// must not exist or be empty), with the given non-cone sparse-checkout
// patterns when sparse is not nil. It is for short-lived checkouts such as
// the one the Definition of Done runs in. The registration happens under
// the same repository lock as Create and Remove: git commands that list
// worktrees fail on one that is half-created, so no two agentmine processes
// may add worktrees at the same moment. Remove it with Remove.
func AddDetached(ctx context.Context, repo, dir, commit string, sparse []string) error {
	loc, err := gitcmd.Locate(ctx, repo)
	if err != nil {
		return fmt.Errorf("add detached worktree: %w", err)
	}
	git := gitcmd.Runner{Dir: repo}
	lock, err := lockRepo(ctx, loc.CommonDir)
	if err != nil {
		return fmt.Errorf("add detached worktree: %w", err)
	}
	if _, err := git.Run(ctx, "worktree", "add", "--quiet", "--detach", "--no-checkout", dir, commit); err != nil {
		lock.unlock()
		return fmt.Errorf("add detached worktree: %w", err)
	}
	wt := gitcmd.Runner{Dir: dir}
	gitDir, err := linkedGitDir(dir)
	if err == nil && sparse != nil {
		on, _ := wt.Output(ctx, "config", "--type=bool", "--get", "extensions.worktreeConfig")
		err = enableSparse(ctx, wt, gitDir, on == "true", "")
	}
	lock.unlock()
	if err == nil && sparse != nil {
		err = writePatterns(gitDir, sparse)
	}
	if err == nil {
		_, err = wt.Run(ctx, "-c", "checkout.workers=0", "reset", "--quiet", "--hard", commit)
	}
	if err != nil {
		Remove(context.WithoutCancel(ctx), repo, dir, "", true)
		return fmt.Errorf("add detached worktree: %w", err)
	}
	return nil
}
