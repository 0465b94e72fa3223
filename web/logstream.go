package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/fsnotify/fsnotify"

	"github.com/git-agentmine/git-agentmine/board"
	"github.com/git-agentmine/git-agentmine/contract"
	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/sessions"
)

// A session's log streams as Server-Sent Events. Each "out" event carries
// the text appended to the log since the previous one, as JSON segments
// ({"t": text, "c": colour classes}) so that the page inserts it as text,
// never as markup; its id is the byte offset of the log just after it, so a
// browser that reconnects (the network dropped, the server restarted)
// sends Last-Event-ID and the stream goes on from exactly there, without a
// gap or a repeat. When the session has ended and everything is sent, an
// "end" event carries its state and verdict and the stream closes.

// chunkMax is the most log text one event carries.
const chunkMax = 64 << 10

// logPoll is how often the stream looks at the log when no file-system
// event woke it (a safety net: inotify normally wakes it at once).
const logPoll = 250 * time.Millisecond

type segment struct {
	T string `json:"t"`
	C string `json:"c,omitempty"`
}

type endEvent struct {
	State   string `json:"state"`
	Verdict string `json:"verdict"`
}

func (s *Server) logStream(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	v, err := s.open(ctx)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	rec, err := sessions.Get(ctx, v.st, r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	path, err := logPath(v.st, rec.Session)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	off, err := startOffset(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	here := board.HereOf(v.st)
	rc := http.NewResponseController(w)
	sseHeaders(w)
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, "retry: 300\n\n")
	if rc.Flush() != nil {
		return
	}
	var events <-chan fsnotify.Event
	if fw, err := fsnotify.NewWatcher(); err == nil {
		defer fw.Close()
		if fw.Add(filepath.Dir(path)) == nil {
			events = fw.Events
		}
	}
	ended := make(chan struct{})
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		// Wait returns when the session has an outcome or can no longer
		// be running; it sleeps on the session's processes, never polls.
		if env, err := v.env(); err == nil {
			env.Wait(wctx, []string{rec.Session.ID})
		}
		close(ended)
	}()
	var sgr ansiState
	poll := time.NewTicker(logPoll)
	defer poll.Stop()
	finished := false
	for {
		// Whether the session has ended is read before the log, so that
		// once it says so, the log read after it is whole.
		if !finished {
			select {
			case <-ended:
				finished = true
			default:
			}
		}
		chunk, err := readLog(path, off, chunkMax)
		if err != nil {
			fmt.Fprintf(w, "event: failed\ndata: %s\n\n", jsonText(firstLine(err.Error())))
			rc.Flush()
			return
		}
		if len(chunk.text) > 0 {
			text := chunk.text
			if !chunk.more && !finished {
				text = cutEscape(text)
			}
			if len(text) > 0 {
				off = chunk.next - int64(len(chunk.text)-len(text))
				data, _ := json.Marshal(sgr.segments(text))
				fmt.Fprintf(w, "event: out\nid: %d\ndata: %s\n\n", off, data)
				if rc.Flush() != nil {
					return
				}
				if chunk.more || chunk.rotated {
					continue
				}
			}
		}
		if finished {
			cur, err := sessions.Get(ctx, v.st, rec.Session.ID)
			if err == nil {
				rec = cur
			}
			state := contract.SessionState(rec, here, time.Now())
			data, _ := json.Marshal(endEvent{State: state, Verdict: contract.Verdict(rec, state, false)})
			fmt.Fprintf(w, "event: end\nid: %d\ndata: %s\n\n", off, data)
			rc.Flush()
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-ended:
		case <-events:
		case <-poll.C:
		}
	}
}

// startOffset is where a stream starts: the Last-Event-ID a reconnecting
// browser sends, else the from parameter, else 0.
func startOffset(r *http.Request) (int64, error) {
	raw := r.Header.Get("Last-Event-ID")
	what := "Last-Event-ID"
	if raw == "" {
		raw, what = r.URL.Query().Get("from"), "from"
	}
	if raw == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || n < 0 {
		return 0, exitcode.New(exitcode.Usage, fmt.Errorf("%s %q is not a byte offset into the log", what, raw), "")
	}
	return n, nil
}

func jsonText(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// logPath returns the session's log file, refusing one outside this
// repository's local agentmine directory (where worker run puts logs): a
// session record comes from any clone that synced it, and its log path
// must not make the board read an arbitrary file.
func logPath(st *gitstore.Store, s sessions.Session) (string, error) {
	root := filepath.Join(st.Location().CommonDir, "agentmine")
	p := filepath.Clean(s.Log)
	refuse := func() (string, error) {
		return "", exitcode.New(exitcode.State, fmt.Errorf("session %s: its log %q is outside this repository's %s; refusing to read it",
			s.ID[:8], s.Log, root), "")
	}
	if s.Log == "" || !filepath.IsAbs(p) || !within(root, p) {
		return refuse()
	}
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

// readLog reads at most max bytes of the log at path from off. When the
// file is shorter than off it was rotated since: the text goes on in the
// rotated file ("<log>.1") and then from the start of the new one.
func readLog(path string, off int64, max int) (logChunk, error) {
	size, err := logSize(path)
	if err != nil {
		return logChunk{}, err
	}
	if off <= size {
		data, err := readAt(path, off, max)
		if err != nil {
			return logChunk{}, err
		}
		data = cutRune(data)
		next := off + int64(len(data))
		return logChunk{text: data, next: next, more: next < size}, nil
	}
	old := path + ".1"
	oldSize, err := logSize(old)
	if err != nil {
		return logChunk{}, err
	}
	if off > oldSize {
		return logChunk{}, exitcode.New(exitcode.Usage, fmt.Errorf("offset %d is past the end of the log (%d bytes)", off, size), "")
	}
	data, err := readAt(old, off, max)
	if err != nil {
		return logChunk{}, err
	}
	// The rest of the rotated file, then the new file from its start: the
	// next offset counts in the new file.
	rest, err := readAt(path, 0, max-len(data))
	if err != nil {
		return logChunk{}, err
	}
	rest = cutRune(rest)
	return logChunk{text: append(data, rest...), next: int64(len(rest)), more: int64(len(rest)) < size, rotated: true}, nil
}

// logSize is the size of the log file, 0 when it does not exist yet. A log
// that is not a regular file is refused.
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

// readAt reads up to max bytes of the file from off, never following a
// symbolic link.
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
// of it is not written yet), so the next read starts at its first byte.
func cutRune(b []byte) []byte {
	for i := 1; i <= utf8.UTFMax && i <= len(b); i++ {
		r := b[len(b)-i]
		if r < utf8.RuneSelf {
			return b
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

// cutEscape drops an escape sequence that is not finished at the end of b
// (the rest of it is not written yet), so that it is read whole next time.
func cutEscape(b []byte) []byte {
	const window = 64
	start := len(b) - window
	if start < 0 {
		start = 0
	}
	i := strings.LastIndexByte(string(b[start:]), 0x1b)
	if i < 0 {
		return b
	}
	i += start
	if _, ok := escapeEnd(b[i:]); ok {
		return b
	}
	return b[:i]
}
