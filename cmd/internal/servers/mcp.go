package servers

import (
	"os"

	"github.com/git-agentmine/git-agentmine/mcpserver"
	"github.com/git-agentmine/git-agentmine/output"
)

// MCP serves the repository's tools on stdin and stdout until the client
// disconnects; warnings go to stderr.
func MCP(e *Env) error {
	if _, err := e.Store(); err != nil {
		return err
	}
	if f, ok := e.In.(*os.File); ok && output.IsTerminal(f) {
		e.P.Notef("serving MCP on stdin and stdout: an MCP client starts this command (see docs/mcp-setup.md)\n")
	}
	s, err := mcpserver.New(e.Ctx, mcpserver.Options{Dir: e.Dir, Getenv: e.Getenv, Version: e.Version, Log: e.P.Err,
		Supervisor: e.Supervisor, Agentmine: e.Command, ShareHint: ShareHint})
	if err != nil {
		return err
	}
	return s.Serve(e.Ctx, &mcpserver.LineTransport{Reader: e.In, Writer: e.P.Out})
}
