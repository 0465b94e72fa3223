// Package safefile opens the files agentmine reads by a name it was given
// (cache files, a task.yaml's prd.path, plan files, logs) so that no name
// can hang or exhaust a command: the open never blocks (a FIFO with no
// writer opens at once), anything but a regular file is refused (a FIFO,
// /dev/zero, a directory, a socket), and a file beyond the caller's bound
// is refused before a byte of it is read.
package safefile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// ErrNotRegular is returned for a name that is not a regular file.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is returned for a file larger than the bound it is read with.
var ErrTooLarge = errors.New("larger than allowed")

// Open opens path for reading without blocking, and returns it with its
// status when it is a regular file of at most limit bytes (limit < 0: no
// bound). Errors name the path; errors.Is tells fs.ErrNotExist,
// ErrNotRegular and ErrTooLarge apart.
func Open(path string, limit int64) (*os.File, os.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fi, &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w (%s)", ErrNotRegular, kind(fi.Mode()))}
	}
	if limit >= 0 && fi.Size() > limit {
		f.Close()
		return nil, fi, &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w: %d bytes, at most %d", ErrTooLarge, fi.Size(), limit)}
	}
	return f, fi, nil
}

// ReadFile reads the regular file at path whole, as Open allows it, and
// never more than limit bytes (limit < 0: no bound): a file that grows
// beyond it while it is read is refused too.
func ReadFile(path string, limit int64) ([]byte, error) {
	f, fi, err := Open(path, limit)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := io.Reader(f)
	if limit >= 0 {
		r = io.LimitReader(f, limit+1)
	}
	buf := make([]byte, 0, fi.Size()+1)
	for {
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: path, Err: err}
		}
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
	}
	if limit >= 0 && int64(len(buf)) > limit {
		return nil, &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w: more than %d bytes", ErrTooLarge, limit)}
	}
	return buf, nil
}

// kind names what a file that is not regular is.
func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	}
	return "a special file"
}
