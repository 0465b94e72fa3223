package web

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/git-agentmine/git-agentmine/config"
	"github.com/git-agentmine/git-agentmine/internal/gittest"
	"github.com/git-agentmine/git-agentmine/tasks"
)

// sseChan parses an SSE body's events onto a channel, closed at its end.
func sseChan(body io.Reader) <-chan sseEvent {
	ch := make(chan sseEvent, 64)
	go func() {
		defer close(ch)
		var cur sseEvent
		sc := bufio.NewScanner(body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			l := sc.Text()
			switch {
			case l == "":
				if cur.name != "" || cur.data != "" {
					ch <- cur
				}
				cur = sseEvent{}
			case strings.HasPrefix(l, "event: "):
				cur.name = l[7:]
			case strings.HasPrefix(l, "id: "):
				cur.id = l[4:]
			case strings.HasPrefix(l, "data: "):
				cur.data += l[6:]
			}
		}
	}()
	return ch
}

// streamEvent is the data of a multiplexed stream's log event.
type streamEvent struct {
	Log   string    `json:"log"`
	Off   int64     `json:"off"`
	Segs  []segment `json:"segs"`
	Error string    `json:"error"`
	State string    `json:"state"`
}

// await reads events until ok accepts one, failing after 10 s (a bound
// on a hang, not a measured time) or at the stream's end.
func await(t *testing.T, ch <-chan sseEvent, what string, ok func(sseEvent, streamEvent) bool) (sseEvent, streamEvent) {
	t.Helper()
	limit := time.After(10 * time.Second)
	var seen []sseEvent
	for {
		select {
		case ev, open := <-ch:
			if !open {
				t.Fatalf("%s: the stream ended; events: %+v", what, seen)
			}
			seen = append(seen, ev)
			var d streamEvent
			if ev.name != "change" {
				if err := json.Unmarshal([]byte(ev.data), &d); err != nil {
					t.Fatalf("%s: event %+v: %v", what, ev, err)
				}
			}
			if ok(ev, d) {
				return ev, d
			}
		case <-limit:
			t.Fatalf("%s: not within 10 s; events: %+v", what, seen)
		}
	}
}

func segText(segs []segment) string {
	var b strings.Builder
	for _, s := range segs {
		b.WriteString(s.T)
	}
	return b.String()
}

// multiplexedStream: one /stream carries board changes and several logs
// at once: each log's text from the offset asked for, with key@offset ids
// that resume it; a log that cannot be read (a session naming a log
// outside the repository, or no session at all) is a failed event with
// the reason while the others go on; bad log parameters are a 400.
// It runs after LogOutsideRefused, whose session names /etc/passwd.
func multiplexedStream(t *testing.T, f *fixture, ts *httptest.Server, c *http.Client) {
	// A running session of its own (CancelAndStop stopped the fixture's).
	run := prepare(t, f.env, addTask(t, f.st, tasks.New{Title: "Streamed"})).Session
	if err := os.MkdirAll(filepath.Dir(run.Log), 0o755); err != nil {
		t.Fatal(err)
	}
	appendLog(t, run.Log, "before\nalpha\n")
	fi, err := os.Stat(run.Log)
	if err != nil {
		t.Fatal(err)
	}
	start := fi.Size() - int64(len("alpha\n"))
	q := url.Values{"log": {fmt.Sprintf("s:%s@%d", run.ID, start), "s:" + f.sess["failed"].Session.ID, "s:abcdef"}}
	res := stream(t, c, ts.URL+"/stream?"+q.Encode(), "")
	defer res.Body.Close()
	ch := sseChan(res.Body)
	failed := map[string]string{}
	var alpha sseEvent
	for len(failed) < 2 || alpha.name == "" {
		ev, d := await(t, ch, "the first events", func(ev sseEvent, d streamEvent) bool { return ev.name != "change" })
		switch ev.name {
		case "failed":
			failed[d.Log] = d.Error
		case "out":
			if d.Log != "s:"+run.ID || segText(d.Segs) != "alpha\n" {
				t.Fatalf("out event %+v: want alpha from s:%s", d, run.ID)
			}
			alpha = ev
		default:
			t.Fatalf("unexpected event %+v", ev)
		}
	}
	if want := fmt.Sprintf("s:%s@%d", run.ID, fi.Size()); alpha.id != want {
		t.Errorf("out event id %q, want %q", alpha.id, want)
	}
	if e := failed["s:"+f.sess["failed"].Session.ID]; !strings.Contains(e, "refusing to read it") {
		t.Errorf("the log outside the repository: failed with %q", e)
	}
	if e := failed["s:abcdef"]; !strings.Contains(e, "not found") {
		t.Errorf("no such session: failed with %q", e)
	}
	// The same stream carries a change of the board and more of the log.
	addTask(t, f.st, tasks.New{Title: "seen by the stream"})
	await(t, ch, "the board's change", func(ev sseEvent, _ streamEvent) bool { return ev.name == "change" })
	appendLog(t, run.Log, "beta\n")
	await(t, ch, "beta", func(ev sseEvent, d streamEvent) bool { return ev.name == "out" && segText(d.Segs) == "beta\n" })

	// A browser's own reconnect sends the last id: that log resumes there.
	again := stream(t, c, ts.URL+"/stream?log="+url.QueryEscape("s:"+run.ID), alpha.id)
	defer again.Body.Close()
	_, d := await(t, sseChan(again.Body), "the resumed log", func(ev sseEvent, _ streamEvent) bool { return ev.name == "out" })
	if got := segText(d.Segs); got != "beta\n" {
		t.Errorf("resumed from %s: %q, want only beta", alpha.id, got)
	}

	many := url.Values{}
	for i := 0; i <= streamLogsMax; i++ {
		many.Add("log", fmt.Sprintf("s:x%d", i))
	}
	for _, bad := range []string{"log=x:1", "log=s:", "log=s:a@-1", "log=r:a@z", many.Encode()} {
		if code, body := get(t, c, ts.URL+"/stream?"+bad); code != http.StatusBadRequest {
			t.Errorf("/stream?%.40s: %d, want 400\n%s", bad, code, body)
		}
	}
}

// TestUnknownPathAndEmptyBoard: an unknown path is a 404 page, a path
// that takes only POSTs answers a GET with 405; the board of a repository
// never set up says so and how, and once set up says it has no tasks yet.
func TestUnknownPathAndEmptyBoard(t *testing.T) {
	repo := gittest.NewRepo(t)
	_, ts := serve(t, repo, false)
	c := client(t, ts)
	for _, u := range []string{"/nope", "/tasks/x/y/z", "/static"} {
		if code, body := get(t, c, ts.URL+u); code != http.StatusNotFound || !strings.Contains(body, "no page at "+u) {
			t.Errorf("GET %s: %d, want 404 with its page\n%s", u, code, body)
		}
	}
	if code, _ := get(t, c, ts.URL+"/tasks"); code != http.StatusMethodNotAllowed {
		t.Errorf("GET /tasks: %d, want 405", code)
	}
	_, html := get(t, c, ts.URL+"/")
	if !strings.Contains(html, `data-empty="uninitialised"`) || !strings.Contains(html, "git agentmine init") {
		t.Errorf("the board of a repository never set up does not say so:\n%s", html)
	}
	gittest.WriteFiles(t, repo, map[string]string{config.File: ""})
	_, html = get(t, c, ts.URL+"/")
	if !strings.Contains(html, `data-empty="no tasks"`) || strings.Contains(html, "git agentmine init") {
		t.Errorf("the board of a set-up repository without tasks:\n%s", html)
	}
	st, _ := open(t, repo)
	addTask(t, st, tasks.New{Title: "one"})
	if _, html = get(t, c, ts.URL+"/"); strings.Contains(html, "data-empty") {
		t.Error("a board with a task still shows the empty state")
	}
}
