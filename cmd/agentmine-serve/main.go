// Command agentmine-serve runs the long-running servers of git
// agentmine — the web board and the MCP server — for `git agentmine serve`
// and `git agentmine mcp`, which start it. It is installed beside
// git-agentmine (see package servers for why it is a program of its own).
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/git-agentmine/git-agentmine/cmd/internal/servers"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	code := servers.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}
