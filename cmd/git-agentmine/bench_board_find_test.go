package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

// boardWords make the fixture's titles and descriptions: searchable text
// with words that occur in many tasks and words that occur in few.
var boardWords = []string{"login", "cache", "parser", "session", "export", "import", "retry", "index",
	"render", "token", "schema", "migrate", "upload", "search", "filter", "billing", "report", "queue",
	"webhook", "invoice", "sitemap", "avatar", "locale", "timezone", "backup", "restore", "audit", "quota"}

// buildBoardFixture writes a board of n tasks with git fast-import: titles
// and descriptions from boardWords, every priority, labels, assignees,
// some blockers, and a change time per task spread over a year (the
// newest last); one task in three has a finished session (one in seven
// of those failed). Sessions' branches are not created: their tips are
// left out, so none is merged.
func buildBoardFixture(tb testing.TB, repo string, n int) {
	tb.Helper()
	var in bytes.Buffer
	const who = "Ada Author <ada@example.com> 1767323045 +0000"
	fmt.Fprintf(&in, "commit refs/heads/main\nmark :1\ncommitter %s\ndata 4\nroot\nM 100644 inline README\ndata 5\nroot\n\n", who)
	prios := []string{"low", "medium", "medium", "high", "critical"}
	labels := []string{"ui", "api", "db", "docs", "infra", "perf"}
	people := []string{"ada", "bob", "cy", ""}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	type sess struct{ id, task string }
	var all []sess
	for t := 0; t < n; t++ {
		tid := benchID(uint64(t + 1))
		w := func(k int) string { return boardWords[(t*7+k*13+t/len(boardWords))%len(boardWords)] }
		title := fmt.Sprintf("%s the %s %s %d", w(0), w(1), w(2), t)
		desc := fmt.Sprintf("When the %s runs after the %s, the %s must keep working.\\n\\n- check the %s\\n- write a test", w(3), w(4), w(5), w(6))
		blocked := "[]"
		if t%11 == 5 {
			blocked = fmt.Sprintf("[%q]", benchID(uint64(t)))
		}
		lab := "[]"
		if t%3 != 0 {
			lab = fmt.Sprintf("[%q]", labels[t%len(labels)])
		}
		assignee := ""
		if p := people[t%len(people)]; p != "" {
			assignee = fmt.Sprintf(`,"assignee":%q`, p)
		}
		changed := start.Add(time.Duration(t) * 300 * time.Second).Format(time.RFC3339)
		doc := fmt.Sprintf(`{"v":1,"id":%q,"title":%q,"description":"%s","type":"task","priority":%q,"blocked_by":%s,"labels":%s%s,"created":{"time":"2026-01-01T00:00:00Z","author":"Ada"},"updated":{"time":%q,"author":"Ada"}}`+"\n",
			tid, title, desc, prios[t%len(prios)], blocked, lab, assignee, changed)
		fmt.Fprintf(&in, "commit refs/agentmine/tasks/%s\ncommitter %s\ndata 8\ntask add\nM 100644 inline task.json\ndata %d\n%s\n", tid, who, len(doc), doc)
		if t%3 == 1 {
			all = append(all, sess{id: benchID(uint64(t+1) * 0xC2B2AE3D27D4EB4F), task: tid})
		}
	}
	marksFile := filepath.Join(repo, ".git", "board-marks")
	fastImport(tb, repo, &in, "--export-marks="+marksFile)
	base := readMarks(tb, marksFile)[1]
	in.Reset()
	mark := 2
	for _, x := range all {
		doc := fmt.Sprintf(`{"v":1,"id":%q,"task":%q,"agent":"coder","client":"custom","mode":"detach","branch":"task-%s","base_ref":"main","base_commit":%q,"worktree":"/nowhere/task-%s","host":"elsewhere","pid":1,"timeout":300,"grace":10,"started":"2026-01-02T03:04:05Z","scope":{"read":null,"write":["src/**"],"exclude":null}}`+"\n",
			x.id, x.task, x.id[:8], base, x.task[:8])
		fmt.Fprintf(&in, "commit refs/agentmine/sessions/%s\nmark :%d\ncommitter %s\ndata 13\nsession start\nM 100644 inline session.json\ndata %d\n%s\n", x.id, mark, who, len(doc), doc)
		mark++
	}
	fmt.Fprintf(&in, "commit refs/notes/agentmine\ncommitter %s\ndata 5\nnotes\n", who)
	for i, x := range all {
		exit := 0
		if i%7 == 1 {
			exit = 1
		}
		line := fmt.Sprintf(`{"v":1,"session":%q,"exit_code":%d,"timed_out":false,"finished":"2026-01-02T04:04:05Z","artifacts":[],"recorded_by":"bench","scope_valid":true,"dod_status":"skipped","scope":{"valid":true,"tip":"","violations":[],"changed":[],"live_events":0},"dod":{"status":"skipped"},"commits":0,"usage":{"input_tokens":1200,"output_tokens":300}}`+"\n", x.id, exit)
		fmt.Fprintf(&in, "N inline :%d\ndata %d\n%s\n", i+2, len(line), line)
	}
	fastImport(tb, repo, &in)
	gittest.Git(tb, repo, "pack-refs", "--all")
	gittest.Git(tb, repo, "checkout", "-q", "main")
}

// TestGenBoardFixture builds the board benchmark's fixture in
// $AGENTMINE_BOARD_FIXTURE_DIR ($AGENTMINE_BOARD_FIXTURE_TASKS tasks,
// 100,000 unless set).
func TestGenBoardFixture(t *testing.T) {
	dir := os.Getenv("AGENTMINE_BOARD_FIXTURE_DIR")
	if dir == "" {
		t.Skip("set AGENTMINE_BOARD_FIXTURE_DIR to build the board fixture there")
	}
	n := 100000
	if s := os.Getenv("AGENTMINE_BOARD_FIXTURE_TASKS"); s != "" {
		fmt.Sscan(s, &n)
	}
	gittest.Git(t, "", "init", "-q", "-b", "main", dir)
	buildBoardFixture(t, dir, n)
}

// BenchmarkBoardFind100k measures the board of 100,000 tasks (33,333
// sessions) in a headless Chromium against a running `git agentmine
// serve` (the real binary): "paint" is the first contentful paint of the
// default view after a navigation (the browser's own paint timing), "search"
// the time from typing a search (the input event) to the board showing its
// answer, and "filter" the same for a choice of status and priority; both
// include the 60 ms the page waits for a pause in typing. Each is
// reported against `git for-each-ref` listing the task refs in the same
// run (the ratio). The first page after the server starts reads the whole
// board (snapshot-ms). AGENTMINE_BENCH_SCALE must be set;
// BOARD_FIND_FIXTURE names a directory to keep the fixture in.
func BenchmarkBoardFind100k(b *testing.B) {
	scaleOnly(b)
	useBuiltBinary(b)
	bin := findBrowser(b)
	repo := os.Getenv("BOARD_FIND_FIXTURE")
	switch {
	case repo == "":
		repo = gittest.Init(b)
		buildBoardFixture(b, repo, 100000)
	default:
		if _, err := os.Stat(filepath.Join(repo, ".git")); err != nil {
			gittest.Git(b, "", "init", "-q", "-b", "main", repo)
			buildBoardFixture(b, repo, 100000)
		}
	}
	srv := startServe(b, repo, "127.0.0.1:0")
	ctx := newBrowser(b, bin)
	// The first page reads the whole board: minutes on a loaded machine.
	start := time.Now()
	first, cancel := context.WithTimeout(ctx, 20*time.Minute)
	if err := chromedp.Do(first, chromedp.Navigate(srv.url), chromedp.WaitVisible(chromedp.CSS("#board"))); err != nil {
		b.Fatalf("the first page: %v", err)
	}
	cancel()
	b.Logf("the first page (reading the board) took %s", time.Since(start).Round(time.Millisecond))
	if n := eval[string](b, ctx, `document.getElementById("board").dataset.total`); n != "100000" {
		b.Fatalf("the board shows %s tasks, want 100000", n)
	}
	// Every answer is timed in the page: from the input event to the
	// refreshed board (app.js's "board:refreshed").
	eval[bool](b, ctx, `(() => { document.addEventListener("board:refreshed", () => { window.answered = performance.now() }); return true })()`)
	ask := func(name, value string) float64 {
		v, err := chromedp.Run(ctx, chromedp.Evaluate[float64](fmt.Sprintf(`new Promise(done => {
			const t0 = performance.now();
			document.addEventListener("board:refreshed", () => done(performance.now() - t0), {once: true});
			const el = document.querySelector('#find [name=%q]'); el.value = %q;
			el.dispatchEvent(new Event("input", {bubbles: true}));
		})`, name, value), chromedp.EvalAwaitPromise))
		if err != nil {
			b.Fatalf("asking %s=%s: %v", name, value, err)
		}
		return v
	}
	list := func() time.Duration {
		return timeCmd(b, repo, "git", "for-each-ref", "--format=%(objectname)", "refs/agentmine/tasks/")
	}
	report := func(b *testing.B, total float64, git time.Duration) {
		ms := total / float64(b.N)
		b.ReportMetric(ms, "ms/answer")
		gms := float64(git.Microseconds()) / 1000 / float64(b.N)
		b.ReportMetric(gms, "for-each-ref-ms/op")
		b.ReportMetric(ms/gms, "ratio")
	}
	b.Run("paint", func(b *testing.B) {
		var total float64
		var git time.Duration
		for i := 0; i < b.N; i++ {
			must(b, ctx, chromedp.Navigate(srv.base+"/"), chromedp.WaitVisible(chromedp.CSS("#board")))
			v, err := chromedp.Run(ctx, chromedp.Poll[float64](`(performance.getEntriesByName("first-contentful-paint")[0] || {}).startTime`,
				chromedp.WithPollingInterval(10*time.Millisecond), chromedp.WithPollingTimeout(10*time.Second)))
			if err != nil {
				b.Fatalf("paint timing: %v", err)
			}
			total += v
			git += list()
		}
		report(b, total, git)
		b.ReportMetric(eval[float64](b, ctx, `performance.getEntriesByType("navigation")[0].transferSize / 1024`), "page-KiB")
	})
	b.Run("search", func(b *testing.B) {
		var total float64
		var git time.Duration
		for i := 0; i < b.N; i++ {
			w := boardWords[i%len(boardWords)]
			total += ask("q", w+" "+boardWords[(i*5+3)%len(boardWords)])
			git += list()
			ask("q", "") // back to the whole board, untimed
		}
		report(b, total, git)
		b.ReportMetric(float64(eval[int](b, ctx, `document.querySelectorAll("article.card").length`)), "cards")
	})
	b.Run("filter", func(b *testing.B) {
		var total float64
		var git time.Duration
		for i := 0; i < b.N; i++ {
			total += ask("status", []string{"failed", "ready", "blocked"}[i%3])
			total += ask("priority", []string{"critical", "low"}[i%2])
			git += 2 * list()
			ask("status", "")
			ask("priority", "")
		}
		report(b, total/2, git/2)
	})
}
