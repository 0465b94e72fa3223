// Waiting for a supervisor to exit on Linux: a pidfd.

package worker

import "golang.org/x/sys/unix"

// waitPid calls poke when process pid exits (or stop closes).
func waitPid(pid int, stop <-chan struct{}, poke func()) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		poke() // already gone
		return
	}
	defer unix.Close(fd)
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return
	}
	defer unix.Close(p[0])
	go func() {
		<-stop
		unix.Close(p[1])
	}()
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}, {Fd: int32(p[0]), Events: unix.POLLIN}}
	for {
		_, err := unix.Poll(fds, -1)
		if err == unix.EINTR {
			continue
		}
		break
	}
	if fds[0].Revents != 0 {
		poke()
	}
}
