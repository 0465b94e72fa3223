package launch

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestLogReadersRefuseSpecialFiles: a log replaced by a FIFO with no
// writer or a link to /dev/zero is refused at once by every reader of
// logs (tails, the offset read), never waited on or read without end.
func TestLogReadersRefuseSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.log")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero.log")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{fifo, zero} {
		if _, err := Tail(p, 5); err == nil {
			t.Errorf("Tail(%s) read it", p)
		}
		if _, err := TailBytes(p, 1<<10); err == nil {
			t.Errorf("TailBytes(%s) read it", p)
		}
		if _, err := readAt(p, 0, 1<<10); err == nil {
			t.Errorf("readAt(%s) read it", p)
		}
	}
}
