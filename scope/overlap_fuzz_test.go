package scope

import "testing"

// FuzzOverlap checks that Overlap is sound (two patterns that both cover
// one path overlap), symmetric, and that a pattern overlaps itself. The
// paths tried are the given ones and paths built from the patterns, so
// that overlapping pairs are found often.
func FuzzOverlap(f *testing.F) {
	seeds := []struct{ a, b, paths string }{
		{"src/auth/**", "src/auth/login.go", "src/auth/login.go"},
		{"src/*.go", "src/*.md", "src/a.go\x00src/a.md"},
		{"**/*.go", "docs/*.md", "docs/a.md/b.go"},
		{"{src,lib}/a", "lib/**", "lib/a/x"},
		{"a*b/c", "ab*/**", "abb/c\x00ab/c"},
		{"x/[ab]?/**", "x/*c", "x/ac/d\x00x/bcc"},
		{"a\\*b", "a?b", "a*b"},
		{"src/", "src", "src/x"},
	}
	for _, s := range seeds {
		f.Add(s.a, s.b, s.paths)
	}
	f.Fuzz(func(t *testing.T, a, b, paths string) {
		if len(a) > 64 || len(b) > 64 {
			return
		}
		ab, ba := Overlap(a, b), Overlap(b, a)
		if ab != ba {
			t.Fatalf("Overlap(%q, %q) = %v but Overlap(%q, %q) = %v", a, b, ab, b, a, ba)
		}
		if !Overlap(a, a) {
			t.Fatalf("Overlap(%q, %q) = false", a, a)
		}
		if ab {
			return
		}
		sa, sb := Spec{Write: []string{a}}, Spec{Write: []string{b}}
		if sa.Validate() != nil || sb.Validate() != nil {
			t.Fatalf("Overlap(%q, %q) = false for a pattern that does not validate", a, b)
		}
		ia, ib := instantiate(a), instantiate(b)
		try := append(splitList(paths), ia, ib, ia+"/"+ib, ib+"/"+ia)
		for _, p := range try {
			if !gitPath(p) || len(try) > maxFuzzPaths+4 {
				continue
			}
			if sa.Classify(p) == Writable && sb.Classify(p) == Writable {
				t.Fatalf("Overlap(%q, %q) = false, but %q is covered by both", a, b, p)
			}
		}
	})
}
