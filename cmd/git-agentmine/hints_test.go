package main

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/merge"
	"github.com/git-agentmine/git-agentmine/worker"
)

// TestEveryRefusalHasAHint fails when a reason the core can refuse with has
// no next step in the CLI (the testscripts reach most of them, not all:
// a lost race for the task lock, a live --exec session).
func TestEveryRefusalHasAHint(t *testing.T) {
	for _, r := range []error{worker.ErrStarting, worker.ErrCancelled, worker.ErrTainted, worker.ErrRunning, worker.ErrLeftover, worker.ErrSessionLive, worker.ErrNotEnded, worker.ErrWorktreeInUse, worker.ErrBlockedByCancelled} {
		err := fmt.Errorf("task 1a2b: %w", &worker.RefusedError{Reason: r, Task: "1a2b", Session: "5e55105e", Err: errors.New("refused")})
		if h := hintFor(err); !strings.Contains(h, "git agentmine ") || !strings.Contains(h, "1a2b") && !strings.Contains(h, "5e55105e") {
			t.Errorf("worker refusal %q: hint %q names no command with the id", r, h)
		}
		if exitcode.Of(err) != exitcode.State {
			t.Errorf("worker refusal %q: exit code %d", r, exitcode.Of(err))
		}
	}
	for _, r := range []error{merge.ErrNoSession, merge.ErrNotEnded} {
		err := &merge.RefusedError{Reason: r, Task: "1a2b", Err: errors.New("refused")}
		if h := hintFor(err); !strings.Contains(h, "git agentmine worker ") || !strings.Contains(h, "1a2b") {
			t.Errorf("merge refusal %q: hint %q", r, h)
		}
	}
	err := fmt.Errorf("not merging task 1a2b: %w", &merge.MainCheckoutError{Task: "1a2b", Session: "5e55105e", Paths: []string{"README.md"}})
	if h := hintFor(err); !strings.Contains(h, "git agentmine merge 1a2b --accept-main-changes") {
		t.Errorf("main-checkout refusal: hint %q", h)
	}
	if exitcode.Of(err) != exitcode.Failed || err.Error() != "not merging task 1a2b: session 5e55105e: the main checkout changed during its run: README.md" {
		t.Errorf("main-checkout refusal: %q, exit code %d", err, exitcode.Of(err))
	}
	// The merge's other typed refusals: each names the command to run next
	// and keeps its own exit code.
	for _, c := range []struct {
		err  error
		hint string
		code int
	}{
		{fmt.Errorf("not merging task 1a2b: %w", &merge.ScopeError{Task: "1a2b", Session: "5e55105e", Base: "main", Branch: "task-1a2b-s5e55105e", Findings: []merge.Finding{{Path: ".env", Why: "excluded"}}}),
			"git agentmine worker run 1a2b --exec --replace", exitcode.Failed},
		{&merge.ConflictError{Task: "1a2b", Base: "main", Paths: []string{"a.txt"}}, "git agentmine worker run 1a2b --exec --replace", exitcode.Failed},
		{&merge.CheckoutError{Task: "1a2b", Base: "main", Dir: "/r", Paths: []string{"a.txt"}, Why: merge.WhyOverwrite}, "git agentmine merge 1a2b", exitcode.State},
		{&merge.CheckoutError{Task: "1a2b", Base: "main", Dir: "/r", Paths: []string{"MERGE_HEAD"}, Why: merge.WhyInProgress}, "git agentmine merge 1a2b", exitcode.State},
	} {
		if h := hintFor(c.err); !strings.Contains(h, c.hint) {
			t.Errorf("%v: hint %q, want it to hold %q", c.err, h, c.hint)
		}
		if exitcode.Of(c.err) != c.code {
			t.Errorf("%v: exit code %d, want %d", c.err, exitcode.Of(c.err), c.code)
		}
	}
}

// TestHintOrder pins which advice wins when errors wrap each other: the
// outermost, searched as errors.As searches (kong joins the command's
// error, so joins are searched too).
func TestHintOrder(t *testing.T) {
	inner := exitcode.New(exitcode.State, errors.New("schema 99"), "upgrade git-agentmine")
	unreadable := exitcode.New(exitcode.State, &gitstore.UnreadableError{Noun: "memory", ID: "aaaa", Err: inner}, "")
	if h := hintFor(errors.Join(unreadable)); h != "remove it with: git agentmine memory remove aaaa" {
		t.Errorf("typed error outside a hinted one: %q", h)
	}
	task := exitcode.New(exitcode.State, &gitstore.UnreadableError{Noun: "task", ID: "aaaa", Err: inner}, "")
	if h := hintFor(task); h != "upgrade git-agentmine" {
		t.Errorf("a task has no remove command, the inner hint stays: %q", h)
	}
	outer := exitcode.New(exitcode.NotFound, fmt.Errorf("parent: %w", &gitstore.NotFoundError{Noun: "task", ID: "1a2b"}), "create it first")
	if h := hintFor(outer); h != "create it first" {
		t.Errorf("an explicit outer hint wins: %q", h)
	}
	if h := hintFor(errors.New("plain")); h != "" {
		t.Errorf("plain error: %q", h)
	}
}
