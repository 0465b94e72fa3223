package main

import (
	"io"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/git-agentmine/git-agentmine/mcpserver"
	"github.com/git-agentmine/git-agentmine/output"
)

// McpCmd is `mcp`: the MCP server over stdio.
type McpCmd struct{}

// Run serves the repository's tools on stdin and stdout until the client
// disconnects; warnings go to stderr.
func (c *McpCmd) Run(a *App) error {
	dir := a.G.Dir
	if dir == "" {
		dir = "."
	}
	if _, err := a.Store(); err != nil {
		return err
	}
	if f, ok := a.In.(*os.File); ok && output.IsTerminal(f) {
		a.P.Notef("serving MCP on stdin and stdout: an MCP client starts this command (see README's MCP section)\n")
	}
	s, err := mcpserver.New(a.Ctx, mcpserver.Options{Dir: dir, Getenv: a.Getenv, Version: buildVersion().Version, Log: a.P.Err,
		Supervisor: func(top, session string) []string { return supervisorArgv(a.Args0, top, session) }})
	if err != nil {
		return err
	}
	return s.Serve(a.Ctx, &mcp.IOTransport{Reader: io.NopCloser(a.In), Writer: nopWriteCloser{a.P.Out}})
}

// nopWriteCloser is stdout as the transport writes it: closing the
// connection must not close the process's stdout.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
