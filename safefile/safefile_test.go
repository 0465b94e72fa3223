package safefile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestReadFile: a regular file is read whole; a FIFO with no writer, a
// character device and a directory are refused at once, a file beyond the
// bound before anything is read.
func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	reg := filepath.Join(dir, "reg")
	if err := os.WriteFile(reg, []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadFile(reg, 6); err != nil || string(got) != "hello\n" {
		t.Fatalf("ReadFile(reg) = %q, %v", got, err)
	}
	if _, err := ReadFile(reg, 5); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("ReadFile(reg, 5) = %v, want ErrTooLarge", err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	sparse := filepath.Join(dir, "sparse")
	if err := os.WriteFile(sparse, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(sparse, 2<<30); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path string
		want error
	}{
		{fifo, ErrNotRegular},
		{"/dev/zero", ErrNotRegular},
		{dir, ErrNotRegular},
		{sparse, ErrTooLarge},
		{filepath.Join(dir, "none"), fs.ErrNotExist},
	} {
		if _, err := ReadFile(c.path, 1<<20); !errors.Is(err, c.want) {
			t.Errorf("ReadFile(%s) = %v, want %v", c.path, err, c.want)
		}
	}
}
