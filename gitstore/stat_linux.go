package gitstore

import "syscall"

// statTimes returns a file's modification and status change times, which
// Linux's stat calls Mtim and Ctim.
func statTimes(st *syscall.Stat_t) (mtim, ctim syscall.Timespec) {
	return st.Mtim, st.Ctim
}
