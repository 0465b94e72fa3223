package gitstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// CheckoutLockWait is how long LockCheckout waits: meant to outlast a
// snapshot of a large checkout or a merge's update of its files (not
// measured at scale; a small checkout's take milliseconds).
const CheckoutLockWait = 30 * time.Second

// LockCheckout takes the lock that orders agentmine's own updates of the
// files of the checkout at dir (a merge into the branch checked out there:
// the ref moves, then the files follow) with the snapshots a supervisor
// takes of that checkout before and after its worker runs. Without it a
// snapshot taken between the two steps sees the merged paths as changed,
// and charges them to a worker that never touched them.
//
// The lock is an flock on a file in the local agentmine directory, keyed by
// the checkout's real path; the kernel drops it when its holder dies. It
// waits at most wait: a worker runs as the same user and can hold the lock
// itself, and that must delay a merge or a judgement, never stop it. After
// wait, or when the lock cannot be taken at all, release is a no-op and ok
// is false: the caller goes on without it.
func (s *Store) LockCheckout(ctx context.Context, dir string, wait time.Duration) (release func(), ok bool) {
	none := func() {}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		real = filepath.Clean(dir)
	}
	locks, err := s.LocalDir("locks")
	if err != nil {
		return none, false
	}
	sum := sha256.Sum256([]byte(real))
	f, err := os.OpenFile(filepath.Join(locks, "checkout-"+hex.EncodeToString(sum[:8])+".lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return none, false
	}
	deadline := time.Now().Add(wait)
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return func() {
				_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
				f.Close()
			}, true
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(5 * time.Millisecond):
		}
	}
	f.Close()
	return none, false
}
