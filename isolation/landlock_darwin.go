// The landlock helper on macOS, where it is never started (no Landlock):
// there is no parent-death signal to set.

package isolation

import (
	"errors"
	"os"
)

// dieWithParent checks that the supervisor (ppid) still runs; macOS has
// no parent-death signal.
func dieWithParent(ppid int) error {
	if os.Getppid() != ppid {
		return errors.New("the supervisor ended before the worker started")
	}
	return nil
}
