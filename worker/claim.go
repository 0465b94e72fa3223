package worker

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/git-agentmine/git-agentmine/gitstore"
)

// claimTask takes the per-task preparation lock, so that two `worker run`
// of one task at the same moment cannot both get past the status checks:
// the second is refused at once instead of racing the first for the
// worktree path. The lock is an flock on a file in the local-only
// agentmine directory; the kernel drops it when the process dies. The
// returned function releases it.
func claimTask(st *gitstore.Store, taskID, short string) (func(), error) {
	dir, err := st.LocalDir("locks")
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, "task-"+taskID+".lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("locking task %s: %w", short, err)
	}
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, &RefusedError{Reason: ErrStarting, Task: short, Err: fmt.Errorf("task %s is already being started by another process", short)}
		}
		return nil, fmt.Errorf("locking task %s: %w", short, err)
	}
	return func() {
		_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
		f.Close()
	}, nil
}
