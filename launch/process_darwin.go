// Waiting for a process group on darwin: kqueue NOTE_EXIT.

package launch

import (
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// waitGroupGone waits until process group pgid has no live member, for at
// most d. Each member found is watched with a kqueue EVFILT_PROC
// NOTE_EXIT filter, so an exit wakes the wait at once; the table is read
// again at least every 100ms for members forked since.
func waitGroupGone(pgid int, d time.Duration) {
	deadline := time.Now().Add(d)
	kq, err := unix.Kqueue()
	if err != nil {
		kq = -1
	} else {
		defer unix.Close(kq)
	}
	watched := map[int]bool{}
	events := make([]unix.Kevent_t, 16)
	for time.Now().Before(deadline) {
		members, err := groupMembers(pgid)
		if err == nil && len(members) == 0 {
			return
		}
		wait := min(time.Until(deadline), 100*time.Millisecond)
		if kq < 0 || err != nil {
			time.Sleep(wait)
			continue
		}
		var changes []unix.Kevent_t
		for _, pid := range members {
			if watched[pid] {
				continue
			}
			watched[pid] = true
			var ev unix.Kevent_t
			unix.SetKevent(&ev, pid, unix.EVFILT_PROC, unix.EV_ADD|unix.EV_ONESHOT)
			ev.Fflags = unix.NOTE_EXIT
			changes = append(changes, ev)
		}
		ts := unix.NsecToTimespec(int64(wait))
		// A member that ended before it was registered comes back as an
		// EV_ERROR event (ESRCH): the loop reads the table again.
		_, _ = unix.Kevent(kq, changes, events, &ts)
	}
}

// groupMembers lists the live members of process group pgid.
func groupMembers(pgid int) ([]int, error) {
	procs, err := scanProcs()
	if err != nil {
		return nil, err
	}
	var out []int
	for pid, st := range procs {
		if st.pgrp == pgid && !st.dead() {
			out = append(out, pid)
		}
	}
	return out, nil
}

// workerAttr is how a worker's first process starts: a session of its
// own. macOS has no parent-death signal: a worker whose supervisor is
// killed runs on until EndRuns finds the session lost.
func workerAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true}
}
