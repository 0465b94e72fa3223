package launch

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

// TestRealClients launches each installed client for real in a fresh
// repository, without credentials (scrubbed HOME and API keys) and usually
// without network, once with a short prompt passed inline and once with a
// prompt too long for one argument. Whatever happens, the run must end (the
// timeout ends clients that wait for the network forever), must not count
// as a success, and the log and verdict must explain it.
func TestRealClients(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: launches real clients")
	}
	scrubEnv(t)           // shared by the parallel subtests
	reaper := NewReaper() // one for the runs of this process, which run at once
	for _, tc := range []struct {
		c      Client
		reason string // expected in the verdict; "" for clients that hang without network
	}{
		{ClaudeCode, "Not logged in"},
		{Gemini, "Auth"},
		{Codex, ""},
		{OpenCode, ""},
		{Aider, ""},
	} {
		for _, long := range []bool{false, true} {
			name := string(tc.c)
			if long {
				name += "/long-prompt"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				runRealClient(t, reaper, tc.c, tc.reason, long)
			})
		}
	}
}

func runRealClient(t *testing.T, reaper *Reaper, c Client, reason string, long bool) {
	bin, err := exec.LookPath(Binary(c))
	if err != nil {
		t.Skipf("%s is not installed", Binary(c))
	}
	t.Logf("%s version: %s", bin, Version(context.Background(), bin))
	repo := gittest.NewRepo(t)
	prompt := filepath.Join(t.TempDir(), "prompt.md")
	text := "Create a file hello.txt containing hi, then commit it.\n"
	if long {
		text += strings.Repeat("Background that does not matter.\n", (200<<10)/33)
	}
	// Clients that end by themselves get time to start (gemini takes 5-8 s
	// on an idle machine, over 18 s on a loaded one); those that wait for the network forever only need enough to
	// show they accepted their arguments.
	timeout := 15 * time.Second
	if reason == "" {
		timeout = 6 * time.Second
	}
	if err := os.WriteFile(prompt, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd, err := Invocation{Client: c, PromptFile: prompt, Worktree: repo, Task: "t1"}.Build()
	if err != nil {
		t.Fatal(err)
	}
	if long == (cmd.Stdin == "" && !contains(cmd.Argv, prompt)) {
		t.Fatalf("long=%v but argv %d args, stdin %q", long, len(cmd.Argv), cmd.Stdin)
	}
	log := filepath.Join(t.TempDir(), "session.log")
	p, err := Start(context.Background(), Spec{Argv: cmd.Argv, Dir: repo, Env: cmd.Env, Stdin: cmd.Stdin,
		LogPath: log, Timeout: timeout, Grace: 2 * time.Second, Reaper: reaper})
	if err != nil {
		t.Fatal(err)
	}
	res := p.Wait()
	assertGroupGone(t, p.Pid())
	tail, err := TailBytes(log, 64<<10)
	if err != nil {
		t.Fatal(err)
	}
	v := ReadVerdict(c, res.ExitCode, tail)
	t.Logf("exit %d signal %q timed out %v; verdict %+v", res.ExitCode, res.Signal, res.TimedOut, v)
	if res.ExitCode == 0 || !v.Failed || v.Reason == "" {
		t.Fatalf("a client without credentials must fail with a reason: %+v %+v\n%s", res, v, tail)
	}
	if res.TimedOut {
		if reason != "" {
			// Seen on a loaded machine: a slow start is not a failure of launch.
			t.Logf("%s usually ends by itself here; it timed out (machine under load?)", c)
		}
		if !strings.Contains(string(tail), "timed out after") {
			t.Fatalf("log does not explain the timeout:\n%s", tail)
		}
		return
	}
	if !strings.Contains(v.Reason, reason) {
		t.Fatalf("verdict reason %q does not explain the failure (want %q):\n%s", v.Reason, reason, tail)
	}
}
