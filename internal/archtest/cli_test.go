package archtest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// The rule (design §9, issue 14): the CLI, cmd/git-agentmine, is the only
// place that knows the command line. Core packages (every package outside
// cmd/) return errors and data; the CLI parses, calls and renders, and it
// alone turns a typed error into a "hint:" line naming a command. So, in
// the non-test .go files outside cmd/:
//
//   - no import of kong or of a kong add-on: an import path with an element
//     that starts with "kong" (github.com/alecthomas/kong, kongplete, …);
//   - no string literal that names a CLI command: "git agentmine" or
//     "git-agentmine", a space, then one of the commands of the grammar
//     (read from the CLI struct in cmd/git-agentmine/cli.go, so a new
//     command is covered at once), a formatting verb (%s), or the end of
//     the literal (a command concatenated after it). Mentions of the tool
//     itself ("added by git agentmine for this session", "Notes added by
//     'git agentmine'") are not commands and pass.
//
// Exceptions:
//
//   - demo: it plays a person at a terminal and prints each command it
//     runs ("$ git agentmine task add …") for the person watching to read.
//
// Comments are not literals, so doc comments may name commands freely; so
// may files a package embeds for a person to read (the scaffold package's
// templates, whose comments point at `git agentmine config show`).

// commandsAllowed lists the packages that may name commands in literals.
var commandsAllowed = map[string]bool{"demo": true}

// tool matches the tool's name as a person types it or as the binary is
// called.
var tool = []string{"git agentmine", "git-agentmine"}

// cliCommands reads the top-level command names from the CLI struct of
// cmd/git-agentmine/cli.go: each field tagged cmd:"", named by its name:""
// tag or else the field name in kebab case (kong's rule).
func cliCommands(t *testing.T, root string) map[string]bool {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, filepath.Join(root, "cmd", "git-agentmine", "cli.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		ts, ok := n.(*ast.TypeSpec)
		if !ok || ts.Name.Name != "CLI" {
			return true
		}
		st, ok := ts.Type.(*ast.StructType)
		if !ok {
			return false
		}
		for _, fl := range st.Fields.List {
			if fl.Tag == nil || len(fl.Names) == 0 {
				continue
			}
			raw, err := strconv.Unquote(fl.Tag.Value)
			if err != nil {
				continue
			}
			tag := reflect.StructTag(raw)
			if _, isCmd := tag.Lookup("cmd"); !isCmd {
				continue
			}
			name := tag.Get("name")
			if name == "" {
				name = kebab(fl.Names[0].Name)
			}
			out[name] = true
		}
		return false
	})
	return out
}

// kebab turns a Go field name into kong's default command name.
func kebab(s string) string {
	var b strings.Builder
	for i, r := range s {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('-')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// namesCommand reports whether the string s names a command of cmds.
func namesCommand(s string, cmds map[string]bool) bool {
	for _, name := range tool {
		rest := s
		for {
			i := strings.Index(rest, name)
			if i < 0 {
				break
			}
			rest = rest[i+len(name):]
			if !strings.HasPrefix(rest, " ") {
				continue
			}
			after := strings.TrimLeft(rest, " ")
			if after == "" || strings.HasPrefix(after, "%") {
				return true
			}
			word := after
			if j := strings.IndexFunc(after, func(r rune) bool { return !unicode.IsLetter(r) && r != '-' }); j >= 0 {
				word = after[:j]
			}
			if cmds[word] {
				return true
			}
		}
	}
	return false
}

// coreFile is one parsed non-test .go file outside cmd/.
type coreFile struct {
	rel, pkg string
	fset     *token.FileSet
	f        *ast.File
}

// coreFiles parses every non-test .go file of the module outside cmd/.
func coreFiles(t *testing.T, root string) []coreFile {
	var out []coreFile
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || rel == "cmd") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		out = append(out, coreFile{rel: rel, pkg: filepath.ToSlash(filepath.Dir(rel)), fset: fset, f: f})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// importsKong reports whether an import path is kong or a kong add-on.
func importsKong(path string) bool {
	for _, el := range strings.Split(path, "/") {
		if strings.HasPrefix(el, "kong") {
			return true
		}
	}
	return false
}

// TestCoreDoesNotImportKong fails when a package outside cmd/ imports kong.
func TestCoreDoesNotImportKong(t *testing.T) {
	files := coreFiles(t, moduleRoot(t))
	if len(files) < 50 {
		t.Fatalf("found only %d core files: the walk is broken", len(files))
	}
	for _, cf := range files {
		for _, im := range cf.f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			if importsKong(p) {
				t.Errorf("%s: package %s imports %s: only cmd/ may know the command line", cf.rel, cf.pkg, p)
			}
		}
	}
}

// commandLiterals lists the string literals of files that name a command,
// outside the packages allowed to, and how many literals it read.
func commandLiterals(files []coreFile, cmds map[string]bool) (found []string, literals int) {
	for _, cf := range files {
		ast.Inspect(cf.f, func(n ast.Node) bool {
			s, ok := literal(exprOf(n))
			if !ok {
				return true
			}
			literals++
			if namesCommand(s, cmds) && !commandsAllowed[cf.pkg] {
				found = append(found, fmt.Sprintf("%s:%d: package %s names a command in %q: return a typed error and let the CLI give the hint",
					cf.rel, cf.fset.Position(n.Pos()).Line, cf.pkg, s))
			}
			return true
		})
	}
	sort.Strings(found)
	return found, literals
}

// exprOf returns n as an expression, or nil.
func exprOf(n ast.Node) ast.Expr {
	e, _ := n.(ast.Expr)
	return e
}

// TestCoreNamesNoCommands fails when a string literal outside cmd/ (and
// the exceptions above) names a CLI command.
func TestCoreNamesNoCommands(t *testing.T) {
	root := moduleRoot(t)
	cmds := cliCommands(t, root)
	for _, want := range []string{"init", "task", "worker", "merge"} {
		if !cmds[want] {
			t.Fatalf("commands read from cli.go are %v, without %q: the reader is broken", cmds, want)
		}
	}
	found, literals := commandLiterals(coreFiles(t, root), cmds)
	if literals < 500 {
		t.Fatalf("read only %d string literals: the walk is broken", literals)
	}
	for _, v := range found {
		t.Error(v)
	}
}

// TestCommandRecogniser pins the two checks on known inputs, so that they
// cannot pass by recognising nothing.
func TestCommandRecogniser(t *testing.T) {
	cmds := map[string]bool{"task": true, "worker": true, "init": true, "agent": true}
	for s, want := range map[string]bool{
		"list them with: git agentmine task list":        true,
		"no agents are defined; run: git agentmine init": true,
		"see it with: git-agentmine worker status":       true,
		"list them with: git agentmine %s list":          true,
		"remove it with: git agentmine ":                 true,
		"wait (git agentmine worker wait 1a2b)":          true,
		"\n$ git agentmine  agent validate":              true,
		"added by git agentmine for this worker session": false,
		"Notes added by 'git agentmine'":                 false,
		"# generated by git agentmine: files it wrote":   false,
		"git agentmine":                                     false,
		"git agentmine tasks are refs":                      false,
		"run: git agentmine-helper task":                    false,
		"see git agentmine for details; then task list":     false,
		"the git agentmine binary, then git agentmine init": true,
	} {
		if got := namesCommand(s, cmds); got != want {
			t.Errorf("namesCommand(%q) = %v, want %v", s, got, want)
		}
	}
	for p, want := range map[string]bool{
		"github.com/alecthomas/kong":                      true,
		"github.com/willabides/kongplete":                 true,
		"github.com/alecthomas/kong/internal":             true,
		"github.com/git-agentmine/git-agentmine/gitstore": false,
		"strings": false,
	} {
		if got := importsKong(p); got != want {
			t.Errorf("importsKong(%q) = %v, want %v", p, got, want)
		}
	}
	if kebab("Completion") != "completion" || kebab("InstallMan") != "install-man" {
		t.Errorf("kebab: %q %q", kebab("Completion"), kebab("InstallMan"))
	}
	src := `package p
import "errors"
var a = errors.New("task x not found")
var b = "hint: git agentmine task show " + id
var c = ` + "`see git agentmine worker wait`" + `
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p/p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	found, _ := commandLiterals([]coreFile{{rel: "p/p.go", pkg: "p", fset: fset, f: f}}, cmds)
	if len(found) != 2 || !strings.HasPrefix(found[0], "p/p.go:4:") || !strings.HasPrefix(found[1], "p/p.go:5:") {
		t.Errorf("found %q, want lines 4 and 5", found)
	}
	found, _ = commandLiterals([]coreFile{{rel: "demo/p.go", pkg: "demo", fset: fset, f: f}}, cmds)
	if len(found) != 0 {
		t.Errorf("demo is allowed, found %q", found)
	}
}
