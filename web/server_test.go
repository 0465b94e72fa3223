package web

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/git-agentmine/git-agentmine/board"
	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/internal/gittest"
	"github.com/git-agentmine/git-agentmine/memory"
	"github.com/git-agentmine/git-agentmine/merge"
	"github.com/git-agentmine/git-agentmine/sessions"
	"github.com/git-agentmine/git-agentmine/status"
	"github.com/git-agentmine/git-agentmine/tasknote"
	"github.com/git-agentmine/git-agentmine/tasks"
	"github.com/git-agentmine/git-agentmine/worker"
)

const testToken = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// fixture is a real repository with a task in every derived status.
type fixture struct {
	repo string
	st   *gitstore.Store
	env  *worker.Env
	// ids by what the task is meant to show
	ids map[string]string
	// sessions by the same names, for the tasks that have one
	sess map[string]sessions.Record
}

func open(t *testing.T, repo string) (*gitstore.Store, *worker.Env) {
	t.Helper()
	st, err := gitstore.Open(context.Background(), repo)
	if err != nil {
		t.Fatal(err)
	}
	env, err := worker.NewEnv(st, nil, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	return st, env
}

func addTask(t *testing.T, st *gitstore.Store, n tasks.New) string {
	t.Helper()
	tk, err := tasks.Add(context.Background(), st, n)
	if err != nil {
		t.Fatalf("adding %q: %v", n.Title, err)
	}
	return tk.ID
}

// prepare starts a manual session of task id (a worktree and a branch, as
// session start does) and returns it.
func prepare(t *testing.T, env *worker.Env, id string) sessions.Record {
	t.Helper()
	p, err := env.Prepare(context.Background(), worker.RunOptions{Task: id, Agent: "manual", NoClaim: true})
	if err != nil {
		t.Fatalf("preparing a session of %s: %v", id, err)
	}
	return p.Rec
}

// work commits a file in the session's worktree and ends the session with
// the exit code, running the DoD (as session end does).
func work(t *testing.T, env *worker.Env, rec sessions.Record, file, text string, exit int) sessions.Record {
	t.Helper()
	if file != "" {
		gittest.WriteFiles(t, rec.Session.Worktree, map[string]string{file: text})
		gittest.Git(t, rec.Session.Worktree, "add", file)
		gittest.Git(t, rec.Session.Worktree, "commit", "-q", "-m", "work on "+file)
	}
	if _, err := env.End(context.Background(), rec, exit, "", nil, false); err != nil {
		t.Fatalf("ending session %s: %v", rec.Session.ID, err)
	}
	got, err := sessions.Get(context.Background(), env.St, rec.Session.ID)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// newFixture builds a repository with tasks that are ready, blocked, in
// progress, in review, failed, dod_failed, done and cancelled, a parent
// with two children, a script-tag title, and an active memory.
func newFixture(t *testing.T) *fixture {
	t.Helper()
	repo := gittest.NewRepo(t)
	gittest.CommitFiles(t, repo, "agents", map[string]string{
		".agentmine/agents/manual.toml": "client = \"custom\"\ncommand = [\"true\"]\n[scope]\nwrite = [\"src/**\"]\n",
		"src/a.txt":                     "a\n",
	})
	st, env := open(t, repo)
	f := &fixture{repo: repo, st: st, env: env, ids: map[string]string{}, sess: map[string]sessions.Record{}}
	f.ids["ready"] = addTask(t, st, tasks.New{Title: "Ready one", Labels: []string{"ui"}, Priority: "high",
		Description: "Line one\n<b>not bold</b>", Acceptance: []string{"it renders"}})
	f.ids["blocked"] = addTask(t, st, tasks.New{Title: "Blocked one", BlockedBy: []string{f.ids["ready"]}, Assignee: "ada"})
	f.ids["xss"] = addTask(t, st, tasks.New{Title: "<script>alert(1)</script>"})
	f.ids["parent"] = addTask(t, st, tasks.New{Title: "Auth"})
	f.ids["running"] = addTask(t, st, tasks.New{Title: "Running one", Parent: f.ids["parent"]})
	f.sess["running"] = prepare(t, env, f.ids["running"])
	f.ids["review"] = addTask(t, st, tasks.New{Title: "Review one", DoD: []string{"grep -q ok src/r.txt"}, Parent: f.ids["parent"]})
	f.sess["review"] = work(t, env, prepare(t, env, f.ids["review"]), "src/r.txt", "ok\n", 0)
	f.ids["dod_failed"] = addTask(t, st, tasks.New{Title: "DoD fails", DoD: []string{"echo checking; grep -q ok src/d.txt"}})
	f.sess["dod_failed"] = work(t, env, prepare(t, env, f.ids["dod_failed"]), "src/d.txt", "bad\n", 0)
	f.ids["failed"] = addTask(t, st, tasks.New{Title: "Crashed"})
	f.sess["failed"] = work(t, env, prepare(t, env, f.ids["failed"]), "", "", 3)
	f.ids["done"] = addTask(t, st, tasks.New{Title: "Done one", DoD: []string{"true"}, Parent: f.ids["parent"]})
	f.sess["done"] = work(t, env, prepare(t, env, f.ids["done"]), "src/done.txt", "ok\n", 0)
	if _, err := merge.Task(context.Background(), st, env.Cfg.Base, f.ids["done"], merge.Options{}); err != nil {
		t.Fatalf("merging the done task: %v", err)
	}
	if _, err := tasknote.WriteFor(context.Background(), st, env.Cfg.Base, f.ids["done"], tasknote.Options{}); err != nil {
		t.Fatalf("writing the done task's Task Note: %v", err)
	}
	f.ids["cancelled"] = addTask(t, st, tasks.New{Title: "Dropped"})
	if _, _, err := tasks.Cancel(context.Background(), st, f.ids["cancelled"], "not needed"); err != nil {
		t.Fatal(err)
	}
	if _, err := memory.Add(context.Background(), st, memory.New{Category: "convention", Title: "Use <tabs>",
		Summary: "tabs, not spaces", Content: "Always <em>tabs</em>.", Status: "active"}); err != nil {
		t.Fatal(err)
	}
	return f
}

// serve runs the board of repo on an httptest server.
func serve(t *testing.T, repo string, readOnly bool) (*Server, *httptest.Server) {
	t.Helper()
	s, err := New(context.Background(), Options{Dir: repo, Token: testToken, ReadOnly: readOnly, Loopback: true,
		Supervisor: func(top, session string) []string { return []string{"false"} }, ShareHint: testShareHint})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		ts.CloseClientConnections()
		ts.Close()
		s.Close()
	})
	return s, ts
}

// client is a browser-like client that visited the token URL once and
// keeps the cookie; it does not follow redirects.
func client(t *testing.T, ts *httptest.Server) *http.Client {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := c.Get(ts.URL + "/?token=" + testToken)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/" {
		t.Fatalf("the token URL answered %d, Location %q; want 303 to /", res.StatusCode, res.Header.Get("Location"))
	}
	return c
}

func get(t *testing.T, c *http.Client, u string) (int, string) {
	t.Helper()
	res, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

func post(t *testing.T, c *http.Client, u string, form url.Values, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

// refs lists every ref with its value: what a refused action must leave
// alone.
func refs(t *testing.T, repo string) string {
	return gittest.Git(t, repo, "for-each-ref", "--format=%(refname) %(objectname)")
}

var cardRE = regexp.MustCompile(`data-task="([0-9a-f]+)" data-status="([a-z_]+)"`)

// columnsOf reads which board column each task's card is in.
func columnsOf(html string) map[string]string {
	out := map[string]string{}
	parts := strings.Split(html, `data-col="`)
	for _, p := range parts[1:] {
		col := p[:strings.IndexByte(p, '"')]
		for _, m := range cardRE.FindAllStringSubmatch(p, -1) {
			out[m[1]] = col
		}
	}
	if i := strings.Index(html, `class="cancelled"`); i >= 0 {
		for _, m := range cardRE.FindAllStringSubmatch(html[i:], -1) {
			out[m[1]] = "cancelled"
		}
	}
	return out
}

// boardColumns: every task's card is in the column
// its derived status (as board.Load resolves it for task list) says.
func boardColumns(t *testing.T, f *fixture, ts *httptest.Server, c *http.Client) {
	code, html := get(t, c, ts.URL+"/")
	if code != 200 {
		t.Fatalf("board: %d\n%s", code, html)
	}
	b, err := board.Load(context.Background(), f.st, "")
	if err != nil {
		t.Fatal(err)
	}
	cols := columnsOf(html)
	want := map[string]string{"ready": "ready", "blocked": "blocked", "running": "in_progress", "review": "review",
		"failed": "failed", "dod_failed": "failed", "done": "done", "cancelled": "cancelled"}
	for name, col := range want {
		id := f.ids[name]
		if cols[id] != col {
			t.Errorf("%s (%s): in column %q, want %q", name, b.Status[id].Status, cols[id], col)
		}
		if got := columnOf(b.Status[id]); col != "cancelled" && got != col {
			t.Errorf("%s: derived status %s maps to %q, want %q", name, b.Status[id].Status, got, col)
		}
	}
	if len(cols) != len(b.Tasks.IDs) {
		t.Errorf("%d cards on the board, %d tasks", len(cols), len(b.Tasks.IDs))
	}
	// The parent shows its children's progress: 1 of 3 done.
	if !strings.Contains(html, "███░░░░░░░</span> 1/3") {
		t.Errorf("the parent's progress bar is missing:\n%s", html)
	}
	// The running card shows elapsed / timeout; labels and agents show.
	if !regexp.MustCompile(`class="elapsed">\d+s / \d+s<`).MatchString(html) {
		t.Errorf("the running card shows no elapsed / timeout")
	}
	for _, s := range []string{`<span class="label">ui</span>`, `<span class="agent">ada</span>`, `<span class="agent">manual</span>`, `">attempt 1/3</span>`} {
		if !strings.Contains(html, s) {
			t.Errorf("board lacks %s", s)
		}
	}
}

// boardFilters: label, assignee and parent filters leave only the
// matching cards; an unknown parent is a 404 with the lookup's message.
func boardFilters(t *testing.T, f *fixture, ts *httptest.Server, c *http.Client) {
	for q, want := range map[string][]string{
		"label=ui":                  {"ready"},
		"assignee=ada":              {"blocked"},
		"parent=" + f.ids["parent"]: {"parent", "running", "review", "done"},
	} {
		_, html := get(t, c, ts.URL+"/?"+q)
		cols := columnsOf(html)
		if len(cols) != len(want) {
			t.Errorf("?%s: %d cards %v, want %v", q, len(cols), cols, want)
		}
		for _, name := range want {
			if _, ok := cols[f.ids[name]]; !ok {
				t.Errorf("?%s: %s missing", q, name)
			}
		}
	}
	code, html := get(t, c, ts.URL+"/?parent=ffffffff")
	if code != http.StatusNotFound || !strings.Contains(html, `class="error"`) {
		t.Errorf("unknown parent: %d\n%s", code, html)
	}
}

// escaping: a title, a description, a memory and DoD output that
// contain markup render as text on every page.
func escaping(t *testing.T, f *fixture, ts *httptest.Server, c *http.Client) {
	for _, u := range []string{"/", "/tasks/" + f.ids["xss"], "/tasks/" + f.ids["ready"], "/memory"} {
		_, html := get(t, c, ts.URL+u)
		for _, bad := range []string{"<script>alert", "<b>not bold</b>", "<em>tabs</em>", "<tabs>"} {
			if strings.Contains(html, bad) {
				t.Errorf("%s: raw %q in the page", u, bad)
			}
		}
	}
	_, html := get(t, c, ts.URL+"/tasks/"+f.ids["xss"])
	if !strings.Contains(html, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Errorf("the script title is not shown escaped")
	}
}

// TestAccessToken: no login is a 401 everywhere; the login address sets an
// HttpOnly SameSite=Strict cookie that is not the token and redirects to
// the address without it; the token is then spent (a second use is a
// 401, even from another client), and a wrong token or cookie is a 401.
func TestAccessToken(t *testing.T) {
	repo := gittest.NewRepo(t)
	_, ts := serve(t, repo, false)
	plain := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, u := range []string{"/", "/runs", "/memory", "/events", "/static/app.js", "/sessions/abcd/log", "/?token=wrong"} {
		if code, _ := get(t, plain, ts.URL+u); code != http.StatusUnauthorized {
			t.Errorf("GET %s without the token: %d, want 401", u, code)
		}
	}
	res, _ := post(t, plain, ts.URL+"/tasks", url.Values{"title": {"x"}}, nil)
	if res.StatusCode != http.StatusUnauthorized {
		t.Errorf("POST without the token: %d, want 401", res.StatusCode)
	}
	res, err := plain.Get(ts.URL + "/runs?token=" + testToken + "&x=1")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/runs?x=1" {
		t.Errorf("token URL: %d to %q, want 303 to /runs?x=1", res.StatusCode, res.Header.Get("Location"))
	}
	ck := res.Cookies()
	if len(ck) != 1 || !ck[0].HttpOnly || ck[0].SameSite != http.SameSiteStrictMode || ck[0].Value == testToken || len(ck[0].Value) != 64 {
		t.Fatalf("cookie: %+v", ck)
	}
	req, _ := http.NewRequest("GET", ts.URL+"/", nil)
	req.AddCookie(&http.Cookie{Name: ck[0].Name, Value: strings.Repeat("0", 64)})
	if res, err := plain.Do(req); err != nil || res.StatusCode != http.StatusUnauthorized {
		t.Errorf("a wrong cookie: %v %v", res.StatusCode, err)
	}
	for _, c := range []*http.Client{plain, {}} {
		if code, body := get(t, c, ts.URL+"/?token="+testToken); code != http.StatusUnauthorized || !strings.Contains(body, "already used") {
			t.Errorf("the spent token again: %d %q, want 401", code, body)
		}
	}
	// The browser that logged in keeps working, the spent address included.
	req, _ = http.NewRequest("GET", ts.URL+"/memory?token="+testToken, nil)
	req.AddCookie(ck[0])
	if res, err := plain.Do(req); err != nil || res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/memory" {
		t.Errorf("the spent address with the cookie: %v %v", res.StatusCode, err)
	}
	req, _ = http.NewRequest("GET", ts.URL+"/", nil)
	req.AddCookie(ck[0])
	if res, err := plain.Do(req); err != nil || res.StatusCode != 200 {
		t.Errorf("with the cookie: %v %v", res.StatusCode, err)
	}
	// Nothing of it is on disk.
	common := filepath.Join(repo, ".git")
	filepath.WalkDir(common, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if b, _ := os.ReadFile(p); strings.Contains(string(b), testToken) || strings.Contains(string(b), ck[0].Value) {
				t.Errorf("%s holds the login token or cookie", p)
			}
		}
		return nil
	})
}

// TestStoredTokenRemoved: the token file earlier versions kept in the
// common dir is deleted and logs no one in.
func TestStoredTokenRemoved(t *testing.T) {
	repo := gittest.NewRepo(t)
	st, err := gitstore.Open(context.Background(), repo)
	if err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(repo, ".git", "agentmine", "serve-token")
	os.MkdirAll(filepath.Dir(old), 0o755)
	stale := strings.Repeat("ab", 32)
	if err := os.WriteFile(old, []byte(stale+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := RemoveStoredToken(st); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Errorf("the stored token is still there: %v", err)
	}
	if err := RemoveStoredToken(st); err != nil {
		t.Errorf("nothing to remove: %v", err)
	}
	tok, err := NewToken()
	if err != nil || len(tok) != 64 || tok == stale {
		t.Fatalf("NewToken: %q %v", tok, err)
	}
	_, ts := serve(t, repo, false)
	if code, _ := get(t, &http.Client{}, ts.URL+"/?token="+stale); code != http.StatusUnauthorized {
		t.Errorf("the old stored token: %d, want 401", code)
	}
}

// TestHostCheck: a loopback board refuses a Host that is not loopback
// (DNS rebinding), even with the token.
func TestHostCheck(t *testing.T) {
	repo := gittest.NewRepo(t)
	for host, want := range map[string]int{"evil.example": 421, "evil.example:80": 421, "localhost:1": 303, "[::1]:9": 303, "127.0.0.2": 303} {
		_, ts := serve(t, repo, false) // a login token is good once
		req, _ := http.NewRequest("GET", ts.URL+"/?token="+testToken, nil)
		req.Host = host
		res, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != want {
			t.Errorf("Host %s: %d, want %d", host, res.StatusCode, want)
		}
	}
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)

func csrfOf(t *testing.T, c *http.Client, ts *httptest.Server) string {
	t.Helper()
	_, html := get(t, c, ts.URL+"/")
	m := csrfRE.FindStringSubmatch(html)
	if m == nil {
		t.Fatal("no CSRF value in the board's form")
	}
	return m[1]
}

// TestCrossSiteAndCSRF: a POST without the form's CSRF value, with a
// wrong one, from another origin or marked cross-site by the browser is a
// 403 and changes nothing; GET cannot change anything.
func TestCrossSiteAndCSRF(t *testing.T) {
	repo := gittest.NewRepo(t)
	_, ts := serve(t, repo, false)
	c := client(t, ts)
	csrf := csrfOf(t, c, ts)
	before := refs(t, repo)
	cases := []struct {
		name string
		form url.Values
		hdr  map[string]string
	}{
		{"no csrf", url.Values{"title": {"x"}}, nil},
		{"wrong csrf", url.Values{"title": {"x"}, "csrf": {strings.Repeat("a", 32)}}, nil},
		{"other origin", url.Values{"title": {"x"}, "csrf": {csrf}}, map[string]string{"Origin": "http://evil.example"}},
		{"other port", url.Values{"title": {"x"}, "csrf": {csrf}}, map[string]string{"Origin": "http://127.0.0.1:1"}},
		{"cross-site fetch", url.Values{"title": {"x"}, "csrf": {csrf}}, map[string]string{"Sec-Fetch-Site": "cross-site"}},
		{"same-site fetch", url.Values{"title": {"x"}, "csrf": {csrf}}, map[string]string{"Sec-Fetch-Site": "same-site"}},
	}
	for _, tc := range cases {
		res, body := post(t, c, ts.URL+"/tasks", tc.form, tc.hdr)
		if res.StatusCode != http.StatusForbidden {
			t.Errorf("%s: %d, want 403\n%s", tc.name, res.StatusCode, body)
		}
	}
	if code, _ := get(t, c, ts.URL+"/tasks?title=x"); code != http.StatusMethodNotAllowed {
		t.Errorf("GET /tasks: %d, want 405", code)
	}
	if after := refs(t, repo); after != before {
		t.Errorf("refused requests changed the refs:\n%s\n%s", before, after)
	}
	res, _ := post(t, c, ts.URL+"/tasks", url.Values{"title": {"fine"}, "csrf": {csrf}},
		map[string]string{"Origin": ts.URL, "Sec-Fetch-Site": "same-origin"})
	if res.StatusCode != http.StatusSeeOther {
		t.Errorf("a same-origin POST with the CSRF value: %d, want 303", res.StatusCode)
	}
}

// readOnly: a read-only board has no forms and refuses every POST.
func readOnly(t *testing.T, f *fixture, _ *httptest.Server, _ *http.Client) {
	_, ts := serve(t, f.repo, true)
	c := client(t, ts)
	for _, u := range []string{"/", "/tasks/" + f.ids["review"], "/tasks/" + f.ids["running"]} {
		_, html := get(t, c, ts.URL+u)
		if strings.Contains(html, "<form method=\"post\"") || !strings.Contains(html, "read-only") {
			t.Errorf("%s: a read-only page has a POST form or no read-only mark", u)
		}
	}
	before := refs(t, f.repo)
	for _, u := range []string{"/tasks", "/tasks/" + f.ids["review"] + "/merge", "/tasks/" + f.ids["ready"] + "/cancel"} {
		res, body := post(t, c, ts.URL+u, url.Values{"title": {"x"}, "csrf": {"whatever"}}, nil)
		if res.StatusCode != http.StatusForbidden {
			t.Errorf("read-only POST %s: %d\n%s", u, res.StatusCode, body)
		}
	}
	if after := refs(t, f.repo); after != before {
		t.Errorf("a read-only board changed the refs")
	}
}

// taskPage shows the description, acceptance criteria, relations as
// links, every session's facts (exit, DoD command and output tail, scope),
// the diff per file and the history.
func taskPage(t *testing.T, f *fixture, ts *httptest.Server, c *http.Client) {
	check := func(name string, wants ...string) {
		t.Helper()
		code, html := get(t, c, ts.URL+"/tasks/"+f.ids[name][:6])
		if code != 200 {
			t.Fatalf("%s: %d\n%s", name, code, html)
		}
		for _, w := range wants {
			if !strings.Contains(html, w) {
				t.Errorf("%s page lacks %q", name, w)
			}
		}
	}
	check("ready", "<p>Line one\n&lt;b&gt;not bold&lt;/b&gt;</p>", "<li><b>AC-1</b> it renders</li>", "priority high")
	check("blocked", `href="/tasks/`+f.ids["ready"]+`"`, "blocked by")
	check("parent", "1/3 children done", `href="/tasks/`+f.ids["review"]+`"`)
	ds := f.sess["dod_failed"].Session
	check("dod_failed", `<span class="badge">dod_failed</span>`, "DoD: failed", "<code>echo checking; grep -q ok src/d.txt</code> exit 1",
		"checking\n", "exit code <b>0</b>", "scope: valid", "<code>src/d.txt</code>", `<span class="add" data-ref="src/d.txt:1">&#43;bad</span>`,
		"session "+ds.ID[:8], "History", `<p class="merge-refusal">not mergeable: not merging task `)
	check("failed", "exit code <b>3</b>", "failed (exit 3)")
	check("running", `data-log="s:`+f.sess["running"].Session.ID+`"`, `action="/tasks/`+f.ids["running"]+`/stop"`, "running")
	check("done", "done (merged)", "src/done.txt", "<h2>Task Note</h2>", "# Task Note - ", " - Done one\n")
	code, html := get(t, c, ts.URL+"/tasks/ffffffff")
	if code != http.StatusNotFound || !strings.Contains(html, "not found") {
		t.Errorf("unknown task: %d\n%s", code, html)
	}
}

// memoryAndRuns: the Memory Bank lists memories by category; the
// Runs page lists the running session with a live log tab.
func memoryAndRuns(t *testing.T, f *fixture, ts *httptest.Server, c *http.Client) {
	_, html := get(t, c, ts.URL+"/memory")
	for _, w := range []string{"<h2>convention</h2>", "Use &lt;tabs&gt;", "tabs, not spaces", "Always &lt;em&gt;tabs&lt;/em&gt;."} {
		if !strings.Contains(html, w) {
			t.Errorf("memory page lacks %q", w)
		}
	}
	_, html = get(t, c, ts.URL+"/runs")
	rs := f.sess["running"].Session
	for _, w := range []string{`data-session="` + rs.ID + `"`, "Running one", `data-log="s:` + rs.ID + `"`, "worker " + rs.ID[:8]} {
		if !strings.Contains(html, w) {
			t.Errorf("runs page lacks %q", w)
		}
	}
	if strings.Contains(html, f.sess["review"].Session.ID) {
		t.Errorf("runs page lists an ended session")
	}
}

// createTask: the form creates the task through tasks.Add; bad input
// is refused with the command line's message and creates nothing.
func createTask(t *testing.T, f *fixture, ts *httptest.Server, c *http.Client) {
	csrf := csrfOf(t, c, ts)
	res, _ := post(t, c, ts.URL+"/tasks", url.Values{"csrf": {csrf}, "title": {"From the web"}, "description": {"d"},
		"priority": {"critical"}, "labels": {"a, b"}, "parent": {f.ids["parent"][:6]}, "acceptance": {"one\n\ntwo\r\n"}}, nil)
	if res.StatusCode != http.StatusSeeOther || !strings.HasSuffix(res.Header.Get("Location"), "?did=created") {
		t.Fatalf("create: %d %q", res.StatusCode, res.Header.Get("Location"))
	}
	b, err := tasks.Load(context.Background(), f.st)
	if err != nil {
		t.Fatal(err)
	}
	var got *tasks.Task
	for _, id := range b.IDs {
		if tk := b.Tasks[id].Task; tk.Title == "From the web" {
			got = &tk
		}
	}
	if got == nil || got.Priority != "critical" || strings.Join(got.Labels, ",") != "a,b" || got.Parent != f.ids["parent"] ||
		strings.Join(got.Acceptance, "|") != "one|two" {
		t.Fatalf("created task: %+v", got)
	}
	_, html := get(t, c, ts.URL+res.Header.Get("Location"))
	if !strings.Contains(html, `<p class="notice" role="status">task created</p>`) {
		t.Errorf("no notice after creating")
	}
	before := refs(t, f.repo)
	for _, form := range []url.Values{
		{"title": {"  "}},
		{"title": {"x"}, "priority": {"urgent"}},
		{"title": {"x"}, "parent": {"ffffffff"}},
	} {
		form.Set("csrf", csrf)
		res, body := post(t, c, ts.URL+"/tasks", form, nil)
		if res.StatusCode/100 != 4 || !strings.Contains(body, `<p class="error" role="alert">creating the task: `) {
			t.Errorf("bad %v: %d\n%s", form, res.StatusCode, body)
		}
	}
	if after := refs(t, f.repo); after != before {
		t.Errorf("refused creates changed the refs")
	}
}

// mergeAction: merge on a task in review lands it (done); on a
// dod_failed task it is refused with the gate's reason and changes
// nothing.
func mergeAction(t *testing.T, f *fixture, ts *httptest.Server, c *http.Client) {
	csrf := csrfOf(t, c, ts)
	before := refs(t, f.repo)
	res, body := post(t, c, ts.URL+"/tasks/"+f.ids["dod_failed"]+"/merge", url.Values{"csrf": {csrf}}, nil)
	if res.StatusCode != http.StatusConflict || !strings.Contains(body, "merge refused: ") || !strings.Contains(body, "DoD failed") {
		t.Errorf("merge of dod_failed: %d\n%s", res.StatusCode, body)
	}
	if after := refs(t, f.repo); after != before {
		t.Errorf("a refused merge changed the refs")
	}
	res, _ = post(t, c, ts.URL+"/tasks/"+f.ids["review"]+"/merge", url.Values{"csrf": {csrf}}, nil)
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("merge of review: %d", res.StatusCode)
	}
	b, err := board.Load(context.Background(), f.st, "")
	if err != nil {
		t.Fatal(err)
	}
	if s := b.Status[f.ids["review"]].Status; s != "done" {
		t.Errorf("after merge: %s, want done", s)
	}
	if !strings.Contains(gittest.Git(t, f.repo, "log", "-1", "--format=%B", "main"), "Agentmine-Task: "+f.ids["review"]) {
		t.Errorf("the merge commit does not name the task")
	}
}

// cancelAndStop: cancel records the fact with its reason;
// stop ends a running (manual) session as stop does; stop of a task with
// nothing running is refused (409).
func cancelAndStop(t *testing.T, f *fixture, ts *httptest.Server, c *http.Client) {
	csrf := csrfOf(t, c, ts)
	res, _ := post(t, c, ts.URL+"/tasks/"+f.ids["ready"]+"/cancel", url.Values{"csrf": {csrf}, "reason": {"dup"}}, nil)
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("cancel: %d", res.StatusCode)
	}
	b, _ := tasks.Load(context.Background(), f.st)
	if cf := b.Tasks[f.ids["ready"]].Task.Cancelled; cf == nil || cf.Reason != "dup" {
		t.Errorf("cancel fact: %+v", cf)
	}
	// The task it blocked says it waits on a cancelled task, and how to
	// unblock it.
	if _, html := get(t, c, ts.URL+"/tasks/"+f.ids["blocked"]); !strings.Contains(html, `<p class="blocked-cancelled">blocked by cancelled <a href="/tasks/`+f.ids["ready"]+`"`) ||
		!strings.Contains(html, "--remove-blocked-by") || !strings.Contains(html, "task reopen") {
		t.Errorf("the task blocked by the cancelled one does not say so:\n%s", html)
	}
	res, _ = post(t, c, ts.URL+"/tasks/"+f.ids["running"]+"/stop", url.Values{"csrf": {csrf}}, nil)
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("stop: %d", res.StatusCode)
	}
	rec, err := sessions.Get(context.Background(), f.st, f.sess["running"].Session.ID)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Outcome == nil || rec.Outcome.Signal != "SIGTERM" {
		t.Errorf("stopped session outcome: %+v", rec.Outcome)
	}
	res, body := post(t, c, ts.URL+"/tasks/"+f.ids["failed"]+"/stop", url.Values{"csrf": {csrf}}, nil)
	if res.StatusCode != http.StatusConflict || !strings.Contains(body, "has no running worker") {
		t.Errorf("stop with nothing running: %d", res.StatusCode)
	}
	res, _ = post(t, c, ts.URL+"/tasks/"+f.ids["ready"]+"/explode", url.Values{"csrf": {csrf}}, nil)
	if res.StatusCode != http.StatusNotFound {
		t.Errorf("unknown action: %d", res.StatusCode)
	}
	res, body = post(t, c, ts.URL+"/tasks/"+f.ids["blocked"]+"/run", url.Values{"csrf": {csrf}, "timeout": {"-5"}}, nil)
	if res.StatusCode != http.StatusBadRequest || !strings.Contains(body, "must be a positive number") {
		t.Errorf("run with a bad timeout: %d", res.StatusCode)
	}
}

// fixtureTests run on one fixture, in order: the read-only tests first,
// then the actions, each on tasks of its own.
var fixtureTests = []struct {
	name string
	fn   func(*testing.T, *fixture, *httptest.Server, *http.Client)
}{
	{"BoardColumnsFollowDerivedStatus", boardColumns},
	{"BoardFilters", boardFilters},
	{"Escaping", escaping},
	{"TaskPage", taskPage},
	{"MemoryAndRunsPages", memoryAndRuns},
	{"ReadOnly", readOnly},
	{"LogStreamResume", logStreamResume},
	{"CreateTask", createTask},
	{"MergeAction", mergeAction},
	{"CancelAndStopActions", cancelAndStop},
	{"LogOutsideRefused", logOutside},
	{"MultiplexedStream", multiplexedStream},
	{"BestOfPage", bestOfPage},
}

// TestFixture builds a repository with a task in every status (real
// sessions, worktrees, DoD runs and a merge: about ten seconds) once, and
// runs the page and action tests against one board of it.
func TestFixture(t *testing.T) {
	gittest.SkipShort(t, "builds sessions with worktrees, DoD runs and a merge")
	f := newFixture(t)
	_, ts := serve(t, f.repo, false)
	c := client(t, ts)
	for _, ft := range fixtureTests {
		t.Run(ft.name, func(t *testing.T) { ft.fn(t, f, ts, c) })
	}
}

// sseEvent is one parsed Server-Sent Event.
type sseEvent struct{ name, id, data string }

// readEvents reads events from an SSE body until n are read or it ends.
func readEvents(t *testing.T, body io.Reader, n int) []sseEvent {
	t.Helper()
	var out []sseEvent
	var cur sseEvent
	sc := bufio.NewScanner(body)
	for sc.Scan() {
		l := sc.Text()
		switch {
		case l == "":
			if cur.name != "" || cur.data != "" {
				out = append(out, cur)
				if len(out) == n {
					return out
				}
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
	return out
}

func stream(t *testing.T, c *http.Client, u string, lastID string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("GET", u, nil)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("%s: %d %s", u, res.StatusCode, res.Header.Get("Content-Type"))
	}
	return res
}

// text joins the segments of out events.
func text(evs []sseEvent) string {
	var b strings.Builder
	re := regexp.MustCompile(`"t":"((?:[^"\\]|\\.)*)"`)
	for _, e := range evs {
		if e.name != "out" {
			continue
		}
		for _, m := range re.FindAllStringSubmatch(e.data, -1) {
			s := strings.ReplaceAll(m[1], `\n`, "\n")
			b.WriteString(s)
		}
	}
	return b.String()
}

// logStreamResume: an ended session's log streams whole then ends; a
// stream that starts from Last-Event-ID (a byte offset) carries exactly
// the rest; a running session's new lines arrive as they are written;
// ANSI colour becomes classes; bad offsets are a 400.
func logStreamResume(t *testing.T, f *fixture, ts *httptest.Server, c *http.Client) {
	ended := f.sess["failed"].Session
	log := "first line\n\x1b[31mred\x1b[0m plain\x1b[2K\nthird\n"
	if err := os.MkdirAll(filepath.Dir(ended.Log), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ended.Log, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	u := ts.URL + "/sessions/" + ended.ID + "/log"
	res := stream(t, c, u, "")
	evs := readEvents(t, res.Body, 100)
	res.Body.Close()
	if len(evs) < 2 || evs[len(evs)-1].name != "end" || !strings.Contains(evs[len(evs)-1].data, `"verdict":"failed (exit 3)"`) {
		t.Fatalf("events: %+v", evs)
	}
	if got := text(evs); got != "first line\nred plain\nthird\n" {
		t.Errorf("streamed text %q", got)
	}
	if !strings.Contains(evs[0].data, `{"t":"red","c":"fg31"}`) {
		t.Errorf("colour not turned into a class: %s", evs[0].data)
	}
	if evs[0].id != fmt.Sprint(len(log)) {
		t.Errorf("id %q, want the byte offset %d", evs[0].id, len(log))
	}
	// Resume from the offset of "third".
	off := strings.Index(log, "third")
	res = stream(t, c, u, fmt.Sprint(off))
	evs = readEvents(t, res.Body, 100)
	res.Body.Close()
	if got := text(evs); got != "third\n" {
		t.Errorf("resumed text %q, want %q", got, "third\n")
	}
	for _, bad := range []string{"-1", "x", "999999"} {
		req, _ := http.NewRequest("GET", u, nil)
		req.Header.Set("Last-Event-ID", bad)
		res, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if bad == "999999" {
			// past the end: the stream opens and fails with a message
			continue
		}
		if res.StatusCode != http.StatusBadRequest {
			t.Errorf("Last-Event-ID %s: %d", bad, res.StatusCode)
		}
	}
	// An ended session that wrote no log: the stream just ends.
	res = stream(t, c, ts.URL+"/sessions/"+f.sess["review"].Session.ID+"/log", "")
	evs = readEvents(t, res.Body, 100)
	res.Body.Close()
	if len(evs) != 1 || evs[0].name != "end" || !strings.Contains(evs[0].data, `"verdict":"review"`) {
		t.Errorf("stream of a session without a log: %+v", evs)
	}
	// A running session: lines appear as they are written.
	run := f.sess["running"].Session
	if err := os.WriteFile(run.Log, []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res = stream(t, c, ts.URL+"/sessions/"+run.ID+"/log", "")
	defer res.Body.Close()
	first := readEvents(t, res.Body, 1)
	if text(first) != "one\n" || first[0].id != "4" {
		t.Fatalf("first event %+v", first)
	}
	fh, err := os.OpenFile(run.Log, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fh.WriteString("two\n")
	fh.Close()
	next := readEvents(t, res.Body, 1)
	if text(next) != "two\n" || next[0].id != "8" {
		t.Fatalf("next event %+v", next)
	}
}

// logOutside: a session whose recorded log lies outside the
// repository's agentmine directory (a synced record naming /etc/passwd)
// is refused, not read.
func logOutside(t *testing.T, f *fixture, ts *httptest.Server, c *http.Client) {
	id := f.sess["failed"].Session.ID
	if _, err := sessions.Update(context.Background(), f.st, id, "point the log elsewhere", func(s *sessions.Session) { s.Log = "/etc/passwd" }); err != nil {
		t.Fatal(err)
	}
	code, body := get(t, c, ts.URL+"/sessions/"+id+"/log")
	if code != http.StatusConflict || !strings.Contains(body, "refusing to read it") || strings.Contains(body, "root:") {
		t.Errorf("outside log: %d\n%s", code, body)
	}
}

// TestEventsOnRefChange: an open change stream gets an event when a task
// is added by another writer (here tasks.Add, as task add does).
func TestEventsOnRefChange(t *testing.T) {
	repo := gittest.NewRepo(t)
	_, ts := serve(t, repo, false)
	c := client(t, ts)
	res := stream(t, c, ts.URL+"/events", "")
	defer res.Body.Close()
	st, _ := open(t, repo)
	got := make(chan []sseEvent, 1)
	go func() { got <- readEvents(t, res.Body, 1) }()
	time.Sleep(100 * time.Millisecond) // let the stream subscribe
	start := time.Now()
	addTask(t, st, tasks.New{Title: "from elsewhere"})
	select {
	case evs := <-got:
		if len(evs) != 1 || evs[0].name != "change" {
			t.Fatalf("events %+v", evs)
		}
		t.Logf("change event %s after the task was written", time.Since(start))
	case <-time.After(10 * time.Second):
		t.Fatal("no change event within 10 s of adding a task")
	}
}

// TestANSIColours: the 16 colours of 38;5 are classes, the rest of the
// 256 and true colour (38;2 and 48;2, also with colons) are #rrggbb; 39
// and 49 reset them; malformed ones are dropped without eating text.
func TestANSIColours(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"\x1b[38;5;1mx", "fg31::x"},
		{"\x1b[38;5;9mx", "fg91::x"},
		{"\x1b[38;5;16mx", ":#000000:x"},
		{"\x1b[38;5;231mx", ":#ffffff:x"},
		{"\x1b[38;5;244mx", ":#808080:x"},
		{"\x1b[38;2;1;2;3mx", ":#010203:x"},
		{"\x1b[38:2:10:20:30mx", ":#0a141e:x"},
		{"\x1b[1;38;2;255;0;0;48;5;4mx", "b bg44:#ff0000:x"},
		{"\x1b[38;2;300;0;0mx", "::x"},
		{"\x1b[38;5;200m\x1b[39mx", "::x"},
		{"\x1b[48;2;0;0;255m\x1b[49mx", "::x"},
	} {
		var a ansiState
		segs := a.segments([]byte(c.in))
		if len(segs) != 1 {
			t.Errorf("%q: %d segments %+v", c.in, len(segs), segs)
			continue
		}
		s := segs[0]
		if got := s.C + ":" + s.F + s.B + ":" + s.T; got != c.want {
			t.Errorf("%q: %q, want %q", c.in, got, c.want)
		}
	}
}

// TestANSISegments: colours become classes, other escapes and control
// characters vanish, state carries across chunks, a half-written escape
// at the end of a chunk is held back.
func TestANSISegments(t *testing.T) {
	var a ansiState
	segs := a.segments([]byte("a\x1b[1;32mb\x1b]0;title\x07c\x1b[38;5;200md\x1b[0me\r\nf\rg\x00h"))
	var got []string
	for _, s := range segs {
		got = append(got, s.C+":"+s.F+":"+s.T+map[bool]string{true: "<CR>"}[s.R])
	}
	// 38;5;200 is a 256-colour foreground (xterm's #ff00d7); a lone \r
	// is a segment of its own, \r\n a line end.
	if want := "::a|b fg32::bc|b:#ff00d7:d|::e\nf|::<CR>|::gh"; strings.Join(got, "|") != want {
		t.Errorf("segments %q, want %q", strings.Join(got, "|"), want)
	}
	a.apply("31")
	if s := a.segments([]byte("x")); s[0].C != "fg31" {
		t.Errorf("state not carried: %+v", s)
	}
	if got := string(cutEscape([]byte("abc\x1b[3"))); got != "abc" {
		t.Errorf("cutEscape kept %q", got)
	}
	if got := string(cutEscape([]byte("abc\x1b[31m"))); got != "abc\x1b[31m" {
		t.Errorf("cutEscape cut a whole sequence: %q", got)
	}
}

// TestColumnOfPlanningReviewing: a task a planner works on is on the board
// in progress, one a reviewer works on in review.
func TestColumnOfPlanningReviewing(t *testing.T) {
	for st, col := range map[status.Status]string{status.Planning: "in_progress", status.Reviewing: "review"} {
		if got := columnOf(status.Result{Status: st}); got != col {
			t.Errorf("%s: column %s, want %s", st, got, col)
		}
	}
}
