package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/alecthomas/kong"

	"github.com/git-agentmine/git-agentmine/exitcode"
)

// describeNode renders what a user meets of a command node: its name,
// aliases, help, flags, positional arguments and children, recursively.
func describeNode(b *strings.Builder, n *kong.Node, depth int) {
	in := strings.Repeat("  ", depth)
	fmt.Fprintf(b, "%s%s aliases=%v hidden=%v help=%q detail=%q\n", in, n.Name, n.Aliases, n.Hidden, n.Help, n.Detail)
	for _, f := range n.Flags {
		fmt.Fprintf(b, "%s  flag %s short=%q default=%q help=%q required=%v hidden=%v enum=%q placeholder=%q aliases=%v\n",
			in, f.Name, f.Short, f.Default, f.Help, f.Required, f.Hidden, f.Enum, f.PlaceHolder, f.Aliases)
	}
	for _, p := range n.Positional {
		fmt.Fprintf(b, "%s  arg %s required=%v help=%q default=%q\n", in, p.Name, p.Required, p.Help, p.Default)
	}
	for _, ch := range n.Children {
		describeNode(b, ch, depth+1)
	}
}

// TestCommandParserMatchesGrammar: the parser Main builds for one command
// group has the global flags and that group exactly as the whole grammar
// has them, for every group; help and completion get the whole grammar.
func TestCommandParserMatchesGrammar(t *testing.T) {
	full := docsParser(t)
	var out, errb bytes.Buffer
	io := Stdio{Out: &out, Err: &errb}
	groups := 0
	for _, ch := range full.Model.Node.Children {
		parser, _, err := commandParser([]string{ch.Name}, io)
		if err != nil {
			t.Fatalf("%s: %v", ch.Name, err)
		}
		if ch.Name == "help" || ch.Name == "completion" {
			if parser != nil {
				t.Errorf("%s: a parser of its own, want the whole grammar", ch.Name)
			}
			continue
		}
		if parser == nil || len(parser.Model.Node.Children) != 1 {
			t.Errorf("%s: no parser of its own", ch.Name)
			continue
		}
		groups++
		var want, got strings.Builder
		describeNode(&want, ch, 0)
		describeNode(&got, parser.Model.Node.Children[0], 0)
		if want.String() != got.String() {
			t.Errorf("%s: the group's grammar differs:\n%s\nwant:\n%s", ch.Name, got.String(), want.String())
		}
		var wantFlags, gotFlags strings.Builder
		for _, f := range full.Model.Node.Flags {
			fmt.Fprintf(&wantFlags, "%s %q %q\n", f.Name, f.Short, f.Help)
		}
		for _, f := range parser.Model.Node.Flags {
			fmt.Fprintf(&gotFlags, "%s %q %q\n", f.Name, f.Short, f.Help)
		}
		if wantFlags.String() != gotFlags.String() {
			t.Errorf("%s: global flags %s, want %s", ch.Name, gotFlags.String(), wantFlags.String())
		}
	}
	if groups < 15 {
		t.Errorf("only %d command groups got a parser of their own", groups)
	}
	// A subcommand named after its group (by name or alias) gets a group
	// of that one subcommand, as the whole grammar has it.
	subs := 0
	for _, ch := range full.Model.Node.Children {
		if ch.Name == "help" || ch.Name == "completion" {
			continue
		}
		for _, sub := range ch.Children {
			for _, word := range append([]string{sub.Name}, sub.Aliases...) {
				parser, _, err := commandParser([]string{"--json", ch.Name, word, "x"}, io)
				if err != nil || parser == nil || len(parser.Model.Node.Children) != 1 {
					t.Fatalf("%s %s: %v", ch.Name, word, err)
				}
				group := parser.Model.Node.Children[0]
				if len(group.Children) != 1 {
					t.Errorf("%s %s: %d subcommands, want the one named", ch.Name, word, len(group.Children))
					continue
				}
				subs++
				var want, got strings.Builder
				describeNode(&want, sub, 0)
				describeNode(&got, group.Children[0], 0)
				if want.String() != got.String() {
					t.Errorf("%s %s: the grammar differs:\n%s\nwant:\n%s", ch.Name, word, got.String(), want.String())
				}
			}
		}
		// An unknown word, or a flag first: the whole group.
		parser, _, _ := commandParser([]string{ch.Name, "--bogus", "x"}, io)
		if parser != nil && len(ch.Children) > 0 && len(parser.Model.Node.Children[0].Children) != len(ch.Children) {
			t.Errorf("%s --bogus: the group was narrowed", ch.Name)
		}
	}
	if subs < 30 {
		t.Errorf("only %d subcommands got a parser of their own", subs)
	}
}

// TestCommandWord: global flags and their values are skipped; anything
// else starting with a dash means no single command is named plainly.
func TestCommandWord(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"task", "show", "x"}, "task"},
		{[]string{"-C", "dir", "--json", "-q", "status"}, "status"},
		{[]string{"--dir", "task", "worker"}, "worker"},
		{[]string{"--dir=d", "-Cd", "--no-color", "--quiet", "sync"}, "sync"},
		{[]string{"--version"}, ""},
		{[]string{"-qC", "d", "task"}, ""},
		{[]string{"--frob", "task"}, ""},
		{[]string{"-C"}, ""},
		{nil, ""},
	} {
		if got := commandWord(c.args); got != c.want {
			t.Errorf("commandWord(%q) = %q, want %q", c.args, got, c.want)
		}
	}
	for _, args := range [][]string{{"task", "--help"}, {"task", "show", "-h"}, {"help", "task"}, {"completion", "bash"}, {"nosuch"}, {"task", "--", "x"}} {
		if p, _, err := commandParser(args, Stdio{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}); p != nil || err != nil {
			t.Errorf("commandParser(%q): a parser of its own (%v), want the whole grammar", args, err)
		}
	}
}

// TestMainRefusalsAreTheWholeGrammars: what a command's own parser refuses
// is parsed again with the whole grammar, so the message and hint are the
// ones the whole grammar gives.
func TestMainRefusalsAreTheWholeGrammars(t *testing.T) {
	for _, args := range [][]string{{"task", "frobnicate"}, {"task", "show"}, {"task", "list", "--nosuch"}, {"worker", "nosuch"}} {
		var out, errb bytes.Buffer
		code := Main(t.Context(), args, Stdio{In: strings.NewReader(""), Out: &out, Err: &errb}, func(string) string { return "" })
		var cli CLI
		var fo, fe bytes.Buffer
		parser, err := newParser(&cli, Stdio{Out: &fo, Err: &fe})
		if err != nil {
			t.Fatal(err)
		}
		_, perr := parser.Parse(args)
		if perr == nil {
			t.Fatalf("%q: the whole grammar accepts it", args)
		}
		if code != exitcode.Usage || !strings.HasPrefix(errb.String(), "error: "+firstLine(perr.Error())+"\n") {
			t.Errorf("%q: exit %d, stderr %q; want exit 2 and the whole grammar's %q", args, code, errb.String(), perr.Error())
		}
	}
}

// mainOut runs Main with args and returns its exit code and streams.
func mainOut(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(t.Context(), args, Stdio{In: strings.NewReader(""), Out: &out, Err: &errb}, func(string) string { return "" })
	return code, out.String(), errb.String()
}

// TestBareGroupsPrintUsage: no command, or a group without one of its
// commands, prints the usage help prints, exit 0.
func TestBareGroupsPrintUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		help []string
	}{
		{nil, []string{"help"}},
		{[]string{"--no-color"}, []string{"help"}},
		{[]string{"task"}, []string{"help", "task"}},
		{[]string{"-C", "nowhere", "worker"}, []string{"help", "worker"}},
		{[]string{"memory"}, []string{"help", "memory"}},
	} {
		code, out, errs := mainOut(t, c.args...)
		_, want, _ := mainOut(t, c.help...)
		if code != 0 || errs != "" || out != want || !strings.HasPrefix(out, "Usage: git agentmine ") {
			t.Errorf("%q: exit %d, stderr %q, stdout:\n%s\nwant exit 0 and what %q prints", c.args, code, errs, out, c.help)
		}
	}
}

// TestRunHelpShowsStart: run's help is the help of starting a run (its
// default command), with every flag of it, and names the other commands.
func TestRunHelpShowsStart(t *testing.T) {
	_, want, _ := mainOut(t, "run", "start", "--help")
	for _, args := range [][]string{{"run", "--help"}, {"run", "-h"}, {"-C", ".", "run", "--merge", "-h"}, {"help", "run"}} {
		code, out, errs := mainOut(t, args...)
		if code != 0 || errs != "" || out != want {
			t.Errorf("%q: exit %d, stderr %q, stdout:\n%s\nwant run start's help", args, code, errs, out)
		}
	}
	for _, flag := range []string{"--parallel", "--merge", "--deadline=DURATION", "--budget", "run status", "run stop"} {
		if !strings.Contains(want, flag) {
			t.Errorf("run --help does not mention %s:\n%s", flag, want)
		}
	}
	// The other commands keep their own help.
	if code, out, _ := mainOut(t, "run", "status", "--help"); code != 0 || !strings.HasPrefix(out, "Usage: git agentmine run status") {
		t.Errorf("run status --help: exit %d, %q", code, out)
	}
}

// TestJSONWithQuietRefused: --json and -q ask for two different outputs;
// asking for both is a usage error in one line and a hint, before anything
// runs.
func TestJSONWithQuietRefused(t *testing.T) {
	for _, args := range [][]string{{"--json", "-q", "version"}, {"task", "list", "-q", "--json"}, {"-C", "nowhere", "status", "--quiet", "--json"}} {
		code, out, errs := mainOut(t, args...)
		want := "error: --json and -q cannot be used together\nhint: --json prints whole records and -q only their ids; choose one\n"
		if code != exitcode.Usage || out != "" || errs != want {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2 and %q", args, code, out, errs, want)
		}
	}
}

// TestNoJSONRefused: a command whose output cannot be JSON says so, exit
// 2, instead of printing text to a reader that expects JSON.
func TestNoJSONRefused(t *testing.T) {
	for _, c := range []struct {
		args []string
		path string
	}{
		{[]string{"help", "task", "--json"}, "help"},
		{[]string{"--json", "completion", "bash"}, "completion"},
		{[]string{"worker", "logs", "abcd", "--json"}, "worker logs"},
		{[]string{"demo", "--json"}, "demo"},
		{[]string{"serve", "--json"}, "serve"},
	} {
		code, out, errs := mainOut(t, c.args...)
		want := "error: " + c.path + " has no JSON output\nhint: leave out --json (docs/json.md lists the commands that have it)\n"
		if code != exitcode.Usage || out != "" || errs != want {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2 and %q", c.args, code, out, errs, want)
		}
	}
	// Commands with JSON keep it.
	if code, out, _ := mainOut(t, "version", "--json"); code != 0 || !strings.HasPrefix(out, "{") {
		t.Errorf("version --json: exit %d, %q", code, out)
	}
}
