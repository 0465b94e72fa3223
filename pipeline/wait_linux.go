// Waiting for a process to exit on Linux: a pidfd.

package pipeline

import (
	"golang.org/x/sys/unix"

	"github.com/git-agentmine/git-agentmine/launch"
)

// waitPid returns when process pid, started at start (0: unknown), has
// exited, reporting true; at once when it is gone already or is another
// process now. It reports false when it cannot watch the process (no
// pidfd), the caller then relying on its poll, or when quit (a pipe's read
// end, -1: none) is closed on the other end.
func waitPid(pid int, start uint64, quit int) bool {
	fd, err := unix.PidfdOpen(pid, 0)
	if err == unix.ESRCH {
		return true
	}
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	// The descriptor pins the process: if its start time differs now, the
	// process watched is gone and the pid was reused.
	if start != 0 {
		if got, err := launch.StartTime(pid); err != nil || got != start {
			return true
		}
	}
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}, {Fd: int32(quit), Events: unix.POLLIN}}
	if quit < 0 {
		fds = fds[:1]
	}
	for {
		_, err := unix.Poll(fds, -1)
		if err == unix.EINTR {
			continue
		}
		return err == nil && fds[0].Revents != 0
	}
}
