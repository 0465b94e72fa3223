package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/internal/gittest"
	"github.com/git-agentmine/git-agentmine/pipeline"
	"github.com/git-agentmine/git-agentmine/tasks"
)

var tabRE = regexp.MustCompile(`data-tab="([^"]+)"`)

// appendLog appends text to the file at path.
func appendLog(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
}

// forgeRun stores a run record as another clone could have written it.
func forgeRun(t *testing.T, st *gitstore.Store, r pipeline.Record) {
	t.Helper()
	r.V = pipeline.SchemaVersion
	data, _ := json.Marshal(r)
	if _, err := st.Create(context.Background(), pipeline.Kind, r.Name, gitstore.Change{Data: data, Message: "forged run: " + r.Name}); err != nil {
		t.Fatal(err)
	}
}

// TestRunLog: a supervisor run started by pipeline.Start (this test's
// process is its supervisor) has a tab on the Runs page before its
// worker's, and a worker of no run comes after; the run's log streams
// over SSE, resumes from Last-Event-ID, and ends once the run recorded
// its end; a run whose supervisor died streams its log and ends at once;
// a record whose log lies outside the repository's agentmine logs is
// refused.
func TestRunLog(t *testing.T) {
	gittest.SkipShort(t, "records a run and prepares two sessions with worktrees")
	ctx := context.Background()
	repo := gittest.NewRepo(t)
	gittest.CommitFiles(t, repo, "agents", map[string]string{
		".agentmine/agents/manual.toml": "client = \"custom\"\ncommand = [\"true\"]\n[scope]\nwrite = [\"src/**\"]\n",
		"src/a.txt":                     "a\n",
	})
	st, env := open(t, repo)
	inRun := addTask(t, st, tasks.New{Title: "In the run"})
	other := addTask(t, st, tasks.New{Title: "Not in the run"})
	outside := prepare(t, env, other)
	sup, err := pipeline.Start(ctx, env, pipeline.Options{Name: "nightly", Targets: []string{inRun}, Parallel: 1, MaxLoops: 1,
		Supervisor: func(string) []string { return []string{"false"} }}, pipeline.Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	rec := sup.Record()
	worker := prepare(t, env, inRun)
	_, ts := serve(t, repo, true)
	c := client(t, ts)

	t.Run("RunsPageTabs", func(t *testing.T) {
		_, html := get(t, c, ts.URL+"/runs")
		var got []string
		for _, m := range tabRE.FindAllStringSubmatch(html, -1) {
			got = append(got, m[1])
		}
		want := []string{"log-run-nightly", "log-" + worker.Session.ID, "log-" + outside.Session.ID}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("tabs %v, want %v (the run's, its worker's, then the other worker's)", got, want)
		}
		for _, w := range []string{`data-run="nightly" data-state="running"`, `data-log="r:nightly"`, ">supervisor nightly</button>",
			fmt.Sprintf(`<td>%d</td><td class="progress"><span class="bar">░░░░░░░░░░</span> 0/1</td>`, os.Getpid())} {
			if !strings.Contains(html, w) {
				t.Errorf("runs page lacks %q", w)
			}
		}
	})

	u := ts.URL + "/runs/nightly/log"
	appendLog(t, rec.Log, "10:00:00 started task one\n")
	t.Run("StreamsAndResumes", func(t *testing.T) {
		res := stream(t, c, u, "")
		defer res.Body.Close()
		first := readEvents(t, res.Body, 1)
		if len(first) != 1 || text(first) != "10:00:00 started task one\n" || first[0].id != "26" {
			t.Fatalf("first event %+v", first)
		}
		appendLog(t, rec.Log, "10:00:01 \x1b[32mpassed\x1b[0m\n")
		next := readEvents(t, res.Body, 1)
		if len(next) != 1 || text(next) != "10:00:01 passed\n" || !strings.Contains(next[0].data, `"c":"fg32"`) {
			t.Fatalf("next event %+v", next)
		}
		res2 := stream(t, c, u, "17")
		defer res2.Body.Close()
		if got := text(readEvents(t, res2.Body, 1)); got != "task one\n10:00:01 passed\n" {
			t.Errorf("resumed from 17: %q", got)
		}
	})

	t.Run("EndsWhenTheRunEnds", func(t *testing.T) {
		res := stream(t, c, u, "")
		defer res.Body.Close()
		done := make(chan []sseEvent, 1)
		go func() { done <- readEvents(t, res.Body, 100) }()
		appendLog(t, rec.Log, "10:00:02 finished\n")
		if _, err := pipeline.MarkEnded(ctx, st, "nightly", pipeline.End{Time: time.Now().UTC(), Result: "done", Done: 1, Total: 1}); err != nil {
			t.Fatal(err)
		}
		var evs []sseEvent
		select {
		case evs = <-done:
		case <-time.After(30 * time.Second):
			t.Fatal("the stream did not end after the run ended")
		}
		last := evs[len(evs)-1]
		if last.name != "end" || last.data != `{"of":"run","state":"ended","verdict":"done, 1 of 1 done"}` {
			t.Errorf("last event %+v", last)
		}
		if got := text(evs); !strings.HasSuffix(got, "10:00:02 finished\n") {
			t.Errorf("streamed %q", got)
		}
		_, html := get(t, c, ts.URL+"/runs")
		if !strings.Contains(html, `data-run="nightly" data-state="ended"`) || !strings.Contains(html, "ended: done") {
			t.Error("a run that just ended lost its tab or its result")
		}
	})

	// gone is a process that has exited: the supervisor of a run that died.
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	t.Run("DeadSupervisor", func(t *testing.T) {
		dead := rec
		dead.Name, dead.Ended, dead.Log = "crashed", nil, filepath.Join(filepath.Dir(rec.Log), "run-crashed.log")
		dead.Supervisor.Pid = gone.Process.Pid
		until := time.Date(2099, 1, 2, 3, 4, 5, 0, time.Local)
		dead.RateLimits = []pipeline.Pause{{Client: "claude-code", Limits: 2, Until: until, FromClient: true, Parallel: 1,
			Reason: "rate limited: usage limit reached"}}
		forgeRun(t, st, dead)
		appendLog(t, dead.Log, "11:00:00 last words\n")
		res := stream(t, c, ts.URL+"/runs/crashed/log", "")
		defer res.Body.Close()
		evs := readEvents(t, res.Body, 100)
		if text(evs) != "11:00:00 last words\n" || evs[len(evs)-1].name != "end" ||
			!strings.Contains(evs[len(evs)-1].data, `"state":"dead"`) || !strings.Contains(evs[len(evs)-1].data, "is gone before the run ended") {
			t.Errorf("dead run's stream %+v", evs)
		}
		_, html := get(t, c, ts.URL+"/runs")
		if !strings.Contains(html, `data-run="crashed" data-state="dead"`) {
			t.Error("a run whose supervisor just died has no tab")
		}
		pause := `<div class="pause">rate limit: claude-code: paused until 2099-01-02 03:04:05 (the client&#39;s reset time; 2 limit(s) in a row, at most 1 at once): rate limited: usage limit reached</div>`
		if !strings.Contains(html, pause) {
			t.Errorf("the runs page does not show the run's pause %s", pause)
		}
	})

	t.Run("ForgedLogRefused", func(t *testing.T) {
		common := st.Location().CommonDir
		evil := filepath.Join(common, "agentmine", "logs", "up")
		if err := os.Symlink("/etc", evil); err != nil {
			t.Fatal(err)
		}
		for name, log := range map[string]string{
			"abs":      "/etc/passwd",
			"relative": "run.log",
			"dotdot":   filepath.Join(common, "agentmine", "logs", "..", "serve-token"),
			"token":    filepath.Join(common, "agentmine", "serve-token"),
			"symlink":  filepath.Join(evil, "passwd"),
		} {
			forged := rec
			forged.Name, forged.Ended, forged.Log = "forged-"+name, nil, log
			forged.Supervisor.Pid = gone.Process.Pid
			forgeRun(t, st, forged)
			code, body := get(t, c, ts.URL+"/runs/forged-"+name+"/log")
			if code != http.StatusConflict || !strings.Contains(body, "refusing to read it") || strings.Contains(body, "root:") || strings.Contains(body, testToken) {
				t.Errorf("%s (%s): %d\n%s", name, log, code, body)
			}
		}
		_, html := get(t, c, ts.URL+"/runs")
		if strings.Contains(html, "forged-") {
			t.Error("a dead run whose log is outside has a tab")
		}
	})

	t.Run("BadNames", func(t *testing.T) {
		if code, body := get(t, c, ts.URL+"/runs/nope/log"); code != http.StatusNotFound || !strings.Contains(body, "run nope not found") {
			t.Errorf("unknown run: %d\n%s", code, body)
		}
		if code, body := get(t, c, ts.URL+"/runs/-x/log"); code != http.StatusBadRequest || !strings.Contains(body, "invalid run name") {
			t.Errorf("bad run name: %d\n%s", code, body)
		}
		if code, body := get(t, c, ts.URL+"/runs/nightly/log?from=x"); code != http.StatusBadRequest || !strings.Contains(body, "is not a byte offset") {
			t.Errorf("bad offset: %d\n%s", code, body)
		}
	})
}
