package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

// The web board, driven through a real headless Chromium (Debian's
// chromium-headless-shell, installed by .ci/run) against `git agentmine
// serve` running as a real process on a fixture repository built with the
// CLI and real workers.

// findBrowser returns a headless Chromium, or skips the test saying why.
func findBrowser(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium-headless-shell", "chromium", "chrome-headless-shell", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	for _, p := range []string{"/usr/lib/chromium/chromium-headless-shell", "/usr/lib/chromium/chromium"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Skip("no headless Chromium on this machine (chromium-headless-shell or chromium): .ci/run installs Debian's chromium-headless-shell with apt-get; the browser tests need it")
	return ""
}

// server is a running `git agentmine serve`.
type server struct {
	cmd  *exec.Cmd
	url  string // with the token
	base string // scheme://host:port
}

// startServe starts `git agentmine serve --addr addr` in repo with extra
// environment and reads the address it prints.
func startServe(t testing.TB, repo, addr string, env ...string) *server {
	t.Helper()
	cmd := exec.Command("git", "agentmine", "serve", "--addr", addr)
	cmd.Dir = repo
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	// git runs git-agentmine as its child: the group is what to stop.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	srv := &server{cmd: cmd}
	t.Cleanup(srv.kill)
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("serve printed no address: %v", err)
	}
	u := strings.TrimSpace(line)
	base, _, ok := strings.Cut(u, "/?token=")
	if !ok {
		t.Fatalf("serve printed %q, not an address with a token", u)
	}
	srv.url, srv.base = u, base
	return srv
}

// kill ends the server process and git, its parent.
func (s *server) kill() {
	syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	s.cmd.Wait()
}

// try runs git agentmine with extra environment and returns its stdout and
// exit code, without failing on a non-zero exit.
func try(t *testing.T, dir string, env []string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"agentmine"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.Output()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out)), code
}

// browserFixture is a repository with a task in every column, built with
// the CLI: real workers edit and commit, the DoD runs, one is merged.
type browserFixture struct {
	repo string
	fifo string
	ids  map[string]string
}

func newBrowserFixture(t *testing.T) *browserFixture {
	t.Helper()
	repo := testRepo(t)
	f := &browserFixture{repo: repo, fifo: filepath.Join(t.TempDir(), "talk"), ids: map[string]string{}}
	if err := syscall.Mkfifo(f.fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	gittest.CommitFiles(t, repo, "agents", map[string]string{
		".agentmine/agents/edit.toml":   "client = \"custom\"\ncommand = [\"sh\", \"-c\", \"echo \\\"$EDIT_TEXT\\\" > src/$EDIT_NAME && git add src && git commit -qm edit\"]\n[scope]\nwrite = [\"src/**\"]\n",
		".agentmine/agents/crash.toml":  "client = \"custom\"\ncommand = [\"sh\", \"-c\", \"echo \\\"\\u001b[31mcrashing\\u001b[0m\\\"; exit 3\"]\n[scope]\nwrite = [\"src/**\"]\n",
		".agentmine/agents/manual.toml": "client = \"custom\"\ncommand = [\"true\"]\n[scope]\nwrite = [\"src/**\"]\n",
		// talk echoes every line written to $TALK_FIFO until "quit".
		".agentmine/agents/talk.toml": "client = \"custom\"\ntimeout = 600\ncommand = [\"sh\", \"-c\", \"while IFS= read -r l; do [ \\\"$l\\\" = quit ] && exit 0; printf '%s\\\\n' \\\"$l\\\"; done < \\\"$TALK_FIFO\\\"\"]\n[scope]\nwrite = [\"src/**\"]\n",
		// gate waits for the file $RUN_GO, then commits: a worker of a run.
		".agentmine/agents/gate.toml": "client = \"custom\"\ntimeout = 600\ncommand = [\"sh\", \"-c\", \"echo waiting for the gate; while [ ! -e \\\"$RUN_GO\\\" ]; do sleep 0.05; done; echo ok > src/g.txt && git add src && git commit -qm gate\"]\n[scope]\nwrite = [\"src/**\"]\n",
		"src/a.txt":                   "a\n",
	})
	add := func(name string, args ...string) {
		id, code := try(t, repo, nil, append([]string{"task", "add", "-q"}, args...)...)
		if code != 0 {
			t.Fatalf("task add %v: exit %d", args, code)
		}
		f.ids[name] = id
	}
	runWorker := func(name, agent string, env ...string) {
		if _, code := try(t, repo, env, "worker", "run", f.ids[name], "--agent", agent, "--exec", "--no-claim"); code != 0 && name != "dod_failed" && name != "failed" {
			t.Fatalf("worker run %s: exit %d", name, code)
		}
	}
	add("ready", "Ready to go", "--label", "ui", "-p", "high")
	add("blocked", "Waits for ready", "--blocked-by", f.ids["ready"], "--assignee", "ada")
	add("xss", "<script>alert(1)</script>")
	add("parent", "Auth")
	add("review", "Login form", "--parent", f.ids["parent"], "--dod", "grep -q ok src/r.txt")
	runWorker("review", "edit", "EDIT_NAME=r.txt", "EDIT_TEXT=ok")
	add("done", "Session store", "--parent", f.ids["parent"], "--dod", "grep -q ok src/s.txt")
	runWorker("done", "edit", "EDIT_NAME=s.txt", "EDIT_TEXT=ok")
	if _, code := try(t, repo, nil, "merge", f.ids["done"]); code != 0 {
		t.Fatalf("merge: exit %d", code)
	}
	add("dod_failed", "Password reset", "--parent", f.ids["parent"], "--dod", "echo checking the reset; grep -q ok src/d.txt")
	runWorker("dod_failed", "edit", "EDIT_NAME=d.txt", "EDIT_TEXT=not-yet")
	add("failed", "Crashes at once")
	runWorker("failed", "crash")
	add("running", "Someone is on it")
	if _, code := try(t, repo, nil, "session", "start", f.ids["running"], "--agent", "manual"); code != 0 {
		t.Fatalf("session start: exit %d", code)
	}
	add("cancelled", "Not needed")
	if _, code := try(t, repo, nil, "task", "cancel", f.ids["cancelled"]); code != 0 {
		t.Fatalf("task cancel: exit %d", code)
	}
	add("talk", "Talk to me")
	return f
}

// statuses reads every task's derived status from task list --json.
func (f *browserFixture) statuses(t *testing.T) map[string]taskState {
	t.Helper()
	out, code := try(t, f.repo, nil, "task", "list", "--json")
	if code != 0 {
		t.Fatalf("task list: exit %d", code)
	}
	var list []taskState
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatal(err)
	}
	m := map[string]taskState{}
	for _, s := range list {
		m[s.ID] = s
	}
	return m
}

type taskState struct {
	ID      string `json:"id"`
	Status  string `json:"status"`
	Blocked bool   `json:"blocked"`
}

// column is the board column a task list status belongs in.
func (s taskState) column() string {
	switch s.Status {
	case "open":
		if s.Blocked {
			return "blocked"
		}
		return "ready"
	case "failed", "dod_failed", "tainted":
		return "failed"
	}
	return s.Status
}

// newBrowser starts a headless Chromium.
func newBrowser(t testing.TB, bin string) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin), chromedp.NoSandbox,
		chromedp.WindowSize(1500, 1000), chromedp.Flag("disable-dev-shm-usage", true))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancel()
		cancelA()
	})
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	return ctx
}

func must(t testing.TB, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Do(c, steps...); err != nil {
		t.Fatalf("browser: %v", err)
	}
}

func eval[T any](t testing.TB, ctx context.Context, js string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("evaluating %s: %v", js, err)
	}
	return v
}

// waitFor polls a JavaScript predicate until it holds (at most limit) and
// returns how long that took.
func waitFor(t testing.TB, ctx context.Context, what, js string, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](js, chromedp.WithPollingInterval(10*time.Millisecond),
		chromedp.WithPollingTimeout(limit))); err != nil {
		body, _ := chromedp.Run(ctx, chromedp.Evaluate[string]("document.body.innerText"))
		t.Fatalf("%s: not within %s: %v\npage:\n%s", what, limit, err, body)
	}
	return time.Since(start)
}

// screenshot saves a full-page PNG into $BOARD_SCREENSHOTS (else the
// test's temporary directory) and logs where.
func screenshot(t testing.TB, ctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	dir := os.Getenv("BOARD_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	p := filepath.Join(dir, name+".png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot %s (%d bytes)", p, len(png))
}

// TestBrowserBoard drives the board through a headless Chromium: columns
// follow the derived status, a script-tag title is text, a request without
// the token gets 401, a task added from the CLI appears without a reload,
// merge lands a task in review and shows the refusal of a dod_failed one,
// a cross-site POST is refused, and a worker started from the page streams
// its output live and shows every line once after the server restarts
// and the page logs in again.
func TestBrowserBoard(t *testing.T) {
	gittest.SkipShort(t, "real workers, a served board and a headless browser")
	bin := findBrowser(t)
	f := newBrowserFixture(t)
	srv := startServe(t, f.repo, "127.0.0.1:0", "TALK_FIFO="+f.fifo)
	ctx := newBrowser(t, bin)

	t.Run("UnauthorizedWithoutToken", func(t *testing.T) {
		res, err := chromedp.Run(ctx, chromedp.NavigateResponse(srv.base+"/"))
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != http.StatusUnauthorized {
			t.Fatalf("without the token: %d, want 401", res.Status)
		}
	})

	must(t, ctx, chromedp.Navigate(srv.url), chromedp.WaitVisible(chromedp.CSS("#board")))
	if loc := eval[string](t, ctx, "location.href"); loc != srv.base+"/" {
		t.Errorf("after the token URL the address is %s; want the token gone", loc)
	}

	t.Run("ColumnsFollowDerivedStatus", func(t *testing.T) {
		got := eval[map[string]string](t, ctx, `Object.fromEntries([...document.querySelectorAll('[data-task]')].map(c =>
			[c.dataset.task, c.closest('[data-col]') ? c.closest('[data-col]').dataset.col : (c.closest('.cancelled') ? 'cancelled' : '?')]))`)
		st := f.statuses(t)
		if len(got) != len(st) {
			t.Errorf("%d cards for %d tasks", len(got), len(st))
		}
		for id, s := range st {
			if got[id] != s.column() {
				t.Errorf("task %s (%s): in column %q, want %q", id, s.Status, got[id], s.column())
			}
		}
		want := map[string]string{"ready": "ready", "blocked": "blocked", "running": "in_progress", "review": "review",
			"dod_failed": "failed", "failed": "failed", "done": "done", "cancelled": "cancelled"}
		for name, col := range want {
			if got[f.ids[name]] != col {
				t.Errorf("%s: column %q, want %q", name, got[f.ids[name]], col)
			}
		}
		bar := eval[string](t, ctx, `document.querySelector('[data-task="`+f.ids["parent"]+`"] .progress').textContent.trim()`)
		if bar != "███░░░░░░░ 1/3" {
			t.Errorf("the parent's progress: %q", bar)
		}
		screenshot(t, ctx, "board")
	})

	t.Run("ScriptTitleIsText", func(t *testing.T) {
		title := eval[string](t, ctx, `document.querySelector('[data-task="`+f.ids["xss"]+`"] .title').textContent`)
		if title != "<script>alert(1)</script>" {
			t.Errorf("title text %q", title)
		}
		if n := eval[int](t, ctx, `document.querySelectorAll('main script').length`); n != 0 {
			t.Errorf("%d script elements in the page's main", n)
		}
	})

	t.Run("CLITaskAppearsWithoutReload", func(t *testing.T) {
		eval[bool](t, ctx, `window.stillHere = true`)
		if _, code := try(t, f.repo, nil, "task", "add", "Added from the CLI", "-q"); code != 0 {
			t.Fatal("task add failed")
		}
		d := waitFor(t, ctx, "the CLI's task on the board",
			`[...document.querySelectorAll('[data-col="ready"] .title')].some(e => e.textContent === 'Added from the CLI')`, 10*time.Second)
		if !eval[bool](t, ctx, `window.stillHere === true`) {
			t.Error("the page reloaded")
		}
		t.Logf("figure: the CLI's task appeared %s after task add exited", d.Round(time.Millisecond))
	})

	t.Run("MergeReviewAndRefusal", func(t *testing.T) {
		must(t, ctx, chromedp.Navigate(srv.base+"/tasks/"+f.ids["review"]), chromedp.WaitVisible(chromedp.CSS("button.merge")))
		screenshot(t, ctx, "task-review")
		must(t, ctx, chromedp.Click(chromedp.CSS("button.merge")), chromedp.WaitVisible(chromedp.CSS("p.notice")))
		if n := eval[string](t, ctx, `document.querySelector('p.notice').textContent`); n != "merged into the base" {
			t.Errorf("notice %q", n)
		}
		if s := f.statuses(t)[f.ids["review"]].Status; s != "done" {
			t.Errorf("after merge: %s, want done", s)
		}
		before := gittest.Git(t, f.repo, "for-each-ref", "--format=%(refname) %(objectname)")
		// A dod_failed task offers no merge, only the gate's reason.
		must(t, ctx, chromedp.Navigate(srv.base+"/tasks/"+f.ids["dod_failed"]), chromedp.WaitVisible(chromedp.CSS("p.merge-refusal")))
		if eval[bool](t, ctx, `!!document.querySelector('button.merge')`) ||
			!strings.Contains(eval[string](t, ctx, `document.querySelector('p.merge-refusal').textContent`), "DoD failed") {
			t.Errorf("a dod_failed task: want no merge button and the gate's reason")
		}
		// A merge posted anyway (a page drawn before the DoD failed) is
		// refused with the gate's reason.
		eval[bool](t, ctx, `(() => { const f = document.createElement('form'); f.method = 'post';
			f.action = location.pathname + '/merge'; f.appendChild(document.querySelector('input[name="csrf"]').cloneNode());
			document.body.appendChild(f); f.submit(); return true; })()`)
		must(t, ctx, chromedp.WaitVisible(chromedp.CSS("p.error")))
		msg := eval[string](t, ctx, `document.querySelector('p.error').textContent`)
		if !strings.HasPrefix(msg, "merge refused: ") || !strings.Contains(msg, "DoD failed") {
			t.Errorf("refusal %q", msg)
		}
		if after := gittest.Git(t, f.repo, "for-each-ref", "--format=%(refname) %(objectname)"); after != before {
			t.Error("the refused merge changed the refs")
		}
		if loc := eval[string](t, ctx, "location.pathname"); loc != "/tasks/"+f.ids["dod_failed"] {
			t.Errorf("after the refusal the address is %s", loc)
		}
		waitFor(t, ctx, "the DoD output tail", `document.body.innerText.includes('checking the reset')`, 5*time.Second)
		screenshot(t, ctx, "task-dod-failed")
	})

	t.Run("CrossSitePostRefused", func(t *testing.T) {
		evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprintf(w, `<form id="f" method="post" action="%s/tasks/%s/cancel"><input name="csrf" value="guess"><input name="reason" value="pwned"></form>
<script>document.getElementById('f').submit()</script>`, srv.base, f.ids["ready"])
		}))
		defer evil.Close()
		must(t, ctx, chromedp.Navigate(evil.URL))
		waitFor(t, ctx, "the board's answer to the cross-site form", `location.href.startsWith('`+srv.base+`')`, 10*time.Second)
		body := eval[string](t, ctx, "document.body.innerText")
		if !strings.Contains(body, "403 forbidden") {
			t.Errorf("cross-site POST answered %q", body)
		}
		if s := f.statuses(t)[f.ids["ready"]].Status; s != "open" {
			t.Errorf("the cross-site POST changed the task: %s", s)
		}
	})

	t.Run("LiveOutputResumesAfterRestart", func(t *testing.T) {
		must(t, ctx, chromedp.Navigate(srv.base+"/tasks/"+f.ids["talk"]), chromedp.WaitVisible(chromedp.CSS(`button[value="run"]`)),
			chromedp.SetValue(chromedp.CSS(`input[name="agent"]`), "talk"), chromedp.Click(chromedp.CSS(`button[value="run"]`)),
			chromedp.WaitVisible(chromedp.CSS("p.notice")), chromedp.WaitReady(chromedp.CSS("pre.log")))
		if n := eval[string](t, ctx, `document.querySelector('p.notice').textContent`); n != "worker started" {
			t.Fatalf("notice %q", n)
		}
		fifo, err := os.OpenFile(f.fifo, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer fifo.Close()
		var want strings.Builder
		var delays []time.Duration
		say := func(i int) {
			line := fmt.Sprintf("line %d", i)
			want.WriteString(line + "\n")
			fmt.Fprintln(fifo, line)
		}
		for i := 1; i <= 5; i++ {
			start := time.Now()
			say(i)
			waitFor(t, ctx, fmt.Sprintf("line %d in the page", i), `document.querySelector('pre.log').textContent.includes('line `+fmt.Sprint(i)+`\n')`, 10*time.Second)
			delays = append(delays, time.Since(start))
		}
		sort.Slice(delays, func(i, j int) bool { return delays[i] < delays[j] })
		t.Logf("figure: log write to line in the browser: min %s, median %s, max %s over %d lines",
			delays[0].Round(time.Millisecond), delays[len(delays)/2].Round(time.Millisecond), delays[len(delays)-1].Round(time.Millisecond), len(delays))
		screenshot(t, ctx, "task-live")
		// Restart the server; lines written while it is down arrive after.
		port := srv.base[strings.LastIndex(srv.base, ":")+1:]
		srv.kill()
		for i := 6; i <= 8; i++ {
			say(i)
		}
		waitListenGone(t, "127.0.0.1:"+port)
		srv = startServe(t, f.repo, "127.0.0.1:"+port, "TALK_FIFO="+f.fifo)
		// The login lives in the server's memory only: the restarted
		// server needs its own login address, then the page again.
		must(t, ctx, chromedp.Navigate(srv.url), chromedp.WaitVisible(chromedp.CSS("#board")),
			chromedp.Navigate(srv.base+"/tasks/"+f.ids["talk"]), chromedp.WaitReady(chromedp.CSS("pre.log")))
		say(9)
		waitFor(t, ctx, "the lines written across the restart", `document.querySelector('pre.log').textContent.includes('line 9\n')`, 20*time.Second)
		got := eval[string](t, ctx, `[...document.querySelector('pre.log').childNodes].filter(n => !n.classList || !n.classList.contains('end')).map(n => n.textContent).join('')`)
		// The page holds exactly the log file: every line, none twice.
		out, _ := try(t, f.repo, nil, "task", "show", f.ids["talk"], "--json")
		var shown struct {
			Latest struct {
				Log string `json:"log"`
			} `json:"latest_session"`
		}
		if err := json.Unmarshal([]byte(out), &shown); err != nil {
			t.Fatal(err)
		}
		file, err := os.ReadFile(shown.Latest.Log)
		if err != nil {
			t.Fatal(err)
		}
		if got != string(file) || !strings.HasSuffix(got, want.String()) {
			t.Errorf("log in the page after the restart:\n%q\nthe log file:\n%q\nwritten:\n%q", got, file, want.String())
		}
		fmt.Fprintln(fifo, "quit")
		waitFor(t, ctx, "the end of the stream", `!!document.querySelector('pre.log .end')`, 30*time.Second)
	})

	t.Run("SupervisorTabThenItsWorkers", func(t *testing.T) {
		gate := filepath.Join(t.TempDir(), "go")
		id, code := try(t, f.repo, nil, "task", "add", "-q", "Run me", "--assignee", "gate", "--dod", "grep -q ok src/g.txt")
		if code != 0 {
			t.Fatal("task add failed")
		}
		// The restarted server belonged to the subtest before: a board of
		// this subtest's own.
		srv := startServe(t, f.repo, "127.0.0.1:0")
		must(t, ctx, chromedp.Navigate(srv.url), chromedp.WaitVisible(chromedp.CSS("#board")),
			chromedp.Navigate(srv.base+"/runs"), chromedp.WaitVisible(chromedp.CSS("#runs-table")))
		if out, code := try(t, f.repo, []string{"RUN_GO=" + gate}, "run", id, "--detach", "--name", "web", "-j", "1", "--max-loops", "1", "--merge"); code != 0 {
			t.Fatalf("run --detach: exit %d: %s", code, out)
		}
		line := `started task ` + id[:8] + ` "Run me"`
		d := waitFor(t, ctx, "the supervisor's line in its tab",
			`(p => p && p.textContent.includes('`+line+`'))(document.getElementById('log-run-web'))`, 20*time.Second)
		t.Logf("figure: the supervisor's started line was in its tab %s after run --detach returned", d.Round(time.Millisecond))
		// The started line is written once the worker's session exists;
		// its tab arrives with the page's next update.
		var worker string
		if out, code := try(t, f.repo, nil, "task", "show", id, "--json"); code == 0 {
			var shown struct {
				Latest struct {
					ID string `json:"id"`
				} `json:"latest_session"`
			}
			if json.Unmarshal([]byte(out), &shown) == nil {
				worker = shown.Latest.ID
			}
		}
		if worker == "" {
			t.Fatal("task show names no session of the run's task after its started line")
		}
		waitFor(t, ctx, "the run's worker's tab",
			`!!document.querySelector('[data-tab="log-`+worker+`"]')`, 20*time.Second)
		tabs := eval[[]string](t, ctx, `[...document.querySelectorAll('[data-tab]')].map(b => b.dataset.tab)`)
		if len(tabs) < 2 || tabs[0] != "log-run-web" || tabs[1] != "log-"+worker {
			t.Errorf("tabs %v: want the run's first, then its worker's (log-%s)", tabs, worker)
		}
		screenshot(t, ctx, "runs-supervisor")
		if err := os.WriteFile(gate, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		waitFor(t, ctx, "the end of the supervisor's stream",
			`(p => p && !!p.querySelector('.end') && p.textContent.includes('run ended: done, 1 of 1 done'))(document.getElementById('log-run-web'))`, 60*time.Second)
		if s := f.statuses(t)[id].Status; s != "done" {
			t.Errorf("the run's task: %s, want done", s)
		}
	})
}

// waitListenGone waits until nothing listens on addr any more.
func waitListenGone(t *testing.T, addr string) {
	t.Helper()
	for i := 0; i < 100; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return
		}
		c.Close()
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s still listens", addr)
}

// TestServeRefusesRemoteAddr: a non-loopback --addr is a usage error
// (exit 2, one error line and a hint) unless --allow-remote is given;
// malformed addresses too; an address in use is exit 6.
func TestServeRefusesRemoteAddr(t *testing.T) {
	repo := testRepo(t)
	for _, addr := range []string{"0.0.0.0:0", ":0", "example.com:80", "nonsense"} {
		code, out, errs := docsMain(t, repo, "serve", "--addr", addr)
		lines := strings.Split(strings.TrimSpace(errs), "\n")
		if code != 2 || out != "" || !strings.HasPrefix(lines[0], "error: --addr ") {
			t.Errorf("--addr %s: exit %d, stdout %q, stderr %q", addr, code, out, errs)
		}
	}
	// An address in use: invalid state (6), one line naming it.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	code, out, errs := docsMain(t, repo, "serve", "--addr", ln.Addr().String())
	if code != 6 || out != "" || !strings.HasPrefix(errs, "error: listening on "+ln.Addr().String()+": ") || strings.Count(errs, "\n") != 1 {
		t.Errorf("address in use: exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

// TestServerNotInstalled: without agentmine-serve beside git-agentmine
// or on PATH, serve, mcp and task import of a task.yaml fail with exit 5,
// one error line naming the missing program and a hint saying how to
// install it, and import adds no task.
func TestServerNotInstalled(t *testing.T) {
	repo := testRepo(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The test binary acts as git-agentmine under that name (TestMain).
	bin := t.TempDir()
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "git-agentmine"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	yml := filepath.Join(t.TempDir(), "task.yaml")
	if err := os.WriteFile(yml, []byte("title: one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	refs := func() string {
		out, err := exec.Command("git", "-C", repo, "for-each-ref").CombinedOutput()
		if err != nil {
			t.Fatalf("for-each-ref: %v: %s", err, out)
		}
		return string(out)
	}
	before := refs()
	for _, args := range [][]string{{"serve", "--addr", "127.0.0.1:0"}, {"mcp"}, {"task", "import", yml}} {
		cmd := exec.Command(filepath.Join(bin, "git-agentmine"), append([]string{"-C", repo}, args...)...)
		cmd.Env = append(os.Environ(), "PATH="+bin+":/usr/bin:/bin")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 5 {
			t.Fatalf("%v: %v, want exit 5; stderr %q", args, err, stderr.String())
		}
		want := "error: agentmine-serve is not installed: it serves git agentmine serve and git agentmine mcp, and reads task import's task.yaml\n" +
			"hint: install it beside git-agentmine: go install ./cmd/agentmine-serve (just install installs both)\n"
		if stderr.String() != want || stdout.Len() != 0 {
			t.Fatalf("%v: stdout %q, stderr %q; want %q", args, stdout.String(), stderr.String(), want)
		}
	}
	if after := refs(); after != before {
		t.Fatalf("refs changed:\n%s\nwas\n%s", after, before)
	}
}
