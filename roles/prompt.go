package roles

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/git-agentmine/git-agentmine/agents"
)

// instructions appends the agent's own prompt file, if it has one.
func instructions(b *strings.Builder, top string, ag agents.Agent) error {
	pf := ag.PromptPath(top)
	if pf == "" {
		return nil
	}
	data, err := os.ReadFile(filepath.Join(top, pf))
	if err != nil {
		return fmt.Errorf("agent %s: reading its prompt file: %w", ag.Name, err)
	}
	if s := strings.TrimSpace(string(data)); s != "" {
		fmt.Fprintf(b, "## Instructions for the %s agent\n\n%s\n\n", ag.Name, s)
	}
	return nil
}
