package scope

import (
	"slices"
	"strings"
)

// SparsePatterns returns non-cone sparse-checkout lines that check out
// exactly the files of the list whose Classify result is not Absent, and
// that let the worker add new files anywhere its write scope can reach
// (WriteRoots). files must hold every path of the tree being checked out
// (blobs, symlinks and gitlinks, as `git ls-tree -r` prints them).
func (s Spec) SparsePatterns(files []string) []string {
	acc := s.ClassifyAll(files)
	keep := make([]bool, len(files))
	for i, a := range acc {
		keep[i] = a != Absent
	}
	return SparsePatternsWithRoots(files, keep, s.WriteRoots())
}

// WriteRoots returns where new files of the write scope can appear, as
// repository-relative paths: for each write glob, the literal directories
// it starts with ("src" for "src/**/*.go", "" for "*.go"), or the whole
// path when the glob is literal. Roots the exclude list covers entirely
// are left out, except the top level (""), which stays even when every
// path is excluded: nothing there is writable then, and the diff check
// still judges what a worker adds. A root beneath another one is left out
// too. Sparse
// patterns must keep every root open, or `git add` refuses a new file in
// a directory the base does not hold yet.
func (s Spec) WriteRoots() []string {
	var roots []string
	for _, p := range s.compile().write {
		alts, ok := expandBraces(p.glob, maxAlternatives)
		if !ok {
			alts = []string{"**"}
		}
		for _, a := range alts {
			roots = append(roots, literalPrefix(a))
		}
	}
	slices.Sort(roots)
	roots = slices.Compact(roots)
	var out []string
	for _, r := range roots {
		if r != "" && s.Classify(r) != Writable && !s.DirWritable(r) {
			continue
		}
		if n := len(out); n > 0 && (out[n-1] == "" || strings.HasPrefix(r, out[n-1]+"/")) {
			continue
		}
		out = append(out, r)
	}
	return out
}

// literalPrefix is the leading segments of glob that hold no glob
// character, joined; the whole glob when it is literal.
func literalPrefix(glob string) string {
	segs, ok := globSegments(glob)
	if !ok {
		return ""
	}
	n := 0
	for n < len(segs) && segs[n] != "" && !strings.ContainsAny(segs[n], globMeta) {
		n++
	}
	return strings.Join(segs[:n], "/")
}

// SparsePatterns returns non-cone sparse-checkout lines that select exactly
// files[i] for which keep[i] is true, out of the complete file list of a
// tree. Scope globs are not translated into gitignore syntax (the two
// disagree on many patterns); instead every line is a literal, escaped path
// anchored at the root, and the list is compressed by directory: a fully
// kept tree is "/*", a fully kept directory is "/dir/", and a mixed
// directory is written either as its kept entries or as "/dir/" followed by
// "!" lines for its dropped entries, whichever takes fewer lines. Later
// lines override earlier ones for the paths beneath them, which git's
// sparse-checkout honours (unlike .gitignore, it re-includes paths inside a
// negated directory).
//
// The lines describe this tree only: a file that arrives later (through a
// merge or checkout) is kept or dropped according to the nearest line that
// covers its directory, so it is not classified by the scope globs. Paths
// holding a newline or carriage return cannot be written literally; those
// characters become "?" (any character), so the line also matches other
// paths of the same shape and may select them or, negated, drop them:
// callers must check the checked-out set.
func SparsePatterns(files []string, keep []bool) []string {
	return SparsePatternsWithRoots(files, keep, nil)
}

// SparsePatternsWithRoots is SparsePatterns whose lines also select every
// path beneath each of roots (repository-relative, "" for the whole
// tree) that the file list does not hold: a new file there is inside the
// sparse-checkout definition, while the listed files stay selected
// exactly as keep says. A root that is a listed file changes nothing.
func SparsePatternsWithRoots(files []string, keep []bool, roots []string) []string {
	t := newSparseTree()
	for i, f := range files {
		f = cleanPath(f)
		if f == "" {
			continue
		}
		parent, name := "", f
		if j := strings.LastIndexByte(f, '/'); j >= 0 {
			parent, name = f[:j], f[j+1:]
		}
		d := t.dir(parent)
		t.dirs[d].kids = append(t.dirs[d].kids, sparseKid{name: name, dir: -1, kept: i < len(keep) && keep[i]})
	}
	t.settle()
	root := &t.dirs[0]
	t.measure(0)
	out := []string{}
	switch root.state {
	case full:
		return []string{"/*"}
	case mixed:
		if !slices.Contains(roots, "") { // "/*" below replaces these
			t.emit(&out, 0, true)
		}
	}
	for _, r := range roots {
		out = t.openRoot(out, cleanPath(r), slices.Contains(files, r))
	}
	return out
}

// openRoot appends the lines that select everything new beneath the path
// r and then drop again what the tree holds there and does not keep.
// isFile says r is a listed file, which is selected or not already.
func (t *sparseTree) openRoot(out []string, r string, isFile bool) []string {
	if isFile {
		return out
	}
	d, ok := t.index[r]
	if !ok {
		// Not in the tree: nothing there to drop again. A literal path
		// may name a file or a directory; the line without a trailing
		// "/" selects either.
		return append(out, escapeTrailingSpaces("/"+escapePath(r)))
	}
	if t.dirs[d].state == full && r != "" {
		return out
	}
	out = append(out, dirLine(r, false))
	t.emitChildren(&out, d, false)
	return out
}

type fill int

const (
	none fill = iota
	full
	mixed
)

// sparseTree is the directories of a file list, each holding its files
// and subdirectories by name. Only directories are looked up by path;
// files are appended to their directory, so a large list costs one small
// record per file.
type sparseTree struct {
	dirs  []sparseDir
	index map[string]int32
}

type sparseDir struct {
	path  string // "" for the root
	kids  []sparseKid
	state fill
	// For a mixed directory: the number of lines needed to select its kept
	// paths when everything beneath it is dropped by default (pos) and to
	// drop its unwanted paths when everything is kept by default (neg),
	// either listing children directly or switching the default with one
	// directory line.
	sumPos, sumNeg int
}

// sparseKid is a file (dir < 0) or a subdirectory of a sparseDir.
type sparseKid struct {
	name string
	dir  int32
	kept bool // for a file
}

func newSparseTree() *sparseTree {
	return &sparseTree{dirs: []sparseDir{{}}, index: map[string]int32{"": 0}}
}

// dir returns the index of the directory p, adding it and its parents.
func (t *sparseTree) dir(p string) int32 {
	if i, ok := t.index[p]; ok {
		return i
	}
	parent, name := "", p
	if j := strings.LastIndexByte(p, '/'); j >= 0 {
		parent, name = p[:j], p[j+1:]
	}
	pi := t.dir(parent)
	i := int32(len(t.dirs))
	t.dirs = append(t.dirs, sparseDir{path: p})
	t.dirs[pi].kids = append(t.dirs[pi].kids, sparseKid{name: name, dir: i})
	t.index[p] = i
	return i
}

// settle sorts every directory's children by name and merges the ones
// that share a name: a path listed twice counts as its last listing, and
// a name that is both a file and a directory is the directory.
func (t *sparseTree) settle() {
	for d := range t.dirs {
		kids := t.dirs[d].kids
		slices.SortStableFunc(kids, func(a, b sparseKid) int { return strings.Compare(a.name, b.name) })
		out := kids[:0]
		for _, k := range kids {
			if n := len(out); n > 0 && out[n-1].name == k.name {
				if out[n-1].dir < 0 {
					out[n-1] = k
				}
				continue
			}
			out = append(out, k)
		}
		t.dirs[d].kids = out
	}
}

func (d *sparseDir) pos() int { return min(d.sumPos, 1+d.sumNeg) }
func (d *sparseDir) neg() int { return min(d.sumNeg, 1+d.sumPos) }

// kidState is the fill of a child, measured.
func (t *sparseTree) kidState(k sparseKid) fill {
	switch {
	case k.dir >= 0:
		return t.dirs[k.dir].state
	case k.kept:
		return full
	}
	return none
}

func (t *sparseTree) measure(d int32) {
	sawFull, sawNone := false, false
	for _, k := range t.dirs[d].kids {
		if k.dir >= 0 {
			t.measure(k.dir)
		}
		n := &t.dirs[d]
		switch t.kidState(k) {
		case full:
			sawFull = true
			n.sumPos++
		case none:
			sawNone = true
			n.sumNeg++
		case mixed:
			sawFull, sawNone = true, true
			n.sumPos += t.dirs[k.dir].pos()
			n.sumNeg += t.dirs[k.dir].neg()
		}
	}
	n := &t.dirs[d]
	switch {
	case sawFull && sawNone:
		n.state = mixed
	case sawFull:
		n.state = full
	default:
		n.state = none
	}
}

// emit appends the lines for the mixed directory d. positive says whether
// the default beneath it is "dropped" (true) or "kept" (false).
func (t *sparseTree) emit(out *[]string, d int32, positive bool) {
	n := &t.dirs[d]
	if positive {
		if n.sumPos <= 1+n.sumNeg {
			t.emitChildren(out, d, true)
			return
		}
		*out = append(*out, dirLine(n.path, false))
		t.emitChildren(out, d, false)
		return
	}
	if n.sumNeg <= 1+n.sumPos {
		t.emitChildren(out, d, false)
		return
	}
	*out = append(*out, dirLine(n.path, true))
	t.emitChildren(out, d, true)
}

// emitChildren lists d's children under the given default: with
// positive, the fully kept ones are selected; without, the fully dropped
// ones are negated. Mixed children recurse.
func (t *sparseTree) emitChildren(out *[]string, d int32, positive bool) {
	p := t.dirs[d].path
	for _, k := range t.dirs[d].kids {
		switch st := t.kidState(k); {
		case st == mixed:
			t.emit(out, k.dir, positive)
		case positive && st == full, !positive && st == none:
			cp := k.name
			if p != "" {
				cp = p + "/" + k.name
			}
			line := "/" + escapePath(cp)
			if k.dir >= 0 {
				line += "/"
			}
			if !positive {
				line = "!" + line
			}
			*out = append(*out, escapeTrailingSpaces(line))
		}
	}
}

// dirLine is the line that keeps (or, negated, drops) everything beneath
// the directory p; for the root it is "/*".
func dirLine(p string, negate bool) string {
	line := "/*"
	if p != "" {
		line = "/" + escapePath(p) + "/"
	}
	if negate {
		line = "!" + line
	}
	return line
}

// escapePath makes a path literal in gitignore syntax.
func escapePath(p string) string {
	var b strings.Builder
	b.Grow(len(p) + 4)
	for i := 0; i < len(p); i++ {
		switch ch := p[i]; ch {
		case '\\', '*', '?', '[':
			b.WriteByte('\\')
			b.WriteByte(ch)
		case '\n', '\r':
			b.WriteByte('?')
		default:
			b.WriteByte(ch)
		}
	}
	return b.String()
}

// escapeTrailingSpaces protects trailing spaces, which git strips from
// unescaped pattern lines.
func escapeTrailingSpaces(line string) string {
	trimmed := strings.TrimRight(line, " ")
	if len(trimmed) == len(line) {
		return line
	}
	return trimmed + strings.Repeat(`\ `, len(line)-len(trimmed))
}
