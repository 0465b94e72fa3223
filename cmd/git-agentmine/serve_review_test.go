package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

// shownLatest reads a task's latest session from task show --json.
func shownLatest(t *testing.T, repo, id string) (sid, state, tip string) {
	sid, state, tip, _ = latestSessionPid(t, repo, id)
	return sid, state, tip
}

// latestSessionPid is shownLatest with the pid of the session's
// supervisor.
func latestSessionPid(t *testing.T, repo, id string) (sid, state, tip string, pid int) {
	t.Helper()
	out, code := try(t, repo, nil, "task", "show", id, "--json")
	if code != 0 {
		t.Fatalf("task show %s: exit %d", id, code)
	}
	var shown struct {
		Latest *struct {
			ID      string `json:"id"`
			State   string `json:"state"`
			Pid     int    `json:"pid"`
			Outcome *struct {
				Tip string `json:"tip"`
			} `json:"outcome"`
		} `json:"latest_session"`
	}
	if err := json.Unmarshal([]byte(out), &shown); err != nil {
		t.Fatal(err)
	}
	if shown.Latest == nil {
		return "", "", "", 0
	}
	if shown.Latest.Outcome != nil {
		tip = shown.Latest.Outcome.Tip
	}
	return shown.Latest.ID, shown.Latest.State, tip, shown.Latest.Pid
}

// waitPidsGone waits until none of the processes runs any more (a zombie
// waiting for its parent counts as gone): nothing a test started may
// write into its repository after it returns.
func waitPidsGone(t *testing.T, limit time.Duration, pids ...int) {
	t.Helper()
	for _, pid := range pids {
		if pid <= 0 {
			continue
		}
		waitCLI(t, fmt.Sprintf("the end of process %d", pid), limit, func() bool {
			if syscall.Kill(pid, 0) != nil {
				return true
			}
			stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
			if err != nil {
				return true
			}
			f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
			return len(f) > 0 && f[0] == "Z"
		})
	}
}

// waitCLI polls cond until it holds (at most limit).
func waitCLI(t *testing.T, what string, limit time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, limit)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestBrowserReviewAndSteer drives review and steering through a headless
// Chromium against `git agentmine serve`: requesting changes with a comment
// and a comment on a line of the diff records an NG review by the person
// and starts a new attempt whose prompt (saved by the scripted worker)
// carries both; a task's fields are edited; a task blocked by a cancelled
// one is unblocked; a run over a picked task is started and stopped.
func TestBrowserReviewAndSteer(t *testing.T) {
	gittest.SkipShort(t, "real workers and a run, a served board and a headless browser")
	bin := findBrowser(t)
	repo := testRepo(t)
	gate := filepath.Join(t.TempDir(), "go")
	gittest.CommitFiles(t, repo, "agents", map[string]string{
		// scribe commits the prompt it was given: each attempt's prompt
		// is in its tip.
		".agentmine/agents/scribe.toml": "client = \"custom\"\ncommand = [\"sh\", \"-c\", \"cp \\\"$AGENTMINE_PROMPT_FILE\\\" src/prompt.md && git add src && git commit -qm scribe\"]\n[scope]\nwrite = [\"src/**\"]\n",
		// gate waits for the file $RUN_GO, then commits.
		".agentmine/agents/gate.toml": "client = \"custom\"\ntimeout = 600\ncommand = [\"sh\", \"-c\", \"echo waiting for the gate; while [ ! -e \\\"$RUN_GO\\\" ]; do sleep 0.05; done; echo ok > src/g.txt && git add src && git commit -qm gate\"]\n[scope]\nwrite = [\"src/**\"]\n",
		"src/a.txt":                   "a\n",
	})
	add := func(args ...string) string {
		id, code := try(t, repo, nil, append([]string{"task", "add", "-q"}, args...)...)
		if code != 0 {
			t.Fatalf("task add %v: exit %d", args, code)
		}
		return id
	}
	srv := startServe(t, repo, "127.0.0.1:0", "RUN_GO="+gate)
	ctx := newBrowser(t, bin)
	must(t, ctx, chromedp.Navigate(srv.url), chromedp.WaitVisible(chromedp.CSS("#board")))

	t.Run("RequestChangesFeedsTheNextAttempt", func(t *testing.T) {
		id := add("Write the prompt down", "--dod", "test -s src/prompt.md")
		if _, code := try(t, repo, nil, "worker", "run", id, "--agent", "scribe", "--exec", "--no-claim"); code != 0 {
			t.Fatalf("worker run: exit %d", code)
		}
		first, _, _ := shownLatest(t, repo, id)
		must(t, ctx, chromedp.Navigate(srv.base+"/tasks/"+id), chromedp.WaitVisible(chromedp.CSS("#review-form")))
		// A comment on a line of the diff: open the diff, click the line.
		ref := eval[string](t, ctx, `(() => { document.querySelector('details.diff').open = true;
			const l = [...document.querySelectorAll('.patch [data-ref]')].find(s => s.textContent.startsWith('+## '));
			return l ? l.dataset.ref : ''; })()`)
		if !strings.HasPrefix(ref, "src/prompt.md:") {
			t.Fatalf("no line of the diff to comment on (got %q)", ref)
		}
		must(t, ctx, chromedp.Click(chromedp.CSS(`.patch [data-ref="`+ref+`"]`)), chromedp.WaitVisible(chromedp.CSS("#line-box")),
			chromedp.SendKeys(chromedp.CSS("#line-text"), "this heading is wrong"), chromedp.Click(chromedp.CSS("#line-add")),
			chromedp.WaitVisible(chromedp.CSS("#line-comments li")),
			chromedp.SendKeys(chromedp.CSS(`#review-form textarea[name="comment"]`), "Use a numbered list instead."),
			chromedp.Click(chromedp.CSS("#review-form button.changes")), chromedp.WaitVisible(chromedp.CSS("p.notice")))
		if n := eval[string](t, ctx, `document.querySelector('p.notice').textContent`); !strings.Contains(n, "changes requested") {
			t.Fatalf("notice after request changes: %q", n)
		}
		var second, tip string
		var pid int
		waitCLI(t, "the new attempt's end", 60*time.Second, func() bool {
			var state string
			second, state, tip, pid = latestSessionPid(t, repo, id)
			return second != first && state != "running" && state != "starting" && tip != ""
		})
		waitPidsGone(t, 30*time.Second, pid)
		prompt := gittest.Git(t, repo, "show", tip+":src/prompt.md")
		for _, want := range []string{"## Feedback from earlier attempts", "session " + first[:8],
			"- Review by " + gittest.Name + ": NG", "  - Use a numbered list instead.", "  - " + ref + ": this heading is wrong"} {
			if !strings.Contains(prompt, want) {
				t.Errorf("the new attempt's prompt lacks %q:\n%s", want, prompt)
			}
		}
		// The page shows the new attempt without a reload.
		waitFor(t, ctx, "the new session on the page", `document.querySelectorAll('article.session').length === 2`, 30*time.Second)
		screenshot(t, ctx, "task-review")
	})

	t.Run("Edit", func(t *testing.T) {
		id := add("Edit me", "-p", "low")
		must(t, ctx, chromedp.Navigate(srv.base+"/tasks/"+id), chromedp.WaitReady(chromedp.CSS("#edit")),
			chromedp.Click(chromedp.CSS("#edit summary")), chromedp.WaitVisible(chromedp.CSS(`#edit-form input[name="title"]`)),
			chromedp.SetValue(chromedp.CSS(`#edit-form input[name="title"]`), "Edited from the board"),
			chromedp.SetValue(chromedp.CSS(`#edit-form select[name="priority"]`), "critical"),
			chromedp.SetValue(chromedp.CSS(`#edit-form input[name="labels"]`), "web ui"),
			chromedp.SetValue(chromedp.CSS(`#edit-form textarea[name="acceptance"]`), "it saves\nit shows"),
			chromedp.Click(chromedp.CSS(`#edit-form button[type="submit"]`)), chromedp.WaitVisible(chromedp.CSS("p.notice")))
		out, _ := try(t, repo, nil, "task", "show", id, "--json")
		var got struct {
			Title      string   `json:"title"`
			Priority   string   `json:"priority"`
			Labels     []string `json:"labels"`
			Acceptance []string `json:"acceptance"`
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatal(err)
		}
		sort.Strings(got.Labels)
		if got.Title != "Edited from the board" || got.Priority != "critical" || strings.Join(got.Labels, ",") != "ui,web" ||
			strings.Join(got.Acceptance, "|") != "it saves|it shows" {
			t.Errorf("after the edit: %+v", got)
		}
		if h := eval[string](t, ctx, `document.querySelector('#task-head .title').textContent`); h != "Edited from the board" {
			t.Errorf("the page's title after the edit: %q", h)
		}
	})

	t.Run("Unblock", func(t *testing.T) {
		gone := add("Dropped")
		waits := add("Waits on the dropped one", "--blocked-by", gone)
		if _, code := try(t, repo, nil, "task", "cancel", gone); code != 0 {
			t.Fatal("task cancel failed")
		}
		must(t, ctx, chromedp.Navigate(srv.base+"/tasks/"+waits), chromedp.WaitVisible(chromedp.CSS("button.unblock")),
			chromedp.Click(chromedp.CSS("button.unblock")), chromedp.WaitVisible(chromedp.CSS("p.notice")))
		if s := (&browserFixture{repo: repo}).statuses(t)[waits]; s.column() != "ready" {
			t.Errorf("after unblock: %+v, want ready", s)
		}
	})

	t.Run("RunStartStop", func(t *testing.T) {
		id := add("Run me", "--assignee", "gate")
		must(t, ctx, chromedp.Navigate(srv.base+"/runs"), chromedp.WaitReady(chromedp.CSS("#run-start")),
			chromedp.Click(chromedp.CSS("#run-start summary")),
			chromedp.Click(chromedp.CSS(`#run-start input[name="task"][value="`+id+`"]`)),
			chromedp.SetValue(chromedp.CSS(`#run-start input[name="name"]`), "web"),
			chromedp.SetValue(chromedp.CSS(`#run-start input[name="parallel"]`), "1"),
			chromedp.Click(chromedp.CSS(`#run-start button[type="submit"]`)), chromedp.WaitVisible(chromedp.CSS("p.notice")))
		waitFor(t, ctx, "the run's worker's log", `(p => p && p.textContent.includes('waiting for the gate'))(document.querySelector('pre.log[data-log^="s:"]'))`, 30*time.Second)
		waitFor(t, ctx, "the run's stop button", `!!document.querySelector('tr[data-run="web"][data-state="running"] button.stop')`, 20*time.Second)
		screenshot(t, ctx, "runs-start")
		// The notice of the start goes, so that the next one is the stop's.
		eval[bool](t, ctx, `(document.querySelector('p.notice').remove(), true)`)
		must(t, ctx, chromedp.Click(chromedp.CSS(`tr[data-run="web"] button.stop`)), chromedp.WaitVisible(chromedp.CSS("p.notice")))
		if n := eval[string](t, ctx, `document.querySelector('p.notice').textContent`); n != "run asked to stop" {
			t.Errorf("notice after stop: %q", n)
		}
		waitFor(t, ctx, "the run's end on the page", `!!document.querySelector('tr[data-run="web"][data-state="ended"]')`, 60*time.Second)
		out, _ := try(t, repo, nil, "run", "status", "web", "--json")
		var st struct {
			State string `json:"state"`
			Ended *struct {
				Result string `json:"result"`
				Reason string `json:"reason"`
			} `json:"ended"`
			StopRequested *struct {
				Reason string `json:"reason"`
			} `json:"stop_requested"`
			Supervisor struct {
				Pid int `json:"pid"`
			} `json:"supervisor"`
		}
		if err := json.Unmarshal([]byte(out), &st); err != nil {
			t.Fatalf("run status: %v\n%s", err, out)
		}
		if st.Ended == nil || st.Ended.Result != "stopped" || st.StopRequested == nil || st.StopRequested.Reason != "stopped from the board" {
			t.Errorf("the run after stop: %s", out)
		}
		var pid int
		waitCLI(t, "the run's worker's end", 30*time.Second, func() bool {
			var state string
			_, state, _, pid = latestSessionPid(t, repo, id)
			return state != "running" && state != "starting"
		})
		waitPidsGone(t, 30*time.Second, pid, st.Supervisor.Pid)
		if _, err := os.Stat(gate); err == nil {
			t.Errorf("the gate was opened: the worker was not stopped by the run's stop")
		}
	})
}
