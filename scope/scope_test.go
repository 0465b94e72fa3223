package scope

import (
	"strings"
	"testing"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/git-agentmine/git-agentmine/exitcode"
)

// fixture is the scope of the documented example: write src, tests and
// package.json, hide every .env file and every secrets directory.
var fixture = Spec{
	Write:   []string{"src/**", "tests/**", "package.json"},
	Exclude: []string{"**/*.env", "**/secrets/**"},
}

func TestValidate(t *testing.T) {
	if err := fixture.Validate(); err != nil {
		t.Fatalf("fixture: %v", err)
	}
	bad := []struct {
		name string
		spec Spec
		want string
	}{
		{"no write", Spec{Read: []string{"**"}}, "scope: write must be explicit"},
		{"empty write list", Spec{Write: []string{}}, "scope: write must be explicit"},
		{"bad write glob", Spec{Write: []string{"src/[a-"}}, `invalid write pattern "src/[a-"`},
		{"bad read glob", Spec{Read: []string{"{a,b"}, Write: []string{"x"}}, `invalid read pattern "{a,b"`},
		{"bad exclude glob", Spec{Write: []string{"x"}, Exclude: []string{"[z"}}, `invalid exclude pattern "[z"`},
		{"empty pattern", Spec{Write: []string{""}}, `invalid write pattern ""`},
		{"dotdot", Spec{Write: []string{"../other/**"}}, `invalid write pattern "../other/**"`},
		{"empty segment", Spec{Write: []string{"src//a"}}, `invalid write pattern "src//a"`},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.spec.Validate()
			if err == nil {
				t.Fatal("Validate accepted it")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is not one line: %q", err)
			}
			if got := exitcode.Of(err); got != exitcode.Config {
				t.Errorf("exit code %d, want %d", got, exitcode.Config)
			}
		})
	}
}

func TestClassifyFixture(t *testing.T) {
	cases := map[string]Access{
		".env":                Absent,
		"config/prod.env":     Absent,
		"deep/a/b/local.env":  Absent,
		"secrets/key":         Absent,
		"src/secrets/key":     Absent,
		"src/main.go":         Writable,
		"src/a/b/c.go":        Writable,
		"src/x.env":           Absent, // exclude beats write
		"tests/main_test.go":  Writable,
		"package.json":        Writable,
		"sub/package.json":    ReadOnly, // package.json is anchored at the root
		"docs/guide.md":       ReadOnly,
		"README.md":           ReadOnly,
		".github/ci.yml":      ReadOnly,
		"./src/main.go":       Writable,
		"config/settings.yml": ReadOnly,
	}
	for p, want := range cases {
		if got := fixture.Classify(p); got != want {
			t.Errorf("Classify(%q) = %v, want %v", p, got, want)
		}
	}
}

func TestClassifyRules(t *testing.T) {
	cases := []struct {
		spec Spec
		path string
		want Access
	}{
		// A pattern matching a directory covers everything beneath it.
		{Spec{Write: []string{"docs"}}, "docs/a/b.md", Writable},
		{Spec{Write: []string{"x"}, Exclude: []string{"vendor"}}, "vendor/lib/a.go", Absent},
		// A trailing slash means directories only.
		{Spec{Write: []string{"docs/"}}, "docs/a.md", Writable},
		{Spec{Write: []string{"docs/"}}, "docs", ReadOnly},
		// A leading slash is the root.
		{Spec{Write: []string{"/src/**"}}, "src/a.go", Writable},
		{Spec{Write: []string{"./src/**"}}, "src/a.go", Writable},
		// Read restricts what is present at all.
		{Spec{Read: []string{"src/**", "go.mod"}, Write: []string{"src/**"}}, "docs/a.md", Absent},
		{Spec{Read: []string{"src/**", "go.mod"}, Write: []string{"src/**"}}, "go.mod", ReadOnly},
		// Write is present even when read does not name it.
		{Spec{Read: []string{"docs/**"}, Write: []string{"src/**"}}, "src/a.go", Writable},
		// Braces and character classes.
		{Spec{Write: []string{"{src,lib}/**"}}, "lib/x.go", Writable},
		{Spec{Write: []string{"file[0-9].txt"}}, "file7.txt", Writable},
		{Spec{Write: []string{"file[0-9].txt"}}, "fileA.txt", ReadOnly},
		// Dotfiles are matched by *.
		{Spec{Write: []string{"*"}}, ".hidden", Writable},
		{Spec{Write: []string{"x"}}, "", Absent},
	}
	for _, tc := range cases {
		if got := tc.spec.Classify(tc.path); got != tc.want {
			t.Errorf("%+v Classify(%q) = %v, want %v", tc.spec, tc.path, got, tc.want)
		}
	}
}

func TestClassifyAllAgrees(t *testing.T) {
	paths := []string{
		".env", "a/.env", "a/b/c.env", "secrets/k", "x/secrets/y/z", "src/a", "src/b/c",
		"src/secrets/x", "tests/t", "package.json", "docs/a", "docs/b/c", "README.md", "src",
	}
	specs := []Spec{
		fixture,
		{Read: []string{"docs/**", "src"}, Write: []string{"src/b/**"}, Exclude: []string{"**/c"}},
		{Write: []string{"docs"}, Exclude: []string{"docs/b"}},
	}
	for _, s := range specs {
		all := s.ClassifyAll(paths)
		for i, p := range paths {
			if one := s.Classify(p); one != all[i] {
				t.Errorf("%+v: Classify(%q)=%v but ClassifyAll gave %v", s, p, one, all[i])
			}
		}
	}
}

func TestDirWritable(t *testing.T) {
	cases := []struct {
		spec Spec
		dir  string
		want bool
	}{
		{fixture, "", true},
		{fixture, "src", true},
		{fixture, "src/deep/er", true},
		{fixture, "tests", true},
		{fixture, "docs", false},
		{fixture, "docs/sub", false},
		{fixture, "secrets", false},
		{fixture, "src/secrets", false},
		{fixture, "config", false},
		{Spec{Write: []string{"a/b/c/**"}}, "a", true},
		{Spec{Write: []string{"a/b/c/**"}}, "a/b", true},
		{Spec{Write: []string{"a/b/c/**"}}, "a/x", false},
		{Spec{Write: []string{"a/*/c.txt"}}, "a/q", true},
		{Spec{Write: []string{"a/*/c.txt"}}, "a/q/r", false},
		{Spec{Write: []string{"**/*.go"}}, "any/where", true},
		{Spec{Write: []string{"{src,lib/x}/**"}}, "lib", true},
		{Spec{Write: []string{"{src,lib/x}/**"}}, "lib/y", false},
		{Spec{Write: []string{"src/**"}, Exclude: []string{"src/gen/**"}}, "src/gen", false},
		{Spec{Write: []string{"src/**"}, Exclude: []string{"src/gen/**"}}, "src/other", true},
		{Spec{Write: []string{"docs"}}, "docs/a/b", true},
	}
	for _, tc := range cases {
		if got := tc.spec.DirWritable(tc.dir); got != tc.want {
			t.Errorf("%+v DirWritable(%q) = %v, want %v", tc.spec, tc.dir, got, tc.want)
		}
	}
}

func TestExpandBraces(t *testing.T) {
	got, ok := expandBraces("{a,b{c,d}}/x{1,2}", 100)
	want := "a/x1 a/x2 bc/x1 bc/x2 bd/x1 bd/x2"
	if !ok || strings.Join(got, " ") != want {
		t.Errorf("got %v %v, want %s", got, ok, want)
	}
	if _, ok := expandBraces("{a,b}{c,d}{e,f}", 4); ok {
		t.Error("limit not enforced")
	}
	if got, _ := expandBraces(`\{a,b}`, 10); len(got) != 1 {
		t.Errorf("escaped brace expanded: %v", got)
	}
}

func TestAccessString(t *testing.T) {
	for a, want := range map[Access]string{Absent: "absent", ReadOnly: "read-only", Writable: "writable"} {
		if a.String() != want {
			t.Errorf("%d.String() = %q", int(a), a.String())
		}
	}
}

// TestPatternShapes: the globs match answers without doublestar are
// recognised, and every answer is doublestar's.
func TestPatternShapes(t *testing.T) {
	shapes := map[string]shape{
		".env": shapeLiteral, "src/main.go": shapeLiteral, "**/*.env": shapeBase, "**/secrets": shapeBase,
		"**/{a,b}.go": shapeBase, "**/secrets/**": shapeSegment, "**/a/b/**": shapeGlob, "**/*/**": shapeGlob,
		"**": shapeGlob, "**/**": shapeGlob, "src/**": shapeGlob, "**/a\\*b": shapeGlob, "*.go": shapeGlob,
		"\x80": shapeGlob, "ü.txt": shapeGlob, "**/ü": shapeGlob,
	}
	paths := []string{"", ".env", "a/.env", "x.env", "a/b/x.env", "secrets", "a/secrets", "secrets/k", "a/secrets/k",
		"asecrets/k", "a/secretsx", "a//secrets", "src/main.go", "src/main.gox", "a/b", "a/b/c", "a.go", "b.go", "c/a.go",
		"a*b", "x/a*b", "a/x.env/", "a//x.env", "\x80", "a/\x80/secrets", "\x80/x.env", "ü.txt", "\uFFFD"}
	for glob, want := range shapes {
		n, err := normalize(glob)
		if err != nil {
			t.Fatal(err)
		}
		n.shape, n.tail = shapeOf(n.glob)
		if n.shape != want {
			t.Errorf("shapeOf(%q) = %v, want %v", glob, n.shape, want)
		}
		for _, p := range paths {
			if got, ds := n.match(p), doublestar.MatchUnvalidated(n.glob, p); got != ds {
				t.Errorf("%q matching %q: %v, doublestar says %v", glob, p, got, ds)
			}
		}
	}
}
