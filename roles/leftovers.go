package roles

import (
	"context"
	"os"
	"time"

	"github.com/git-agentmine/git-agentmine/board"
	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/sessions"
	"github.com/git-agentmine/git-agentmine/worker"
	"github.com/git-agentmine/git-agentmine/worktree"
)

// CleanLeftovers removes the read-only worktrees of planner and reviewer
// runs that are over but still have one: a run whose process was killed
// before it could remove its worktree (SIGKILL, a crash). Only runs judged
// here (this host, this repository) that are no longer live count; a run
// still going, or one on another machine, is left alone. It returns the
// worktrees removed. Run calls it before each run, so a killed loop leaves
// nothing behind once it runs again.
func CleanLeftovers(ctx context.Context, env *worker.Env) ([]string, error) {
	recs, _, err := sessions.LoadAll(ctx, env.St)
	if err != nil {
		return nil, err
	}
	here := board.HereOf(env.St)
	now := time.Now()
	var removed []string
	for _, r := range recs {
		s := r.Session
		if s.IsAttempt() || s.Worktree == "" || !here.Judges(s) {
			continue
		}
		if live, _ := board.Liveness(r, here, now); live {
			continue
		}
		if _, err := os.Lstat(s.Worktree); err != nil {
			continue
		}
		worktree.MakeWritable(s.Worktree)
		end := env.St.BeginWorktree(gitstore.JournalWorktreeRemove, s.Worktree)
		err := worktree.Remove(ctx, env.Top, s.Worktree, "", true)
		end()
		if err != nil {
			return removed, err
		}
		removed = append(removed, s.Worktree)
	}
	return removed, nil
}
