package web

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/git-agentmine/git-agentmine/internal/gittest"
	"github.com/git-agentmine/git-agentmine/tasks"
)

// TestBoardFind: the search finds every word in a title, a description
// or an id, in any case; a column cut at n cards counts the rest in a
// link that shows more; a task written just before a page is asked for is
// on it (the snapshot notices the refs moved without waiting for the
// watcher); a malformed query is a 400 with one line saying why.
func TestBoardFind(t *testing.T) {
	repo := gittest.NewRepo(t)
	st, _ := open(t, repo)
	ids := map[string]string{}
	for name, n := range map[string]tasks.New{
		"login":  {Title: "Fix the login form", Description: "The *password* field loses focus."},
		"cache":  {Title: "Cache the parser output", Priority: "low"},
		"export": {Title: "Export invoices", Labels: []string{"billing"}},
		"import": {Title: "Import invoices", Labels: []string{"billing"}},
	} {
		ids[name] = addTask(t, st, n)
	}
	_, ts := serve(t, repo, false)
	c := client(t, ts)
	find := func(q string) map[string]string {
		t.Helper()
		code, html := get(t, c, ts.URL+"/?"+q)
		if code != 200 {
			t.Fatalf("?%s: %d\n%s", q, code, html)
		}
		return columnsOf(html)
	}
	for q, want := range map[string][]string{
		"q=" + url.QueryEscape("PASSWORD focus"):  {"login"},
		"q=invoices":                              {"export", "import"},
		"q=" + url.QueryEscape("invoices export"): {"export"},
		"q=" + ids["cache"][:6]:                   {"cache"},
		"q=nothing+here":                          nil,
		"priority=low":                            {"cache"},
		"label=billing&q=import":                  {"import"},
		"status=ready&sort=title":                 {"cache", "export", "import", "login"},
	} {
		got := find(q)
		if len(got) != len(want) {
			t.Errorf("?%s: %d cards, want %v", q, len(got), want)
		}
		for _, name := range want {
			if _, ok := got[ids[name]]; !ok {
				t.Errorf("?%s: %s missing", q, name)
			}
		}
	}
	code, html := get(t, c, ts.URL+"/?n=1&sort=title")
	if code != 200 || len(columnsOf(html)) != 1 || !strings.Contains(html, `data-hidden="3">3 more</a>`) ||
		!strings.Contains(html, `href="/?n=501&amp;sort=title"`) {
		t.Errorf("one card a column: %d, want one card and a link to 3 more\n%s", code, html)
	}
	// Written and asked for at once: no watcher event has come in yet.
	late := addTask(t, st, tasks.New{Title: "Written just now"})
	if _, ok := find("")[late]; !ok {
		t.Error("a task written just before the page is not on it")
	}
	for _, bad := range []string{"n=0", "n=x", "sort=size", "status=sleeping", "priority=urgent", "q=" + strings.Repeat("a", 501)} {
		code, html := get(t, c, ts.URL+"/?"+bad)
		if code != 400 || !strings.Contains(html, `class="error"`) {
			t.Errorf("?%.20s: %d, want 400 with the reason", bad, code)
		}
	}
}

// TestBoardSnapshotInBackground: a big board (here: every board) answers
// from its last snapshot after a change, reads the new one in the
// background and then tells the open pages to fetch themselves again,
// which then show the change; closing the server waits for that read.
func TestBoardSnapshotInBackground(t *testing.T) {
	repo := gittest.NewRepo(t)
	st, _ := open(t, repo)
	addTask(t, st, tasks.New{Title: "First"})
	s, ts := serve(t, repo, false)
	s.snaps.asyncAbove = 1
	c := client(t, ts)
	if _, html := get(t, c, ts.URL+"/"); len(columnsOf(html)) != 1 {
		t.Fatalf("the first page: %d cards, want 1", len(columnsOf(html)))
	}
	changes, done := s.live.subscribe()
	defer done()
	late := addTask(t, st, tasks.New{Title: "Second"})
	// The page asked for at once is the last snapshot; a new one is read.
	if _, html := get(t, c, ts.URL+"/"); len(columnsOf(html)) != 1 {
		t.Errorf("the page right after the change: %d cards, want the last snapshot's 1", len(columnsOf(html)))
	}
	deadline := time.After(30 * time.Second)
	for {
		select {
		case <-changes:
		case <-deadline:
			t.Fatal("the new task is not on the board 30 s after it was written")
		}
		if _, ok := find(t, c, ts.URL+"/")[late]; ok {
			return
		}
	}
}

// find returns the cards of a board page by id (their column as value).
func find(t *testing.T, c *http.Client, u string) map[string]string {
	t.Helper()
	code, html := get(t, c, u)
	if code != 200 {
		t.Fatalf("%s: %d\n%s", u, code, html)
	}
	return columnsOf(html)
}

// TestBoardSnapshotAge: a snapshot that shows running work is read again
// once it is older than its maximum age (a supervisor may have died
// without writing a ref); one without running work is kept however old.
func TestBoardSnapshotAge(t *testing.T) {
	repo := gittest.NewRepo(t)
	gittest.CommitFiles(t, repo, "agents", map[string]string{
		".agentmine/agents/manual.toml": "client = \"custom\"\ncommand = [\"true\"]\n[scope]\nwrite = [\"src/**\"]\n",
	})
	st, env := open(t, repo)
	id := addTask(t, st, tasks.New{Title: "Idle"})
	s, ts := serve(t, repo, false)
	c := client(t, ts)
	snap := func() *snapshot {
		t.Helper()
		find(t, c, ts.URL+"/")
		s.snaps.mu.Lock()
		defer s.snaps.mu.Unlock()
		return s.snaps.cur
	}
	first := snap()
	first.taken = first.taken.Add(-time.Hour)
	if snap() != first {
		t.Error("a snapshot without running work was read again for its age")
	}
	changes, done := s.live.subscribe()
	defer done()
	prepare(t, env, id)
	// Once the watcher has seen the session's refs, nothing else moves.
	select {
	case <-changes:
	case <-time.After(30 * time.Second):
		t.Fatal("no change event for the session")
	}
	time.Sleep(2 * debounce)
	running := snap()
	if len(running.running) != 1 {
		t.Fatalf("the snapshot shows %d running sessions, want 1", len(running.running))
	}
	if snap() != running {
		t.Error("a young snapshot was read again with nothing changed")
	}
	running.taken = running.taken.Add(-s.snaps.maxAge(running))
	if snap() == running {
		t.Error("a snapshot showing running work was kept past its maximum age")
	}
}
