package gitstore

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/git-agentmine/git-agentmine/gitcmd"
)

// ErrConflict means a ref was not at the expected value when a transaction
// tried to change it: another writer got there first.
var ErrConflict = errors.New("a ref changed while it was being updated")

// RefOp is one line of an update-ref transaction.
type RefOp struct {
	// Verb is "create", "update", "delete" or "verify".
	Verb string
	Ref  string
	// New is the new value for create and update.
	New string
	// Old is the expected old value; for update, delete and verify an empty
	// Old means "must not exist" (the zero id).
	Old string
}

// Transact applies ops atomically with `git update-ref --stdin`. If any ref is
// not at its expected value, nothing changes and the error wraps ErrConflict.
// Every ref it is about to write is first recorded in the journal (see
// JournalEntry), with on whose behalf it is written.
//
// A context that is already done refuses the transaction; once git runs it,
// a cancellation no longer stops it. Killing update-ref part-way leaves the
// caller unable to tell whether the refs moved: a supervisor interrupted
// (Ctrl-C) while it recorded its worker's pid took its own committed write
// for a forged one. A transaction waits for a lock at most
// core.filesRefLockTimeout (100 ms by default), so it ends soon either way.
func (s *Store) Transact(ctx context.Context, ops []RefOp) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("updating refs: %w", err)
	}
	s.journalRefs(ops)
	return transact(ctx, s.git, s.zeroID(), ops)
}

func (s *Store) zeroID() string {
	if s.sha1 {
		return strings.Repeat("0", 40)
	}
	return strings.Repeat("0", 64)
}

func transact(ctx context.Context, r gitcmd.Runner, zero string, ops []RefOp) error {
	var b strings.Builder
	b.WriteString("start\n")
	for _, op := range ops {
		old := op.Old
		if old == "" {
			old = zero
		}
		switch op.Verb {
		case "create":
			fmt.Fprintf(&b, "create %s %s\n", op.Ref, op.New)
		case "update":
			fmt.Fprintf(&b, "update %s %s %s\n", op.Ref, op.New, old)
		case "delete":
			fmt.Fprintf(&b, "delete %s %s\n", op.Ref, old)
		case "verify":
			fmt.Fprintf(&b, "verify %s %s\n", op.Ref, old)
		default:
			return fmt.Errorf("internal error: unknown ref operation %q", op.Verb)
		}
	}
	b.WriteString("prepare\ncommit\n")
	_, err := r.RunInput(context.WithoutCancel(ctx), strings.NewReader(b.String()), "update-ref", "--stdin")
	if err != nil {
		var ge *gitcmd.Error
		if errors.As(err, &ge) && isLockConflict(ge.Stderr) {
			return fmt.Errorf("%w: %s", ErrConflict, ge.Error())
		}
		return fmt.Errorf("updating refs: %w", err)
	}
	return nil
}

// isLockConflict recognises git's words for "someone else changed or holds
// this ref": a stale expected value, an existing ref on create, a held lock.
func isLockConflict(stderr string) bool {
	for _, w := range []string{"cannot lock ref", "reference already exists", "is at", "but expected", "File exists", "unable to resolve reference"} {
		if strings.Contains(stderr, w) {
			return true
		}
	}
	return false
}
