package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/git-agentmine/git-agentmine/board"
	"github.com/git-agentmine/git-agentmine/contract"
	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/launch"
	"github.com/git-agentmine/git-agentmine/sessions"
)

// A session's log streams as Server-Sent Events. Each "out" event carries
// the text appended to the log since the previous one, as JSON segments
// ({"t": text, "c": colour classes}) so that the page inserts it as text,
// never as markup; its id is the byte offset of the log just after it, so a
// browser that reconnects (the network dropped, the server restarted)
// sends Last-Event-ID and the stream goes on from exactly there, without a
// gap or a repeat. When the session has ended and everything is sent, an
// "end" event carries its state and verdict and the stream closes. A run's
// supervisor log streams the same way (runlog.go).

// chunkMax is the most log text one event carries.
const chunkMax = 64 << 10

// logPoll is how often the stream looks at the log when no file-system
// event woke it (a safety net: inotify normally wakes it at once).
const logPoll = 250 * time.Millisecond

// segment is a run of log text in one style: classes (C), and a 256- or
// true-colour foreground (F) and background (B) as "#rrggbb". R marks a
// carriage return (T is then empty): the text after it overwrites the
// line from its start.
type segment struct {
	T string `json:"t"`
	C string `json:"c,omitempty"`
	F string `json:"f,omitempty"`
	B string `json:"b,omitempty"`
	R bool   `json:"r,omitempty"`
}

// endEvent closes a stream: what ended (Of: "session" or "run"), its
// state and its verdict.
type endEvent struct {
	Of      string `json:"of"`
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
	src, err := s.sessionLog(ctx, v, r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	off, err := startOffset(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	follow(w, r, src.path, off, src.ended, src.end)
}

// logSource is a log to follow: its file, a channel closed once its
// writer has ended, and the end event to send then.
type logSource struct {
	path  string
	ended <-chan struct{}
	end   func() endEvent
}

// sessionLog finds session id's log. Its ended channel closes when the
// session has an outcome or can no longer be running, or when ctx is
// done.
func (s *Server) sessionLog(ctx context.Context, v *view, id string) (logSource, error) {
	rec, err := sessions.Get(ctx, v.st, id)
	if err != nil {
		return logSource{}, err
	}
	path, err := launch.SessionLogPath(v.st.Location().CommonDir, rec.Session.ID, rec.Session.Log)
	if err != nil {
		return logSource{}, err
	}
	here := board.HereOf(v.st)
	ended := make(chan struct{})
	s.spawn(func() {
		// Wait returns when the session has an outcome or can no longer
		// be running; it sleeps on the session's processes, never polls.
		if env, err := v.env(); err == nil {
			env.Wait(ctx, []string{rec.Session.ID})
		}
		close(ended)
	})
	return logSource{path: path, ended: ended, end: func() endEvent {
		if cur, err := board.Session(ctx, v.st, rec.Session.ID); err == nil {
			rec = cur
		}
		state := contract.SessionState(rec, here, time.Now())
		return endEvent{Of: "session", State: state, Verdict: contract.Verdict(rec, state, false)}
	}}, nil
}

// follow streams the log at path from byte offset off as "out" events
// until ended is closed and everything written before that is sent, then
// sends the "end" event that end makes and returns. It returns early when
// the client goes away.
func follow(w http.ResponseWriter, r *http.Request, path string, off int64, ended <-chan struct{}, end func() endEvent) {
	rc := http.NewResponseController(w)
	sseHeaders(w)
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, "retry: 300\n\n")
	if rc.Flush() != nil {
		return
	}
	followLog(r.Context(), path, off, ended, end, func(ev logEvent) bool {
		switch {
		case ev.Failed != "":
			fmt.Fprintf(w, "event: failed\ndata: %s\n\n", jsonText(ev.Failed))
		case ev.End != nil:
			data, _ := json.Marshal(ev.End)
			fmt.Fprintf(w, "event: end\nid: %d\ndata: %s\n\n", ev.Off, data)
		default:
			data, _ := json.Marshal(ev.Segs)
			fmt.Fprintf(w, "event: out\nid: %d\ndata: %s\n\n", ev.Off, data)
		}
		return rc.Flush() == nil
	})
}

// logEvent is one step of a followed log: text (Segs) that ends at byte
// offset Off, or its End, or why it cannot be read (Failed).
type logEvent struct {
	Segs   []segment
	Off    int64
	End    *endEvent
	Failed string
}

// followLog reads the log at path from byte offset off and hands what is
// appended to emit until ended is closed and everything written before
// that is handed on, then hands the end that end makes. It returns when
// emit returns false, when ctx is done, or after the end or a failure.
func followLog(ctx context.Context, path string, off int64, ended <-chan struct{}, end func() endEvent, emit func(logEvent) bool) {
	var events <-chan fsnotify.Event
	if fw, err := fsnotify.NewWatcher(); err == nil {
		defer fw.Close()
		if fw.Add(filepath.Dir(path)) == nil {
			events = fw.Events
		}
	}
	var sgr ansiState
	poll := time.NewTicker(logPoll)
	defer poll.Stop()
	finished := false
	for {
		// Whether the writer has ended is read before the log, so that
		// once it says so, the log read after it is whole.
		if !finished {
			select {
			case <-ended:
				finished = true
			default:
			}
		}
		chunk, err := launch.ReadLog(path, off, chunkMax)
		if err != nil {
			emit(logEvent{Off: off, Failed: firstLine(err.Error())})
			return
		}
		if len(chunk.Text) > 0 {
			text := chunk.Text
			if !chunk.More && !finished {
				text = cutEscape(text)
			}
			if len(text) > 0 {
				off = chunk.Next - int64(len(chunk.Text)-len(text))
				if !emit(logEvent{Segs: sgr.segments(text), Off: off}) {
					return
				}
				if chunk.More || chunk.Rotated {
					continue
				}
			}
		}
		if finished {
			e := end()
			emit(logEvent{Off: off, End: &e})
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
