// Package exitcode owns the process exit codes of git-agentmine and the error
// type that carries one, so that every failure is mapped to its code in one
// place (see docs/exit-codes.md).
package exitcode

import (
	"context"
	"errors"
)

// The documented exit codes. They are part of the CLI contract.
const (
	OK          = 0   // success
	Failed      = 1   // a failed verdict (DoD failed, a failed session, a refused merge)
	Usage       = 2   // bad flags, arguments or input values
	Config      = 3   // invalid or missing configuration (TOML, agent definitions)
	NotFound    = 5   // an id, ref, agent or file that does not exist
	State       = 6   // the repository or entity is in a state that forbids the operation
	Timeout     = 124 // a worker or wait timed out
	Git         = 128 // git itself failed unexpectedly
	Interrupted = 130 // interrupted by a signal (Ctrl-C)
)

// Error is an error that knows its exit code and, optionally, a hint telling
// the user how to fix it.
type Error struct {
	Code int
	Err  error
	Hint string
}

func (e *Error) Error() string { return e.Err.Error() }

// Unwrap returns the wrapped error.
func (e *Error) Unwrap() error { return e.Err }

// New wraps err with an exit code and an optional hint.
func New(code int, err error, hint string) error {
	if err == nil {
		return nil
	}
	return &Error{Code: code, Err: err, Hint: hint}
}

// Coder is implemented by errors from other packages (for example git
// failures) that know their own exit code.
type Coder interface {
	ExitCode() int
}

// Of returns the exit code for err: the code of the outermost *Error in its
// chain, else that of a Coder, else Interrupted for a cancelled context, else
// Failed.
func Of(err error) int {
	if err == nil {
		return OK
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	if errors.Is(err, context.Canceled) {
		return Interrupted
	}
	var c Coder
	if errors.As(err, &c) {
		return c.ExitCode()
	}
	return Failed
}

// HintOf returns the hint of the outermost *Error in err's chain that has one.
func HintOf(err error) string {
	for err != nil {
		var e *Error
		if !errors.As(err, &e) {
			return ""
		}
		if e.Hint != "" {
			return e.Hint
		}
		err = e.Err
	}
	return ""
}

// FindHint searches err's tree as errors.As does (depth first, an outer
// error before what it wraps) for the first error with advice: typed(e)
// when it is not "" (a front end's own words for the core's typed errors,
// naming its commands or tools), or the hint of an *Error. typed is asked
// about each error alone, never about its chain.
func FindHint(err error, typed func(error) string) string {
	if err == nil {
		return ""
	}
	if h := typed(err); h != "" {
		return h
	}
	if x, ok := err.(*Error); ok && x.Hint != "" {
		return x.Hint
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		return FindHint(u.Unwrap(), typed)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			if h := FindHint(e, typed); h != "" {
				return h
			}
		}
	}
	return ""
}
