// Waiting for a process to exit on Linux: a pidfd.

package pipeline

import "golang.org/x/sys/unix"

// waitPid returns when process pid has exited (at once if it is gone).
func waitPid(pid int) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		_, err := unix.Poll(fds, -1)
		if err != unix.EINTR {
			return
		}
	}
}
