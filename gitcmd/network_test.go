package gitcmd

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

// authServer is an HTTP remote on 127.0.0.1 that demands credentials for
// everything, as a private repository does.
func authServer(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Basic realm="private"`)
		http.Error(w, "authentication required", http.StatusUnauthorized)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/private.git"
}

// TestNetworkCommandNeverPrompts: on a terminal, plain git asks for a user
// name for a remote that demands credentials and waits for the answer;
// the same ls-remote through a Runner fails at once with git's own words.
// The deadline is the failure, not a measured time.
func TestNetworkCommandNeverPrompts(t *testing.T) {
	isolate(t)
	url := authServer(t)
	dir := gittest.NewRepo(t)
	// A person's shell sets no GIT_TERMINAL_PROMPT (the tests' pinned
	// environment does).
	t.Setenv("GIT_TERMINAL_PROMPT", "")
	os.Unsetenv("GIT_TERMINAL_PROMPT")

	// Control: plain git prompts on the terminal and hangs.
	term := gittest.NewTerminal(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	plain := exec.CommandContext(ctx, "git", "ls-remote", url)
	plain.Dir = dir
	term.Attach(plain)
	// The prompt is git-remote-http's, a grandchild: end the whole session
	// (Attach starts one), not only git, or the helper keeps the terminal
	// open and waits for its answer for ever where SIGHUP is ignored.
	plain.Cancel = func() error { return syscall.Kill(-plain.Process.Pid, syscall.SIGKILL) }
	if err := plain.Run(); ctx.Err() == nil {
		t.Fatalf("plain git did not wait for an answer (%v):\n%s", err, term.Output())
	}
	if !strings.HasPrefix(term.Output(), "Username for 'http://127.0.0.1") {
		t.Fatalf("plain git did not prompt:\n%s", term.Output())
	}

	term = gittest.NewTerminal(t)
	ctx, cancel = context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	r, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	cmd := r.Command(ctx, "ls-remote", url)
	term.Attach(cmd)
	err = cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("ls-remote through a Runner waited for an answer:\n%s", term.Output())
	}
	out := term.Settled()
	if err == nil || strings.Contains("\n"+out, "\nUsername for") || !strings.Contains(out, "terminal prompts disabled") {
		t.Fatalf("ls-remote through a Runner: %v\n%s", err, out)
	}
}

// TestMayUseNetwork: the subcommands that may reach a remote are told from
// the others, past git's own options.
func TestMayUseNetwork(t *testing.T) {
	for args, want := range map[string]bool{
		"push origin x": true,
		"-c core.hooksPath=/dev/null fetch -q o r": true,
		"--git-dir /x ls-remote o":                 true,
		"clone --no-local a b":                     true,
		"rev-parse HEAD":                           false,
		"-c remote.x=push for-each-ref":            false,
		"":                                         false,
	} {
		if got := mayUseNetwork(strings.Fields(args)); got != want {
			t.Errorf("mayUseNetwork(%q) = %v, want %v", args, got, want)
		}
	}
}

// TestNetworkEnv: prompts and askpass programs are off, ssh runs in batch
// mode with a connect timeout on whichever command the user chose, and
// the user's own stall limits are kept.
func TestNetworkEnv(t *testing.T) {
	base := []string{"GIT_TERMINAL_PROMPT=0", "GCM_INTERACTIVE=never", "GIT_ASKPASS=", "SSH_ASKPASS=", "SSH_ASKPASS_REQUIRE=never"}
	batch := " -o BatchMode=yes -o ConnectTimeout=15"
	for _, c := range []struct {
		env  []string
		ssh  string
		want []string
	}{
		{nil, "", append(slices.Clone(base), "GIT_SSH_COMMAND=ssh"+batch, "GIT_HTTP_LOW_SPEED_LIMIT=1", "GIT_HTTP_LOW_SPEED_TIME=15")},
		{nil, "ssh -i ~/.ssh/work", append(slices.Clone(base), "GIT_SSH_COMMAND=ssh -i ~/.ssh/work"+batch, "GIT_HTTP_LOW_SPEED_LIMIT=1", "GIT_HTTP_LOW_SPEED_TIME=15")},
		{[]string{"GIT_SSH_COMMAND=ssh -p 2222", "GIT_HTTP_LOW_SPEED_TIME=60"}, "ssh -i k", append(slices.Clone(base), "GIT_SSH_COMMAND=ssh -p 2222"+batch, "GIT_HTTP_LOW_SPEED_LIMIT=1")},
		{[]string{"GIT_SSH=/usr/local/bin/myssh"}, "", append(slices.Clone(base), "GIT_HTTP_LOW_SPEED_LIMIT=1", "GIT_HTTP_LOW_SPEED_TIME=15")},
		{nil, "plink -batch", append(slices.Clone(base), "GIT_HTTP_LOW_SPEED_LIMIT=1", "GIT_HTTP_LOW_SPEED_TIME=15")},
		{nil, "/usr/bin/ssh -F cfg", append(slices.Clone(base), "GIT_SSH_COMMAND=/usr/bin/ssh -F cfg"+batch, "GIT_HTTP_LOW_SPEED_LIMIT=1", "GIT_HTTP_LOW_SPEED_TIME=15")},
	} {
		if got := networkEnv(c.env, c.ssh); !slices.Equal(got, c.want) {
			t.Errorf("networkEnv(%q, %q) =\n%q, want\n%q", c.env, c.ssh, got, c.want)
		}
	}
}
