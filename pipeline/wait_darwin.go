// Waiting for a process to exit on darwin: kqueue NOTE_EXIT.

package pipeline

import "golang.org/x/sys/unix"

// waitPid returns when process pid has exited, reporting true (at once if
// it is gone), or false when it cannot watch it or when quit (a pipe's
// read end, -1: none) is closed on the other end. start (launch.StartTime)
// is not checked here: a reused pid only delays the wake to the poll.
func waitPid(pid int, start uint64, quit int) bool {
	kq, err := unix.Kqueue()
	if err != nil {
		return false
	}
	defer unix.Close(kq)
	changes := make([]unix.Kevent_t, 1, 2)
	unix.SetKevent(&changes[0], pid, unix.EVFILT_PROC, unix.EV_ADD|unix.EV_ONESHOT)
	changes[0].Fflags = unix.NOTE_EXIT
	if quit >= 0 {
		var q unix.Kevent_t
		unix.SetKevent(&q, quit, unix.EVFILT_READ, unix.EV_ADD|unix.EV_ONESHOT)
		changes = append(changes, q)
	}
	events := make([]unix.Kevent_t, 1)
	for {
		// An exit, or an EV_ERROR event (ESRCH) for a process already gone;
		// after an interruption the filters are added again (EV_ADD of a
		// filter already there changes nothing).
		n, err := unix.Kevent(kq, changes, events, nil)
		if err == unix.EINTR {
			continue
		}
		return err == nil && n > 0 && events[0].Filter == unix.EVFILT_PROC
	}
}
