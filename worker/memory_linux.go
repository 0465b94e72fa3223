package worker

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// protectMemory makes this process non-dumpable (prctl PR_SET_DUMPABLE 0):
// a process of the same user can then no longer read its memory through
// /proc/<pid>/mem or attach to it with ptrace, so a worker cannot read the
// supervisor's nonce. Root (CAP_SYS_PTRACE) still can. It stays in force
// for the life of the process; programs it starts are dumpable again.
func protectMemory() error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("making the supervisor's memory unreadable to the worker: %w", err)
	}
	return nil
}
