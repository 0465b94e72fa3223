package verify

import "syscall"

// dodAttr is how a DoD command starts: a process group of its own. macOS
// has no parent-death signal: the group outlives a killed supervisor
// until the session's processes are ended.
func dodAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
