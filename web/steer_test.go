package web

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/git-agentmine/git-agentmine/board"
	"github.com/git-agentmine/git-agentmine/internal/gittest"
	"github.com/git-agentmine/git-agentmine/sessions"
	"github.com/git-agentmine/git-agentmine/tasks"
)

// steerFixture is a repository with a task in review whose DoD passed, one
// whose DoD was skipped (no DoD anywhere), one whose DoD failed, a task
// blocked by a cancelled one and a running one.
func steerFixture(t *testing.T) *fixture {
	t.Helper()
	repo := gittest.NewRepo(t)
	gittest.CommitFiles(t, repo, "agents", map[string]string{
		".agentmine/agents/manual.toml": "client = \"custom\"\ncommand = [\"true\"]\n[scope]\nwrite = [\"src/**\"]\n",
		"src/a.txt":                     "a\n",
	})
	st, env := open(t, repo)
	f := &fixture{repo: repo, st: st, env: env, ids: map[string]string{}, sess: map[string]sessions.Record{}}
	f.ids["passed"] = addTask(t, st, tasks.New{Title: "DoD passed", DoD: []string{"grep -q ok src/p.txt"}})
	f.sess["passed"] = work(t, env, prepare(t, env, f.ids["passed"]), "src/p.txt", "ok\n", 0)
	f.ids["skipped"] = addTask(t, st, tasks.New{Title: "No DoD"})
	f.sess["skipped"] = work(t, env, prepare(t, env, f.ids["skipped"]), "src/s.txt", "ok\n", 0)
	f.ids["dod_failed"] = addTask(t, st, tasks.New{Title: "DoD fails", DoD: []string{"grep -q ok src/d.txt"}})
	f.sess["dod_failed"] = work(t, env, prepare(t, env, f.ids["dod_failed"]), "src/d.txt", "bad\n", 0)
	f.ids["gone"] = addTask(t, st, tasks.New{Title: "Dropped blocker"})
	f.ids["waits"] = addTask(t, st, tasks.New{Title: "Waits on the dropped one", BlockedBy: []string{f.ids["gone"]}, Labels: []string{"a", "b"}})
	if _, _, err := tasks.Cancel(context.Background(), st, f.ids["gone"], "not needed"); err != nil {
		t.Fatal(err)
	}
	f.ids["running"] = addTask(t, st, tasks.New{Title: "Running"})
	f.sess["running"] = prepare(t, env, f.ids["running"])
	return f
}

func statusOf(t *testing.T, f *fixture, id string) string {
	t.Helper()
	b, err := board.Load(context.Background(), f.st, "")
	if err != nil {
		t.Fatal(err)
	}
	r := b.Status[id]
	if r.Blocked {
		return string(r.Status) + " blocked"
	}
	return string(r.Status)
}

// TestSteerRefusals: every refused review, edit, unblock, reopen and run
// action answers with its status code and one line, and changes no ref.
func TestSteerRefusals(t *testing.T) {
	gittest.SkipShort(t, "builds sessions with worktrees and DoD runs")
	f := steerFixture(t)
	_, ts := serve(t, f.repo, false)
	c := client(t, ts)
	csrf := csrfOf(t, c, ts)
	form := func(kv ...string) url.Values {
		v := url.Values{"csrf": {csrf}}
		for i := 0; i < len(kv); i += 2 {
			v.Add(kv[i], kv[i+1])
		}
		return v
	}
	task := func(name, action string) string { return ts.URL + "/tasks/" + f.ids[name] + "/" + action }
	cases := []struct {
		name, url string
		form      url.Values
		code      int
		says      string
	}{
		{"changes without a comment", task("passed", "changes"), form("comment", "  "), http.StatusBadRequest, "needs a comment"},
		{"changes of a task not in review", task("dod_failed", "changes"), form("comment", "redo"), http.StatusConflict, "not in review"},
		{"changes of a running task", task("running", "changes"), form("comment", "redo"), http.StatusConflict, "running worker"},
		{"changes of an older session", task("passed", "changes"), form("comment", "redo", "session", f.sess["dod_failed"].Session.ID), http.StatusConflict, "no longer task"},
		{"changes with a huge comment", task("passed", "changes"), form("comment", strings.Repeat("x", 5000)), http.StatusBadRequest, "more than"},
		{"approve and merge a skipped DoD without saying so", task("skipped", "approve"), form("merge", "1"), http.StatusConflict, "skipped its DoD"},
		{"approve a task not in review", task("dod_failed", "approve"), form(), http.StatusConflict, "not in review"},
		{"merge a skipped DoD without saying so", task("skipped", "merge"), form(), http.StatusConflict, "skipped its DoD"},
		{"edit with a bad priority", task("waits", "edit"), form("priority", "urgent"), http.StatusBadRequest, "priority"},
		{"edit with an unknown blocker", task("waits", "edit"), form("blocked_by", "ffffffff"), http.StatusNotFound, "blocker"},
		{"edit blocking a task on itself", task("waits", "edit"), form("blocked_by", f.ids["waits"]), http.StatusBadRequest, "cannot block itself"},
		{"edit with a bad max loops", task("waits", "edit"), form("max_loops", "many"), http.StatusBadRequest, "max loops"},
		{"edit with an empty title", task("waits", "edit"), form("title", " "), http.StatusBadRequest, "title"},
		{"unblock of a task not blocked by it", task("waits", "unblock"), form("blocker", f.ids["passed"]), http.StatusConflict, "is not blocked by"},
		{"unblock without a blocker", task("waits", "unblock"), form(), http.StatusBadRequest, "needs the blocker"},
		{"reopen of a running task", task("running", "reopen"), form(), http.StatusConflict, "running worker"},
		{"run start on a board without the command", ts.URL + "/runs", form("task", f.ids["waits"]), http.StatusConflict, "cannot start runs"},
		{"stop of an unknown run", ts.URL + "/runs/nope/stop", form(), http.StatusNotFound, "nope"},
		{"stop of a badly named run", ts.URL + "/runs/..x/stop", form(), http.StatusBadRequest, "invalid run name"},
	}
	before := refs(t, f.repo)
	for _, tc := range cases {
		res, body := post(t, c, tc.url, tc.form, nil)
		if res.StatusCode != tc.code || !strings.Contains(body, tc.says) {
			t.Errorf("%s: %d, want %d saying %q\n%s", tc.name, res.StatusCode, tc.code, tc.says, errorLine(body))
		}
		if after := refs(t, f.repo); after != before {
			t.Fatalf("%s: a refused action changed the refs:\n%s\n%s", tc.name, before, after)
		}
	}
	// The same forms without the CSRF value are refused before they are
	// looked at.
	for _, tc := range cases {
		v := url.Values{}
		for k, vs := range tc.form {
			if k != "csrf" {
				v[k] = vs
			}
		}
		if res, _ := post(t, c, tc.url, v, nil); res.StatusCode != http.StatusForbidden {
			t.Errorf("%s without the CSRF value: %d, want 403", tc.name, res.StatusCode)
		}
	}
	// A valid form from another origin is refused too.
	res, _ := post(t, c, task("passed", "approve"), form(), map[string]string{"Origin": "http://evil.example"})
	if res.StatusCode != http.StatusForbidden {
		t.Errorf("approve from another origin: %d, want 403", res.StatusCode)
	}
	if after := refs(t, f.repo); after != before {
		t.Errorf("refused actions changed the refs")
	}
}

// TestRunStartRefusals: the run form's choices are checked before the
// command runs, so a refusal starts nothing and changes no ref.
func TestRunStartRefusals(t *testing.T) {
	repo := gittest.NewRepo(t)
	st, _ := open(t, repo)
	id := addTask(t, st, tasks.New{Title: "One"})
	ran := 0
	s, err := New(context.Background(), Options{Dir: repo, Token: testToken, Loopback: true,
		Supervisor: func(top, session string) []string { return []string{"false"} },
		Command:    func(top string, args ...string) []string { ran++; return []string{"false"} }})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	defer func() { ts.CloseClientConnections(); ts.Close(); s.Close() }()
	c := client(t, ts)
	csrf := csrfOf(t, c, ts)
	before := refs(t, repo)
	for _, tc := range []struct {
		form url.Values
		code int
		says string
	}{
		{url.Values{}, http.StatusBadRequest, "pick the tasks"},
		{url.Values{"task": {id}, "parallel": {"0"}}, http.StatusBadRequest, "positive number of workers"},
		{url.Values{"task": {id}, "max_loops": {"x"}}, http.StatusBadRequest, "positive number of attempts"},
		{url.Values{"task": {id}, "name": {"a b"}}, http.StatusBadRequest, "invalid run name"},
		{url.Values{"tasks": {"ffffffff"}}, http.StatusNotFound, "ffffffff"},
	} {
		tc.form.Set("csrf", csrf)
		res, body := post(t, c, ts.URL+"/runs", tc.form, nil)
		if res.StatusCode != tc.code || !strings.Contains(body, tc.says) {
			t.Errorf("%v: %d, want %d saying %q\n%s", tc.form, res.StatusCode, tc.code, tc.says, errorLine(body))
		}
	}
	if ran != 0 {
		t.Errorf("the run command ran %d time(s) for refused forms", ran)
	}
	// The command's own refusal (here: false, exit 1) is the page's.
	res, body := post(t, c, ts.URL+"/runs", url.Values{"csrf": {csrf}, "task": {id}}, nil)
	if res.StatusCode != http.StatusConflict || !strings.Contains(body, "run start exited 1") || ran != 1 {
		t.Errorf("a failing run command: %d (ran %d)\n%s", res.StatusCode, ran, errorLine(body))
	}
	if after := refs(t, repo); after != before {
		t.Errorf("refused run starts changed the refs")
	}
	_, html := get(t, c, ts.URL+"/runs")
	if !strings.Contains(html, `name="task" value="`+id+`"`) {
		t.Errorf("the run form does not offer the task:\n%s", html)
	}
}

// errorLine is the refusal banner of a page, for messages.
func errorLine(html string) string {
	i := strings.Index(html, `role="alert">`)
	if i < 0 {
		if len(html) > 300 {
			return html[:300]
		}
		return html
	}
	rest := html[i+len(`role="alert">`):]
	if j := strings.Index(rest, "<"); j >= 0 {
		rest = rest[:j]
	}
	return rest
}

// TestSteerActions: the merge control follows the gate (a plain merge, the
// labelled merge of a skipped DoD, or the gate's reason and no control);
// approve records an OK review by the board's user and merges when asked;
// edit changes only the fields that differ; unblock removes a cancelled
// blocker; reopen undoes a cancel.
func TestSteerActions(t *testing.T) {
	gittest.SkipShort(t, "builds sessions with worktrees and DoD runs")
	f := steerFixture(t)
	_, ts := serve(t, f.repo, false)
	c := client(t, ts)
	csrf := csrfOf(t, c, ts)
	page := func(name string) string {
		code, html := get(t, c, ts.URL+"/tasks/"+f.ids[name])
		if code != http.StatusOK {
			t.Fatalf("task page %s: %d", name, code)
		}
		return html
	}

	t.Run("MergeControlFollowsTheGate", func(t *testing.T) {
		html := page("passed")
		if !strings.Contains(html, `action="/tasks/`+f.ids["passed"]+`/merge"`) || strings.Contains(html, "Merge without DoD") ||
			!strings.Contains(html, `id="review-form"`) || !strings.Contains(html, "Approve and merge</button>") {
			t.Errorf("a session whose DoD passed: want a merge button and the review form")
		}
		if !strings.Contains(html, `data-ref="src/p.txt:1"`) {
			t.Errorf("the diff's lines carry no reference for a line comment")
		}
		html = page("skipped")
		if !strings.Contains(html, "Merge without DoD (skipped)</button>") || strings.Contains(html, `class="merge">merge</button>`) {
			t.Errorf("a session that skipped its DoD: want only the labelled control")
		}
		html = page("dod_failed")
		if strings.Contains(html, `/merge"`) || !strings.Contains(html, `<p class="merge-refusal">not mergeable: not merging task `) ||
			!strings.Contains(html, "DoD failed") || strings.Contains(html, `id="review-form"`) {
			t.Errorf("a dod_failed session: want the gate's reason and no merge or review control\n%s", html)
		}
		if strings.Contains(page("running"), `/merge"`) {
			t.Errorf("a running task offers a merge")
		}
	})

	t.Run("Approve", func(t *testing.T) {
		res, body := post(t, c, ts.URL+"/tasks/"+f.ids["passed"]+"/approve",
			url.Values{"csrf": {csrf}, "session": {f.sess["passed"].Session.ID}, "comment": {"looks right"}}, nil)
		if res.StatusCode != http.StatusSeeOther || !strings.HasSuffix(res.Header.Get("Location"), "?did=approved") {
			t.Fatalf("approve: %d %s\n%s", res.StatusCode, res.Header.Get("Location"), errorLine(body))
		}
		rec, err := sessions.Get(context.Background(), f.st, f.sess["passed"].Session.ID)
		if err != nil {
			t.Fatal(err)
		}
		if r := rec.Review; r == nil || !r.OK() || r.Agent != gittest.Name || r.By != reviewedBy || len(r.Reasons) != 1 || r.Reasons[0] != "looks right" {
			t.Errorf("the recorded review: %+v", rec.Review)
		}
		if s := statusOf(t, f, f.ids["passed"]); s != "review" {
			t.Errorf("approved without merging: %s, want review", s)
		}
		res, body = post(t, c, ts.URL+"/tasks/"+f.ids["skipped"]+"/approve",
			url.Values{"csrf": {csrf}, "merge": {"1"}, "allow_skipped": {"1"}}, nil)
		if res.StatusCode != http.StatusSeeOther {
			t.Fatalf("approve and merge without DoD: %d\n%s", res.StatusCode, errorLine(body))
		}
		if s := statusOf(t, f, f.ids["skipped"]); s != "done" {
			t.Errorf("approved and merged: %s, want done", s)
		}
	})

	t.Run("Edit", func(t *testing.T) {
		id := f.ids["waits"]
		version := func() string {
			m := regexp.MustCompile(`name="version" value="([0-9a-f]+)"`).FindStringSubmatch(page("waits"))
			if m == nil {
				t.Fatal("the edit form names no version")
			}
			return m[1]
		}
		drawn := version()
		if !strings.Contains(page("waits"), `name="title" value="Waits on the dropped one"`) {
			t.Fatalf("the edit form does not show the title")
		}
		// Someone else changes the description after the form was drawn:
		// the form is refused rather than overwrite it.
		other := "written elsewhere"
		if _, _, err := tasks.Update(context.Background(), f.st, id, tasks.Patch{Description: &other}); err != nil {
			t.Fatal(err)
		}
		form := url.Values{"csrf": {csrf}, "version": {drawn}, "title": {"Renamed"}, "description": {""}, "type": {"bug"}, "priority": {"critical"},
			"assignee": {"ada"}, "parent": {""}, "base": {""}, "labels": {"b c"}, "blocked_by": {f.ids["gone"][:8] + " " + f.ids["passed"][:8]},
			"acceptance": {"first\r\nsecond\r\n"}, "dod": {"true"}, "max_loops": {"5"}}
		before := refs(t, f.repo)
		res, body := post(t, c, ts.URL+"/tasks/"+id+"/edit", form, nil)
		if res.StatusCode != http.StatusConflict || !strings.Contains(body, "changed since this form was drawn") || refs(t, f.repo) != before {
			t.Fatalf("an edit of a task changed meanwhile: %d\n%s", res.StatusCode, errorLine(body))
		}
		form.Set("version", version())
		form.Set("description", other)
		res, body = post(t, c, ts.URL+"/tasks/"+id+"/edit", form, nil)
		if res.StatusCode != http.StatusSeeOther || !strings.HasSuffix(res.Header.Get("Location"), "?did=edited") {
			t.Fatalf("edit: %d %s\n%s", res.StatusCode, res.Header.Get("Location"), errorLine(body))
		}
		b, err := tasks.Load(context.Background(), f.st)
		if err != nil {
			t.Fatal(err)
		}
		got := b.Tasks[id].Task
		if got.Title != "Renamed" || got.Type != "bug" || got.Priority != "critical" || got.Assignee != "ada" || got.MaxLoops != 5 ||
			strings.Join(got.Labels, ",") != "b,c" || strings.Join(got.Acceptance, "|") != "first|second" || strings.Join(got.DoD, "|") != "true" ||
			len(got.BlockedBy) != 2 || got.Description != other {
			t.Errorf("after the edit: %+v", got)
		}
		// The same fields again change nothing.
		form.Set("version", version())
		form.Set("labels", "c b")
		before = refs(t, f.repo)
		res, _ = post(t, c, ts.URL+"/tasks/"+id+"/edit", form, nil)
		if !strings.HasSuffix(res.Header.Get("Location"), "?did=unchanged") || refs(t, f.repo) != before {
			t.Errorf("an edit changing nothing: %s", res.Header.Get("Location"))
		}
	})

	t.Run("UnblockAndReopen", func(t *testing.T) {
		id := f.ids["waits"]
		if s := statusOf(t, f, id); s != "open blocked" {
			t.Fatalf("before: %s", s)
		}
		html := page("waits")
		if !strings.Contains(html, `name="blocker" value="`+f.ids["gone"]+`"`) {
			t.Fatalf("no unblock control for the cancelled blocker")
		}
		res, body := post(t, c, ts.URL+"/tasks/"+id+"/unblock", url.Values{"csrf": {csrf}, "blocker": {f.ids["gone"]}}, nil)
		if res.StatusCode != http.StatusSeeOther {
			t.Fatalf("unblock: %d\n%s", res.StatusCode, errorLine(body))
		}
		b, _ := tasks.Load(context.Background(), f.st)
		if bl := b.Tasks[id].Task.BlockedBy; len(bl) != 1 || bl[0] != f.ids["passed"] {
			t.Errorf("blockers after unblock: %v", bl)
		}
		if !strings.Contains(page("gone"), `action="/tasks/`+f.ids["gone"]+`/reopen"`) {
			t.Errorf("a cancelled task offers no reopen")
		}
		res, _ = post(t, c, ts.URL+"/tasks/"+f.ids["gone"]+"/reopen", url.Values{"csrf": {csrf}, "reason": {"needed after all"}}, nil)
		if res.StatusCode != http.StatusSeeOther {
			t.Fatalf("reopen: %d", res.StatusCode)
		}
		if s := statusOf(t, f, f.ids["gone"]); s != "open" {
			t.Errorf("after reopen: %s, want open", s)
		}
	})
}
