package gitstore

import "syscall"

// statTimes returns a file's modification and status change times, which
// darwin's stat calls Mtimespec and Ctimespec.
func statTimes(st *syscall.Stat_t) (mtim, ctim syscall.Timespec) {
	return st.Mtimespec, st.Ctimespec
}
