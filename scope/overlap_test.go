package scope

import (
	"math/rand"
	"testing"
)

func TestOverlap(t *testing.T) {
	cases := []struct {
		a, b string
		want bool
	}{
		// Exact files.
		{"src/a.go", "src/a.go", true},
		{"src/a.go", "src/b.go", false},
		{"README.md", "readme.md", false},
		// A directory covers what is beneath it.
		{"src", "src/a.go", true},
		{"src/", "src/auth/login.go", true},
		{"./src", "/src/a.go", true},
		{"src", "srcs/a.go", false},
		{"src/auth", "src/authz", false},
		{"docs", "src", false},
		// "**" at any place.
		{"**", "anything/at/all", true},
		{"src/**", "src", true},
		{"src/**", "src/auth/**", true},
		{"src/auth/**", "src/db/**", false},
		{"src/**/test", "src/x/y/test/a.go", true},
		{"**/*.go", "docs/**", true}, // docs/x.go
		// A pattern may name a directory: docs/x.md/y.go is covered by
		// both, and so is a/c/y/b/x.
		{"**/*.go", "docs/*.md", true},
		{"**/*.go", "docs/guide.md", true},
		{"a/**/b/x", "a/c/y", true},
		{"a/**/b", "a/**/c", true},
		{"**/testdata/**", "src/testdata/in.txt", true},
		{"**/testdata/**", "src/test/in.txt", true},
		// A "**" that cannot reach: the segments before it differ.
		{"a/**/b/x", "c/y", false},
		{"src/*/x/**", "src/y/z/**", false},
		{"src/*/x/**", "src/y/x.go", false},
		// Wildcards in one segment.
		{"src/*.go", "src/a.go", true},
		{"src/*.go", "src/a.md", false},
		{"src/*.go", "src/*_test.go", true},
		{"src/*.go", "src/*.md", false},
		{"src/a*", "src/b*", false},
		{"src/a*", "src/ab*", true},
		{"src/a*z", "src/ab*y", false},
		{"src/?.go", "src/ab.go", false},
		{"src/?.go", "src/a.go", true},
		{"src/[ab].go", "src/c.go", false},
		{"src/[ab].go", "src/b.go", true},
		{"src/*", "src/a/b/c", true}, // src/a covers src/a/b/c
		{"src/*/x", "src/y", true},   // src/y/x
		{"src/*/x", "lib/y", false},
		// Braces.
		{"{src,lib}/a.go", "lib/**", true},
		{"{src,lib}/a.go", "docs/**", false},
		{"src/{a,b}.go", "src/c.go", false},
		{"src/{a,b/c}.go", "src/b/**", true},
		// Unsure or invalid: overlapping.
		{"src/[/]x", "lib", true},
		{"src/[", "lib", true},
		{"../x", "lib", true},
	}
	for _, c := range cases {
		if got := Overlap(c.a, c.b); got != c.want {
			t.Errorf("Overlap(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
		if got := Overlap(c.b, c.a); got != c.want {
			t.Errorf("Overlap(%q, %q) = %v, want %v (swapped)", c.b, c.a, got, c.want)
		}
	}
}

func TestFirstOverlap(t *testing.T) {
	x, y, ok := FirstOverlap([]string{"docs/**", "src/auth/**"}, []string{"lib", "src/auth/login.go"})
	if !ok || x != "src/auth/**" || y != "src/auth/login.go" {
		t.Fatalf("FirstOverlap = %q, %q, %v", x, y, ok)
	}
	if _, _, ok := FirstOverlap([]string{"docs/**"}, nil); ok {
		t.Fatal("an empty list overlaps nothing")
	}
}

// TestOverlapSound checks Overlap against the matcher on random patterns
// and paths: whenever one path is covered by both patterns (each alone as
// a write list), Overlap must say they overlap.
func TestOverlapSound(t *testing.T) {
	segs := []string{"a", "b", "ab", "*", "a*", "*b", "**", "?", "[ab]", "{a,b}", "x.go", "*.go", "{a,b/a}"}
	names := []string{"a", "b", "ab", "ba", "x.go", "a.go", "bb"}
	rng := rand.New(rand.NewSource(1))
	randGlob := func() string {
		n := 1 + rng.Intn(3)
		g := ""
		for i := 0; i < n; i++ {
			if i > 0 {
				g += "/"
			}
			g += segs[rng.Intn(len(segs))]
		}
		return g
	}
	randPath := func() string {
		n := 1 + rng.Intn(4)
		p := ""
		for i := 0; i < n; i++ {
			if i > 0 {
				p += "/"
			}
			p += names[rng.Intn(len(names))]
		}
		return p
	}
	paths := make([]string, 400)
	for i := range paths {
		paths[i] = randPath()
	}
	disjoint := 0
	for i := 0; i < 3000; i++ {
		a, b := randGlob(), randGlob()
		if Overlap(a, b) {
			continue
		}
		disjoint++
		sa, sb := Spec{Write: []string{a}}, Spec{Write: []string{b}}
		for _, p := range paths {
			if sa.Classify(p) == Writable && sb.Classify(p) == Writable {
				t.Fatalf("Overlap(%q, %q) = false, but %q is covered by both", a, b, p)
			}
		}
	}
	if disjoint == 0 {
		t.Fatal("no disjoint pair was generated: the test checks nothing")
	}
}
