package verify

import (
	"fmt"
	"io/fs"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// A watch that fails leaves a gap the record names; running out of
// descriptors (kqueue's limit on macOS) says so and how to lift it.
func TestWatchFailure(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("adding: %w", fs.ErrNotExist), ""},
		{unix.ENOSPC, "inotify watch limit reached"},
		{fmt.Errorf("open src/x: %w", unix.EMFILE), "out of file descriptors watching src/x (kqueue needs one per watched file: raise ulimit -n)"},
		{unix.ENFILE, "out of file descriptors watching src/x"},
		{unix.EACCES, "cannot watch src/x: permission denied"},
	} {
		got := watchFailure(c.err, "src/x")
		if c.want == "" && got != "" || !strings.Contains(got, c.want) {
			t.Errorf("watchFailure(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}
