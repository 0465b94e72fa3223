package mcpserver

import (
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/git-agentmine/git-agentmine/agents"
	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/merge"
	"github.com/git-agentmine/git-agentmine/worker"
)

// toolError turns a failure into a tool error: the command line's one-line
// message, the name and number of its exit code, and, when there is a next
// step, a hint naming the tool for it. For example:
//
//	error: task 9f9f not found
//	exit: not_found (5)
//	hint: list the tasks with task_list
func toolError(err error) *mcp.CallToolResult {
	code := exitcode.Of(err)
	text := fmt.Sprintf("error: %s\nexit: %s (%d)", firstLine(err.Error()), exitcode.Name(code), code)
	if h := hintFor(err); h != "" {
		text += "\nhint: " + h
	}
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

// hintFor returns the next step after a failure, searching the error tree
// as errors.As does: a typed error of the core known here, whose next step
// is a tool, or a hint the core gave (which names no command).
func hintFor(err error) string {
	return exitcode.FindHint(err, typedHint)
}

// typedHint is the advice for one of the core's typed errors, "" for any
// other error (its chain is not searched).
func typedHint(err error) string {
	switch e := err.(type) {
	case *gitstore.NotFoundError:
		switch e.Noun {
		case "task":
			return "list the tasks with task_list"
		case "memory":
			return "list the memories with memory_list"
		case "session":
			return "task_show names a task's latest session; session_status takes a task too"
		}
	case *gitstore.AmbiguousError:
		return "give more digits of the id"
	case *agents.UnknownError:
		if len(e.Known) == 0 {
			return "no agents are defined in .agentmine/agents"
		}
		return "known agents: " + strings.Join(e.Known, ", ")
	case *worker.RefusedError:
		switch e.Reason {
		case worker.ErrStarting:
			return "see it with task_show"
		case worker.ErrTainted:
			return "look at what reached the base first; the command line's task reopen lets the task run again"
		case worker.ErrRunning, worker.ErrSessionLive:
			return "follow it with session_output until it ends"
		case worker.ErrLeftover:
			return "pass replace: true to worker_start to remove it first"
		case worker.ErrNotEnded:
			return "pass force: true to worker_start to abandon it"
		case worker.ErrBlockedByCancelled:
			return "remove the cancelled blocker with task_update and remove_blocked_by: [\"" + strings.Join(e.Blockers, "\", \"") + "\"], or pass force: true to worker_start"
		}
	case *merge.MainCheckoutError:
		return "if the user made these changes in the main checkout, merge with accept_main_changes: true (task_show lists them)"
	case *merge.VerdictError, *merge.ScopeError:
		return "see why with task_show; start a new attempt with worker_start and replace: true"
	case *merge.ConflictError:
		return "start a new attempt on the fresh base with worker_start and replace: true"
	case *merge.CheckoutError:
		return "the user's checkout of the base is in the way (the paths are named); merge again once they have committed, stashed or moved them"
	case *merge.RefusedError:
		switch e.Reason {
		case merge.ErrNoSession:
			return "start one with worker_start"
		case merge.ErrNotEnded:
			return "follow it with session_output until it ends"
		}
	}
	return ""
}

// firstLine is the first line of s, trimmed: a tool error's message is one
// line, as the command line's is.
func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
