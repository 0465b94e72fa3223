package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

// TestNoPromptBehindAnHTTPRemote: a repository shares through an HTTP
// remote that demands credentials, and a person runs worker run and run
// on a terminal. Neither asks for a user name nor waits for one: each
// finishes locally, saying once that the remote could not be reached. The
// 15-second deadline is the failure, not a measured time.
func TestNoPromptBehindAnHTTPRemote(t *testing.T) {
	gittest.SkipShort(t, "real workers on a pseudo-terminal beside an HTTP remote")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Basic realm="private"`)
		http.Error(w, "authentication required", http.StatusUnauthorized)
	}))
	defer srv.Close()
	repo := testRepo(t)
	// A person's shell sets no GIT_TERMINAL_PROMPT (the pinned test
	// environment does).
	t.Setenv("GIT_TERMINAL_PROMPT", "")
	os.Unsetenv("GIT_TERMINAL_PROMPT")
	gittest.Git(t, repo, "remote", "add", "origin", srv.URL+"/private.git")
	run(t, repo, "git", "agentmine", "init")
	gittest.Git(t, repo, "config", "agentmine.remote", "origin")
	gittest.WriteFiles(t, repo, map[string]string{".agentmine/agents/quick.toml": "client = \"custom\"\n" +
		"command = [\"sh\", \"-c\", \"mkdir -p src && echo $AGENTMINE_TASK > src/$AGENTMINE_TASK.txt && git add src && git commit -qm work\"]\n" +
		"[scope]\nwrite = [\"src/**\"]\n"})
	gittest.Git(t, repo, "add", "-A")
	gittest.Git(t, repo, "commit", "-qm", "agent")
	a := run(t, repo, "git", "agentmine", "task", "add", "A", "-q", "--assignee", "quick")
	b := run(t, repo, "git", "agentmine", "task", "add", "B", "-q", "--assignee", "quick")
	c := run(t, repo, "git", "agentmine", "task", "add", "C", "-q", "--assignee", "quick")

	onTerminal := func(args ...string) (string, error) {
		t.Helper()
		term := gittest.NewTerminal(t)
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, "git", append([]string{"agentmine"}, args...)...)
		cmd.Dir = repo
		term.Attach(cmd)
		err := cmd.Run()
		if ctx.Err() != nil {
			t.Fatalf("git agentmine %s did not finish within the deadline (a prompt?):\n%s", strings.Join(args, " "), term.Output())
		}
		return strings.ReplaceAll(term.Settled(), "\r\n", "\n"), err
	}
	check := func(what, out string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v\n%s", what, err, out)
		}
		warnings := 0
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "Username for") || strings.HasPrefix(l, "Password for") {
				t.Errorf("%s prompted: %q", what, l)
			}
			if strings.HasPrefix(l, "warning: ") {
				warnings++
				if !strings.Contains(l, "could not reach origin") || !strings.Contains(l, "running locally") {
					t.Errorf("%s: warning %q does not say the remote was unreachable and the work goes on", what, l)
				}
			}
		}
		if warnings != 1 {
			t.Errorf("%s: %d warning lines, want 1:\n%s", what, warnings, out)
		}
	}
	out, err := onTerminal("worker", "run", a, "--agent", "quick", "--exec")
	check("worker run", out, err)
	out, err = onTerminal("run", b, c, "--merge", "--parallel", "2")
	check("run", out, err)
	for _, id := range []string{b, c} {
		if st, why := taskStatus(t, repo, id); st != "done" {
			t.Errorf("task %s: %s (%s)", id[:8], st, why)
		}
	}
}
