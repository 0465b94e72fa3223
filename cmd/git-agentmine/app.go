package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/alecthomas/kong"

	"github.com/git-agentmine/git-agentmine/board"
	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/isolation"
	"github.com/git-agentmine/git-agentmine/output"
	"github.com/git-agentmine/git-agentmine/sessions"
)

// version, when set at build time with -ldflags "-X main.version=…",
// overrides the module version the Go toolchain records (see buildVersion).
var version = ""

// Stdio is the process's standard streams.
type Stdio struct {
	In       io.Reader
	Out, Err io.Writer
}

// Globals are the flags every command accepts.
type Globals struct {
	Dir     string           `short:"C" name:"dir" placeholder:"DIR" help:"Run as if started in DIR."`
	JSON    bool             `name:"json" help:"Print machine-readable JSON (schema: docs/json.md)."`
	Quiet   bool             `short:"q" help:"Print ids only."`
	NoColor bool             `name:"no-color" help:"Never colour the output (NO_COLOR is honoured too)."`
	Version kong.VersionFlag `help:"Print the version and exit."`
}

// App is what every command's Run receives: the parsed globals, the streams
// and a lazily opened store. It holds no logic of its own.
type App struct {
	Ctx    context.Context
	G      *Globals
	P      *output.Printer
	In     io.Reader
	Getenv func(string) string
	// Args0 is the path of this binary, for detached supervisors.
	Args0    string
	store    *gitstore.Store
	sessions []sessions.Record
	// where is where liveness is judged from, read once (here).
	where *board.Here
}

// here returns where liveness is judged from: this host and this
// repository. Without a repository it is this host alone.
func (a *App) here() board.Here {
	if a.where == nil {
		h := board.Here{Host: sessions.Host()}
		if st, err := a.Store(); err == nil {
			h = board.HereOf(st)
		}
		a.where = &h
	}
	return *a.where
}

// Store opens the repository's store once.
func (a *App) Store() (*gitstore.Store, error) {
	if a.store != nil {
		return a.store, nil
	}
	dir := a.G.Dir
	if dir == "" {
		dir = "."
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return nil, exitcode.New(exitcode.Usage, fmt.Errorf("cannot change to %s: no such directory", dir), "")
	}
	st, err := gitstore.Open(a.Ctx, dir)
	if err != nil {
		return nil, err
	}
	a.store = st
	return st, nil
}

// exitPanic carries kong's requested exit (after --help or --version).
type exitPanic struct{ code int }

// Main parses args, runs the command and returns the process exit code. It
// prints an error once, as "error: …" with an optional "hint: …".
func Main(ctx context.Context, args []string, io Stdio, getenv func(string) string) (code int) {
	if len(args) > 0 && args[0] == isolation.HelperArg {
		// Not a command: the worker's side of the landlock level, which
		// restricts this process and execs the worker (never returns on
		// success).
		return isolation.RunHelper(args[1:], io.Err)
	}
	var cli CLI
	parser, err := newParser(&cli, io)
	if err != nil {
		fmt.Fprintf(io.Err, "error: internal: %v\n", err)
		return exitcode.Git
	}
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(exitPanic); ok {
				code = e.code
				return
			}
			panic(r)
		}
	}()
	kctx, err := parser.Parse(args)
	if err != nil {
		msg := err.Error()
		fmt.Fprintf(io.Err, "error: %s\n", firstLine(msg))
		var pe *kong.ParseError
		if errors.As(err, &pe) && pe.Context != nil && pe.Context.Command() != "" {
			fmt.Fprintf(io.Err, "hint: see 'git agentmine help %s'\n", strings.Fields(pe.Context.Command())[0])
		} else {
			fmt.Fprintln(io.Err, "hint: see 'git agentmine help'")
		}
		return exitcode.Usage
	}
	p := &output.Printer{Out: io.Out, Err: io.Err, JSON: cli.JSON, Quiet: cli.Quiet,
		Color: output.ColorWanted(io.Out, cli.NoColor, getenv)}
	exe, _ := os.Executable()
	app := &App{Ctx: ctx, G: &cli.Globals, P: p, In: io.In, Getenv: getenv, Args0: exe}
	err = kctx.Run(app)
	if err == nil {
		return exitcode.OK
	}
	var silent silentError
	if errors.As(err, &silent) {
		return silent.code
	}
	fmt.Fprintf(io.Err, "error: %s\n", firstLine(err.Error()))
	if h := hintFor(err); h != "" {
		fmt.Fprintf(io.Err, "hint: %s\n", h)
	}
	return exitcode.Of(err)
}

// silentError ends a command with an exit code after it already reported
// everything itself (e.g. a failed verdict printed as data).
type silentError struct{ code int }

func (s silentError) Error() string { return fmt.Sprintf("exit %d", s.code) }

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// newParser builds the kong parser for cli; Main and the documentation
// tests share it so they cannot drift apart.
func newParser(cli *CLI, io Stdio) (*kong.Kong, error) {
	return kong.New(cli,
		kong.Name("git agentmine"),
		kong.Description("The execution environment for parallel AI coding agents, inside your git repository."),
		kong.Writers(io.Out, io.Err),
		kong.Exit(func(c int) { panic(exitPanic{c}) }),
		kong.Vars{"version": buildVersion().String()},
		kong.ConfigureHelp(kong.HelpOptions{Compact: true}),
	)
}
