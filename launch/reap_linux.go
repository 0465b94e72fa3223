// Supervision on Linux: the child subreaper and pidfds.

package launch

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// subreap makes this process a child subreaper before a run starts (the
// worker's orphans must come here from its first instant); the caller
// holds r.mu.
func (r *Reaper) subreap() {
	if len(r.runs)+r.holds > 0 {
		return
	}
	r.err = nil
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		r.err = fmt.Errorf("becoming the child subreaper of workers: %w", err)
	}
}

// unsubreap ends this process's being a child subreaper when no run is
// left; the caller holds r.mu.
func (r *Reaper) unsubreap() {
	if len(r.runs)+r.holds == 0 && r.err == nil {
		_ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
	}
}

// signalProc sends sig to p if p.Pid still names the process p describes
// (same start time). It goes through a pidfd, so a process that ends and
// has its pid recycled between the check and the signal is not hit.
// It reports whether the signal was sent.
func signalProc(p Proc, sig unix.Signal) bool {
	fd, err := unix.PidfdOpen(p.Pid, 0)
	if err != nil {
		if !errors.Is(err, unix.ENOSYS) {
			return false
		}
		// No pidfds (Linux before 5.3): check, then signal.
		if st, err := readProcStat(p.Pid); err != nil || st.startTime != p.Start {
			return false
		}
		return unix.Kill(p.Pid, sig) == nil
	}
	defer unix.Close(fd)
	if st, err := readProcStat(p.Pid); err != nil || st.startTime != p.Start {
		return false
	}
	return unix.PidfdSendSignal(fd, sig, nil, 0) == nil
}
