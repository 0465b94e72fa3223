package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

// realClientBin is where .ci/run installs the pinned AI clients.
const realClientBin = "../../internal/modelserver/clients/node_modules/.bin"

// TestMCPRealClientsConnect registers `git agentmine mcp` with each pinned
// real client the way docs/mcp-setup.md says, then asks the client
// about it: Claude Code, Gemini CLI and opencode start the server and
// report it connected; Codex (whose mcp list starts nothing) must have
// written the server into its config.toml. A client that is not installed
// fails the test, as in the other real-client tests; set
// AGENTMINE_SKIP_REAL_CLIENTS=1 on a machine without npm.
func TestMCPRealClientsConnect(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: starts the real AI clients (node), seconds each")
	}
	if os.Getenv("AGENTMINE_SKIP_REAL_CLIENTS") != "" {
		t.Skip("AGENTMINE_SKIP_REAL_CLIENTS is set")
	}
	clients, err := filepath.Abs(realClientBin)
	if err != nil {
		t.Fatal(err)
	}
	repo := mcpRepo(t)
	home := os.Getenv("HOME") // the scrubbed, private HOME
	env := append(os.Environ(), "PATH="+clients+string(os.PathListSeparator)+os.Getenv("PATH"),
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1",
		"OPENCODE_DISABLE_MODELS_FETCH=1", "OPENCODE_DISABLE_AUTOUPDATE=1")
	run := func(t *testing.T, name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(filepath.Join(clients, name), args...)
		cmd.Dir = repo
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	cases := []struct {
		client string
		check  func(t *testing.T)
	}{
		{"claude", func(t *testing.T) {
			run(t, "claude", "mcp", "add", "agentmine", "--", "git", "agentmine", "mcp")
			if out := run(t, "claude", "mcp", "list"); !strings.Contains(out, "agentmine: git agentmine mcp - ✔ Connected") {
				t.Errorf("claude mcp list:\n%s", out)
			}
		}},
		{"gemini", func(t *testing.T) {
			run(t, "gemini", "mcp", "add", "agentmine", "git", "agentmine", "mcp")
			// Gemini CLI starts no server in a folder the user has not
			// trusted (it asks on its first interactive start).
			gittest.WriteFiles(t, home, map[string]string{".gemini/trustedFolders.json": `{"` + repo + `": "TRUST_FOLDER"}`})
			if out := run(t, "gemini", "mcp", "list"); !strings.Contains(out, "agentmine: git agentmine mcp (stdio) - Connected") {
				t.Errorf("gemini mcp list:\n%s", out)
			}
		}},
		{"opencode", func(t *testing.T) {
			gittest.WriteFiles(t, repo, map[string]string{"opencode.json": `{
  "$schema": "https://opencode.ai/config.json",
  "mcp": {"agentmine": {"type": "local", "command": ["git", "agentmine", "mcp"], "enabled": true}}
}
`})
			if out := run(t, "opencode", "mcp", "list"); !strings.Contains(out, "agentmine") || !strings.Contains(out, "connected") {
				t.Errorf("opencode mcp list:\n%s", out)
			}
		}},
		{"codex", func(t *testing.T) {
			run(t, "codex", "mcp", "add", "agentmine", "--", "git", "agentmine", "mcp")
			data, err := os.ReadFile(filepath.Join(home, ".codex", "config.toml"))
			if err != nil || !strings.Contains(string(data), "[mcp_servers.agentmine]\ncommand = \"git\"\nargs = [\"agentmine\", \"mcp\"]") {
				t.Errorf("codex config.toml after codex mcp add: %v\n%s", err, data)
			}
		}},
	}
	// The clients mostly wait on node's start-up: run them at once.
	var wg sync.WaitGroup
	for _, c := range cases {
		if _, err := os.Stat(filepath.Join(clients, c.client)); err != nil {
			t.Errorf("%s is not installed in %s: run `npm install` there (.ci/run does): %v", c.client, clients, err)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			t.Run(c.client, c.check)
		}()
	}
	wg.Wait()
}
