// Waiting for a supervisor to exit on darwin: kqueue NOTE_EXIT.

package worker

import "golang.org/x/sys/unix"

// waitPid calls poke when process pid exits (or stop closes). The exit is
// watched with a kqueue EVFILT_PROC NOTE_EXIT filter, stop with the read
// end of a pipe whose write end closes with it.
func waitPid(pid int, stop <-chan struct{}, poke func()) {
	kq, err := unix.Kqueue()
	if err != nil {
		return
	}
	defer unix.Close(kq)
	var p [2]int
	if err := unix.Pipe(p[:]); err != nil {
		return
	}
	defer unix.Close(p[0])
	go func() {
		<-stop
		unix.Close(p[1])
	}()
	changes := make([]unix.Kevent_t, 2)
	unix.SetKevent(&changes[0], pid, unix.EVFILT_PROC, unix.EV_ADD|unix.EV_ONESHOT)
	changes[0].Fflags = unix.NOTE_EXIT
	unix.SetKevent(&changes[1], p[0], unix.EVFILT_READ, unix.EV_ADD)
	events := make([]unix.Kevent_t, 2)
	for {
		n, err := unix.Kevent(kq, changes, events, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			// The process is gone already (ESRCH registering it).
			poke()
			return
		}
		for _, ev := range events[:n] {
			if ev.Filter == unix.EVFILT_PROC || ev.Flags&unix.EV_ERROR != 0 && int(ev.Ident) == pid {
				poke()
				return
			}
			if ev.Filter == unix.EVFILT_READ {
				return
			}
		}
	}
}
