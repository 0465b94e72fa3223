package pipeline

import (
	"errors"
	"fmt"
)

// ErrNothingToRun is the refusal of a run whose targets are all done or
// cancelled.
var ErrNothingToRun = errors.New("nothing to run: every task is done or cancelled")

// RunningError is the refusal to start a run whose name is taken by a run
// that is still running under another live supervisor.
type RunningError struct {
	// Name is the run's name.
	Name string
	// Pid and Host identify the live supervisor.
	Pid  int
	Host string
}

func (e *RunningError) Error() string {
	return fmt.Sprintf("run %s is already running (pid %d on %s)", e.Name, e.Pid, e.Host)
}

// NotFoundError is a run name with no record.
type NotFoundError struct {
	// Name is the run's name.
	Name string
}

func (e *NotFoundError) Error() string { return fmt.Sprintf("run %s not found", e.Name) }
