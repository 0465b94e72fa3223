package archtest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// The rule (design §2, §9): gitstore is the only package that writes git
// objects and refs. The test parses every non-test .go file of the module
// and finds each git invocation whose sub-command is a string literal:
//
//   - a call of a method named Run, RunInput, Output, Lines or Command (the
//     gitcmd.Runner methods) whose first string-literal argument is the
//     sub-command (a leading `-c key=value` or `-C dir` is skipped);
//   - exec.Command / exec.CommandContext with the literal "git" followed by
//     the sub-command;
//   - a []string (or [][]string element) literal whose first element is the
//     sub-command, the way argument lists are built before a call.
//
// A sub-command writes refs or objects when it is one of update-ref,
// commit-tree, mktree, mktag, write-tree, pack-refs, replace, commit, merge,
// cherry-pick, revert, rebase, am, stash, fetch, push, gc, repack, prune; or
// hash-object with -w; merge-tree unless --trivial-merge (it writes the
// merged tree); notes, tag, branch and symbolic-ref unless the literal
// arguments make it a read (a listing or show); `worktree add` with -b/-B
// (it creates a branch).
//
// Who may run them:
//
//   - gitstore: all of them (ref writes through `git update-ref --stdin`).
//   - replica: fetch and push only. Sharing state with a remote needs a
//     fetch of the remote's objects (by id, writing no ref) and pushes of
//     refs/agentmine, and those run through the store's runner; replica
//     writes objects and refs only through gitstore methods.
//   - worktree: branch and `worktree add -b`. The worker's branch is created
//     with its worktree and deleted with it; git keeps the worktree's
//     administrative files and the branch in step itself.
//   - demo: it plays the user, creating a throwaway project repository with
//     git init/add/commit before agentmine is involved.
//
// Not ref or object writes, so not checked: checkout, switch, reset,
// read-tree, sparse-checkout, update-index, `worktree add` without -b,
// `worktree remove/prune`, config. They change one working tree, its index
// or its private HEAD (a detached worktree), the worktree package's and the
// checkout's business, not the shared refs and objects.
//
// Sub-commands passed through variables are invisible to this test: keep
// them literal.

var allowed = map[string]map[string]bool{
	"gitstore": nil, // nil: everything
	"replica":  {"fetch": true, "push": true},
	"worktree": {"branch": true, "worktree": true},
	"demo":     {"commit": true},
	// The clone isolation level fetches the worker's branch back from the
	// worker's own repository: objects only (--no-write-fetch-head); the
	// branch itself is moved through gitstore.
	"isolation": {"fetch": true},
}

// alwaysWrites are sub-commands that write refs or objects whatever their
// arguments.
var alwaysWrites = map[string]bool{
	"update-ref": true, "commit-tree": true, "mktree": true, "mktag": true, "write-tree": true,
	"pack-refs": true, "replace": true, "commit": true, "merge": true, "cherry-pick": true,
	"revert": true, "rebase": true, "am": true, "stash": true, "fetch": true, "push": true,
	"gc": true, "repack": true, "prune": true,
}

// writes reports whether git with the sub-command and the (literal, or ""
// for non-literal) arguments after it writes refs or objects.
func writes(sub string, args []string) bool {
	if alwaysWrites[sub] {
		return true
	}
	has := func(flags ...string) bool {
		for _, a := range args {
			for _, f := range flags {
				if a == f {
					return true
				}
			}
		}
		return false
	}
	switch sub {
	case "hash-object":
		return has("-w")
	case "merge-tree":
		return !has("--trivial-merge")
	case "notes":
		// `git notes` alone lists; list, show and get-ref read.
		return len(args) > 0 && !has("list", "show", "get-ref")
	case "tag":
		return len(args) > 0 && !has("-l", "--list", "-v", "--verify", "--contains", "--points-at")
	case "branch":
		return len(args) > 0 && !has("-l", "--list", "--show-current", "-a", "--all", "-r", "--remotes", "--contains", "--merged", "--no-merged", "--points-at", "-v", "-vv")
	case "symbolic-ref":
		if has("-d", "--delete") {
			return true
		}
		n := 0
		for _, a := range args {
			if !strings.HasPrefix(a, "-") || a == "" {
				n++
			}
		}
		return n >= 2
	case "worktree":
		return len(args) > 0 && args[0] == "add" && has("-b", "-B")
	}
	return false
}

// gitCall is one git invocation found in the source.
type gitCall struct {
	pos  token.Position
	sub  string
	args []string
}

// literal returns the value of a string literal, ok=false for anything else.
func literal(e ast.Expr) (string, bool) {
	b, ok := e.(*ast.BasicLit)
	if !ok || b.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(b.Value)
	return s, err == nil
}

// argv turns git's arguments into a sub-command and the arguments after
// it; non-literal arguments become "". ok is false when the sub-command is
// not a literal.
func argv(exprs []ast.Expr) (sub string, args []string, ok bool) {
	i := 0
	for i < len(exprs) {
		s, lit := literal(exprs[i])
		if !lit {
			return "", nil, false
		}
		if s == "-c" || s == "-C" {
			i += 2
			continue
		}
		if strings.HasPrefix(s, "-") {
			i++
			continue
		}
		sub = s
		break
	}
	if sub == "" {
		return "", nil, false
	}
	for _, e := range exprs[i+1:] {
		s, _ := literal(e)
		args = append(args, s)
	}
	return sub, args, true
}

var runnerMethods = map[string]bool{"Run": true, "RunInput": true, "Output": true, "Lines": true, "Command": true}

// gitCalls finds the git invocations in one parsed file.
func gitCalls(fset *token.FileSet, f *ast.File) []gitCall {
	var out []gitCall
	add := func(n ast.Node, exprs []ast.Expr) {
		if sub, args, ok := argv(exprs); ok {
			out = append(out, gitCall{pos: fset.Position(n.Pos()), sub: sub, args: args})
		}
	}
	// firstLiteral skips the leading non-string arguments (ctx, stdin).
	firstLiteral := func(args []ast.Expr) []ast.Expr {
		for i, a := range args {
			if _, ok := literal(a); ok {
				return args[i:]
			}
		}
		return nil
	}
	isStringSlice := func(t ast.Expr) bool {
		at, ok := t.(*ast.ArrayType)
		if !ok {
			return false
		}
		id, ok := at.Elt.(*ast.Ident)
		return ok && id.Name == "string"
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			sel, ok := n.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == "exec" && (sel.Sel.Name == "Command" || sel.Sel.Name == "CommandContext") {
				args := n.Args
				if sel.Sel.Name == "CommandContext" && len(args) > 0 {
					args = args[1:]
				}
				if len(args) > 1 {
					if s, ok := literal(args[0]); ok && s == "git" {
						add(n, args[1:])
					}
				}
				return true
			}
			if runnerMethods[sel.Sel.Name] {
				add(n, firstLiteral(n.Args))
			}
		case *ast.CompositeLit:
			if isStringSlice(n.Type) {
				add(n, n.Elts)
				return true
			}
			if at, ok := n.Type.(*ast.ArrayType); ok && isStringSlice(at.Elt) {
				for _, e := range n.Elts {
					if inner, ok := e.(*ast.CompositeLit); ok && inner.Type == nil {
						add(inner, inner.Elts)
					}
				}
			}
		}
		return true
	})
	return out
}

// moduleRoot walks up from the test's directory to go.mod.
func moduleRoot(t *testing.T) string {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the test directory")
		}
		dir = parent
	}
}

// walkGo calls fn with the path of every .go file under root, leaving out
// hidden directories and testdata.
func walkGo(root string, fn func(path string) error) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		return fn(path)
	})
}

// violations lists every git invocation under root that writes refs or
// objects from a package not allowed to.
func violations(t *testing.T, root string) (found []string, calls int) {
	err := walkGo(root, func(path string) error {
		if strings.HasSuffix(path, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		pkg := filepath.ToSlash(rel)
		for _, c := range gitCalls(fset, f) {
			calls++
			if !writes(c.sub, c.args) {
				continue
			}
			ok, listed := allowed[pkg]
			if listed && (ok == nil || ok[c.sub]) {
				continue
			}
			p, _ := filepath.Rel(root, c.pos.Filename)
			found = append(found, fmt.Sprintf("%s:%d: package %s runs `git %s` (writes refs or objects: go through gitstore)", filepath.ToSlash(p), c.pos.Line, pkg, c.sub))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(found)
	return found, calls
}

// TestOnlyGitstoreWritesRefsAndObjects fails on a git invocation that
// writes refs or objects outside the packages allowed above.
func TestOnlyGitstoreWritesRefsAndObjects(t *testing.T) {
	found, calls := violations(t, moduleRoot(t))
	if calls < 20 {
		t.Fatalf("found only %d git invocations: the parser no longer recognises them", calls)
	}
	for _, v := range found {
		t.Error(v)
	}
}

// TestGitCallClassifier pins the recogniser on known sources, so that the
// check above cannot silently pass by recognising nothing.
func TestGitCallClassifier(t *testing.T) {
	src := `package p
func f() {
	g.Run(ctx, "update-ref", "-d", tmp)                      // write
	g.RunInput(ctx, in, "commit-tree", tree, "-p", p)         // write
	g.Run(ctx, "-c", "x=y", "push", remote, spec)             // write
	g.Output(ctx, "hash-object", "-w", "--stdin")             // write
	g.Output(ctx, "hash-object", "--stdin")                   // read
	g.Run(ctx, "branch", "-D", "--", b)                       // write
	g.Output(ctx, "branch", "--show-current")                 // read
	g.Output(ctx, "symbolic-ref", "-q", "--short", "HEAD")    // read
	g.Run(ctx, "symbolic-ref", "HEAD", ref)                   // write
	g.Run(ctx, "notes", "--ref", r, "add", "-m", m)           // write
	g.Run(ctx, "notes", "list")                               // read
	g.Run(ctx, "merge-tree", "--write-tree", a, b)            // write
	g.Run(ctx, "worktree", "add", "-b", br, path, base)       // write
	g.Run(ctx, "worktree", "add", "--detach", path, c)        // read
	g.Run(ctx, "read-tree", "-m", "-u", a, b)                 // read
	g.Lines(ctx, "for-each-ref", "refs/agentmine/")           // read
	exec.CommandContext(ctx, "git", "tag", "v1")              // write
	args := []string{"fetch", "--quiet", remote}              // write
	for _, a := range [][]string{{"init"}, {"commit", "-m", "x"}} { _ = a } // write
	g.Run(ctx, sub, "x")                                      // invisible: not a literal
}`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range gitCalls(fset, f) {
		if writes(c.sub, c.args) {
			got = append(got, fmt.Sprintf("%d:%s", c.pos.Line, c.sub))
		}
	}
	want := []string{"3:update-ref", "4:commit-tree", "5:push", "6:hash-object", "8:branch", "11:symbolic-ref",
		"12:notes", "14:merge-tree", "15:worktree", "19:tag", "20:fetch", "21:commit"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("writes found:\n got %v\nwant %v", got, want)
	}
}
