package archtest

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// gittestPath is the import path of the shared test fixtures.
const gittestPath = "github.com/git-agentmine/git-agentmine/internal/gittest"

// gittestDir is where that package lives, relative to the module root.
const gittestDir = "internal/gittest"

// scrubMark is the quoted variable name a hand-made scrub sets, spelled in
// two pieces so that this file does not carry it.
const scrubMark = `"GIT_CONFIG_` + `NOSYSTEM"`

// testHelperRules checks the Go file at rel (relative to the module root,
// slash-separated) with source src and returns what breaks the rules on
// test helpers:
//
//   - only tests import internal/gittest: it runs git commands that write
//     objects and refs the way a user building a fixture would, which the
//     product's own code must leave to gitstore;
//   - no test outside internal/gittest builds its own scrubbed environment
//     (the sign of one: setting GIT_CONFIG_NOSYSTEM), so that every test
//     runs git in the same environment and there is one copy to fix.
func testHelperRules(fset *token.FileSet, rel string, src []byte) ([]string, error) {
	f, err := parser.ParseFile(fset, rel, src, parser.ImportsOnly)
	if err != nil {
		return nil, err
	}
	var found []string
	isTest := strings.HasSuffix(rel, "_test.go")
	inGittest := strings.HasPrefix(rel, gittestDir+"/")
	if !isTest && !inGittest {
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == gittestPath {
				found = append(found, rel+": imports internal/gittest, which only tests may use")
			}
		}
	}
	if isTest && !inGittest && strings.Contains(string(src), scrubMark) {
		found = append(found, rel+": scrubs the environment itself; use gittest.Scrub (or gittest.Vars)")
	}
	return found, nil
}

// TestTestHelpersInOnePlace applies testHelperRules to every Go file of the
// module.
func TestTestHelpersInOnePlace(t *testing.T) {
	root := moduleRoot(t)
	files := 0
	err := walkGo(root, func(path string) error {
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		found, err := testHelperRules(token.NewFileSet(), filepath.ToSlash(rel), src)
		for _, v := range found {
			t.Error(v)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 50 {
		t.Fatalf("read only %d Go files: the walk no longer finds the module", files)
	}
}

// TestTestHelperRules pins the rules on known sources, so that the check
// above cannot pass by recognising nothing.
func TestTestHelperRules(t *testing.T) {
	imports := "package p\nimport \"" + gittestPath + "\"\n"
	scrubs := "package p\nfunc f() { t.Setenv(" + scrubMark + ", \"1\") }\n"
	cases := []struct {
		rel, src string
		broken   bool
	}{
		{"worker/run.go", imports, true},
		{"worker/run_test.go", imports, false},
		{"internal/gittest/gittest.go", scrubs, false},
		{"worker/run_test.go", scrubs, true},
		{"worker/run.go", scrubs, false}, // the product may set it for its own reasons
	}
	for _, c := range cases {
		found, err := testHelperRules(token.NewFileSet(), c.rel, []byte(c.src))
		if err != nil {
			t.Fatal(err)
		}
		if (len(found) > 0) != c.broken {
			t.Errorf("%s: found %q, want broken=%v", c.rel, found, c.broken)
		}
	}
}
