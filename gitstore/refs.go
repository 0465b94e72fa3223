package gitstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/git-agentmine/git-agentmine/gitcmd"
	"golang.org/x/sys/unix"
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
// Once git committed it, the objects the new values reach that this
// process wrote are made sure of against a concurrent prune (durable.go)
// before Transact returns.
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
	// Registrations wait until the transaction is over (see Registration).
	unlock := s.lockWitness(unix.LOCK_SH)
	defer unlock()
	s.journalRefs(ops)
	for attempt := 0; ; attempt++ {
		err := transact(ctx, s.git, s.zeroID(), ops)
		if attempt < 10 && isMissingObjectRefusal(err) {
			// A prune removed a new value between its write and this
			// transaction: write back what this process wrote (once the
			// gc ended), and again.
			if own := s.ownObjects(newTips(ops)); len(own) > 0 {
				if err := s.writeBack(ctx, own, false); err != nil {
					return err
				}
				continue
			}
		}
		if err != nil {
			return err
		}
		// Acknowledged only once what the refs now point at is sure to
		// stay (durable.go).
		return s.secure(ctx, ops)
	}
}

func (s *Store) zeroID() string {
	if s.sha1 {
		return strings.Repeat("0", 40)
	}
	return strings.Repeat("0", 64)
}

// transact runs one `git update-ref --stdin` transaction of ops. Every
// value in it is a full object id, which git takes as that id whatever
// refs exist; its check that the id is not also the name of a ref
// (core.warnAmbiguousRefs: a dozen stats of candidate ref paths and of
// packed-refs for each old and each new value) would only add a warning,
// so it is turned off. It was most of what update-ref cost a sync moving
// 1,500 refs: 1.3 s of CPU against 0.15 s without it, on a busy machine.
func transact(ctx context.Context, r gitcmd.Runner, zero string, ops []RefOp) error {
	for _, op := range ops {
		switch op.Verb {
		case "create", "update", "delete", "verify":
		default:
			return fmt.Errorf("internal error: unknown ref operation %q", op.Verb)
		}
	}
	in := &transactionInput{ops: ops, zero: zero}
	_, err := r.RunInput(context.WithoutCancel(ctx), in, "-c", "core.warnAmbiguousRefs=false", "update-ref", "--stdin")
	if err != nil {
		var ge *gitcmd.Error
		if errors.As(err, &ge) && isLockConflict(ge.Stderr) {
			return fmt.Errorf("%w: %s", ErrConflict, ge.Error())
		}
		return fmt.Errorf("updating refs: %w", err)
	}
	return nil
}

// transactionInput is update-ref's standard input for a transaction, made
// a line at a time as git reads it: a sync moving thousands of refs never
// holds the whole text (about 150 bytes a ref).
type transactionInput struct {
	ops  []RefOp
	zero string
	// started: the "start" line went out. next is the index of the next
	// op to encode, len(ops)+1 once "prepare" and "commit" went out.
	started bool
	next    int
	// pending is what of the current line Read has not returned yet; line
	// is its buffer, reused for every line.
	pending []byte
	line    []byte
}

// Read implements io.Reader.
func (t *transactionInput) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if len(t.pending) == 0 && !t.fill() {
			break
		}
		c := copy(p[n:], t.pending)
		t.pending = t.pending[c:]
		n += c
	}
	if n == 0 {
		return 0, io.EOF
	}
	return n, nil
}

// fill encodes the next line into pending; false when all went out.
func (t *transactionInput) fill() bool {
	l := t.line[:0]
	switch {
	case !t.started:
		t.started = true
		l = append(l, "start\n"...)
	case t.next < len(t.ops):
		op := t.ops[t.next]
		t.next++
		old := op.Old
		if old == "" {
			old = t.zero
		}
		l = append(l, op.Verb...)
		l = append(l, ' ')
		l = append(l, op.Ref...)
		if op.Verb == "create" || op.Verb == "update" {
			l = append(l, ' ')
			l = append(l, op.New...)
		}
		if op.Verb != "create" {
			l = append(l, ' ')
			l = append(l, old...)
		}
		l = append(l, '\n')
	case t.next == len(t.ops):
		t.next++
		l = append(l, "prepare\ncommit\n"...)
	default:
		return false
	}
	t.line, t.pending = l, l
	return true
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
