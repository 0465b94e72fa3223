package modelserver_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/git-agentmine/git-agentmine/internal/modelserver"
	"github.com/git-agentmine/git-agentmine/pipeline"
	"github.com/git-agentmine/git-agentmine/sessions"
)

// TestRunSumsRealClientsUsage: `run --merge` over four tasks, one per
// real client (Claude Code, Codex, Gemini CLI, opencode), each client
// pointed at a scripted model server of its own that answers with known
// usage numbers. Every task ends done, and the run's usage (in its
// finished event and in run status, JSON and text) is exactly what the
// servers served, summed, and the sum of what each session recorded: the
// per-run sum of issue 11 through the real clients and their adapters.
func TestRunSumsRealClientsUsage(t *testing.T) {
	bin, clients := realClientDirs(t)
	r, home := newClientRepo(t, bin, clients, "none")
	type member struct {
		c    realClient
		task string
		srv  *modelserver.Server
	}
	var members []*member
	timeout := time.Duration(0)
	for _, c := range realClients() {
		if _, err := os.Stat(filepath.Join(clients, c.binary)); err != nil {
			t.Fatalf("%s is not installed in %s: run `npm install` there (.ci/run does): %v", c.binary, clients, err)
		}
		members = append(members, &member{c: c})
		timeout = max(timeout, 3*c.start)
	}
	for _, m := range members {
		c := m.c
		file := "notes/" + c.name + ".txt"
		model := ""
		if c.model != "" {
			model = fmt.Sprintf("model = %q\n", c.model)
		}
		writeFile(t, filepath.Join(r.repo, ".agentmine", "agents", c.name+".toml"), fmt.Sprintf(`client = %q
%stimeout = %d
dod = ["test -s %s"]
[scope]
write = ["notes/**"]
`, c.client, model, int(timeout/time.Second), file))
		var added struct {
			ID string `json:"id"`
		}
		title := fmt.Sprintf("Write %s and commit it", file)
		if err := json.Unmarshal([]byte(r.am("task", "add", title, "--assignee", c.name, "--json")), &added); err != nil || added.ID == "" {
			t.Fatalf("task add: %v", err)
		}
		m.task = added.ID
		wt := filepath.Join(r.repo, ".agentmine", "worktrees", "task-"+added.ID[:8])
		srv, err := modelserver.Start(modelserver.Options{Script: modelserver.Edit, Dir: wt, File: file})
		if err != nil {
			t.Fatal(err)
		}
		m.srv = srv
		// The clients' settings do not overlap (ANTHROPIC_*, CODEX_HOME
		// and OPENAI_API_KEY, GEMINI_API_KEY and GOOGLE_GEMINI_BASE_URL,
		// OPENCODE_CONFIG): one environment points each at its own server.
		r.env = append(r.env, c.setup(t, home, srv.URL())...)
	}
	t.Cleanup(func() {
		for _, m := range members {
			m.srv.Close()
			if t.Failed() {
				t.Logf("%s model server log:\n%s", m.c.name, m.srv.Log())
				if logs, err := r.cmd("git-agentmine", "-C", r.repo, "worker", "logs", m.task).CombinedOutput(); err == nil {
					t.Logf("%s worker logs:\n%s", m.c.name, tailText(string(logs), 4000))
				}
			}
		}
	})

	cmd := r.cmd("git-agentmine", "-C", r.repo, "run", "--merge", "--parallel", "2", "--max-loops", "1", "--json")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("run: %v\nstdout: %s\nstderr: %s", err, stdout.String(), tailText(stderr.String(), 3000))
	}
	var sum *pipeline.Summary
	sc := bufio.NewScanner(&stdout)
	for sc.Scan() {
		var e pipeline.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("run --json printed a line that is not an event: %q: %v", sc.Text(), err)
		}
		if e.Summary != nil {
			sum = e.Summary
		}
	}
	if sum == nil || sum.Result != "done" || sum.Done != len(members) {
		t.Fatalf("run summary %+v, want all %d tasks done", sum, len(members))
	}

	// Exactly what the servers served: the prompt tokens the clients were
	// charged (read from a cache or not) and the tokens they generated.
	var in, out int64
	for _, m := range members {
		served := m.srv.Served()
		if served.Input == 0 || served.Output == 0 {
			t.Fatalf("the %s server served %v", m.c.name, served)
		}
		in += served.Input
		out += served.Output
	}
	u := sum.Usage
	if n := len(members); u.Sessions != n || u.Reported != n || u.InputTokens+u.CacheReadTokens != in || u.OutputTokens != out {
		t.Fatalf("run usage %+v, want %d of %d sessions reporting %d in (cache reads included), %d out", u, n, n, in, out)
	}
	// The sum is the sum of what each session recorded, cost included.
	var recorded sessions.Usage
	for _, m := range members {
		var shown struct {
			Usage *sessions.Usage `json:"usage"`
		}
		if err := json.Unmarshal([]byte(r.am("task", "show", m.task, "--json")), &shown); err != nil || shown.Usage == nil {
			t.Fatalf("task show %s: usage %v (%v)", m.c.name, shown.Usage, err)
		}
		recorded = recorded.Add(*shown.Usage)
	}
	if u.Usage != recorded {
		t.Errorf("run usage %+v, the tasks recorded %+v", u.Usage, recorded)
	}
	var st struct {
		Usage *pipeline.RunUsage `json:"usage"`
	}
	if err := json.Unmarshal([]byte(r.am("run", "status", "default", "--json")), &st); err != nil || st.Usage == nil || *st.Usage != u {
		t.Errorf("run status --json: usage %+v (%v), want %+v", st.Usage, err, u)
	}
	if text := r.am("run", "status", "default"); !strings.Contains(text, "usage     "+u.String()) {
		t.Errorf("run status does not show %q:\n%s", u.String(), text)
	}
	t.Logf("run usage: %s; servers served %d in, %d out", u, in, out)
}
