package pipeline

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/git-agentmine/git-agentmine/board"
	"github.com/git-agentmine/git-agentmine/worker"
)

// cleanUp removes what the task's ended sessions left once the task is
// done: the merged session's worktree and branch, and the branches of the
// attempts it superseded (their worktrees went when the next attempt
// replaced them). b is the board the merge was decided on; a session that
// still runs is never touched. What was removed, and what could not be,
// goes to the run's log.
func (s *Supervisor) cleanUp(ctx context.Context, b *board.Board, task string) {
	// The attempts a best-of round did not choose stay to be looked at
	// until `worker prune` removes them.
	recs := s.withoutLosers(ctx, task, b.SessionsOf(task))
	res, err := s.env.Prune(ctx, recs, worker.PruneOptions{Tasks: map[string]bool{task: true}})
	stamp := time.Now().Format("15:04:05")
	if err != nil {
		fmt.Fprintf(s.log, "%s task %s: cleaning up: %v\n", stamp, short(task), err)
		return
	}
	var removed []string
	for _, l := range res.Leftovers {
		if l.Err != "" {
			fmt.Fprintf(s.log, "%s task %s: cleaning up: could not remove %s %s: %s\n", stamp, short(task), l.Kind, l.Name, l.Err)
			continue
		}
		removed = append(removed, l.Kind+" "+l.Name)
	}
	if len(removed) > 0 {
		fmt.Fprintf(s.log, "%s task %s: done; removed %s\n", stamp, short(task), strings.Join(removed, ", "))
	}
}
