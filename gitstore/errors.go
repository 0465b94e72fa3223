package gitstore

import (
	"errors"
	"fmt"
	"strings"

	"github.com/git-agentmine/git-agentmine/exitcode"
)

// The classes of failure a caller may want to tell apart with errors.Is.
// Each typed error below matches one of them; what to tell the user about
// it (a command to run next) is the CLI's business, not the store's.
var (
	// ErrNotFound matches a NotFoundError.
	ErrNotFound = errors.New("not found")
	// ErrAmbiguous matches an AmbiguousError.
	ErrAmbiguous = errors.New("ambiguous id")
	// ErrUnreadable matches an UnreadableError.
	ErrUnreadable = errors.New("cannot be read")
)

// NotFoundError says that no entity of a kind has the given id or prefix.
type NotFoundError struct {
	Noun string // the kind's noun: task, session, memory
	ID   string // the id or prefix looked for
}

func (e *NotFoundError) Error() string { return fmt.Sprintf("%s %s not found", e.Noun, e.ID) }

// Is makes errors.Is(err, ErrNotFound) true.
func (e *NotFoundError) Is(target error) bool { return target == ErrNotFound }

// ExitCode is exitcode.NotFound.
func (e *NotFoundError) ExitCode() int { return exitcode.NotFound }

// AmbiguousError says that an id prefix matches more than one entity.
type AmbiguousError struct {
	Noun       string
	Prefix     string
	Candidates []string // shortest unique ids of the matches, at most eight
	More       int      // matches beyond Candidates
}

func (e *AmbiguousError) Error() string {
	c := strings.Join(e.Candidates, ", ")
	if e.More > 0 {
		c += fmt.Sprintf(", and %d more", e.More)
	}
	return fmt.Sprintf("%s id %s is ambiguous: candidates %s", e.Noun, e.Prefix, c)
}

// Is makes errors.Is(err, ErrAmbiguous) true.
func (e *AmbiguousError) Is(target error) bool { return target == ErrAmbiguous }

// ExitCode is exitcode.Usage: the user has to give more of the id.
func (e *AmbiguousError) ExitCode() int { return exitcode.Usage }

// UnreadableError says that an entity's ref exists but its document cannot
// be read (corrupt, or written by a newer schema). It has no exit code of
// its own, since the cause may carry one: callers wrap it with the code
// that fits (Index.Resolve: exitcode.State).
type UnreadableError struct {
	Noun string
	ID   string // as shown to the user: the shortest unique id, or the full one
	Err  error  // why
}

func (e *UnreadableError) Error() string {
	return fmt.Sprintf("%s %s cannot be read: %v", e.Noun, e.ID, e.Err)
}

// Unwrap returns why the document cannot be read.
func (e *UnreadableError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrUnreadable) true.
func (e *UnreadableError) Is(target error) bool { return target == ErrUnreadable }

// UpdateError is the failure of an update to one entity, after the store's
// retries; callers can tell it is already described and not wrap it again.
type UpdateError struct {
	Noun string
	ID   string
	Err  error
}

func (e *UpdateError) Error() string { return fmt.Sprintf("updating %s %s: %v", e.Noun, e.ID, e.Err) }

// Unwrap returns the cause.
func (e *UpdateError) Unwrap() error { return e.Err }
