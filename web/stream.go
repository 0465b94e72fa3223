package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/git-agentmine/git-agentmine/exitcode"
)

// One page, one stream. A browser opens at most six connections to one
// host over HTTP/1.1, so a page that held a stream for the board's changes
// plus one per live log starved every other tab of the same board (and the
// runs page of a run with five workers starved itself). GET /stream
// multiplexes everything a page follows on one connection:
//
//   - "change": the repository changed (data: a sequence number); the page
//     fetches itself again.
//   - "out": text appended to one log, {"log": key, "off": n, "segs": […]},
//     off being the log's byte offset just after it;
//   - "end": one log's writer ended and all of it was sent, {"log": key,
//     "off": n, "of": …, "state": …, "verdict": …};
//   - "failed": one log cannot be followed, {"log": key, "error": reason}.
//
// The logs to follow are the query's log parameters, each a key, "s:" and
// a session id or "r:" and a run's name, optionally followed by "@" and
// the byte offset to start at. A log event's id is its key, "@" and its
// offset, so a browser that reconnects on its own resumes that log from
// there; the page's script reopens the stream with every log's offset in
// the query itself (it closes the stream while the tab is hidden).

// streamLogsMax is the most logs one stream follows.
const streamLogsMax = 64

// streamLog is one log a stream follows.
type streamLog struct {
	key string
	off int64
}

// streamMsg is one event of a stream, ready to write.
type streamMsg struct {
	event string
	id    string
	data  []byte
}

// parseStreamLogs reads the log parameters of a stream request; a
// Last-Event-ID naming one of them moves that log's offset.
func parseStreamLogs(r *http.Request) ([]streamLog, error) {
	raw := r.URL.Query()["log"]
	if len(raw) > streamLogsMax {
		return nil, exitcode.New(exitcode.Usage, fmt.Errorf("a stream follows at most %d logs, not %d", streamLogsMax, len(raw)), "")
	}
	var logs []streamLog
	seen := map[string]bool{}
	for _, p := range raw {
		l, err := parseStreamLog(p)
		if err != nil {
			return nil, err
		}
		if !seen[l.key] {
			seen[l.key] = true
			logs = append(logs, l)
		}
	}
	if id := r.Header.Get("Last-Event-ID"); id != "" {
		// A browser's own reconnect: the id of the last event it got.
		if last, err := parseStreamLog(id); err == nil {
			for i := range logs {
				if logs[i].key == last.key {
					logs[i].off = last.off
				}
			}
		}
	}
	return logs, nil
}

func parseStreamLog(p string) (streamLog, error) {
	key, offText, hasOff := p, "", false
	if i := strings.LastIndexByte(p, '@'); i >= 0 {
		key, offText, hasOff = p[:i], p[i+1:], true
	}
	kind, name, ok := strings.Cut(key, ":")
	if !ok || (kind != "s" && kind != "r") || name == "" {
		return streamLog{}, exitcode.New(exitcode.Usage, fmt.Errorf("log %q names no log: want s:<session> or r:<run>, optionally @<byte offset>", p), "")
	}
	var off int64
	if hasOff {
		n, err := strconv.ParseInt(offText, 10, 64)
		if err != nil || n < 0 {
			return streamLog{}, exitcode.New(exitcode.Usage, fmt.Errorf("log %q: %q is not a byte offset into the log", p, offText), "")
		}
		off = n
	}
	return streamLog{key: key, off: off}, nil
}

// stream is GET /stream: the page's one event stream.
func (s *Server) stream(w http.ResponseWriter, r *http.Request) {
	logs, err := parseStreamLogs(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ctx := r.Context()
	if _, err := s.open(ctx); err != nil {
		s.fail(w, r, err)
		return
	}
	rc := http.NewResponseController(w)
	sseHeaders(w)
	w.WriteHeader(http.StatusOK)
	fmt.Fprintf(w, "retry: 500\n: watching by %s\n\n", s.live.watching)
	if rc.Flush() != nil {
		return
	}
	// Subscribed before the logs start: a change from here on is sent.
	changes, done := s.live.subscribe()
	defer done()
	out := make(chan streamMsg)
	for _, l := range logs {
		s.spawn(func() { s.streamOne(ctx, l, out) })
	}
	ping := time.NewTicker(15 * time.Second)
	defer ping.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.live.stop:
			return
		case seq := <-changes:
			fmt.Fprintf(w, "event: change\ndata: %d\n\n", seq)
		case m := <-out:
			fmt.Fprintf(w, "event: %s\n", m.event)
			if m.id != "" {
				fmt.Fprintf(w, "id: %s\n", m.id)
			}
			fmt.Fprintf(w, "data: %s\n\n", m.data)
		case <-ping.C:
			fmt.Fprint(w, ": ping\n\n")
		}
		if rc.Flush() != nil {
			return
		}
	}
}

// streamOne follows one log of a stream, sending its events to out until
// its end, a failure, or ctx is done.
func (s *Server) streamOne(ctx context.Context, l streamLog, out chan<- streamMsg) {
	send := func(m streamMsg) bool {
		select {
		case out <- m:
			return true
		case <-ctx.Done():
			return false
		}
	}
	kind, name, _ := strings.Cut(l.key, ":")
	// A view of its own: each log's watchers read the repository
	// concurrently with the others'.
	v, err := s.open(ctx)
	var src logSource
	switch {
	case err != nil:
	case kind == "s":
		src, err = s.sessionLog(ctx, v, name)
	default:
		src, err = s.runLog(ctx, v, name)
	}
	if err != nil {
		data, _ := json.Marshal(map[string]string{"log": l.key, "error": firstLine(err.Error())})
		send(streamMsg{event: "failed", data: data})
		return
	}
	followLog(ctx, src.path, l.off, src.ended, src.end, func(ev logEvent) bool {
		id := l.key + "@" + strconv.FormatInt(ev.Off, 10)
		switch {
		case ev.Failed != "":
			data, _ := json.Marshal(map[string]string{"log": l.key, "error": ev.Failed})
			return send(streamMsg{event: "failed", data: data})
		case ev.End != nil:
			data, _ := json.Marshal(struct {
				Log string `json:"log"`
				Off int64  `json:"off"`
				endEvent
			}{l.key, ev.Off, *ev.End})
			return send(streamMsg{event: "end", id: id, data: data})
		}
		data, _ := json.Marshal(struct {
			Log  string    `json:"log"`
			Off  int64     `json:"off"`
			Segs []segment `json:"segs"`
		}{l.key, ev.Off, ev.Segs})
		return send(streamMsg{event: "out", id: id, data: data})
	})
}
