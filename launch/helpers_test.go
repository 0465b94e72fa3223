package launch

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

// scrubEnv pins the environment of a test (gittest.Scrub) and keeps the
// credentials and Claude Code session markers of whoever runs the tests out
// of it.
func scrubEnv(t *testing.T) {
	t.Helper()
	gittest.Scrub(t)
	gittest.Unsetenv(t, "ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN", "OPENAI_API_KEY", "CODEX_API_KEY",
		"GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_GENAI_USE_GCA",
		"CLAUDECODE", "CLAUDE_CODE_ENTRYPOINT", "IS_SANDBOX")
}

// writeScript writes an executable sh script and returns its path.
func writeScript(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// liveMembers lists the pids of process group pgid that are not zombies,
// read straight from /proc.
func liveMembers(t *testing.T, pgid int) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(data)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if f[2] == strconv.Itoa(pgid) && f[0] != "Z" && f[0] != "X" {
			pids = append(pids, pid)
		}
	}
	return pids
}

// assertGroupGone checks that nothing of process group pgid runs any more,
// and that kill(-pgid, 0) reports ESRCH once late zombies are reaped.
func assertGroupGone(t *testing.T, pgid int) {
	t.Helper()
	// A SIGKILLed member is gone only once the kernel has run it to its
	// end, which on a loaded machine takes a moment after kill returns.
	deadline := time.Now().Add(10 * time.Second)
	for live := liveMembers(t, pgid); len(live) > 0; live = liveMembers(t, pgid) {
		if time.Now().After(deadline) {
			t.Fatalf("process group %d still has live members %v", pgid, live)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for {
		err := syscall.Kill(-pgid, 0)
		if errors.Is(err, syscall.ESRCH) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("kill(-%d, 0) = %v, want ESRCH", pgid, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitForLog polls the log until it contains want.
func waitForLog(t *testing.T, path, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		data, _ := os.ReadFile(path)
		if strings.Contains(string(data), want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("log %s never contained %q; it holds:\n%s", path, want, data)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func wantCode(t *testing.T, err error, code int) {
	t.Helper()
	if err == nil {
		t.Fatalf("want an error with exit code %d, got nil", code)
	}
	if got := exitcode.Of(err); got != code {
		t.Fatalf("exit code of %q = %d, want %d", err, got, code)
	}
	if strings.Contains(err.Error(), "\n") {
		t.Fatalf("error is not one line: %q", err)
	}
}
