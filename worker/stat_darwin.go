package worker

import "syscall"

// ctimeNano is a file's status change time in nanoseconds (darwin:
// Ctimespec).
func ctimeNano(st *syscall.Stat_t) int64 { return st.Ctimespec.Nano() }
