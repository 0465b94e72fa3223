// Waiting for a process group on Linux: polling /proc.

package launch

import (
	"syscall"
	"time"
)

// waitGroupGone waits until process group pgid has no live member, for at
// most d.
func waitGroupGone(pgid int, d time.Duration) {
	deadline := time.Now().Add(d)
	pause := 2 * time.Millisecond
	for groupAlive(pgid) && time.Now().Before(deadline) {
		time.Sleep(pause)
		if pause < 100*time.Millisecond {
			pause *= 2
		}
	}
}

// workerAttr is how a worker's first process starts: a session of its
// own, and SIGKILL when this process dies (a parent-death signal).
func workerAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
}
