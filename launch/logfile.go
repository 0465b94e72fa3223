package launch

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"

	"github.com/git-agentmine/git-agentmine/safefile"
)

// DefaultMaxLogBytes bounds a session log when Spec.MaxLogBytes is zero.
const DefaultMaxLogBytes int64 = 64 << 20

// RotatingLog is an append-only log file that never grows past its bound:
// when a write would take it over Max bytes, the file is renamed to
// "<path>.1" (replacing an older one) and a new file is started. At most
// about twice the bound is kept on disk, however much a worker prints.
// It is safe for concurrent use.
type RotatingLog struct {
	path string
	max  int64

	mu      sync.Mutex
	f       *os.File
	size    int64
	written int64
}

// OpenLog opens (appending) or creates the log at path with the given bound
// (DefaultMaxLogBytes if max <= 0).
func OpenLog(path string, max int64) (*RotatingLog, error) {
	if max <= 0 {
		max = DefaultMaxLogBytes
	}
	l := &RotatingLog{path: path, max: max}
	if err := l.open(); err != nil {
		return nil, err
	}
	return l, nil
}

func (l *RotatingLog) open() error {
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open log: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("open log: %w", err)
	}
	l.f, l.size = f, st.Size()
	return nil
}

func (l *RotatingLog) rotate() error {
	if err := l.f.Close(); err != nil {
		return fmt.Errorf("rotate log: %w", err)
	}
	if err := os.Rename(l.path, l.path+".1"); err != nil {
		return fmt.Errorf("rotate log: %w", err)
	}
	return l.open()
}

// Write appends p, rotating first whenever the file would exceed its bound.
// A write that fits the bound is never split between two files; a larger
// one is (so only its tail survives).
func (l *RotatingLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return 0, errors.New("write log: closed")
	}
	n := 0
	// Start a new file rather than split a write that fits in one.
	if l.size > 0 && l.size+int64(len(p)) > l.max && int64(len(p)) <= l.max {
		if err := l.rotate(); err != nil {
			return 0, err
		}
	}
	for len(p) > 0 {
		if l.size >= l.max {
			if err := l.rotate(); err != nil {
				return n, err
			}
		}
		chunk := p
		if room := l.max - l.size; int64(len(chunk)) > room {
			chunk = chunk[:room]
		}
		m, err := l.f.Write(chunk)
		n += m
		l.size += int64(m)
		l.written += int64(m)
		if err != nil {
			return n, fmt.Errorf("write log: %w", err)
		}
		p = p[m:]
	}
	return n, nil
}

// Written returns how many bytes were written through this RotatingLog,
// including those rotated away.
func (l *RotatingLog) Written() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.written
}

// Close closes the file.
func (l *RotatingLog) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}

// tailReadBytes bounds how much of a log Tail reads from each file.
const tailReadBytes = 1 << 20

// Tail returns up to n last lines of the log at path, continuing into the
// rotated "<path>.1" when the current file holds fewer. Lines are returned
// without their newline; a missing log yields no lines and no error. At most
// the last MiB of each file is read.
func Tail(path string, n int) ([]string, error) {
	if n <= 0 {
		return nil, nil
	}
	lines, err := tailFile(path, n)
	if err != nil {
		return nil, err
	}
	if len(lines) < n {
		older, err := tailFile(path+".1", n-len(lines))
		if err != nil {
			return nil, err
		}
		lines = append(older, lines...)
	}
	return lines, nil
}

func tailFile(path string, n int) ([]string, error) {
	data, err := readEnd(path, tailReadBytes)
	if err != nil {
		return nil, err
	}
	data = bytes.TrimRight(data, "\n")
	if len(data) == 0 {
		return nil, nil
	}
	parts := bytes.Split(data, []byte("\n"))
	if len(parts) > n {
		parts = parts[len(parts)-n:]
	}
	lines := make([]string, len(parts))
	for i, p := range parts {
		lines[i] = string(bytes.TrimRight(p, "\r"))
	}
	return lines, nil
}

// readEnd returns the last max bytes of the file at path (nil if missing).
func readEnd(path string, max int64) ([]byte, error) {
	f, _, err := safefile.Open(path, -1)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read log: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("read log: %w", err)
	}
	off := st.Size() - max
	if off < 0 {
		off = 0
	}
	data, err := io.ReadAll(io.NewSectionReader(f, off, st.Size()-off))
	if err != nil {
		return nil, fmt.Errorf("read log: %w", err)
	}
	return data, nil
}

// TailBytes returns up to max last bytes of the log at path, taking the
// start from the rotated "<path>.1" when the current file is shorter. It
// is what ReadVerdict is given to find a client's own failure words.
func TailBytes(path string, max int64) ([]byte, error) {
	cur, err := readEnd(path, max)
	if err != nil {
		return nil, err
	}
	if rest := max - int64(len(cur)); rest > 0 {
		old, err := readEnd(path+".1", rest)
		if err != nil {
			return nil, err
		}
		cur = append(old, cur...)
	}
	return cur, nil
}
