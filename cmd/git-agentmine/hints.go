package main

import (
	"fmt"
	"strings"

	"github.com/git-agentmine/git-agentmine/agents"
	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/isolation"
	"github.com/git-agentmine/git-agentmine/memory"
	"github.com/git-agentmine/git-agentmine/merge"
	"github.com/git-agentmine/git-agentmine/pipeline"
	"github.com/git-agentmine/git-agentmine/replica"
	"github.com/git-agentmine/git-agentmine/roles"
	"github.com/git-agentmine/git-agentmine/worker"
)

// hintFor returns the "hint:" line for a failed command. Only the CLI
// names its own commands: the core returns typed errors that say what went
// wrong, with the ids involved, and this is where they become a command to
// run next. The error tree is searched as errors.As does (depth first, the
// outer error before what it wraps), and the first error with advice wins:
// a typed error known here, or an *exitcode.Error with a hint (the core's
// hints that name no command, such as "pass --force").
func hintFor(err error) string {
	return exitcode.FindHint(err, typedHint)
}

// typedHint is the advice for one error of the core's typed errors, ""
// for any other error (its chain is not searched).
func typedHint(err error) string {
	if err == replica.ErrNoRemote {
		return "set one with: git agentmine init --remote NAME (or git config agentmine.remote NAME), or name it: git agentmine sync NAME"
	}
	if err == pipeline.ErrNothingToRun {
		return "add one with: git agentmine task add TITLE"
	}
	if err == isolation.ErrUnavailable {
		return "see what this machine can give with: git agentmine doctor; or set fallback = true under the agent's [isolation]"
	}
	switch e := err.(type) {
	case *gitstore.NotFoundError:
		return fmt.Sprintf("list them with: git agentmine %s list", e.Noun)
	case *gitstore.AmbiguousError:
		return "give more digits of the id"
	case *gitstore.UnreadableError:
		if e.Noun == "memory" {
			return "remove it with: git agentmine memory remove " + e.ID
		}
	case *agents.UnknownError:
		if len(e.Known) == 0 {
			return "no agents are defined; run: git agentmine init"
		}
		return "known agents: " + strings.Join(e.Known, ", ")
	case *agents.InvalidError:
		return "see every problem with: git agentmine agent validate " + e.Name
	case *worker.RefusedError:
		return workerHint(e)
	case *pipeline.RunningError:
		return "see it with: git agentmine run status " + e.Name + "; stop it with: git agentmine run stop " + e.Name
	case *pipeline.HeldError:
		return "wait for it (git agentmine run status " + e.Other + "), stop it (git agentmine run stop " + e.Other + "), or run other tasks"
	case *pipeline.NotFoundError:
		return "list the runs with: git agentmine run status"
	case *roles.NoAgentError:
		return "define one with role = \"" + e.Role + "\" in " + agents.Dir + "/" + e.Role + ".toml (git agentmine init scaffolds it)"
	case *roles.InfraError:
		if e.Session != "" {
			return "see its log: git agentmine session show " + e.Session[:8] + "; nothing was recorded on the task"
		}
	case *roles.ChangedError:
		return "see its log: git agentmine session show " + e.Session[:8]
	case *merge.VerdictError:
		return "see why: git agentmine task show " + e.Task + "; run it again with: git agentmine worker run " + e.Task + " --exec --replace"
	case *merge.ScopeError:
		return "see its commits: git log --stat " + e.Base + ".." + e.Branch + "; run it again with: git agentmine worker run " + e.Task + " --exec --replace"
	case *memory.UnknownCategoryError:
		return "start it with --new-category, or add it to the memory_categories setting"
	case *merge.ConflictError:
		return "run it again on the fresh " + e.Base + ": git agentmine worker run " + e.Task + " --exec --replace"
	case *merge.CheckoutError:
		if e.Why == merge.WhyOverwrite {
			return "commit, stash or move those paths in " + e.Dir + ", then merge again: git agentmine merge " + e.Task
		}
		return "finish or abort what is under way in " + e.Dir + " (see git status there), then merge again: git agentmine merge " + e.Task
	case *merge.MainCheckoutError:
		return "if you made these changes yourself, merge with: git agentmine merge " + e.Task + " --accept-main-changes (see them: git agentmine task show " + e.Task + ")"
	case *merge.RefusedError:
		switch e.Reason {
		case merge.ErrNoSession:
			return "run one with: git agentmine worker run " + e.Task + " --exec"
		case merge.ErrNotEnded:
			return "wait for it: git agentmine worker wait " + e.Task
		}
	}
	return ""
}

// workerHint is the next step after worker refused to act.
func workerHint(e *worker.RefusedError) string {
	switch e.Reason {
	case worker.ErrStarting:
		return "see it with: git agentmine task show " + e.Task
	case worker.ErrCancelled:
		return "reopen it first: git agentmine task reopen " + e.Task
	case worker.ErrTainted:
		return "look at what reached the base, then reopen the task to run it again: git agentmine task reopen " + e.Task
	case worker.ErrGoal:
		return "run one of its children (git agentmine task list --parent " + e.Task + " --status ready), or all of them: git agentmine run " + e.Task
	case worker.ErrRunning:
		return "wait for it (git agentmine worker wait " + e.Task + ") or stop it (git agentmine worker stop " + e.Task + ")"
	case worker.ErrLeftover:
		return "remove it with: git agentmine worker done " + e.Task + " (or pass --replace)"
	case worker.ErrSessionLive:
		return "stop it first: git agentmine worker stop " + e.Task
	case worker.ErrWorktreeInUse:
		return fmt.Sprintf("end that process (kill %d) or leave the worktree, then run again: git agentmine worker done %s", e.Pid, e.Task)
	case worker.ErrBlockedByCancelled:
		return unblockHint(e.Task, e.Blockers)
	case worker.ErrNotEnded:
		return "record its outcome first (git agentmine session end " + e.Session + " --exit-code N), or pass --force to abandon it"
	}
	return ""
}

// unblockHint says how to unblock a task that waits on cancelled blockers:
// remove them from it, or reopen them (or pass --force to run it anyway).
func unblockHint(task string, blockers []string) string {
	rm := ""
	for _, b := range blockers {
		rm += " --remove-blocked-by " + b
	}
	return "remove the blocker: git agentmine task update " + task + rm + "; or reopen it: git agentmine task reopen " + strings.Join(blockers, " ")
}
