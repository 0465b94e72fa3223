// Package isolation owns what a worker process can reach beyond what
// verification checks afterwards: the isolation levels (none, landlock,
// seatbelt, bwrap, clone), what this machine can give (Probe, Caps), and
// the wrapping of a worker's command at the level chosen (Prepare, Box).
// Isolation prevents; verification still proves, at every level.
package isolation

import (
	"errors"
	"fmt"
	"strings"

	"github.com/git-agentmine/git-agentmine/exitcode"
)

// Level is how strongly a worker is kept to its worktree.
type Level string

// The levels, weakest first, and Auto.
const (
	// None runs the worker as the same user in the same file system as
	// everything else: sparse checkout and read-only files prevent
	// accidents, verification detects the rest.
	None Level = "none"
	// Landlock restricts the worker process (Linux Landlock, best effort)
	// to writing its worktree, its own git dir, the object store, the
	// branch namespace, and a private temp dir and HOME.
	Landlock Level = "landlock"
	// Seatbelt restricts the worker with macOS's sandbox (sandbox-exec and
	// a profile made from the run's paths): it writes only its worktree,
	// its own git dir, the object store, its own branch, a private temp
	// dir and HOME; the main checkout is hidden. macOS only.
	Seatbelt Level = "seatbelt"
	// Bwrap runs the worker in a bubblewrap sandbox: a read-only root, the
	// main checkout hidden, its worktree and the git data it needs
	// writable, refs other than its branch out of reach, its own PID
	// namespace, a private /tmp and HOME.
	Bwrap Level = "bwrap"
	// Clone is Bwrap with a repository of the worker's own instead of the
	// shared one: a partial clone filtered by the scope, with the promisor
	// link cut, so excluded files are not in its object store at all.
	Clone Level = "clone"
	// Auto is not a level: it asks for the strongest level that needs no
	// setup on the machine at hand (Caps.Default).
	Auto Level = "auto"
)

// Levels lists the levels, weakest first.
var Levels = []Level{None, Landlock, Seatbelt, Bwrap, Clone}

// ErrUnknownLevel is returned by ParseLevel for a name that is no level.
var ErrUnknownLevel = errors.New("unknown isolation level")

// ParseLevel reads a level name; "" and "auto" are Auto.
func ParseLevel(s string) (Level, error) {
	switch l := Level(strings.TrimSpace(s)); l {
	case "", Auto:
		return Auto, nil
	case None, Landlock, Seatbelt, Bwrap, Clone:
		return l, nil
	}
	return "", exitcode.New(exitcode.Config, fmt.Errorf("%w %q (known: none, landlock, seatbelt, bwrap, clone, auto)", ErrUnknownLevel, s), "")
}

// rank orders the levels; Auto and unknown names rank below None.
func rank(l Level) int {
	for i, x := range Levels {
		if x == l {
			return i
		}
	}
	return -1
}
