package worker

import "syscall"

// ctimeNano is a file's status change time in nanoseconds (Linux: Ctim).
func ctimeNano(st *syscall.Stat_t) int64 { return st.Ctim.Nano() }
