package main

import (
	"bytes"
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/alecthomas/kong"

	"github.com/git-agentmine/git-agentmine/internal/gittest"
	"github.com/git-agentmine/git-agentmine/memory"
	"github.com/git-agentmine/git-agentmine/merge"
	"github.com/git-agentmine/git-agentmine/pipeline"
	"github.com/git-agentmine/git-agentmine/plan"
	"github.com/git-agentmine/git-agentmine/replica"
	"github.com/git-agentmine/git-agentmine/sessions"
	"github.com/git-agentmine/git-agentmine/status"
	"github.com/git-agentmine/git-agentmine/tasknote"
	"github.com/git-agentmine/git-agentmine/tasks"
	"github.com/git-agentmine/git-agentmine/verify"
)

// docsParser builds the grammar's parser with the options Main uses, so the
// model the tests walk is the one users get.
func docsParser(t *testing.T) *kong.Kong {
	t.Helper()
	var cli CLI
	var out, errb bytes.Buffer
	parser, err := newParser(&cli, Stdio{Out: &out, Err: &errb})
	if err != nil {
		t.Fatalf("building the parser: %v", err)
	}
	return parser
}

// docsCommand is one visible command of the grammar.
type docsCommand struct {
	path []string
	node *kong.Node
}

// docsCommands lists every visible command path of the grammar, parents
// first; hidden commands and their children are left out.
func docsCommands(t *testing.T) []docsCommand {
	t.Helper()
	var out []docsCommand
	var walk func(n *kong.Node, path []string)
	walk = func(n *kong.Node, path []string) {
		for _, ch := range n.Children {
			if ch.Hidden || ch.Type != kong.CommandNode {
				continue
			}
			p := append(append([]string{}, path...), ch.Name)
			out = append(out, docsCommand{path: p, node: ch})
			walk(ch, p)
		}
	}
	walk(docsParser(t).Model.Node, nil)
	if len(out) < 10 {
		t.Fatalf("the grammar has only %d commands: the walk is broken", len(out))
	}
	return out
}

// docsNode returns the grammar's node for a command path.
func docsNode(t *testing.T, path ...string) *kong.Node {
	t.Helper()
	for _, c := range docsCommands(t) {
		if strings.Join(c.path, " ") == strings.Join(path, " ") {
			return c.node
		}
	}
	t.Fatalf("the grammar has no command %q", strings.Join(path, " "))
	return nil
}

// docsMain runs Main in dir with the given arguments and returns the exit
// code, stdout and stderr.
func docsMain(t *testing.T, dir string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	full := append([]string{"-C", dir}, args...)
	code := Main(context.Background(), full, Stdio{In: strings.NewReader(""), Out: &out, Err: &errb}, os.Getenv)
	return code, out.String(), errb.String()
}

// manPagePath is the man page, relative to this package.
const manPagePath = "git-agentmine.1"

// deroff turns man(7) source text into the words a reader sees: font
// changes and zero-width escapes dropped, escaped characters unescaped.
func deroff(s string) string {
	s = regexp.MustCompile(`\\f[BIRP]`).ReplaceAllString(s, "")
	r := strings.NewReplacer(`\-`, "-", `\e`, `\`, `\(dq`, `"`, `\(em`, "—", `\|`, "", `\&`, "", `\ `, " ")
	return r.Replace(s)
}

// manSections splits the man page into its .SH sections and, inside
// COMMANDS, into one entry per .SS heading, keyed by the command path the
// heading starts with ("task add" for "task add \fItitle\fR ...").
func manSections(t *testing.T) (sh map[string]string, cmds map[string]string, order []string) {
	t.Helper()
	data, err := os.ReadFile(manPagePath)
	if err != nil {
		t.Fatalf("reading the man page: %v", err)
	}
	sh, cmds = map[string]string{}, map[string]string{}
	var section, command string
	word := regexp.MustCompile(`^[a-z][a-z-]*$`)
	for _, line := range strings.Split(string(data), "\n") {
		text := deroff(line)
		switch {
		case strings.HasPrefix(line, ".SH "):
			section = strings.Trim(strings.TrimSpace(text[4:]), `"`)
			command = ""
			continue
		case strings.HasPrefix(line, ".SS ") && section == "COMMANDS":
			var path []string
			// Font escapes end the path: "task add \fItitle\fR" is "task add".
			for _, w := range strings.Fields(strings.Trim(strings.TrimSpace(line[4:]), `"`)) {
				if !word.MatchString(w) {
					break
				}
				path = append(path, w)
			}
			command = strings.Join(path, " ")
			if _, dup := cmds[command]; dup || command == "" {
				t.Errorf("man page: .SS heading %q names no command or one already documented", line)
			}
			order = append(order, command)
		}
		sh[section] += text + "\n"
		if command != "" {
			cmds[command] += text + "\n"
		}
	}
	return sh, cmds, order
}

// mentions reports whether text has tok as a whole word (a flag such as
// --base must not be found inside --base-ref).
func mentions(text, tok string) bool {
	re := regexp.MustCompile(`(^|[^\w-])` + regexp.QuoteMeta(tok) + `([^\w-]|$)`)
	return re.MatchString(text)
}

// flagSpellings returns "--name", its aliases and "-x" for a flag.
func flagSpellings(f *kong.Flag) []string {
	out := []string{"--" + f.Name}
	for _, a := range f.Aliases {
		out = append(out, "--"+a)
	}
	if f.Short != 0 {
		out = append(out, "-"+string(f.Short))
	}
	return out
}

// TestManPageCoversGrammar fails when a visible command, alias or flag of
// the grammar is missing from the man page, or the page documents a command
// the grammar does not have: the page cannot drift from the CLI.
func TestManPageCoversGrammar(t *testing.T) {
	sh, sections, order := manSections(t)
	for _, want := range []string{"NAME", "SYNOPSIS", "DESCRIPTION", "GLOBAL OPTIONS", "COMMANDS", "STATUS",
		"SCOPE AND THREAT MODEL", "FILES", "ENVIRONMENT", "EXIT STATUS", "EXAMPLES"} {
		if _, ok := sh[want]; !ok {
			t.Errorf("man page has no %s section", want)
		}
	}
	root := docsParser(t).Model.Node
	for _, f := range root.Flags {
		for _, sp := range flagSpellings(f) {
			if !f.Hidden && !mentions(sh["GLOBAL OPTIONS"], sp) {
				t.Errorf("man page: global flag %s is not in GLOBAL OPTIONS", sp)
			}
		}
	}
	grammar := map[string]bool{}
	for _, c := range docsCommands(t) {
		path := strings.Join(c.path, " ")
		grammar[path] = true
		if len(c.node.Children) > 0 {
			found := false
			for p := range sections {
				found = found || strings.HasPrefix(p, path+" ")
			}
			if !found {
				t.Errorf("man page: command group %q has no subcommand documented", path)
			}
			continue
		}
		body, ok := sections[path]
		if !ok {
			t.Errorf("man page: command %q has no .SS section under COMMANDS", path)
			continue
		}
		for _, al := range c.node.Aliases {
			if !mentions(body, al) {
				t.Errorf("man page: alias %q of %q is not mentioned in its section", al, path)
			}
		}
		for _, f := range c.node.Flags {
			if f.Hidden {
				continue
			}
			for _, sp := range flagSpellings(f) {
				if !mentions(body, sp) {
					t.Errorf("man page: flag %s of %q is not in its section", sp, path)
				}
			}
		}
	}
	if _, wired := reflect.TypeOf(CLI{}).FieldByName("Completion"); !wired {
		// The page documents `completion` before the CLI struct has it.
		t.Log("the completion command is not in the CLI struct yet")
		grammar["completion"] = true
	}
	for _, p := range order {
		if !grammar[p] {
			t.Errorf("man page documents command %q, which the grammar does not have (or hides)", p)
		}
	}
}

// TestEveryCommandAnswersHelp runs `<command> --help` for every visible
// command of the grammar: exit 0, usage on stdout, nothing on stderr.
func TestEveryCommandAnswersHelp(t *testing.T) {
	gittest.Scrub(t)
	dir := t.TempDir()
	paths := [][]string{{}}
	for _, c := range docsCommands(t) {
		paths = append(paths, c.path)
	}
	for _, p := range paths {
		for _, flag := range []string{"--help", "-h"} {
			args := append(append([]string{}, p...), flag)
			code, out, errs := docsMain(t, dir, args...)
			if code != 0 || errs != "" {
				t.Errorf("%v: exit %d, stderr %q; want 0 and nothing", args, code, errs)
			}
			want := strings.TrimSpace("Usage: git agentmine " + strings.Join(p, " "))
			if !strings.HasPrefix(out, want) {
				t.Errorf("%v: stdout does not start with %q:\n%s", args, want, out)
			}
		}
	}
}

// TestUsageErrors checks that bad command lines end with exit code 2, one
// "error:" line and one "hint:" line on stderr, nothing on stdout, and no
// change to the repository.
func TestUsageErrors(t *testing.T) {
	repo := gittest.NewRepo(t)
	refs := func() string { return gittest.Git(t, repo, "for-each-ref") }
	before := refs()
	for _, tc := range []struct {
		args      []string
		err, hint string
	}{
		{[]string{"nosuch"}, "nosuch", "see 'git agentmine help'"},
		{[]string{"task", "add"}, "<title>", "see 'git agentmine help task'"},
		{[]string{"task", "list", "--bogus"}, "--bogus", "see 'git agentmine help task'"},
		{[]string{"session", "end", "abcd"}, "--exit-code", "see 'git agentmine help session'"},
		{[]string{"worker", "wait", "--timeout", "soon"}, "--timeout", "see 'git agentmine help worker'"},
		{[]string{"status", "--json", "extra"}, "extra", "see 'git agentmine help status'"},
	} {
		code, out, errs := docsMain(t, repo, tc.args...)
		lines := strings.Split(strings.TrimSuffix(errs, "\n"), "\n")
		if code != 2 || out != "" || len(lines) != 2 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2, no stdout, two stderr lines", tc.args, code, out, errs)
			continue
		}
		if !strings.HasPrefix(lines[0], "error: ") || !strings.Contains(lines[0], tc.err) {
			t.Errorf("%v: first line %q; want \"error: ...%s...\"", tc.args, lines[0], tc.err)
		}
		if lines[1] != "hint: "+tc.hint {
			t.Errorf("%v: second line %q; want %q", tc.args, lines[1], "hint: "+tc.hint)
		}
	}
	if after := refs(); after != before {
		t.Errorf("usage errors changed the refs:\nbefore:\n%safter:\n%s", before, after)
	}
}

// completionScript generates a completion script from the grammar.
func completionScript(t *testing.T, shell string) string {
	t.Helper()
	cmds := completionCommands(docsParser(t).Model)
	var b bytes.Buffer
	var err error
	switch shell {
	case "bash":
		err = writeBashCompletion(&b, cmds)
	case "zsh":
		err = writeZshCompletion(&b, cmds)
	case "fish":
		err = writeFishCompletion(&b, cmds)
	}
	if err != nil {
		t.Fatalf("writing the %s script: %v", shell, err)
	}
	path := filepath.Join(t.TempDir(), "completion."+shell)
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// shellOut runs a shell command line and returns its stdout lines.
func shellOut(t *testing.T, shell string, args ...string) []string {
	t.Helper()
	out, err := exec.Command(shell, args...).Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("%s %q: %v\n%s", shell, args, err, stderr)
	}
	return strings.Fields(string(out))
}

func sameSet(a, b []string) bool {
	m := map[string]int{}
	for _, x := range a {
		m[x]++
	}
	for _, x := range b {
		m[x]--
	}
	for _, n := range m {
		if n != 0 {
			return false
		}
	}
	return true
}

// visibleNames returns the names and aliases of a node's visible
// subcommands.
func visibleNames(n *kong.Node) []string {
	var out []string
	for _, ch := range n.Children {
		if !ch.Hidden && ch.Type == kong.CommandNode {
			out = append(out, ch.Name)
			out = append(out, ch.Aliases...)
		}
	}
	return out
}

// TestCompletionBashScript checks the bash script against the grammar, by
// running its candidate function in bash: the top-level commands, every
// group's subcommands and every command's flags (its own and the global
// ones), and that a flag's value is not completed as a command.
func TestCompletionBashScript(t *testing.T) {
	gittest.Scrub(t)
	script := completionScript(t, "bash")
	data, _ := os.ReadFile(script)
	top := visibleNames(docsParser(t).Model.Node)
	for _, name := range top {
		if !strings.Contains(string(data), "'/"+name+"') REPLY='"+name+"'") {
			t.Errorf("bash script does not complete the top-level command %q", name)
		}
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash is not installed")
	}
	words := func(cur string, before ...string) []string {
		line := "source " + script + " && __git_agentmine_words " + shQuote(cur)
		for _, w := range before {
			line += " " + shQuote(w)
		}
		return shellOut(t, "bash", "--norc", "-c", line)
	}
	if got := words(""); !sameSet(got, top) {
		t.Errorf("top level: got %v, want %v", got, top)
	}
	globals := []string{}
	for _, f := range docsParser(t).Model.Node.Flags {
		if !f.Hidden {
			globals = append(globals, flagSpellings(f)...)
		}
	}
	for _, c := range docsCommands(t) {
		if len(c.node.Children) > 0 {
			if got, want := words("", c.path...), visibleNames(c.node); !sameSet(got, want) {
				t.Errorf("%v: got %v, want %v", c.path, got, want)
			}
		}
		got := words("-", c.path...)
		want := append([]string{}, globals...)
		for _, f := range c.node.Flags {
			if !f.Hidden {
				want = append(want, flagSpellings(f)...)
			}
		}
		if !sameSet(got, want) {
			t.Errorf("%v flags: got %v, want %v", c.path, got, want)
		}
	}
	// Aliases lead where their command does; flags that take a value
	// swallow the next word, boolean flags do not.
	if got, want := words("-", "task", "ls"), words("-", "task", "list"); !sameSet(got, want) {
		t.Errorf("task ls: got %v, want the flags of task list %v", got, want)
	}
	if got := words("", "-C", "/somewhere", "worker"); !sameSet(got, visibleNames(docsNode(t, "worker"))) {
		t.Errorf("-C DIR worker: got %v, want the worker subcommands", got)
	}
	if got := words("", "task", "add", "--title"); len(got) != 0 {
		t.Errorf("the value of task add --title: got %v, want nothing", got)
	}
	// Flags with a fixed set of values complete them.
	for _, c := range []struct {
		words []string
		want  []string
	}{
		{[]string{"task", "add", "-t"}, tasks.Types},
		{[]string{"task", "list", "--priority"}, tasks.Priorities},
		{[]string{"task", "list", "-s"}, append(statusNames(), "ready", "blocked")},
		{[]string{"memory", "add", "--status"}, memory.Statuses},
		{[]string{"completion"}, []string{"bash", "zsh", "fish"}},
	} {
		if got := words("", c.words...); !sameSet(got, c.want) {
			t.Errorf("%v: got %v, want %v", c.words, got, c.want)
		}
	}
	if got := words("-", "--json", "task", "add", "-t", "bug"); !hasWord(got, "--priority") {
		t.Errorf("flags after task add -t bug: got %v, want task add's flags", got)
	}
}

func hasWord(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// TestCompletionThroughGit loads git's own bash completion and the
// generated script, and completes `git agentmine …` the way bash does.
func TestCompletionThroughGit(t *testing.T) {
	gittest.Scrub(t)
	var gitComp string
	for _, p := range []string{"/usr/share/bash-completion/completions/git", "/etc/bash_completion.d/git",
		"/usr/share/git/completion/git-completion.bash"} {
		if _, err := os.Stat(p); err == nil {
			gitComp = p
			break
		}
	}
	if gitComp == "" {
		t.Skip("git's bash completion is not installed")
	}
	// The script exactly as `git agentmine completion bash` prints it.
	code, text, errs := runMain(t, "completion", "bash")
	if code != 0 || errs != "" {
		t.Fatalf("completion bash: exit %d, stderr %q", code, errs)
	}
	script := filepath.Join(t.TempDir(), "git-agentmine.bash")
	if err := os.WriteFile(script, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	complete := func(words ...string) []string {
		line := "source " + gitComp + " && source " + script + " && COMP_WORDS=("
		for _, w := range words {
			line += shQuote(w) + " "
		}
		line += `) && COMP_CWORD=$((${#COMP_WORDS[@]}-1)) && COMP_LINE="${COMP_WORDS[*]}" && COMP_POINT=${#COMP_LINE} && ` +
			`__git_wrap__git_main && printf '%s\n' "${COMPREPLY[@]}"`
		return shellOut(t, "bash", "--norc", "-c", line)
	}
	if got := complete("git", "agentmine", "ta"); !sameSet(got, []string{"task"}) {
		t.Errorf("git agentmine ta: got %v, want [task]", got)
	}
	if got := complete("git", "agentmine", "task", "a"); !sameSet(got, []string{"add"}) {
		t.Errorf("git agentmine task a: got %v, want [add]", got)
	}
	if got := complete("git", "agentmine", "in"); !sameSet(got, []string{"init", "install-man"}) {
		t.Errorf("git agentmine in: got %v, want [init install-man]", got)
	}
	if got := complete("git", "agentmine", "install-man", "--man"); !sameSet(got, []string{"--man-dir"}) {
		t.Errorf("git agentmine install-man --man: got %v, want [--man-dir]", got)
	}
	if got := complete("git", "agentmine", "wo"); !sameSet(got, []string{"worker"}) {
		t.Errorf("git agentmine wo: got %v, want [worker]", got)
	}
	if got := complete("git", "-C", "/tmp", "agentmine", "session", ""); !sameSet(got, []string{"start", "end", "list", "ls", "show"}) {
		t.Errorf("git -C /tmp agentmine session: got %v", got)
	}
	if got := complete("git", "agentmine", "merge", "--al"); !sameSet(got, []string{"--allow-skipped"}) {
		t.Errorf("git agentmine merge --al: got %v", got)
	}
	// Without git agentmine's script, git completes nothing after
	// "agentmine": the candidates above come from _git_agentmine.
	line := "source " + gitComp + " && COMP_WORDS=(git agentmine ta) && COMP_CWORD=2 && COMP_LINE='git agentmine ta' && " +
		`COMP_POINT=${#COMP_LINE} && __git_wrap__git_main && printf '%s\n' "${COMPREPLY[@]}"`
	if got := shellOut(t, "bash", "--norc", "-c", line); len(got) != 0 {
		t.Errorf("git agentmine ta without the script: got %v, want nothing", got)
	}
	// git-agentmine typed directly, through the complete -F the script
	// registered.
	line = "source " + script + " && COMP_WORDS=(git-agentmine task a) && COMP_CWORD=2 && " +
		`$(complete -p git-agentmine | sed 's/.* -F \([^ ]*\) .*/\1/') && printf '%s\n' "${COMPREPLY[@]}"`
	if got := shellOut(t, "bash", "--norc", "-c", line); !sameSet(got, []string{"add"}) {
		t.Errorf("git-agentmine task a: got %v, want [add]", got)
	}
}

// TestCompletionZshAndFish runs the zsh and fish scripts' candidate logic
// in those shells, when they are installed.
func TestCompletionZshAndFish(t *testing.T) {
	gittest.Scrub(t)
	taskSubs := visibleNames(docsNode(t, "task"))
	t.Run("zsh", func(t *testing.T) {
		if _, err := exec.LookPath("zsh"); err != nil {
			t.Skip("zsh is not installed")
		}
		script := completionScript(t, "zsh")
		got := shellOut(t, "zsh", "-f", "-c", "source "+script+" && __git_agentmine_words '' -C /x task")
		if !sameSet(got, taskSubs) {
			t.Errorf("zsh: task: got %v, want %v", got, taskSubs)
		}
	})
	t.Run("fish", func(t *testing.T) {
		if _, err := exec.LookPath("fish"); err != nil {
			t.Skip("fish is not installed")
		}
		script := completionScript(t, "fish")
		for _, line := range []string{"git-agentmine task ", "git agentmine task "} {
			out := shellOut(t, "fish", "--no-config", "-c", "source "+script+"; complete -C "+shQuote(line)+" | string replace -r '\\t.*' ''")
			if !sameSet(out, taskSubs) {
				t.Errorf("fish: %q: got %v, want %v", line, out, taskSubs)
			}
		}
		out := shellOut(t, "fish", "--no-config", "-c", "source "+script+"; complete -C 'git-agentmine merge --allow'")
		if !sameSet(out, []string{"--allow-skipped"}) {
			t.Errorf("fish: merge --allow: got %v", out)
		}
	})
}

// TestCompletionCommand runs `completion` through Main once the command is
// part of the CLI.
func TestCompletionCommand(t *testing.T) {
	if _, wired := reflect.TypeOf(CLI{}).FieldByName("Completion"); !wired {
		t.Skip("the completion command is not in the CLI struct yet")
	}
	gittest.Scrub(t)
	dir := t.TempDir()
	for shell, want := range map[string]string{
		"bash": "complete -o default -F __git_agentmine_bash git-agentmine",
		"zsh":  "compdef _git_agentmine_direct git-agentmine",
		"fish": "complete -c git-agentmine -f -a '(__git_agentmine_complete)'",
	} {
		code, out, errs := docsMain(t, dir, "completion", shell)
		if code != 0 || errs != "" || !strings.Contains(out, want) || !strings.Contains(out, "'/completion') REPLY='completion'") && shell != "fish" {
			t.Errorf("completion %s: exit %d, stderr %q, script without %q", shell, code, errs, want)
		}
	}
	code, out, errs := docsMain(t, dir, "completion", "tcsh")
	if code != 2 || out != "" || !strings.HasPrefix(errs, "error: ") || !strings.Contains(errs, "\nhint: ") {
		t.Errorf("completion tcsh: exit %d, stdout %q, stderr %q; want a usage error", code, out, errs)
	}
}

// jsonFields returns the JSON names of a struct type's fields, embedded
// structs flattened.
func jsonFields(t reflect.Type) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		switch {
		case name == "-":
		case f.Anonymous && name == "":
			out = append(out, jsonFields(f.Type)...)
		case name != "":
			out = append(out, name)
		}
	}
	return out
}

// outputTypeFields reads the JSON field names of every struct type declared
// in json.go, the file that holds the CLI's own --json output types, and in
// package contract, which holds the documents the CLI shares with the MCP
// server, so that a new output type is checked without being listed here.
func outputTypeFields(t *testing.T) map[string][]string {
	files := []string{"json.go"}
	shared, err := filepath.Glob("../../contract/*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range shared {
		if !strings.HasSuffix(f, "_test.go") {
			files = append(files, f)
		}
	}
	out := map[string][]string{}
	for _, file := range files {
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, sp := range g.Specs {
				ts, ok := sp.(*ast.TypeSpec)
				if !ok {
					continue
				}
				st, ok := ts.Type.(*ast.StructType)
				if !ok {
					continue
				}
				out[ts.Name.Name] = []string{}
				for _, fl := range st.Fields.List {
					if fl.Tag == nil {
						continue
					}
					raw, _ := strconv.Unquote(fl.Tag.Value)
					name, _, _ := strings.Cut(reflect.StructTag(raw).Get("json"), ",")
					if name != "" && name != "-" {
						out[ts.Name.Name] = append(out[ts.Name.Name], name)
					}
				}
			}
		}
	}
	return out
}

// TestJSONDocCoversOutputs fails when a field of a --json output or of the
// outcome note is missing from docs/json.md: every struct type of json.go,
// and the other packages' types that the outputs print.
func TestJSONDocCoversOutputs(t *testing.T) {
	data, err := os.ReadFile("../../docs/json.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	check := func(typ string, fields []string) {
		for _, name := range fields {
			listed := regexp.MustCompile(`[{,]\s*` + regexp.QuoteMeta(name) + `\s*[:,}]`)
			if !strings.Contains(doc, "`"+name+"`") && !listed.MatchString(doc) {
				t.Errorf("docs/json.md does not document field %q of %s", name, typ)
			}
		}
	}
	local := outputTypeFields(t)
	for _, want := range []string{"RunJSON", "SessionJSON", "BoardJSON", "settingJSON", "TaskJSON", "MemoryJSON", "workerCommandJSON"} {
		if len(local[want]) == 0 {
			t.Fatalf("json.go and package contract have no JSON fields for %s: the reader is broken (found %d types)", want, len(local))
		}
	}
	for typ, fields := range local {
		check(typ, fields)
	}
	for _, v := range []any{merge.Result{}, replica.Report{}, memory.ImportResult{}, sessions.Outcome{},
		pipeline.Event{}, pipeline.Summary{}, pipeline.TaskSummary{}, pipeline.RunUsage{}, pipeline.Record{}, pipeline.Holder{}, pipeline.End{}, pipeline.Fact{},
		sessions.Seal{}, sessions.Supervisor{}, sessions.Forgery{}, sessions.Review{},
		tasknote.Note{}, tasknote.Attempt{}, tasknote.Criterion{}, tasknote.Call{}, plan.Plan{}, plan.Child{}, plan.Rewrite{},
		verify.Verdict{}, verify.Violation{}, verify.Change{}, verify.DoDResult{}, verify.CommandResult{}} {
		typ := reflect.TypeOf(v)
		fields := jsonFields(typ)
		if len(fields) == 0 {
			t.Fatalf("%s has no JSON fields: the reflection is broken", typ)
		}
		check(typ.String(), fields)
	}
}

func statusNames() []string {
	var out []string
	for _, s := range status.All {
		out = append(out, string(s))
	}
	return out
}
