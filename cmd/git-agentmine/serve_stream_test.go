package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

// setVisible shows or hides a tab the way switching tabs does for the
// page: document.hidden and visibilityState change and visibilitychange
// fires. Headless Chromium keeps every tab visible, and its
// Page.setWebLifecycleState (which hides and freezes a page) did not
// answer for a board tab, so the page's view of it is set directly; what
// the page then does (closing and reopening its stream) is its own.
func setVisible(t *testing.T, ctx context.Context, visible bool) {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err := chromedp.Run(c, chromedp.Evaluate[any](`(() => {
		if (!('agentmineHidden' in window)) {
			Object.defineProperty(document, 'hidden', { configurable: true, get: () => window.agentmineHidden });
			Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => window.agentmineHidden ? 'hidden' : 'visible' });
		}
		window.agentmineHidden = `+strconv.FormatBool(!visible)+`;
		document.dispatchEvent(new Event('visibilitychange'));
		return true;
	})()`))
	if err != nil {
		t.Fatalf("setting the tab visible=%v: %v", visible, err)
	}
}

// TestBrowserTwentyTabsEightWorkers: with twenty tabs of one board open
// in one browser (which opens at most six connections to a host), nineteen
// of them board pages in the background, the runs page of a run of eight
// live workers shows every worker's log updating, the supervisor's log,
// elapsed times that tick, and the workers leaving once they end; a
// background tab catches up with a task added while it was hidden once it
// is shown. Before one stream per page, the runs page alone needed ten
// connections (the change stream, the supervisor's log, eight workers').
func TestBrowserTwentyTabsEightWorkers(t *testing.T) {
	gittest.SkipShort(t, "eight real workers, a served board and twenty browser tabs")
	bin := findBrowser(t)
	repo := testRepo(t)
	gate := filepath.Join(t.TempDir(), "go")
	gittest.CommitFiles(t, repo, "agents", map[string]string{
		// chatty prints numbered lines until the file $RUN_GO exists,
		// then commits.
		".agentmine/agents/chatty.toml": "client = \"custom\"\ntimeout = 600\ncommand = [\"sh\", \"-c\", \"i=0; while [ ! -e \\\"$RUN_GO\\\" ]; do i=$((i+1)); echo \\\"$AGENTMINE_SESSION tick $i\\\"; sleep 0.2; done; echo ok > src/$AGENTMINE_TASK.txt && git add src && git commit -qm chat\"]\n[scope]\nwrite = [\"src/**\"]\n",
		"src/a.txt":                     "a\n",
	})
	const workers = 8
	var ids []string
	for i := 1; i <= workers; i++ {
		id, code := try(t, repo, nil, "task", "add", "-q", fmt.Sprintf("Worker %d", i), "--assignee", "chatty")
		if code != 0 {
			t.Fatalf("task add: exit %d", code)
		}
		ids = append(ids, id)
	}
	srv := startServe(t, repo, "127.0.0.1:0")
	ctx := newBrowser(t, bin)
	must(t, ctx, chromedp.Navigate(srv.url), chromedp.WaitVisible(chromedp.CSS("#board")))

	// Nineteen board tabs (this first one included), each going to the
	// background as the next one opens, as a user's do; the twentieth is
	// the runs page.
	boards := []context.Context{ctx}
	setVisible(t, ctx, false)
	for len(boards) < 19 {
		tctx := newTab(t, ctx)
		must(t, tctx, chromedp.Navigate(srv.base+"/"), chromedp.WaitVisible(chromedp.CSS("#board")))
		setVisible(t, tctx, false)
		boards = append(boards, tctx)
		t.Logf("tab %d open", len(boards))
	}
	rctx := newTab(t, ctx)
	must(t, rctx, chromedp.Navigate(srv.base+"/runs"), chromedp.WaitVisible(chromedp.CSS("#runs-table")))

	if out, code := try(t, repo, []string{"RUN_GO=" + gate}, append([]string{"run", "--detach", "--name", "eight", "-j", strconv.Itoa(workers), "--max-loops", "1"}, ids...)...); code != 0 {
		t.Fatalf("run --detach: exit %d: %s", code, out)
	}
	t.Cleanup(func() { os.WriteFile(gate, nil, 0o644) })
	waitFor(t, rctx, "a tab for each of the eight workers",
		`document.querySelectorAll('[data-tab][data-kind="worker"]').length === `+strconv.Itoa(workers), 120*time.Second)
	sessions := eval[[]string](t, rctx, `[...document.querySelectorAll('[data-tab][data-kind="worker"]')].map(b => b.dataset.tab.slice(4))`)
	pane := func(sid string) string { return `document.getElementById('log-` + sid + `')` }
	// Every worker's pane gets its own lines, and keeps getting them.
	for _, sid := range sessions {
		waitFor(t, rctx, "worker "+sid+"'s lines in its pane",
			`(p => p && p.textContent.includes('`+sid+` tick 3\n'))(`+pane(sid)+`)`, 60*time.Second)
	}
	last := eval[map[string]int](t, rctx, `Object.fromEntries(`+jsList(sessions)+`.map(s =>
		[s, Math.max(...[...document.getElementById('log-' + s).textContent.matchAll(/ tick (\d+)\n/g)].map(m => +m[1]))]))`)
	for _, sid := range sessions {
		next := fmt.Sprintf("%s tick %d\n", sid, last[sid]+3)
		waitFor(t, rctx, "worker "+sid+"'s later lines", `(p => p.textContent.includes(`+strconv.Quote(next)+`))(`+pane(sid)+`)`, 60*time.Second)
		if other := eval[bool](t, rctx, `[...document.querySelectorAll('pre.log')].some(p => p.id !== 'log-`+sid+`' && p.textContent.includes('`+sid+` tick'))`); other {
			t.Errorf("worker %s's lines in another pane", sid)
		}
	}
	waitFor(t, rctx, "the supervisor's lines in its tab",
		`(p => p && p.textContent.includes('started task'))(document.getElementById('log-run-eight'))`, 30*time.Second)
	elapsed := eval[string](t, rctx, `document.querySelector('tr[data-session] td:nth-child(5)').textContent`)
	waitFor(t, rctx, "the elapsed time ticking",
		`document.querySelector('tr[data-session] td:nth-child(5)').textContent !== `+strconv.Quote(elapsed), 30*time.Second)
	screenshot(t, rctx, "runs-eight")

	// A hidden tab catches up when shown.
	if _, code := try(t, repo, nil, "task", "add", "-q", "Added while hidden"); code != 0 {
		t.Fatal("task add failed")
	}
	setVisible(t, boards[7], true)
	waitFor(t, boards[7], "the task added while the tab was hidden",
		`[...document.querySelectorAll('[data-col="ready"] .title')].some(e => e.textContent === 'Added while hidden')`, 30*time.Second)

	// The workers end; they leave the runs page, and the supervisor's
	// stream ends with the run.
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, rctx, "the ended workers leaving the runs page",
		`document.querySelectorAll('tr[data-session]').length === 0`, 120*time.Second)
	waitFor(t, rctx, "the end of the supervisor's stream",
		`(p => p && !!p.querySelector('.end') && p.textContent.includes('run ended'))(document.getElementById('log-run-eight'))`, 120*time.Second)
}

// newTab opens a tab in the browser of ctx. The tab is made with the
// tab's own context (the first action on a chromedp context creates its
// tab, which lives as long as the context that action ran with).
func newTab(t *testing.T, ctx context.Context) context.Context {
	t.Helper()
	tctx, cancel := chromedp.NewContext(ctx)
	t.Cleanup(cancel)
	if err := chromedp.Do(tctx); err != nil {
		t.Fatalf("opening a tab: %v", err)
	}
	return tctx
}

// jsList is a JavaScript array literal of strings.
func jsList(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(s)
	}
	return "[" + strings.Join(q, ",") + "]"
}
