// Supervision on darwin: no child subreaper and no pidfds. A worker leads
// its own session and process group as on Linux; a process that leaves
// both (setsid after a double fork) is reparented to launchd and is found
// only by the marker in its environment, by the whole-table scan that
// ends every run.

package launch

import (
	"errors"

	"golang.org/x/sys/unix"
)

// subreap records, before the first run starts, that this process cannot
// become the workers' child subreaper on darwin, so that members scans
// the whole process table for the marker; the caller holds r.mu.
func (r *Reaper) subreap() {
	if len(r.runs)+r.holds > 0 {
		return
	}
	r.err = errors.New("darwin has no child subreaper")
}

// unsubreap has nothing to undo on darwin; the caller holds r.mu.
func (r *Reaper) unsubreap() {}

// signalProc sends sig to p if p.Pid still names the process p describes
// (same start time). darwin has no pidfd: the check and the signal are two
// steps, as on a Linux without pidfds. It reports whether the signal was
// sent.
func signalProc(p Proc, sig unix.Signal) bool {
	if st, err := readProcStat(p.Pid); err != nil || st.startTime != p.Start || st.dead() {
		return false
	}
	return unix.Kill(p.Pid, sig) == nil
}
