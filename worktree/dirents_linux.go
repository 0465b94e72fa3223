package worktree

import (
	"bytes"
	"encoding/binary"
	"errors"

	"golang.org/x/sys/unix"
)

// readDirents calls fn with the name (valid during the call only) and
// type (unix.DT_*, DT_UNKNOWN where the file system does not say) of each
// entry of the directory open as fd, but "." and "..", reading the
// entries into buf.
func readDirents(fd int, buf []byte, fn func(name []byte, typ uint8) error) error {
	for {
		n, err := unix.Getdents(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if n <= 0 {
			return nil
		}
		// struct linux_dirent64: ino (8), off (8), reclen (2), type (1), name.
		for b := buf[:n]; len(b) > 0; {
			if len(b) < 19 {
				return errors.New("short directory entry")
			}
			reclen := int(binary.NativeEndian.Uint16(b[16:18]))
			if reclen < 19 || reclen > len(b) {
				return errors.New("bad directory entry")
			}
			typ, name := b[18], b[19:reclen]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			b = b[reclen:]
			if string(name) == "." || string(name) == ".." {
				continue
			}
			if err := fn(name, typ); err != nil {
				return err
			}
		}
	}
}
