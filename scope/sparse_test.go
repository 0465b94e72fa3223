package scope

import (
	"bytes"
	"context"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/git-agentmine/git-agentmine/gitcmd"
	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

func TestSparsePatternsShape(t *testing.T) {
	files := []string{"a/x", "a/y", "b/z", "c"}
	cases := []struct {
		keep []bool
		want []string
	}{
		{[]bool{true, true, true, true}, []string{"/*"}},
		{[]bool{false, false, false, false}, []string{}},
		{[]bool{true, true, false, false}, []string{"/a/"}},
		{[]bool{true, true, true, false}, []string{"/a/", "/b/"}},
		{[]bool{true, false, true, true}, []string{"/*", "!/a/y"}},
		{[]bool{false, true, false, false}, []string{"/a/y"}},
	}
	for _, tc := range cases {
		got := SparsePatterns(files, tc.keep)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("keep %v: got %q, want %q", tc.keep, got, tc.want)
		}
	}
}

func TestSparsePatternsEscaping(t *testing.T) {
	files := []string{"#h", "!b", "s*r", "b[a]", "q?", "t ", `x\y`, "keep"}
	keep := []bool{true, true, true, true, true, true, true, false}
	got := SparsePatterns(files, keep)
	want := []string{"/*", "!/keep"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	// Mostly kept: the negated form is shorter and shows the escapes.
	files = append(files, "k1", "k2", "k3")
	keep = []bool{true, true, true, false, false, false, false, true, true, true, true}
	got = SparsePatterns(files, keep)
	want = []string{"/*", "!/b\\[a]", "!/q\\?", "!/t\\ ", "!/x\\\\y"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

// trickyFiles are paths whose names mean something in gitignore syntax.
var trickyFiles = []string{
	".env", "#hash", "!bang", "st*r", "br[a]ck", "q?", "trail ", "two  ", `back\slash`,
	"ünïcode/ß.txt", "sp ace/f", "dir with trail /x", ".hidden/x", "a/b/c/d.txt", "a/b/e.txt",
	"a/f", "a/b/c/g", "**", "a*/x", "[x]/y", "a/#b/!c", "config/prod.env", "secrets/key",
	"src/main.go", "src/lib/x.go", "tests/t.go", "docs/a.md", "docs/b/c.md", "package.json",
}

// checkout applies lines as the sparse-checkout of the repository at dir
// and returns the set of files git kept.
func checkout(t *testing.T, ctx context.Context, dir string, lines []string) []string {
	t.Helper()
	r := gitcmd.Runner{Dir: dir}
	content := strings.Join(lines, "\n")
	if len(lines) > 0 {
		content += "\n"
	}
	if err := os.WriteFile(filepath.Join(dir, ".git", "info", "sparse-checkout"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Run(ctx, "read-tree", "-mu", "HEAD"); err != nil {
		t.Fatalf("read-tree with %q: %v", lines, err)
	}
	out, err := r.Run(ctx, "ls-files", "-z", "-t")
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, e := range strings.Split(string(out), "\x00") {
		if strings.HasPrefix(e, "H ") {
			kept = append(kept, e[2:])
		}
	}
	// What git says must be what is on disk.
	disk := gittest.Files(t, dir)
	sort.Strings(kept)
	if !reflect.DeepEqual(kept, disk) {
		t.Fatalf("index says %q, disk has %q", kept, disk)
	}
	return kept
}

func TestSparsePatternsWithGit(t *testing.T) {
	ctx := context.Background()
	dir := gittest.Init(t)
	tricky := map[string]string{}
	for _, f := range trickyFiles {
		tricky[f] = f + "\n"
	}
	gittest.CommitFiles(t, dir, "tricky", tricky)
	gittest.Git(t, dir, "config", "core.sparseCheckout", "true")
	out, err := gitcmd.Runner{Dir: dir}.Run(ctx, "ls-tree", "-r", "-z", "--name-only", "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	files := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	if len(files) != len(trickyFiles) {
		t.Fatalf("repository holds %d files, want %d", len(files), len(trickyFiles))
	}

	check := func(name string, keep []bool) {
		t.Helper()
		var want []string
		for i, f := range files {
			if keep[i] {
				want = append(want, f)
			}
		}
		sort.Strings(want)
		lines := SparsePatterns(files, keep)
		if len(want) == 0 {
			// git refuses to empty the work tree; an empty list is
			// what SparsePatterns must return, and callers handle it.
			if len(lines) != 0 {
				t.Errorf("%s: nothing kept but lines %q", name, lines)
			}
			return
		}
		got := checkout(t, ctx, dir, lines)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: lines %q\nkept %q\nwant %q", name, lines, got, want)
		}
	}

	specs := map[string]Spec{
		"fixture": fixture,
		"tricky": {Read: []string{"a/**", "**/#*", "**/!*", "st*r", "sp ace/**"},
			Write: []string{"a/b/**"}, Exclude: []string{"a/b/c/g", "**/\\!c"}},
		"read only src": {Read: []string{"src/**"}, Write: []string{"src/lib/**"}},
	}
	for name, s := range specs {
		keep := make([]bool, len(files))
		for i, a := range s.ClassifyAll(files) {
			keep[i] = a != Absent
		}
		check(name, keep)
	}
	if testing.Short() {
		t.Skip("slow: the random and one-file-at-a-time cases below are over a hundred real checkouts")
	}
	rng := rand.New(rand.NewSource(1))
	for round := 0; round < 40; round++ {
		keep := make([]bool, len(files))
		density := rng.Float64()
		for i := range keep {
			keep[i] = rng.Float64() < density
		}
		check("random", keep)
	}
	// Each single file alone, and everything but it.
	for i := range files {
		keep := make([]bool, len(files))
		keep[i] = true
		check("only "+files[i], keep)
		for j := range keep {
			keep[j] = !keep[j]
		}
		check("all but "+files[i], keep)
	}
}

func TestSparsePatternsDeterministic(t *testing.T) {
	files := append([]string(nil), trickyFiles...)
	keep := make([]bool, len(files))
	for i := range keep {
		keep[i] = i%3 != 0
	}
	first := SparsePatterns(files, keep)
	// Order of the input must not matter.
	rev := make([]string, len(files))
	revKeep := make([]bool, len(files))
	for i := range files {
		rev[len(files)-1-i] = files[i]
		revKeep[len(files)-1-i] = keep[i]
	}
	second := SparsePatterns(rev, revKeep)
	if !bytes.Equal([]byte(strings.Join(first, "\n")), []byte(strings.Join(second, "\n"))) {
		t.Errorf("order changed the output:\n%q\n%q", first, second)
	}
}

func TestWriteRoots(t *testing.T) {
	cases := []struct {
		spec Spec
		want []string
	}{
		{Spec{Write: []string{"src/**"}}, []string{"src"}},
		{Spec{Write: []string{"src/**/*.go", "src/lib/**"}}, []string{"src"}},
		{Spec{Write: []string{"*.go", "src/**"}}, []string{""}},
		{Spec{Write: []string{"docs/new.md", "{a,b/c}/**"}}, []string{"a", "b/c", "docs/new.md"}},
		{Spec{Write: []string{".agentmine/x/**", "src/**"}, Exclude: []string{".agentmine/**"}}, []string{"src"}},
		{Spec{Read: []string{"src/**"}, Write: []string{"/src/"}}, []string{"src"}},
	}
	for _, tc := range cases {
		if got := tc.spec.WriteRoots(); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%+v: roots %q, want %q", tc.spec, got, tc.want)
		}
	}
}

// TestSparsePatternsOpenWriteRoots: whatever the base holds, the lines
// check out exactly what the scope keeps and let git add a new file
// anywhere in the write scope, also in a directory the base does not
// have; a new file beneath a dropped path stays outside.
func TestSparsePatternsOpenWriteRoots(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name    string
		files   map[string]string
		spec    Spec
		add     []string
		refused []string
	}{
		{"young repository", map[string]string{"README.seed": "r\n", ".agentmine/config.toml": "c\n"},
			Spec{Write: []string{"src/**"}, Exclude: []string{".agentmine/**"}},
			[]string{"src/b.txt", "src/deep/c.txt"}, []string{".agentmine/x", "other/y"}},
		{"write root with excluded files", map[string]string{"src/a.txt": "a\n", "src/secret/k": "k\n", "docs/d.txt": "d\n", "top.txt": "t\n"},
			Spec{Write: []string{"src/**"}, Exclude: []string{"src/secret/**"}},
			[]string{"src/new.txt", "src/lib/x.go"}, []string{"src/secret/new"}},
		{"everything writable but one directory", map[string]string{"a.txt": "a\n", "vendor/v": "v\n", "x/y": "y\n"},
			Spec{Write: []string{"**"}, Exclude: []string{"vendor/**"}},
			[]string{"new/dir/file", "b.txt"}, []string{"vendor/new"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := gittest.Init(t)
			gittest.CommitFiles(t, dir, "base", tc.files)
			gittest.Git(t, dir, "config", "core.sparseCheckout", "true")
			var files []string
			for f := range tc.files {
				files = append(files, f)
			}
			sort.Strings(files)
			var want []string
			for i, a := range tc.spec.ClassifyAll(files) {
				if a != Absent {
					want = append(want, files[i])
				}
			}
			lines := tc.spec.SparsePatterns(files)
			if got := checkout(t, ctx, dir, lines); !reflect.DeepEqual(got, want) {
				t.Fatalf("lines %q check out %q, want %q", lines, got, want)
			}
			r := gitcmd.Runner{Dir: dir}
			for _, p := range append(append([]string(nil), tc.add...), tc.refused...) {
				gittest.WriteFiles(t, dir, map[string]string{p: "new\n"})
			}
			for _, p := range tc.add {
				if _, err := r.Run(ctx, "add", "--", p); err != nil {
					t.Errorf("lines %q: git add %s: %v", lines, p, err)
				}
			}
			for _, p := range tc.refused {
				if _, err := r.Run(ctx, "add", "--", p); err == nil {
					t.Errorf("lines %q: git add %s succeeded, want it outside the sparse-checkout definition", lines, p)
				}
			}
		})
	}
}
