package launch

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/git-agentmine/git-agentmine/exitcode"
)

// Reading a session's log while it is written, for every reader that
// streams it (the MCP server's session_output, the web board).

// SessionLogPath returns the log file log of session id, refusing one
// outside the repository's local agentmine directory under commonDir
// (where worker run puts logs): a session record comes from any clone that
// synced it, and its log path must not make a reader open an arbitrary
// file.
func SessionLogPath(commonDir, id, log string) (string, error) {
	return LogPathWithin(filepath.Join(commonDir, "agentmine"), "session "+id[:min(8, len(id))], log)
}

// LogPathWithin returns the log file log that a record of owner (what the
// error names, e.g. "run nightly") points at, refusing one that is not an
// absolute path inside root, also after following the symbolic links of
// the directories on the way: records are synced from other clones, which
// can write any path into them.
func LogPathWithin(root, owner, log string) (string, error) {
	p := filepath.Clean(log)
	refuse := func() (string, error) {
		return "", exitcode.New(exitcode.State, fmt.Errorf("%s: its log %q is outside this repository's %s; refusing to read it",
			owner, log, root), "")
	}
	if log == "" || !filepath.IsAbs(p) || !within(root, p) {
		return refuse()
	}
	// The directories on the way may be symbolic links; what they lead to
	// must be inside too.
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return refuse()
	}
	realDir, err := filepath.EvalSymlinks(filepath.Dir(p))
	if errors.Is(err, fs.ErrNotExist) {
		return p, nil // no log yet
	}
	if err != nil || !within(realRoot, filepath.Join(realDir, filepath.Base(p))) {
		return refuse()
	}
	return p, nil
}

// within reports whether path is root or below it.
func within(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// LogChunk is a piece of a log and where the next read continues.
type LogChunk struct {
	// Text is the bytes read, never ending inside a UTF-8 character.
	Text []byte
	// Next is the offset the next read starts at.
	Next int64
	// More says the log holds more after Next.
	More bool
	// Rotated says the text came (partly) from the rotated file.
	Rotated bool
}

// ReadLog reads at most max bytes of the RotatingLog at path from byte
// offset cursor. When the file is shorter than cursor it was rotated
// since: the text goes on in "<path>.1" and then from the start of the new
// file. A missing log reads as empty; a symbolic link is refused.
func ReadLog(path string, cursor int64, max int) (LogChunk, error) {
	curSize, err := LogSize(path)
	if err != nil {
		return LogChunk{}, err
	}
	if cursor <= curSize {
		data, err := readAt(path, cursor, max)
		if err != nil {
			return LogChunk{}, err
		}
		data = cutRune(data)
		next := cursor + int64(len(data))
		return LogChunk{Text: data, Next: next, More: next < curSize}, nil
	}
	// The file is shorter than the cursor: it was rotated, and the rest of
	// the text the cursor points into is in the rotated file.
	old := path + ".1"
	oldSize, err := LogSize(old)
	if err != nil {
		return LogChunk{}, err
	}
	if cursor > oldSize {
		return LogChunk{}, exitcode.New(exitcode.Usage, fmt.Errorf("offset %d is past the end of the log (%d bytes)", cursor, curSize), "")
	}
	data, err := readAt(old, cursor, max)
	if err != nil {
		return LogChunk{}, err
	}
	if end := cursor + int64(len(data)); end < oldSize {
		data = cutRune(data)
		return LogChunk{Text: data, Next: cursor + int64(len(data)), More: true, Rotated: true}, nil
	}
	rest, err := readAt(path, 0, max-len(data))
	if err != nil {
		return LogChunk{}, err
	}
	rest = cutRune(rest)
	return LogChunk{Text: append(data, rest...), Next: int64(len(rest)), More: int64(len(rest)) < curSize, Rotated: true}, nil
}

// LogSize is the size of the log file at path, 0 when it does not exist
// yet. A log that is not a regular file is refused.
func LogSize(path string) (int64, error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("reading the log: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return 0, exitcode.New(exitcode.State, fmt.Errorf("the log %s is not a regular file; refusing to read it", path), "")
	}
	return fi.Size(), nil
}

// readAt reads up to max bytes of the file at path from off, never
// following a symbolic link.
func readAt(path string, off int64, max int) ([]byte, error) {
	if max <= 0 {
		return nil, nil
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the log: %w", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("reading the log: %s is not a regular file", path)
	}
	buf := make([]byte, max)
	n, err := f.ReadAt(buf, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("reading the log: %w", err)
	}
	return buf[:n], nil
}

// cutRune drops an incomplete UTF-8 character at the end of b (the rest
// of it is not written yet, or lies beyond the bytes asked for), so the
// next read starts at its first byte.
func cutRune(b []byte) []byte {
	for i := 1; i <= utf8.UTFMax && i <= len(b); i++ {
		r := b[len(b)-i]
		if r < utf8.RuneSelf {
			return b // ASCII: nothing open
		}
		if utf8.RuneStart(r) {
			if !utf8.FullRune(b[len(b)-i:]) && i < len(b) {
				return b[:len(b)-i]
			}
			return b
		}
	}
	return b
}
