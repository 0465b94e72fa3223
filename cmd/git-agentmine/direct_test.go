package main

import (
	"bytes"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/alecthomas/kong"
)

// directLines are command lines for the command node n (path words
// first): its positional arguments, then its flags in each form kong
// takes (long, long=value, short, alias), with the global flags before,
// between and after.
func directLines(path []string, n *kong.Node) [][]string {
	var pos []string
	for i := range n.Positional {
		pos = append(pos, fmt.Sprintf("arg%d", i))
	}
	var long, eq, short []string
	for _, f := range n.Flags {
		if f.Name == "help" {
			continue
		}
		var vals []string
		switch f.Target.Kind() {
		case reflect.Bool:
		case reflect.Int:
			vals = []string{"7"}
		case reflect.Slice:
			vals = []string{"a,b", "c d"}
		default:
			vals = []string{"some value"}
		}
		if len(vals) == 0 {
			long = append(long, "--"+f.Name)
			eq = append(eq, "--"+f.Name)
			if f.Short != 0 {
				short = append(short, "-"+string(f.Short))
			}
			continue
		}
		for _, v := range vals {
			long = append(long, "--"+f.Name, v)
			names := append([]string{f.Name}, f.Aliases...)
			eq = append(eq, "--"+names[len(names)-1]+"="+v)
			if f.Short != 0 {
				short = append(short, "-"+string(f.Short), v)
			} else {
				short = append(short, "--"+f.Name, v)
			}
		}
	}
	cat := func(parts ...[]string) []string {
		var out []string
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	return [][]string{
		cat(path, pos),
		cat(path, pos, long),
		cat(path, long, pos),
		cat(path, pos, eq),
		cat(path, short, pos),
		cat([]string{"--json", "-C", "d1"}, path, pos, []string{"--no-color"}),
		cat([]string{"--dir=d2"}, path[:1], []string{"-q"}, path[1:], pos, []string{"--dir", "d3", "--quiet"}),
	}
}

// TestDirectParseMatchesKong: every command line the direct parser takes,
// kong takes too, to the same global flags, command and field values, for
// every command of the grammar in every form of its flags; and the common
// reads and writes are taken.
func TestDirectParseMatchesKong(t *testing.T) {
	var out, errb bytes.Buffer
	io := Stdio{Out: &out, Err: &errb}
	taken := map[string]bool{}
	lines := 0
	var leaves []docsCommand
	var walk func(n *kong.Node, path []string)
	walk = func(n *kong.Node, path []string) {
		for _, ch := range n.Children {
			p := append(append([]string{}, path...), ch.Name)
			if len(ch.Children) == 0 {
				leaves = append(leaves, docsCommand{path: p, node: ch})
			}
			walk(ch, p)
		}
	}
	walk(docsParser(t).Model.Node, nil)
	for _, c := range leaves {
		for _, args := range directLines(c.path, c.node) {
			lines++
			d, ok := directParse(args)
			if !ok {
				continue
			}
			taken[strings.Join(args, " ")] = true
			sameAsKong(t, args, d, io)
		}
	}
	for _, args := range [][]string{
		{"task", "show", "arg0"}, {"task", "show", "arg0", "--json"}, {"--json", "task", "show", "arg0"},
		{"task", "list"}, {"task", "ls", "-a", "--json"}, {"task", "ready"}, {"status"}, {"status", "-n", "7"},
		{"task", "add", "arg0", "--label", "a,b", "--label", "c d"}, {"task", "add", "arg0", "--criterion", "some value"},
		{"task", "add", "arg0", "--acceptance=some value"},
	} {
		if !taken[strings.Join(args, " ")] {
			if _, ok := directParse(args); !ok {
				t.Errorf("%q: not taken directly", args)
			}
		}
	}
	t.Logf("%d of %d command lines taken directly", len(taken), lines)
}

// TestDirectParseDeclines: what the direct parser cannot be sure to read
// as kong does goes to kong.
func TestDirectParseDeclines(t *testing.T) {
	for _, args := range [][]string{
		{}, {"task"}, {"task", "show"}, {"task", "show", "a", "b"}, {"task", "show", "a", "--version"},
		{"--version"}, {"task", "show", "a", "-h"}, {"task", "show", "--", "a"}, {"task", "show", "-a"},
		{"task", "show", "-"}, {"task", "show", ""}, {"task", "list", "-aq"}, {"task", "show", "a", "--json=true"},
		{"task", "add", "t", "--max-loops", "0x10"}, {"task", "add", "t", "--max-loops", "010"},
		{"task", "add", "t", "--max-loops=-1"}, {"task", "add", "t", "-d", "-x"}, {"task", "add", "t", "-d"},
		{"task", "add", "t", "-d", "a", "-d", "b"}, {"task", "add", "t", "--description="},
		{"task", "--all", "list"}, {"-C"}, {"-C", "--json", "status"}, {"--dir=", "status"},
		{"task", "nosuch"}, {"nosuch"}, {"task", "show", "a", "--nosuch"}, {"task", "show", "a", "-Cdir"},
		{"status", "-n", "-1"}, {"status", "-n", "x"},
	} {
		if d, ok := directParse(args); ok {
			t.Errorf("%q: taken directly (%s), want kong", args, d.path)
		}
	}
}

// TestGrammarHasNoRootHooks: the direct parser checks the hooks kong would
// call on the command it runs; the root of the grammar (and its global
// flags) must have none either.
func TestGrammarHasNoRootHooks(t *testing.T) {
	pt := reflect.PointerTo(reflect.TypeOf(CLI{}))
	for i := 0; i < pt.NumMethod(); i++ {
		if name := pt.Method(i).Name; slices.Contains(kongHooks, name) || strings.HasPrefix(name, "Provide") || name == "Run" {
			t.Errorf("CLI has method %s, which kong calls: the direct parser would not", name)
		}
	}
}

// TestDirectCommandsHaveNoProviders: kong binds what a command's Provide…
// methods return before it calls Run; the direct parser, which does not
// look for them, must take no command that has one.
func TestDirectCommandsHaveNoProviders(t *testing.T) {
	var walk func(t reflect.Type)
	seen := 0
	walk = func(typ reflect.Type) {
		for i := 0; i < typ.NumField(); i++ {
			f := typ.Field(i)
			if _, ok := f.Tag.Lookup("cmd"); !ok || f.Type.Kind() != reflect.Struct {
				continue
			}
			seen++
			pt := reflect.PointerTo(f.Type)
			for j := 0; j < pt.NumMethod(); j++ {
				if name := pt.Method(j).Name; strings.HasPrefix(name, "Provide") {
					if _, ok := directFields(f.Type); ok {
						t.Errorf("%s has %s, and the direct parser takes it", f.Type, name)
					}
				}
			}
			walk(f.Type)
		}
	}
	walk(reflect.TypeOf(CLI{}))
	if seen < 40 {
		t.Fatalf("only %d commands seen: the walk is broken", seen)
	}
}

// sameAsKong fails t unless kong parses args, which the direct parser took
// as d, to the same globals, command path and command struct.
func sameAsKong(t *testing.T, args []string, d directCmd, io Stdio) {
	t.Helper()
	parser, g, err := commandParser(args, io)
	if err != nil || parser == nil {
		t.Fatalf("%q: the command's parser: %v", args, err)
	}
	kctx, err := parser.Parse(args)
	if err != nil {
		t.Errorf("%q: taken directly, refused by kong: %v", args, err)
		return
	}
	if *g != *d.g {
		t.Errorf("%q: globals %+v, kong's %+v", args, *d.g, *g)
	}
	if p := commandPath(kctx); p != d.path {
		t.Errorf("%q: path %q, kong's %q", args, d.path, p)
	}
	want := kctx.Selected().Target.Interface()
	if got := reflect.ValueOf(d.leaf).Elem().Interface(); !reflect.DeepEqual(got, want) {
		t.Errorf("%q: parsed %#v, kong's %#v", args, got, want)
	}
}

// FuzzDirectParse: on any command line (the input split at NUL bytes),
// the direct parser either declines or parses as kong does.
func FuzzDirectParse(f *testing.F) {
	for _, l := range []string{
		"task\x00show\x00t-1", "--json\x00task\x00list\x00-a", "status\x00-n\x007", "-C\x00dir\x00task\x00ready",
		"task\x00add\x00title\x00--label\x00a,b", "task\x00add\x00x\x00--acceptance=y", "worker\x00run\x00t-1\x00--exec",
		"task\x00show\x00-q\x00--\x00x", "session\x00show\x00s-1\x00--json",
	} {
		f.Add(l)
	}
	f.Fuzz(func(t *testing.T, line string) {
		args := strings.Split(line, "\x00")
		d, ok := directParse(args)
		if !ok {
			return
		}
		var out, errb bytes.Buffer
		sameAsKong(t, args, d, Stdio{Out: &out, Err: &errb})
	})
}
