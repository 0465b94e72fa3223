package worker

import (
	"errors"

	"github.com/git-agentmine/git-agentmine/exitcode"
)

// Why worker refuses to act on a task or a session. Each is the Reason of a
// RefusedError, so errors.Is(err, ErrCancelled) and the like tell them
// apart; what to do about each is the caller's to say.
var (
	// ErrStarting: another process is starting the same task right now.
	ErrStarting = errors.New("task is being started by another process")
	// ErrCancelled: the task is cancelled.
	ErrCancelled = errors.New("task is cancelled")
	// ErrTainted: some session's work reached the base without a valid
	// verdict; someone must look at the base and reopen the task first.
	ErrTainted = errors.New("task reached the base without a valid verdict")
	// ErrGoal: the task has children; its status rolls up from theirs and
	// no worker ever runs on it.
	ErrGoal = errors.New("task has children")
	// ErrRunning: a session of the task is live.
	ErrRunning = errors.New("task is already running")
	// ErrLeftover: a finished session's worktree is still where the next
	// one would go.
	ErrLeftover = errors.New("a worktree from an earlier session is in the way")
	// ErrSessionLive: the session's process is still running.
	ErrSessionLive = errors.New("session is still running")
	// ErrNotEnded: a manual session has no recorded outcome yet.
	ErrNotEnded = errors.New("session has not ended")
	// ErrWorktreeInUse: a live process that is not provably the session's
	// uses the worktree (its working directory, an open or mapped file);
	// RefusedError.Pid names it.
	ErrWorktreeInUse = errors.New("worktree is in use")
	// ErrBlockedByCancelled: a blocker of the task is cancelled, so the
	// task waits forever; RefusedError.Blockers names them.
	ErrBlockedByCancelled = errors.New("task is blocked by a cancelled task")
)

// RefusedError is a refusal to act on a task or session in its current
// state (exit code State). Reason is one of the sentinels above; Task and
// Session are the ids concerned, as a user may type them ("" when not
// relevant); Err is the message.
type RefusedError struct {
	Reason  error
	Task    string
	Session string
	// Pid is the process concerned, for ErrWorktreeInUse; 0 otherwise.
	Pid int
	// Blockers are the cancelled blockers (short ids), for
	// ErrBlockedByCancelled.
	Blockers []string
	Err      error
}

func (e *RefusedError) Error() string { return e.Err.Error() }

// Unwrap returns the message's error.
func (e *RefusedError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, e.Reason) true.
func (e *RefusedError) Is(target error) bool { return target == e.Reason }

// ExitCode is exitcode.State.
func (e *RefusedError) ExitCode() int { return exitcode.State }
