// Package validate owns the rules that user-supplied entity fields must
// meet (one-line titles, values from a fixed set, single words), so every
// entity rejects bad input with the same one-line usage errors.
package validate

import (
	"fmt"
	"slices"
	"strings"

	"github.com/git-agentmine/git-agentmine/exitcode"
)

// Usage returns a usage error (exit 2) with the formatted message.
func Usage(format string, a ...any) error {
	return exitcode.New(exitcode.Usage, fmt.Errorf(format, a...), "")
}

// Title trims s and checks that it is a non-empty single line; what names
// the field in the error ("task title").
func Title(what, s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", Usage("%s is empty", what)
	}
	if strings.ContainsAny(s, "\r\n") {
		return "", Usage("%s must be a single line", what)
	}
	return s, nil
}

// Line checks a one-line free-text field (an assignee, a command).
func Line(what, s string) error {
	if strings.TrimSpace(s) == "" {
		return Usage("%s is empty", what)
	}
	if strings.ContainsAny(s, "\r\n") {
		return Usage("%s must be a single line", what)
	}
	return nil
}

// OneOf checks that s is one of choices; the hint lists them.
func OneOf(what, s string, choices []string) error {
	if !slices.Contains(choices, s) {
		return exitcode.New(exitcode.Usage, fmt.Errorf("unknown %s %q", what, s), "use one of: "+strings.Join(choices, ", "))
	}
	return nil
}

// Word checks a label-like value: non-empty, no whitespace or commas; plural
// names the kind in the error ("labels").
func Word(what, plural, s string) error {
	if s == "" || strings.ContainsAny(s, " \t\r\n,") {
		return Usage("invalid %s %q: %s are single words without commas", what, s, plural)
	}
	return nil
}
