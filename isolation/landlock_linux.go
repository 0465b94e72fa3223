// The landlock helper on Linux: a parent-death signal.

package isolation

import (
	"errors"
	"fmt"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// dieWithParent makes the command about to be executed die with its
// supervisor (ppid), as the helper itself was started to. The kernel keeps
// a parent-death signal per thread, and Go may exec from a thread other
// than the one the signal was set on, so it is set again on the thread
// that execs (locked to this goroutine from here to the exec).
func dieWithParent(ppid int) error {
	runtime.LockOSThread()
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0); err != nil {
		return fmt.Errorf("setting the parent-death signal: %w", err)
	}
	if os.Getppid() != ppid {
		return errors.New("the supervisor ended before the worker started")
	}
	return nil
}
