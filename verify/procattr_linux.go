package verify

import "syscall"

// dodAttr is how a DoD command starts: a process group of its own, and
// SIGKILL when the supervisor dies (a parent-death signal).
func dodAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
