package worktree

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// repoLock serialises the steps that touch git's shared worktree records
// and config (`git worktree add/remove/prune`, enabling
// extensions.worktreeConfig) between processes working on one repository:
// git reads other worktrees' half-written records during `worktree add`
// and fails, and its config lock refuses concurrent writers instead of
// waiting. The lock is an flock on a file in the local-only agentmine
// directory of the common git dir; the kernel drops it if the process
// dies.
type repoLock struct {
	f *os.File
}

// pollInterval is how often a waiting lock retries.
const pollInterval = 5 * time.Millisecond

// lockRepo takes the worktree lock of the repository whose common git dir
// is commonDir, waiting until it is free or ctx ends.
func lockRepo(ctx context.Context, commonDir string) (*repoLock, error) {
	dir := filepath.Join(commonDir, "agentmine")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("lock worktrees: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "worktree.lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock worktrees: %w", err)
	}
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return &repoLock{f: f}, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
			f.Close()
			return nil, fmt.Errorf("lock worktrees: %w", err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("lock worktrees: %w", ctx.Err())
		case <-time.After(pollInterval):
		}
	}
}

// unlock releases the lock; calling it twice is harmless.
func (l *repoLock) unlock() {
	if l == nil || l.f == nil {
		return
	}
	_ = unix.Flock(int(l.f.Fd()), unix.LOCK_UN)
	_ = l.f.Close()
	l.f = nil
}
