//go:build !linux

package worktree

import (
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// readDirents calls fn with the name (valid during the call only) and
// type (unix.DT_*, DT_UNKNOWN for other kinds) of each entry of the
// directory open as fd, but "." and "..". buf is unused here.
func readDirents(fd int, buf []byte, fn func(name []byte, typ uint8) error) error {
	dup, err := unix.Dup(fd)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(dup), "")
	defer f.Close()
	entries, err := f.ReadDir(-1)
	if err != nil {
		return err
	}
	for _, e := range entries {
		typ := uint8(unix.DT_UNKNOWN)
		switch e.Type() & fs.ModeType {
		case 0:
			typ = unix.DT_REG
		case fs.ModeDir:
			typ = unix.DT_DIR
		case fs.ModeSymlink:
			typ = unix.DT_LNK
		}
		if err := fn([]byte(e.Name()), typ); err != nil {
			return err
		}
	}
	return nil
}
