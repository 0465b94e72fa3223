package main

import (
	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/status"
	"github.com/git-agentmine/git-agentmine/tasks"
)

// sessionInfo is the latest session shown with a task (filled in by the
// worker commands once sessions exist).
type sessionInfo struct{}

// gatherFacts collects the session facts the resolver needs. Until sessions
// exist, every task resolves from its own stored facts.
func gatherFacts(a *App, st *gitstore.Store, b *tasks.Board) (status.Facts, error) {
	return status.Facts{}, nil
}

func latestSession(a *App, v *view, id string) *sessionInfo { return nil }

func printSessionSummary(a *App, v *view, id string) {}
