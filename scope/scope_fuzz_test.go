package scope

import (
	"context"
	"math/rand"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/gitcmd"
	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

// The fuzz targets here feed scope patterns (which come from agent TOML
// files a worker can edit in its branch) and repository paths (which come
// from trees anyone can commit) through the matcher and the sparse-checkout
// translation. Lists are joined with NUL, which neither a pattern nor a
// git path can hold.

const maxFuzzPaths = 48

// splitList splits a NUL-joined list; "" is the empty list.
func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "\x00")
}

// gitPath reports whether p can be a path in a git tree: non-empty
// segments other than "." and "..", and no NUL.
func gitPath(p string) bool {
	if p == "" || strings.ContainsRune(p, 0) {
		return false
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return false
		}
	}
	return true
}

// instantiate turns a glob into one path it matches (often), so that the
// sample paths exercise the patterns instead of missing them all.
func instantiate(glob string) string {
	if alts, ok := expandBraces(glob, 4); ok && len(alts) > 0 {
		glob = alts[len(glob)%len(alts)]
	}
	var b strings.Builder
	for i := 0; i < len(glob); i++ {
		switch c := glob[i]; c {
		case '\\':
			if i+1 < len(glob) {
				i++
				b.WriteByte(glob[i])
			}
		case '*':
			if i+1 < len(glob) && glob[i+1] == '*' {
				i++
				b.WriteString("d/e")
			} else {
				b.WriteString("x")
			}
		case '?':
			b.WriteByte('q')
		case '[':
			j := i + 1
			if j < len(glob) && (glob[j] == '!' || glob[j] == '^') {
				j++
			}
			end := strings.IndexByte(glob[j:], ']')
			if end <= 0 {
				b.WriteByte('[')
				continue
			}
			b.WriteByte(glob[j])
			i = j + end
		case '{', '}', ',':
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// samplePaths returns the distinct git paths of raw plus paths made from
// the patterns (the instance itself, a file beneath it and its parent),
// at most maxFuzzPaths of them, sorted.
func samplePaths(raw []string, s Spec) []string {
	set := map[string]bool{}
	add := func(p string) {
		p = strings.Trim(p, "/")
		if len(set) < maxFuzzPaths && gitPath(p) {
			set[p] = true
		}
	}
	for _, p := range raw {
		add(p)
	}
	for _, list := range [][]string{s.Write, s.Exclude, s.Read} {
		for _, p := range list {
			n, err := normalize(p)
			if err != nil {
				continue
			}
			inst := instantiate(n.glob)
			add(inst)
			add(inst + "/f")
			add(parentOf(inst))
		}
	}
	out := make([]string, 0, len(set))
	for p := range set {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// naiveClassify is the documented meaning of a scope, computed the slow
// way: a pattern that matches a path, or any directory above it, covers
// it; a pattern ending in "/" matches directories only; exclude beats
// write beats read, and read defaults to everything.
func naiveClassify(s Spec, path string) Access {
	segs := strings.Split(path, "/")
	covers := func(list []string) bool {
		for _, raw := range list {
			n, err := normalize(raw)
			if err != nil {
				continue
			}
			for i := 1; i <= len(segs); i++ {
				isDir := i < len(segs)
				if n.dirOnly && !isDir {
					continue
				}
				if ok, err := doublestar.Match(n.glob, strings.Join(segs[:i], "/")); err == nil && ok {
					return true
				}
			}
		}
		return false
	}
	read := s.Read
	if len(read) == 0 {
		read = []string{"**"}
	}
	switch {
	case covers(s.Exclude):
		return Absent
	case covers(s.Write):
		return Writable
	case covers(read):
		return ReadOnly
	}
	return Absent
}

// fileTree drops every path that is a directory of another one: a tree
// cannot hold both "a" as a file and "a/b".
func fileTree(paths []string) []string {
	dirs := map[string]bool{}
	for _, p := range paths {
		for d := parentOf(p); d != ""; d = parentOf(d) {
			dirs[d] = true
		}
	}
	var out []string
	for _, p := range paths {
		if !dirs[p] {
			out = append(out, p)
		}
	}
	return out
}

// sparseLine is one parsed line of SparsePatterns' output: a literal path
// in which '?' tokens (wild) stand for any one byte but '/'.
type sparseLine struct {
	negate, dirOnly, rootAll bool
	lit                      []byte
	wild                     []bool
}

// parseSparseLine reads a line in the subset of gitignore syntax that
// SparsePatterns writes, or reports why it is outside that subset.
func parseSparseLine(line string) (sparseLine, string) {
	var l sparseLine
	if strings.ContainsAny(line, "\n\r") {
		return l, "holds a line break"
	}
	if rest, ok := strings.CutPrefix(line, "!"); ok {
		l.negate, line = true, rest
	}
	if line == "/*" {
		l.rootAll = true
		return l, ""
	}
	rest, ok := strings.CutPrefix(line, "/")
	if !ok {
		return l, "is not anchored at the root"
	}
	for i := 0; i < len(rest); i++ {
		c := rest[i]
		switch c {
		case '\\':
			if i+1 == len(rest) {
				return l, "ends in a lone backslash"
			}
			i++
			l.lit, l.wild = append(l.lit, rest[i]), append(l.wild, false)
		case '*', '[':
			return l, "holds an unescaped wildcard"
		case '?':
			l.lit, l.wild = append(l.lit, '?'), append(l.wild, true)
		case '/':
			if i == len(rest)-1 {
				l.dirOnly = true
			} else {
				l.lit, l.wild = append(l.lit, '/'), append(l.wild, false)
			}
		case ' ':
			if strings.TrimRight(rest[i:], " ") == "" {
				return l, "ends in an unescaped space, which git strips"
			}
			l.lit, l.wild = append(l.lit, c), append(l.wild, false)
		default:
			l.lit, l.wild = append(l.lit, c), append(l.wild, false)
		}
	}
	if len(l.lit) == 0 {
		return l, "names no path"
	}
	return l, ""
}

func (l sparseLine) matches(p string, isDir bool) bool {
	if l.rootAll {
		return !strings.Contains(p, "/")
	}
	if l.dirOnly && !isDir || len(p) != len(l.lit) {
		return false
	}
	for i := 0; i < len(p); i++ {
		if l.wild[i] {
			if p[i] == '/' {
				return false
			}
		} else if p[i] != l.lit[i] {
			return false
		}
	}
	return true
}

// sparseSelects applies sparse-checkout lines the way git does in non-cone
// mode: a file is decided by the last line matching the file itself, or
// else the last one matching its directory, its parent and so on up; a file
// no line decides is dropped.
func sparseSelects(t *testing.T, lines, files []string) map[string]bool {
	t.Helper()
	parsed := make([]sparseLine, len(lines))
	for i, line := range lines {
		l, why := parseSparseLine(line)
		if why != "" {
			t.Fatalf("line %q %s (all lines %q)", line, why, lines)
		}
		parsed[i] = l
	}
	sel := map[string]bool{}
	for _, f := range files {
		segs := strings.Split(f, "/")
	levels:
		for n := len(segs); n >= 1; n-- {
			p := strings.Join(segs[:n], "/")
			for i := len(parsed) - 1; i >= 0; i-- {
				if parsed[i].matches(p, n < len(segs)) {
					sel[f] = !parsed[i].negate
					break levels
				}
			}
		}
	}
	return sel
}

// checkSparse checks that lines select exactly the kept files. A path
// holding a line break can only be written with a wildcard, which matches
// other paths of the same shape too: a file may then be selected wrongly,
// in either direction, but only one that such a line matches (at its own
// level or a directory above), which callers detect by checking the
// checked-out set.
func checkSparse(t *testing.T, lines, files []string, keep []bool) {
	t.Helper()
	checkSparseShape(t, lines, files, keep)
	checkSparseSelects(t, lines, files, keep)
}

// checkSparseShape checks the two fixed answers: no lines when nothing is
// kept (git refuses to empty the work tree) and the one line "/*" when
// everything is. Lines that also keep write roots open are exempt: they
// select new files even where no listed file is kept.
func checkSparseShape(t *testing.T, lines, files []string, keep []bool) {
	t.Helper()
	kept := 0
	for _, k := range keep {
		if k {
			kept++
		}
	}
	switch {
	case kept == 0 && len(lines) != 0:
		t.Fatalf("nothing kept but lines %q", lines)
	case kept == len(files) && kept > 0 && !reflect.DeepEqual(lines, []string{"/*"}):
		t.Fatalf("everything kept but lines %q", lines)
	}
}

// checkSparseSelects checks that lines select exactly the kept files among
// files, up to the wildcard lines checkSparse describes.
func checkSparseSelects(t *testing.T, lines, files []string, keep []bool) {
	t.Helper()
	sel := sparseSelects(t, lines, files)
	var wild []sparseLine
	for _, line := range lines {
		if l, _ := parseSparseLine(line); slices.Contains(l.wild, true) {
			wild = append(wild, l)
		}
	}
	wildMatch := func(f string) bool {
		segs := strings.Split(f, "/")
		for n := len(segs); n >= 1; n-- {
			for _, l := range wild {
				if l.matches(strings.Join(segs[:n], "/"), n < len(segs)) {
					return true
				}
			}
		}
		return false
	}
	for i, f := range files {
		if keep[i] != sel[f] && !wildMatch(f) {
			t.Fatalf("lines %q select %q: %v, want %v (files %q, keep %v)", lines, f, sel[f], keep[i], files, keep)
		}
	}
}

func FuzzScope(f *testing.F) {
	seeds := []struct{ read, write, exclude, paths string }{
		{"", "src/**\x00tests/**\x00package.json", "**/*.env\x00**/secrets/**",
			"src/main.go\x00src/secrets/key\x00.env\x00config/prod.env\x00docs/a.md\x00package.json\x00tests/t.go"},
		{"a/**\x00**/#*\x00**/!*\x00st*r\x00sp ace/**", "a/b/**", "a/b/c/g\x00**/\\!c",
			"a/b/c/d.txt\x00a/#b/!c\x00st*r\x00sp ace/f\x00a/f\x00q?\x00trail \x00back\\slash"},
		{"src/**", "src/lib/**", "", "src/main.go\x00src/lib/x.go\x00docs/a.md"},
		{"", "{src,lib/x}/**\x00docs/", "src/gen/**", "lib/x/y\x00lib/y/z\x00docs/a\x00docs\x00src/gen/a"},
		{"/\x00./a/**", "a/*/c.txt\x00a/[bc]/d", "a/[!x]/e", "a/q/c.txt\x00a/b/d\x00a/x/e\x00a/y/e"},
		{"", "**", "**/.git/**\x00.agentmine/", "src/.git/hooks/post-checkout\x00.agentmine/memory/m.md\x00x"},
		{"", "src/**", "", "src/a\nb\x00src/a\rb\x00src/axb\x00src/ab"},
		{"", "src//a", "", "src/a"},
		{"{a,b", "x", "[z", "a\x00x"},
		{"", "../other/**", "", "other/x"},
	}
	for _, s := range seeds {
		f.Add(s.read, s.write, s.exclude, s.paths)
	}
	f.Fuzz(func(t *testing.T, read, write, exclude, paths string) {
		s := Spec{Read: splitList(read), Write: splitList(write), Exclude: splitList(exclude)}
		err := s.Validate()
		// Rejected consistently: Validate refuses exactly the specs with
		// no write pattern or with a pattern the matcher cannot use, with
		// a one-line configuration error.
		wantErr := len(s.Write) == 0
		for _, list := range [][]string{s.Read, s.Write, s.Exclude} {
			for _, p := range list {
				if _, nerr := normalize(p); nerr != nil {
					wantErr = true
				}
			}
		}
		if (err != nil) != wantErr {
			t.Fatalf("Validate(%q) = %v, want an error: %v", s, err, wantErr)
		}
		if err != nil {
			if exitcode.Of(err) != exitcode.Config {
				t.Fatalf("Validate(%q): exit code %d, want %d", s, exitcode.Of(err), exitcode.Config)
			}
			return
		}
		for _, list := range [][]string{s.Read, s.Write, s.Exclude} {
			for _, p := range list {
				n, _ := normalize(p)
				if !doublestar.ValidatePattern(n.glob) {
					t.Fatalf("pattern %q normalised to the invalid glob %q", p, n.glob)
				}
				// Normalising is idempotent: the glob is its own form.
				if again, err := normalize(n.glob); err != nil || again.glob != n.glob {
					t.Fatalf("normalize(%q) = %q, but normalize(%q) = %q, %v", p, n.glob, n.glob, again.glob, err)
				}
			}
		}

		sample := samplePaths(splitList(paths), s)
		all := s.ClassifyAll(sample)
		one := s.Classifier()
		rev := s.Classifier()
		for i := len(sample) - 1; i >= 0; i-- {
			if got := rev(sample[i]); got != all[i] {
				t.Fatalf("%q: classifier in reverse order says %v, ClassifyAll %v", sample[i], got, all[i])
			}
		}
		for i, p := range sample {
			want := naiveClassify(s, p)
			if all[i] != want {
				t.Fatalf("spec %q: ClassifyAll(%q) = %v, want %v", s, p, all[i], want)
			}
			if got := s.Classify(p); got != want {
				t.Fatalf("spec %q: Classify(%q) = %v, want %v", s, p, got, want)
			}
			if got := one(p); got != want {
				t.Fatalf("spec %q: Classifier()(%q) = %v, want %v", s, p, got, want)
			}
			if got := s.Classify("./" + p + "/"); got != want {
				t.Fatalf("spec %q: Classify(./%s/) = %v, want %v as without the dot and slash", s, p, got, want)
			}
			// Every directory above a writable path must stay writable,
			// or the worker could not create the file.
			if want == Writable {
				for d := parentOf(p); ; d = parentOf(d) {
					if !s.DirWritable(d) {
						t.Fatalf("spec %q: %q is writable but DirWritable(%q) is false", s, p, d)
					}
					if d == "" {
						break
					}
				}
			}
		}

		// The sparse-checkout lines select exactly what the matcher keeps.
		files := fileTree(sample)
		keep := make([]bool, len(files))
		for i, a := range s.ClassifyAll(files) {
			keep[i] = a != Absent
		}
		checkSparse(t, SparsePatterns(files, keep), files, keep)
		// With the write roots kept open the listed files are still
		// selected exactly, even when none is kept ("/*" then opens the
		// top for new files and drops each directory again).
		checkSparseSelects(t, s.SparsePatterns(files), files, keep)
	})
}

func FuzzSparsePatterns(f *testing.F) {
	f.Add("a/x\x00a/y\x00b/z\x00c", []byte{1, 0, 1, 1})
	f.Add("#h\x00!b\x00s*r\x00b[a]\x00q?\x00t \x00x\\y\x00keep\x00k1\x00k2", []byte{1, 1, 1, 0, 0, 0, 0, 1, 1, 1})
	f.Add("d/a\x00d/b\x00d/c\x00d/e/f\x00d/e/g\x00d/e/h\x00z", []byte{1, 1, 1, 0, 1, 1, 0})
	f.Add("a\nb\x00a?b\x00axb\x00sp /x\x00sp  ", []byte{1, 0, 0, 1, 0})
	f.Add("x/\\\x00x/\\\\/y\x00tr /a ", []byte{0, 1, 1})
	f.Fuzz(func(t *testing.T, paths string, bits []byte) {
		var raw []string
		for _, p := range splitList(paths) {
			if gitPath(p) && len(raw) < maxFuzzPaths {
				raw = append(raw, p)
			}
		}
		sort.Strings(raw)
		files := fileTree(slicesCompact(raw))
		keep := make([]bool, len(files))
		for i := range files {
			keep[i] = i < len(bits) && bits[i]&1 == 1
		}
		lines := SparsePatterns(files, keep)
		checkSparse(t, lines, files, keep)
		// Input order does not matter.
		rf := make([]string, len(files))
		rk := make([]bool, len(files))
		for i := range files {
			rf[len(files)-1-i], rk[len(files)-1-i] = files[i], keep[i]
		}
		if again := SparsePatterns(rf, rk); !reflect.DeepEqual(again, lines) {
			t.Fatalf("reversed input gives %q, not %q", again, lines)
		}
	})
}

func slicesCompact(sorted []string) []string {
	out := sorted[:0]
	for i, s := range sorted {
		if i == 0 || s != sorted[i-1] {
			out = append(out, s)
		}
	}
	return out
}

// TestSparseReferenceAgreesWithGit keeps the fuzz targets' reading of
// sparse-checkout lines honest: on random selections of the tricky files it
// must keep what git itself keeps.
func TestSparseReferenceAgreesWithGit(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: thirty real checkouts")
	}
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
	rng := rand.New(rand.NewSource(7))
	for round := 0; round < 30; round++ {
		keep := make([]bool, len(files))
		density := rng.Float64()
		some := false
		for i := range keep {
			keep[i] = rng.Float64() < density
			some = some || keep[i]
		}
		if !some {
			continue
		}
		lines := SparsePatterns(files, keep)
		got := checkout(t, ctx, dir, lines)
		sel := sparseSelects(t, lines, files)
		var ref []string
		for f, ok := range sel {
			if ok {
				ref = append(ref, f)
			}
		}
		sort.Strings(ref)
		if !reflect.DeepEqual(got, ref) {
			t.Fatalf("lines %q: git keeps %q, the fuzz targets' reference %q", lines, got, ref)
		}
	}
}
