// Waiting for a process to exit on darwin: kqueue NOTE_EXIT.

package pipeline

import "golang.org/x/sys/unix"

// waitPid returns when process pid has exited (at once if it is gone).
func waitPid(pid int) {
	kq, err := unix.Kqueue()
	if err != nil {
		return
	}
	defer unix.Close(kq)
	changes := make([]unix.Kevent_t, 1)
	unix.SetKevent(&changes[0], pid, unix.EVFILT_PROC, unix.EV_ADD|unix.EV_ONESHOT)
	changes[0].Fflags = unix.NOTE_EXIT
	events := make([]unix.Kevent_t, 1)
	for {
		// An exit, or an EV_ERROR event (ESRCH) for a process already gone;
		// after an interruption the filter is added again (EV_ADD of a
		// filter already there changes nothing).
		_, err := unix.Kevent(kq, changes, events, nil)
		if err != unix.EINTR {
			return
		}
	}
}
