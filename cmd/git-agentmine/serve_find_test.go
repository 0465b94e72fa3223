package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

// findRepo is a repository with a few tasks to find, and agents that
// fail (crash) and pass to review (edit).
func findRepo(t *testing.T) (string, map[string]string) {
	t.Helper()
	repo := testRepo(t)
	gittest.CommitFiles(t, repo, "agents", map[string]string{
		".agentmine/agents/edit.toml":  "client = \"custom\"\ncommand = [\"sh\", \"-c\", \"echo ok > src/r.txt && git add src && git commit -qm edit\"]\n[scope]\nwrite = [\"src/**\"]\n",
		".agentmine/agents/crash.toml": "client = \"custom\"\ncommand = [\"sh\", \"-c\", \"echo crashing; exit 3\"]\n[scope]\nwrite = [\"src/**\"]\n",
		// progress draws a progress bar with carriage returns, then
		// prints in a 256-colour red and a true colour.
		".agentmine/agents/progress.toml": "client = \"custom\"\ncommand = [\"sh\", \"-c\", \"printf 'step 1/3 working\\\\rstep 2/3\\\\rstep 3/3 done\\\\n\\\\033[38;5;196mred\\\\033[0m \\\\033[38;2;1;2;3mrgb\\\\033[0m\\\\n'\"]\n[scope]\nwrite = [\"src/**\"]\n",
		// waitcrash waits for the file $RUN_GO, then fails: a worker of a
		// run that ends when the test says.
		".agentmine/agents/waitcrash.toml": "client = \"custom\"\ntimeout = 600\ncommand = [\"sh\", \"-c\", \"while [ ! -e \\\"$RUN_GO\\\" ]; do sleep 0.05; done; exit 3\"]\n[scope]\nwrite = [\"src/**\"]\n",
		"src/a.txt":                        "a\n",
	})
	ids := map[string]string{}
	// Each task is added a minute after the last (the tests' clock is
	// fixed), so the newest is known.
	at := time.Now().Add(-time.Hour)
	add := func(name string, args ...string) {
		at = at.Add(time.Minute)
		id, code := try(t, repo, []string{"GIT_COMMITTER_DATE=" + at.Format(time.RFC3339)}, append([]string{"task", "add", "-q"}, args...)...)
		if code != 0 {
			t.Fatalf("task add %v: exit %d", args, code)
		}
		ids[name] = id
	}
	add("login", "Fix the login form", "-d", "The *password* field loses focus.", "--label", "ui", "-p", "high")
	add("cache", "Cache the parser output", "-p", "low", "--assignee", "ada")
	add("export", "Export invoices", "--blocked-by", ids["login"])
	add("crash", "Crashes at once")
	add("review", "Write the sitemap", "--dod", "grep -q ok src/r.txt")
	return repo, ids
}

// cardsOn returns the ids of the board's cards, in the page's order.
func cardsOn(t *testing.T, ctx context.Context) []string {
	t.Helper()
	return eval[[]string](t, ctx, `Array.from(document.querySelectorAll("#board article.card")).map(c => c.dataset.task)`)
}

// search types into the board's search box (or sets a filter) the way a
// person does, and waits until the board shows the answer.
func search(t *testing.T, ctx context.Context, name, value string) {
	t.Helper()
	before := eval[string](t, ctx, `document.body.dataset.refreshed || ""`)
	eval[bool](t, ctx, fmt.Sprintf(`(() => { const el = document.querySelector('#find [name=%q]'); el.value = %q;
		el.dispatchEvent(new Event("input", {bubbles: true})); return true })()`, name, value))
	waitFor(t, ctx, "the board answers "+name+"="+value, fmt.Sprintf(`(document.body.dataset.refreshed || "") !== %q`, before), 20*time.Second)
}

// TestBrowserFind drives the board's search, filters, order and cap in a
// headless Chromium against a real server: text is found in titles and
// descriptions, each filter leaves only its tasks, the address follows,
// the cap never hides the task that changed last and its count of hidden
// cards is a link that shows them, and cards say what they wait on and
// why they failed.
func TestBrowserFind(t *testing.T) {
	gittest.SkipShort(t, "a served board, workers and a headless browser")
	bin := findBrowser(t)
	repo, ids := findRepo(t)
	if _, code := try(t, repo, nil, "worker", "run", ids["crash"], "--agent", "crash", "--exec", "--no-claim"); code == 0 {
		t.Fatal("the crashing worker succeeded")
	}
	srv := startServe(t, repo, "127.0.0.1:0")
	ctx := newBrowser(t, bin)
	must(t, ctx, chromedp.Navigate(srv.url), chromedp.WaitVisible(chromedp.CSS("#board")))

	only := func(what string, want ...string) {
		t.Helper()
		got := cardsOn(t, ctx)
		if strings.Join(got, " ") != strings.Join(want, " ") {
			names := map[string]string{}
			for n, id := range ids {
				names[id] = n
			}
			var g []string
			for _, id := range got {
				g = append(g, names[id])
			}
			t.Errorf("%s: cards %v, want %d of them", what, g, len(want))
		}
	}
	search(t, ctx, "q", "LOGIN")
	only("q=LOGIN (any case)", ids["login"])
	if u := eval[string](t, ctx, `location.search`); u != "?q=LOGIN" {
		t.Errorf("the address is %q, want ?q=LOGIN", u)
	}
	search(t, ctx, "q", "password focus")
	only("a description's words", ids["login"])
	search(t, ctx, "q", "no such words")
	only("no match")
	if got := eval[string](t, ctx, `document.querySelector('[data-empty="no match"]')?.innerText || ""`); !strings.Contains(got, "No task matches") {
		t.Errorf("an empty answer says %q", got)
	}
	search(t, ctx, "q", "")
	search(t, ctx, "priority", "low")
	only("priority=low", ids["cache"])
	search(t, ctx, "priority", "")
	search(t, ctx, "agent", "ada")
	only("agent=ada", ids["cache"])
	search(t, ctx, "agent", "")
	search(t, ctx, "label", "ui")
	only("label=ui", ids["login"])
	search(t, ctx, "label", "")
	search(t, ctx, "status", "blocked")
	only("status=blocked", ids["export"])
	waiting := eval[string](t, ctx, `document.querySelector("#board article.card .waiting")?.innerText || ""`)
	if !strings.Contains(waiting, "waits on #"+ids["login"][:4]) || !strings.Contains(waiting, "Fix the login form") {
		t.Errorf("the blocked card says %q, want what it waits on (id and title)", waiting)
	}
	search(t, ctx, "status", "failed")
	only("status=failed", ids["crash"])
	why := eval[string](t, ctx, `document.querySelector("#board article.card .why")?.innerText || ""`)
	attempt := eval[string](t, ctx, `document.querySelector("#board article.card .attempts")?.innerText || ""`)
	if !strings.Contains(why, "exit") || attempt != "attempt 1/3" {
		t.Errorf("the failed card says why %q and %q, want the exit and attempt 1/3", why, attempt)
	}
	search(t, ctx, "status", "")
	search(t, ctx, "sort", "title")
	if got := cardsOn(t, ctx); len(got) != 5 || got[0] != ids["cache"] {
		t.Errorf("sorted by title: %v, want the cache task first", got)
	}

	// A cap of two cards a column: the task changed last is on top, and
	// the count of the rest is a link that shows them.
	must(t, ctx, chromedp.Navigate(srv.base+"/?n=2"), chromedp.WaitVisible(chromedp.CSS("#board")))
	ready := func() []string {
		return eval[[]string](t, ctx, `Array.from(document.querySelectorAll('[data-col="ready"] article.card')).map(c => c.dataset.task)`)
	}
	if got := ready(); len(got) != 2 || got[0] != ids["review"] {
		t.Fatalf("ready, two cards: %v, want the newest (review) first", got)
	}
	if _, code := try(t, repo, []string{"GIT_COMMITTER_DATE=" + time.Now().Format(time.RFC3339)}, "task", "update", ids["login"], "-p", "critical"); code != 0 {
		t.Fatal("task update failed")
	}
	waitFor(t, ctx, "the updated task on top of its column", fmt.Sprintf(`document.querySelector('[data-col="ready"] article.card')?.dataset.task === %q`, ids["login"]), 20*time.Second)
	more := eval[string](t, ctx, `document.querySelector('[data-col="ready"] .more a')?.innerText || ""`)
	if more != "1 more" {
		t.Fatalf("the hidden count says %q, want 1 more", more)
	}
	href := eval[string](t, ctx, `document.querySelector('[data-col="ready"] .more a').href`)
	must(t, ctx, chromedp.Navigate(href), chromedp.WaitVisible(chromedp.CSS("#board")))
	waitFor(t, ctx, "every ready card after following the count", `document.querySelectorAll('[data-col="ready"] article.card').length === 3`, 20*time.Second)
}

// TestBrowserNotifications: with notifications turned on, the board
// notifies when a task fails, when one is ready for review, when one uses
// up its attempts and when a run ends. The page's
// Notification is replaced by one that records its calls (and grants the
// permission), as a browser with the permission granted would show them.
func TestBrowserNotifications(t *testing.T) {
	gittest.SkipShort(t, "a served board, workers and a headless browser")
	bin := findBrowser(t)
	repo, ids := findRepo(t)
	srv := startServe(t, repo, "127.0.0.1:0")
	ctx := newBrowser(t, bin)
	must(t, ctx, chromedp.Navigate(srv.url), chromedp.WaitVisible(chromedp.CSS("#board")))
	eval[bool](t, ctx, `(() => {
		window.shown = [];
		const N = function (title, o) { window.shown.push(title + " | " + (o && o.body)); };
		N.permission = "default";
		N.requestPermission = () => { N.permission = "granted"; return Promise.resolve("granted"); };
		window.Notification = N;
		return true })()`)
	if off := eval[string](t, ctx, `document.getElementById("notify").textContent`); off != "notify me" {
		t.Fatalf("the notifications button says %q before it is clicked", off)
	}
	// Off: a failure notifies no one.
	try(t, repo, nil, "worker", "run", ids["crash"], "--agent", "crash", "--exec", "--no-claim")
	waitFor(t, ctx, "the failed card", fmt.Sprintf(`document.querySelector('[data-task=%q]')?.dataset.status === "failed"`, ids["crash"]), 20*time.Second)
	must(t, ctx, chromedp.Click(chromedp.CSS("#notify")))
	waitFor(t, ctx, "notifications on", `document.getElementById("notify").textContent === "notifications on"`, 5*time.Second)
	if n := eval[int](t, ctx, `window.shown.length`); n != 0 {
		t.Errorf("%d notifications while they were off", n)
	}
	if _, code := try(t, repo, nil, "worker", "run", ids["review"], "--agent", "edit", "--exec", "--no-claim"); code != 0 {
		t.Fatalf("worker run: exit %d", code)
	}
	waitFor(t, ctx, "a notification that the task needs review", `window.shown.some(s => s.includes("needs review") && s.includes("Write the sitemap"))`, 20*time.Second)
	if _, code := try(t, repo, nil, "worker", "run", ids["login"], "--agent", "crash", "--exec", "--no-claim"); code == 0 {
		t.Fatal("the crashing worker succeeded")
	}
	waitFor(t, ctx, "a notification that the task failed", `window.shown.some(s => s.includes("failed") && s.includes("Fix the login form"))`, 20*time.Second)
	// A run whose only task uses up its one attempt: the task is
	// exhausted, and the run ends.
	gate := filepath.Join(t.TempDir(), "go")
	id, code := try(t, repo, nil, "task", "add", "-q", "Runs out", "--assignee", "waitcrash")
	if code != 0 {
		t.Fatal("task add failed")
	}
	if out, code := try(t, repo, []string{"RUN_GO=" + gate}, "run", id, "--detach", "--name", "web", "-j", "1", "--max-loops", "1"); code != 0 {
		t.Fatalf("run --detach: exit %d: %s", code, out)
	}
	waitFor(t, ctx, "the run on the board", `document.querySelector('[data-run="web"]')?.dataset.state === "running"`, 30*time.Second)
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "a notification that the task is exhausted", `window.shown.some(s => s.includes("exhausted") && s.includes("Runs out"))`, 60*time.Second)
	waitFor(t, ctx, "a notification that the run ended", `window.shown.some(s => s.startsWith("run web ended"))`, 60*time.Second)
	t.Logf("notifications: %v", eval[[]string](t, ctx, `window.shown`))
	// The supervisor's stream ends once its process is gone: nothing of
	// it outlives the test.
	must(t, ctx, chromedp.Navigate(srv.base+"/runs"), chromedp.WaitVisible(chromedp.CSS("#runs-table")))
	waitFor(t, ctx, "the end of the supervisor's stream",
		`(p => p && !!p.querySelector('.end') && p.textContent.includes('run ended'))(document.getElementById('log-run-web'))`, 60*time.Second)
}

// TestBrowserLogTerminal: a session's log on its task page reads as a
// terminal shows it: text after a carriage return overwrites the line
// (what it does not reach stays), and 256-colour and true-colour text
// keeps its colour.
func TestBrowserLogTerminal(t *testing.T) {
	gittest.SkipShort(t, "a served board, a worker and a headless browser")
	bin := findBrowser(t)
	repo, ids := findRepo(t)
	if _, code := try(t, repo, nil, "worker", "run", ids["cache"], "--agent", "progress", "--exec", "--no-claim"); code != 0 {
		t.Fatalf("worker run: exit %d", code)
	}
	srv := startServe(t, repo, "127.0.0.1:0")
	ctx := newBrowser(t, bin)
	must(t, ctx, chromedp.Navigate(srv.url), chromedp.Navigate(srv.base+"/tasks/"+ids["cache"]), chromedp.WaitVisible(chromedp.CSS("pre.log")))
	waitFor(t, ctx, "the whole log", `document.querySelector("pre.log").textContent.includes("rgb")`, 20*time.Second)
	text := eval[string](t, ctx, `document.querySelector("pre.log").textContent`)
	// (The log's first line, agentmine's, quotes the command.)
	if !strings.Contains(text, "\nstep 3/3 doneing\nred rgb\n") || strings.Contains(text, "step 2/3\n") {
		t.Errorf("the log reads %q, want the progress overwritten in place (step 3/3 doneing)", text)
	}
	colours := eval[[]string](t, ctx, `Array.from(document.querySelectorAll("pre.log span")).filter(s => s.textContent === "red" || s.textContent === "rgb").map(s => s.textContent + " " + s.style.color)`)
	if strings.Join(colours, ", ") != "red rgb(255, 0, 0), rgb rgb(1, 2, 3)" {
		t.Errorf("coloured spans: %q", colours)
	}
}
