package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"slices"
	"strings"
	"unicode"

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
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(exitPanic); ok {
				code = e.code
				return
			}
			panic(r)
		}
	}()
	if len(args) == 1 && args[0] == "version" {
		// The one command that reads nothing: printed before any
		// grammar is built, which costs more than the rest of it.
		fmt.Fprintf(io.Out, "%s\n", buildVersion())
		return exitcode.OK
	}
	args = helpOfDefault(args)
	if d, ok := directParse(args); ok {
		return runCommand(ctx, d.g, d.path, func(app *App) error {
			// As kong's Run returns it: joined with the hooks' errors (none).
			if err := d.run(app); !isNilError(err) {
				return errors.Join(err)
			}
			return nil
		}, io, getenv)
	}
	var kctx *kong.Context
	parser, g, err := commandParser(args, io)
	if err == nil && parser != nil {
		kctx, err = parser.Parse(args)
	}
	if err != nil || parser == nil {
		// The whole grammar: for what names no single command, and for
		// what the command's grammar refused, so that every message is
		// the whole grammar's.
		var cli CLI
		if parser, err = newParser(&cli, io); err != nil {
			fmt.Fprintf(io.Err, "error: internal: %v\n", err)
			return exitcode.Git
		}
		g = &cli.Globals
		kctx, err = parser.Parse(args)
	}
	if err != nil {
		if path, ok := missingCommand(err); ok {
			// A command group alone (or nothing): its usage, as help
			// prints it, is what was asked for.
			return printUsage(path, io)
		}
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
	return runCommand(ctx, g, commandPath(kctx), func(app *App) error { return kctx.Run(app) }, io, getenv)
}

// runCommand runs a parsed command (its path, as "task show", and its
// Run) with the global flags g and prints its error, for both parsers.
func runCommand(ctx context.Context, g *Globals, path string, run func(*App) error, io Stdio, getenv func(string) string) int {
	if g.JSON && g.Quiet {
		fmt.Fprintln(io.Err, "error: --json and -q cannot be used together")
		fmt.Fprintln(io.Err, "hint: --json prints whole records and -q only their ids; choose one")
		return exitcode.Usage
	}
	if g.JSON && noJSON(path) {
		fmt.Fprintf(io.Err, "error: %s has no JSON output\n", path)
		fmt.Fprintln(io.Err, "hint: leave out --json (docs/json.md lists the commands that have it)")
		return exitcode.Usage
	}
	p := &output.Printer{Out: io.Out, Err: io.Err, JSON: g.JSON, Quiet: g.Quiet,
		Color: output.ColorWanted(io.Out, g.NoColor, getenv), Width: output.Width(io.Out, getenv)}
	exe, _ := os.Executable()
	app := &App{Ctx: ctx, G: g, P: p, In: io.In, Getenv: getenv, Args0: exe}
	err := run(app)
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

// isNilError reports whether err is nil, or a nil pointer in an error (which
// kong's Run takes for no error too).
func isNilError(err error) bool {
	if err == nil {
		return true
	}
	v := reflect.ValueOf(err)
	return v.Kind() == reflect.Pointer && v.IsNil()
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
	return kong.New(cli, parserOptions(io)...)
}

// parserOptions are the options of every parser Main builds.
func parserOptions(io Stdio) []kong.Option {
	return []kong.Option{
		kong.Name("git agentmine"),
		kong.Description("The execution environment for parallel AI coding agents, inside your git repository."),
		kong.Writers(io.Out, io.Err),
		kong.Exit(func(c int) { panic(exitPanic{c}) }),
		kong.Vars{"version": buildVersion().String()},
		kong.ConfigureHelp(kong.HelpOptions{Compact: true}),
		durationOption(),
	}
}

// commandParser builds a parser of the global flags and the one command
// group args name, with the same fields, tags and options as in CLI. Kong
// builds its model of a grammar by reflection on every run, and the whole
// grammar cost a short command over a quarter of its own CPU (perf, task
// show); a group's whole model still cost task show about 1.5 ms, so a
// group of subcommands gets only the one named (narrowGroup). It returns a
// nil parser when args name no single group plainly: help (asked for with
// -h or --help too), completion (both walk the whole grammar), a flag
// before the command that is not a global one, or no command at all.
func commandParser(args []string, io Stdio) (*kong.Kong, *Globals, error) {
	word := commandWord(args)
	if word == "" || word == "help" || word == "completion" {
		return nil, nil, nil
	}
	for _, a := range args {
		if a == "-h" || a == "--help" || a == "--" {
			return nil, nil, nil
		}
	}
	cliType := reflect.TypeOf(CLI{})
	globals, _ := cliType.FieldByName("Globals")
	for i := 0; i < cliType.NumField(); i++ {
		f := cliType.Field(i)
		if _, ok := f.Tag.Lookup("cmd"); !ok || commandName(f) != word {
			continue
		}
		v := reflect.New(reflect.StructOf([]reflect.StructField{
			{Name: "Globals", Type: globals.Type, Tag: `embed:""`},
			{Name: f.Name, Type: narrowGroup(f.Type, args), Tag: f.Tag},
		}))
		parser, err := kong.New(v.Interface(), parserOptions(io)...)
		if err != nil {
			return nil, nil, err
		}
		return parser, v.Elem().Field(0).Addr().Interface().(*Globals), nil
	}
	return nil, nil, nil
}

// narrowGroup returns, for a command group that holds nothing but its
// subcommands (no flags, no methods kong could call), a group holding only
// the subcommand args name after the group word, with the same field, tag
// and type: kong's model of the group is most of a command's start-up.
// Anything else (no subcommand named, a flag first, an unknown word) gets
// the group itself, and its usual errors.
func narrowGroup(group reflect.Type, args []string) reflect.Type {
	if group.Kind() != reflect.Struct || reflect.PointerTo(group).NumMethod() > 0 || group.NumMethod() > 0 {
		return group
	}
	i := commandWordIndex(args)
	if i < 0 {
		return group
	}
	word := commandWord(args[i+1:])
	if word == "" {
		return group
	}
	var pick *reflect.StructField
	for i := 0; i < group.NumField(); i++ {
		f := group.Field(i)
		if _, ok := f.Tag.Lookup("cmd"); !ok {
			return group // a flag or argument of the group itself
		}
		names := append([]string{commandName(f)}, strings.Split(f.Tag.Get("aliases"), ",")...)
		if slices.Contains(names, word) && pick == nil {
			pick = &f
		}
	}
	if pick == nil {
		return group
	}
	return reflect.StructOf([]reflect.StructField{{Name: pick.Name, Type: pick.Type, Tag: pick.Tag}})
}

// commandWord returns the first argument that is not a global flag (or a
// global flag's value): the command group named, or "" when a flag that is
// not global comes first.
func commandWord(args []string) string {
	if i := commandWordIndex(args); i >= 0 {
		return args[i]
	}
	return ""
}

// commandWordIndex is commandWord's index in args, -1 for none.
func commandWordIndex(args []string) int {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-C" || a == "--dir":
			i++
		case strings.HasPrefix(a, "--dir="), strings.HasPrefix(a, "-C") && len(a) > 2:
		case a == "--json", a == "-q", a == "--quiet", a == "--no-color":
		case strings.HasPrefix(a, "-"):
			return -1
		default:
			return i
		}
	}
	return -1
}

// commandName is the name kong gives a command field: its name tag, else
// its Go name in lower case with a hyphen before each inner capital.
func commandName(f reflect.StructField) string {
	if n := f.Tag.Get("name"); n != "" {
		return n
	}
	var b strings.Builder
	for i, r := range f.Name {
		if unicode.IsUpper(r) && i > 0 {
			b.WriteByte('-')
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

// missingCommand reports whether err is the grammar's refusal of a command
// group given without one of its commands (or of no command at all), and
// the group's path ("" for none).
func missingCommand(err error) (string, bool) {
	var pe *kong.ParseError
	if !errors.As(err, &pe) || pe.Context == nil || !strings.HasPrefix(err.Error(), "expected one of ") {
		return "", false
	}
	return pe.Context.Command(), true
}

// printUsage prints the usage of the command group at path, as `help`
// does, and returns its exit code.
func printUsage(path string, io Stdio) int {
	var cli CLI
	parser, err := newParser(&cli, io)
	if err == nil {
		err = parseForHelp(parser, append(strings.Fields(path), "--help"))
	}
	if err != nil {
		fmt.Fprintf(io.Err, "error: internal: usage of %q: %v\n", path, err)
		return exitcode.Git
	}
	return exitcode.OK
}

// defaultSubcommand names, for a group whose bare form runs one of its
// commands, that command: its help is the group's help.
func defaultSubcommand(group string) (string, bool) {
	if group == "run" {
		return "start", true
	}
	return "", false
}

// helpOfDefault rewrites a request for the help of a group that runs a
// default command (`run --help`) into one for that command's help, which
// shows the flags the bare form takes; the help names the group's other
// commands. Other arguments are returned as they are.
func helpOfDefault(args []string) []string {
	i, word := -1, commandWord(args)
	for j, a := range args {
		if a == word {
			i = j
			break
		}
	}
	if word == "help" && i+1 < len(args) {
		if sub, ok := defaultSubcommand(args[i+1]); ok && len(args) == i+2 {
			return append(append([]string{}, args...), sub)
		}
		return args
	}
	sub, ok := defaultSubcommand(word)
	if !ok || i < 0 {
		return args
	}
	help := false
	for _, a := range args[i+1:] {
		switch {
		case a == "--":
			return args
		case a == "-h" || a == "--help":
			help = true
		case !strings.HasPrefix(a, "-"):
			return args // a command word or an argument: kong decides
		}
	}
	if !help {
		return args
	}
	out := append(append(append([]string{}, args[:i+1]...), sub), args[i+1:]...)
	return out
}

// noJSON reports whether the command at path prints text by nature
// (usage, a script, a log, a live server's own protocol): --json is
// refused there rather than ignored.
func noJSON(path string) bool {
	switch path {
	case "help", "completion", "demo", "serve", "mcp", "worker logs":
		return true
	}
	return false
}

// commandPath is the path of commands kctx selected, without arguments:
// "worker logs" for `worker logs T --follow`.
func commandPath(kctx *kong.Context) string {
	var words []string
	for _, w := range strings.Fields(kctx.Command()) {
		if !strings.HasPrefix(w, "<") && !strings.HasPrefix(w, "[") {
			words = append(words, w)
		}
	}
	return strings.Join(words, " ")
}
