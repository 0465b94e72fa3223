package roles

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestReadAnswerSpecialFiles: an answer file the agent left as a FIFO (no
// writer), a link to /dev/zero or a huge sparse file is refused at once,
// never waited on or read whole.
func TestReadAnswerSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	huge := filepath.Join(dir, "huge")
	if err := os.WriteFile(huge, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(huge, 2<<30); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		fifo:                         "not a regular file (a FIFO)",
		zero:                         "not a regular file (a character device)",
		huge:                         "larger than",
		filepath.Join(dir, "absent"): "no answer file",
	} {
		if _, err := readAnswer(path); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("readAnswer(%s) = %v, want %q", filepath.Base(path), err, want)
		}
	}
}
