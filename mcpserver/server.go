// Package mcpserver owns git agentmine's Model Context Protocol server: the
// tools an AI orchestrator calls instead of the command line, served over
// stdio for one repository. Each tool is a thin call into the packages the
// command line uses and returns the same document as the matching --json
// output (package contract), with input and output schemas generated from
// Go structs. A failure is a tool error carrying the command line's
// one-line message and its exit code's name; the server keeps serving.
// Long work is start-then-poll: worker_start and run_start return at
// once, and session_output and run_status follow the log with a cursor.
package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/git-agentmine/git-agentmine/board"
	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/worker"
)

// Options configure a server.
type Options struct {
	// Dir is a directory inside the repository to serve.
	Dir string
	// Getenv reads the environment (AGENTMINE_* settings, the worker's
	// environment); nil reads nothing.
	Getenv func(string) string
	// Supervisor returns the command line of a detached supervisor that
	// runs a prepared session, given the repository's top and the
	// session's id: worker_start starts it and returns.
	Supervisor func(top, session string) []string
	// ShareHint words the hint worker_start returns when the repository
	// has a remote (its name given) that shares nothing; nil returns none.
	ShareHint func(remote string) string
	// Agentmine returns the command line of git-agentmine run in the
	// repository at top with args: run_start and run_stop run it, as the
	// command line's run --detach and run stop. nil refuses them.
	Agentmine func(top string, args ...string) []string
	// Version is the version the server reports to clients.
	Version string
	// Log receives warnings (unreadable refs skipped, a claim not made);
	// nil drops them. Never the transport's stream.
	Log io.Writer
}

// Server is the MCP server of one repository.
type Server struct {
	opts Options
	mcp  *mcp.Server
	// names lists the tools in the order they were added (tools/list
	// sorts them by name).
	names []string
}

// instructions is what clients are told about the server when they
// connect: the few rules that are not in any one tool's description.
const instructions = `git agentmine: tasks, workers and their verdicts, stored in this git repository.
Start with context. Long work is start-then-poll: worker_start returns at once with the session;
follow it with session_output (pass back the cursor; wait_seconds avoids busy polling) until ended,
then session_status gives the verdict. merge lands only a session whose DoD passed and whose scope held.
To let the loop do it all: task_plan (or plan_import), run_start, then run_status with its cursor
until ended; run_stop ends a run. Ids may be given as any unique prefix. Errors end with "exit: <name> (<code>)", the command line's exit code.`

// New checks that opts.Dir is inside a git repository and builds the
// server with its tools.
func New(ctx context.Context, opts Options) (*Server, error) {
	if opts.Getenv == nil {
		opts.Getenv = func(string) string { return "" }
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	if opts.Supervisor == nil {
		return nil, errors.New("mcp server: no supervisor command for worker_start")
	}
	if _, err := gitstore.Open(ctx, opts.Dir); err != nil {
		return nil, err
	}
	s := &Server{opts: opts}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "git-agentmine", Version: opts.Version},
		&mcp.ServerOptions{Instructions: instructions, Capabilities: &mcp.ServerCapabilities{}})
	s.addTools()
	s.mcp.AddReceivingMiddleware(s.unknownTools)
	return s, nil
}

// Serve answers requests over t until the client closes the connection
// (nil) or ctx ends (nil: being stopped is how a stdio server ends).
func (s *Server) Serve(ctx context.Context, t mcp.Transport) error {
	err := s.mcp.Run(ctx, t)
	if ctx.Err() != nil || err == nil || errors.Is(err, io.EOF) || errors.Is(err, mcp.ErrConnectionClosed) {
		return nil
	}
	return fmt.Errorf("serving mcp: %w", err)
}

// unknownTools answers a call of a tool the server does not have with a
// tool error naming the tools it has, rather than a protocol error, so
// that a model reads what went wrong.
func (s *Server) unknownTools(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "tools/call" {
			return next(ctx, method, req)
		}
		r, ok := req.(*mcp.CallToolRequest)
		if !ok || r.Params == nil {
			return next(ctx, method, req)
		}
		for _, n := range s.names {
			if n == r.Params.Name {
				return next(ctx, method, req)
			}
		}
		return toolError(exitcode.New(exitcode.Usage, fmt.Errorf("unknown tool %q; the tools are: %s",
			r.Params.Name, strings.Join(s.names, ", ")), "")), nil
	}
}

// call is one tool call's way into the repository: the store and the
// worker environment, opened on first use. Every call opens them afresh,
// as every command does, so settings changed while the server runs apply
// to the next call.
type call struct {
	ctx context.Context
	s   *Server
	st  *gitstore.Store
	env *worker.Env
}

// store opens the repository's store.
func (c *call) store() (*gitstore.Store, error) {
	if c.st == nil {
		st, err := gitstore.Open(c.ctx, c.s.opts.Dir)
		if err != nil {
			return nil, err
		}
		c.st = st
	}
	return c.st, nil
}

// worker opens the worker environment: the store and the configuration.
func (c *call) worker() (*worker.Env, error) {
	if c.env == nil {
		st, err := c.store()
		if err != nil {
			return nil, err
		}
		env, err := worker.NewEnv(st, nil, c.s.opts.Getenv)
		if err != nil {
			return nil, err
		}
		c.env = env
	}
	return c.env, nil
}

// board reads every task and session and derives statuses, warning about
// refs that cannot be read (the rest of the board is still whole).
// defaultBase is as board.Load has it: the task views pass "", as the
// command line's task commands do, the session views the configured base.
func (c *call) board(defaultBase string) (*board.Board, error) {
	st, err := c.store()
	if err != nil {
		return nil, err
	}
	b, err := board.Load(c.ctx, st, defaultBase)
	if err != nil {
		return nil, err
	}
	for _, p := range b.TaskProblems {
		c.warnf("skipping unreadable task: %v", p)
	}
	for _, p := range b.SessionProblems {
		c.warnf("skipping unreadable session: %v", p)
	}
	return b, nil
}

// warnf writes a warning line to the server's log.
func (c *call) warnf(format string, a ...any) {
	fmt.Fprintf(c.s.opts.Log, "warning: "+format+"\n", a...)
}
