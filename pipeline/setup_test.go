package pipeline

import (
	"errors"
	"fmt"
	"testing"

	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/worker"
)

// TestSetupFailures: a start that fails for a setup reason is told apart
// from an infrastructure failure, and the run stops early only when every
// start failed for one and the same setup reason.
func TestSetupFailures(t *testing.T) {
	missing := exitcode.New(exitcode.NotFound, errors.New(`client "x" not found in PATH`), "install it")
	setup := func(exit int, last string) error {
		return exitcode.New(exitcode.Failed, &worker.SetupError{Command: "npm ci", Exit: exit, Last: last}, "see the log")
	}
	for _, c := range []struct {
		err  error
		want bool
	}{
		{missing, true},
		{exitcode.New(exitcode.Config, errors.New("agent a is invalid"), ""), true},
		{setup(1, "npm ERR!"), true},
		{fmt.Errorf("preparing: %w", setup(1, "")), true},
		{exitcode.New(exitcode.Git, errors.New("git failed"), ""), false},
		{errors.New("disk full"), false},
	} {
		if got := IsSetupFailure(c.err); got != c.want {
			t.Errorf("IsSetupFailure(%v) = %v, want %v", c.err, got, c.want)
		}
	}
	for _, c := range []struct {
		name    string
		fails   map[string]error
		started int
		stop    bool
	}{
		{"one reason", map[string]error{"a": missing, "b": missing}, 0, true},
		// Another task's setup printed another last line: the same failure.
		{"one setup command", map[string]error{"a": setup(1, "x"), "b": setup(1, "y")}, 0, true},
		{"two reasons", map[string]error{"a": missing, "b": setup(1, "")}, 0, false},
		{"two exit codes", map[string]error{"a": setup(1, ""), "b": setup(2, "")}, 0, false},
		{"a start worked", map[string]error{"a": missing}, 1, false},
		{"nothing failed", map[string]error{}, 0, false},
	} {
		s := &Supervisor{setupFails: c.fails, started: c.started}
		err := s.setupStop()
		if (err != nil) != c.stop || c.stop && (exitcode.Of(err) != exitcode.Of(c.fails["a"]) || exitcode.HintOf(err) == "") {
			t.Errorf("%s: stop %v, want %v, with the failure's exit code and hint", c.name, err, c.stop)
		}
	}
}
