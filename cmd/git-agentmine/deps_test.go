package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestStartDependencies: the servers (the web board, MCP and what they
// import: goldmark, the MCP SDK, net/http) live in agentmine-serve, not in
// git-agentmine. Every package linked in initialises before any command
// runs, so one stray import (a string helper in package servers) put 9 MB
// and milliseconds of initialisation in front of every command.
func TestStartDependencies(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := map[string]bool{}
	for _, p := range strings.Fields(string(out)) {
		deps[p] = true
	}
	if !deps["github.com/git-agentmine/git-agentmine/cmd/internal/serverargs"] {
		t.Fatalf("go list -deps does not name serverargs, which git-agentmine imports: %s", out)
	}
	for _, heavy := range []string{
		"github.com/git-agentmine/git-agentmine/cmd/internal/servers",
		"github.com/git-agentmine/git-agentmine/web",
		"github.com/git-agentmine/git-agentmine/mcpserver",
		"github.com/yuin/goldmark",
		"github.com/modelcontextprotocol/go-sdk/mcp",
		"net/http",
		"gopkg.in/yaml.v3",
	} {
		if deps[heavy] {
			t.Errorf("git-agentmine links %s: it belongs in agentmine-serve", heavy)
		}
	}
}
