// Package servers owns the long-running servers of git agentmine as
// commands — the web board (`git agentmine serve`) and the MCP server
// (`git agentmine mcp`) — and the agentmine-serve executable's entry
// point that runs them.
//
// They live in an executable of their own, installed beside git-agentmine,
// which `git agentmine serve` and `git agentmine mcp` run: the HTTP, TLS and
// MCP packages they need made every other command start slower (a program
// only importing the MCP SDK took 15.6 ms to start against 6.3 ms for one
// importing nothing; `git-agentmine version` took 16-19 ms of CPU without
// them against 26-30 ms with them, perf stat, 40 runs each, on a loaded
// two-core machine), and short commands are what orchestrators run over
// and over. git keeps its HTTP transport out of its main binary for the
// same reason.
package servers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/git-agentmine/git-agentmine/cmd/internal/serverargs"
	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/output"
	"github.com/git-agentmine/git-agentmine/plan"
	"github.com/git-agentmine/git-agentmine/plan/yamlfile"
)

// Env is what a server command runs with: the streams, the repository and
// the git-agentmine that starts detached supervisors for it.
type Env struct {
	Ctx    context.Context
	Dir    string
	Getenv func(string) string
	In     io.Reader
	P      *output.Printer
	// Agentmine is the git-agentmine executable that detached supervisors
	// run as.
	Agentmine string
	// Version is git-agentmine's version, which the MCP server reports.
	Version string
	store   *gitstore.Store
}

// Store opens the repository's store once.
func (e *Env) Store() (*gitstore.Store, error) {
	if e.store != nil {
		return e.store, nil
	}
	st, err := gitstore.Open(e.Ctx, e.Dir)
	if err != nil {
		return nil, err
	}
	e.store = st
	return st, nil
}

// Supervisor is the argv of a detached supervisor of session in the
// repository at top, as `git agentmine worker run --detach` starts it.
func (e *Env) Supervisor(top, session string) []string {
	return []string{e.Agentmine, "-C", top, "worker", "supervise", session}
}

// Command is the argv of git-agentmine running args in the repository at
// top: the board starts runs with it, the MCP server runs run, plan and
// task import with it.
func (e *Env) Command(top string, args ...string) []string {
	return append([]string{e.Agentmine, "-C", top}, args...)
}

// Main runs agentmine-serve with args (without the program name) and
// returns its exit code. Errors are printed once, as git-agentmine prints
// them: "error: …" and an optional "hint: …".
func Main(ctx context.Context, args []string, in io.Reader, out, errw io.Writer, getenv func(string) string) int {
	if len(args) == 1 && args[0] == serverargs.DecodeTaskYAML {
		return decodeTaskYAML(in, out, errw)
	}
	a, err := serverargs.Parse(args)
	if err != nil {
		fmt.Fprintf(errw, "error: %s: %v\n", serverargs.Name, err)
		fmt.Fprintf(errw, "hint: %s is run by git agentmine serve and git agentmine mcp; run those instead\n", serverargs.Name)
		return exitcode.Usage
	}
	if a.Agentmine == "" {
		// Run by hand: detached supervisors are the git-agentmine beside
		// this executable, or the one on PATH.
		a.Agentmine = Sibling("git-agentmine")
	}
	e := &Env{Ctx: ctx, Dir: a.Dir, Getenv: getenv, In: in, Agentmine: a.Agentmine, Version: a.Version,
		P: &output.Printer{Out: out, Err: errw, Quiet: a.Quiet, Color: output.ColorWanted(out, a.NoColor, getenv)}}
	switch a.Command {
	case "serve":
		err = Serve(e, a.Serve)
	default:
		err = MCP(e)
	}
	if err == nil {
		return exitcode.OK
	}
	fmt.Fprintf(errw, "error: %s\n", strings.SplitN(err.Error(), "\n", 2)[0])
	if h := exitcode.HintOf(err); h != "" {
		fmt.Fprintf(errw, "hint: %s\n", h)
	}
	return exitcode.Of(err)
}

// Sibling returns the path of the executable name beside the running one,
// else name itself (to be looked up on PATH).
func Sibling(name string) string {
	if self, err := os.Executable(); err == nil {
		p := self[:strings.LastIndexByte(self, '/')+1] + name
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return name
}

// ShareHint is serverargs.ShareHint, the hint MCP and the web board give.
func ShareHint(remote string) string { return serverargs.ShareHint(remote) }

// decodeTaskYAML answers serverargs.DecodeTaskYAML: a task.yaml on in, its
// TaskYAMLReply on out; 1 when the file cannot be read or the answer
// written.
func decodeTaskYAML(in io.Reader, out, errw io.Writer) int {
	data, err := io.ReadAll(io.LimitReader(in, plan.MaxFileBytes+1))
	if err == nil && len(data) > plan.MaxFileBytes {
		err = errors.New("too large")
	}
	if err != nil {
		fmt.Fprintf(errw, "error: %s: reading task.yaml: %v\n", serverargs.Name, err)
		return 1
	}
	var r serverargs.TaskYAMLReply
	r.YAML, err = yamlfile.Decode(data)
	switch {
	case errors.Is(err, io.EOF):
		r.Empty = true
	case err != nil:
		r.Error = err.Error()
	}
	if err := json.NewEncoder(out).Encode(r); err != nil {
		fmt.Fprintf(errw, "error: %s: %v\n", serverargs.Name, err)
		return 1
	}
	return 0
}
