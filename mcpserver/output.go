package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/fsnotify/fsnotify"

	"github.com/git-agentmine/git-agentmine/board"
	"github.com/git-agentmine/git-agentmine/contract"
	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/output"
	"github.com/git-agentmine/git-agentmine/sessions"
	"github.com/git-agentmine/git-agentmine/worker"
)

// sessionOutput reads a session's log from a cursor: a byte offset into the
// log file. The session's state is read before the log, so that once it
// says ended, the text read after it holds everything the run wrote. When
// the log was rotated since the cursor was handed out (the file is now
// shorter than the cursor), the text continues from the rotated file
// ("<log>.1") into the new one.
func (s *Server) sessionOutput(c *call, in SessionOutputArgs) (contract.SessionOutputJSON, error) {
	max := in.MaxBytes
	switch {
	case in.Cursor < 0:
		return contract.SessionOutputJSON{}, usagef("session_output: cursor must not be negative")
	case max < 0 || max > maxOutputMax:
		return contract.SessionOutputJSON{}, usagef("session_output: max_bytes must be between 1 and %d", maxOutputMax)
	case in.WaitSeconds < 0 || in.WaitSeconds > maxOutputWaitSecs:
		return contract.SessionOutputJSON{}, usagef("session_output: wait_seconds must be between 0 and %d", maxOutputWaitSecs)
	case max == 0:
		max = defaultOutputMax
	}
	env, err := c.worker()
	if err != nil {
		return contract.SessionOutputJSON{}, err
	}
	rec, err := sessions.Get(c.ctx, env.St, in.Session)
	if err != nil {
		return contract.SessionOutputJSON{}, err
	}
	path, err := logPath(env.St, rec.Session)
	if err != nil {
		return contract.SessionOutputJSON{}, err
	}
	here := board.HereOf(env.St)
	state := contract.SessionState(rec, here, time.Now())
	chunk, err := readLog(path, in.Cursor, max)
	if err != nil {
		return contract.SessionOutputJSON{}, err
	}
	if len(chunk.text) == 0 && !chunk.more && state == "running" && in.WaitSeconds > 0 {
		waitForOutput(c.ctx, env, rec.Session.ID, path, in.Cursor, time.Duration(in.WaitSeconds)*time.Second)
		if rec, err = sessions.Get(c.ctx, env.St, rec.Session.ID); err != nil {
			return contract.SessionOutputJSON{}, err
		}
		state = contract.SessionState(rec, here, time.Now())
		if chunk, err = readLog(path, in.Cursor, max); err != nil {
			return contract.SessionOutputJSON{}, err
		}
	}
	return contract.SessionOutputJSON{V: output.SchemaVersion, Session: rec.Session.ID, Text: string(chunk.text),
		Cursor: chunk.next, More: chunk.more, Ended: state != "running", State: state, Rotated: chunk.rotated}, nil
}

func usagef(format string, a ...any) error {
	return exitcode.New(exitcode.Usage, fmt.Errorf(format, a...), "")
}

// logPath returns the session's log file, refusing one outside this
// repository's local agentmine directory (where worker run puts logs): a
// session record comes from any clone that synced it, and its log path
// must not make the server read an arbitrary file.
func logPath(st *gitstore.Store, s sessions.Session) (string, error) {
	root := filepath.Join(st.Location().CommonDir, "agentmine")
	p := filepath.Clean(s.Log)
	refuse := func() (string, error) {
		return "", exitcode.New(exitcode.State, fmt.Errorf("session %s: its log %q is outside this repository's %s; refusing to read it",
			s.ID[:8], s.Log, root), "")
	}
	if !filepath.IsAbs(p) || !within(root, p) {
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

// logChunk is a piece of a log and where the next read continues.
type logChunk struct {
	text    []byte
	next    int64
	more    bool
	rotated bool
}

// readLog reads at most max bytes of the log at path from cursor.
func readLog(path string, cursor int64, max int) (logChunk, error) {
	curSize, err := logSize(path)
	if err != nil {
		return logChunk{}, err
	}
	if cursor <= curSize {
		data, err := readAt(path, cursor, max)
		if err != nil {
			return logChunk{}, err
		}
		data = cutRune(data)
		next := cursor + int64(len(data))
		return logChunk{text: data, next: next, more: next < curSize}, nil
	}
	// The file is shorter than the cursor: it was rotated, and the rest of
	// the text the cursor points into is in the rotated file.
	old := path + ".1"
	oldSize, err := logSize(old)
	if err != nil {
		return logChunk{}, err
	}
	if cursor > oldSize {
		return logChunk{}, usagef("session_output: cursor %d is past the end of the log (%d bytes)", cursor, curSize)
	}
	data, err := readAt(old, cursor, max)
	if err != nil {
		return logChunk{}, err
	}
	if end := cursor + int64(len(data)); end < oldSize {
		data = cutRune(data)
		return logChunk{text: data, next: cursor + int64(len(data)), more: true, rotated: true}, nil
	}
	rest, err := readAt(path, 0, max-len(data))
	if err != nil {
		return logChunk{}, err
	}
	rest = cutRune(rest)
	return logChunk{text: append(data, rest...), next: int64(len(rest)), more: int64(len(rest)) < curSize, rotated: true}, nil
}

// logSize is the size of the log file at path, 0 when it does not exist
// yet. A log that is a symbolic link is refused.
func logSize(path string) (int64, error) {
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
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the log: %w", err)
	}
	defer f.Close()
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

// waitForOutput returns when the log at path changes size from size, when
// the session ends, or after d, whichever comes first. It sleeps on
// file-system events and on the session's end, never polling.
func waitForOutput(ctx context.Context, env *worker.Env, session, path string, size int64, d time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var events <-chan fsnotify.Event
	if w, err := fsnotify.NewWatcher(); err == nil {
		defer w.Close()
		if w.Add(filepath.Dir(path)) == nil {
			events = w.Events
		}
	}
	ended := make(chan struct{})
	go func() {
		env.Wait(ctx, []string{session})
		close(ended)
	}()
	for {
		if n, err := logSize(path); err != nil || n != size {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-ended:
			return
		case <-events:
		}
	}
}
