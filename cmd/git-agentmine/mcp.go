package main

import (
	"github.com/git-agentmine/git-agentmine/cmd/internal/serverargs"
)

// McpCmd is `mcp`: the MCP server over stdio, served by agentmine-serve.
type McpCmd struct{}

// Run serves the repository's tools on stdin and stdout until the client
// disconnects; warnings go to stderr.
func (c *McpCmd) Run(a *App) error {
	return runServer(a, serverargs.Args{Command: "mcp"})
}
