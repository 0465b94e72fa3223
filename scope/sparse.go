package scope

import (
	"sort"
	"strings"
)

// SparsePatterns returns non-cone sparse-checkout lines that check out
// exactly the files of the list whose Classify result is not Absent. files
// must hold every path of the tree being checked out (blobs, symlinks and
// gitlinks, as `git ls-tree -r` prints them).
func (s Spec) SparsePatterns(files []string) []string {
	acc := s.ClassifyAll(files)
	keep := make([]bool, len(files))
	for i, a := range acc {
		keep[i] = a != Absent
	}
	return SparsePatterns(files, keep)
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
	root := &node{children: map[string]*node{}}
	for i, f := range files {
		f = cleanPath(f)
		if f == "" {
			continue
		}
		n := root
		for _, seg := range strings.Split(f, "/") {
			c := n.children[seg]
			if c == nil {
				c = &node{children: map[string]*node{}}
				n.children[seg] = c
			}
			n = c
		}
		n.leaf = true
		n.kept = i < len(keep) && keep[i]
	}
	root.measure()
	switch root.state {
	case none:
		return []string{}
	case full:
		return []string{"/*"}
	}
	var out []string
	root.emit(&out, "", true)
	return out
}

type fill int

const (
	none fill = iota
	full
	mixed
)

type node struct {
	children map[string]*node
	names    []string // sorted child names
	leaf     bool
	kept     bool
	state    fill
	// For a mixed directory: the number of lines needed to select its kept
	// paths when everything beneath it is dropped by default (pos) and to
	// drop its unwanted paths when everything is kept by default (neg),
	// either listing children directly or switching the default with one
	// directory line.
	sumPos, sumNeg int
}

func (n *node) pos() int { return min(n.sumPos, 1+n.sumNeg) }
func (n *node) neg() int { return min(n.sumNeg, 1+n.sumPos) }

func (n *node) measure() {
	if n.leaf && len(n.children) == 0 {
		if n.kept {
			n.state = full
		} else {
			n.state = none
		}
		return
	}
	n.names = make([]string, 0, len(n.children))
	sawFull, sawNone := false, false
	for name, c := range n.children {
		n.names = append(n.names, name)
		c.measure()
		switch c.state {
		case full:
			sawFull = true
			n.sumPos++
		case none:
			sawNone = true
			n.sumNeg++
		case mixed:
			sawFull, sawNone = true, true
			n.sumPos += c.pos()
			n.sumNeg += c.neg()
		}
	}
	sort.Strings(n.names)
	switch {
	case sawFull && sawNone:
		n.state = mixed
	case sawFull:
		n.state = full
	default:
		n.state = none
	}
}

// emit appends the lines for a mixed directory n at path p ("" for the
// root). positive says whether the default beneath n is "dropped" (true)
// or "kept" (false).
func (n *node) emit(out *[]string, p string, positive bool) {
	if positive {
		if n.sumPos <= 1+n.sumNeg {
			n.emitChildren(out, p, true)
			return
		}
		*out = append(*out, dirLine(p, false))
		n.emitChildren(out, p, false)
		return
	}
	if n.sumNeg <= 1+n.sumPos {
		n.emitChildren(out, p, false)
		return
	}
	*out = append(*out, dirLine(p, true))
	n.emitChildren(out, p, true)
}

// emitChildren lists n's children under the given default: with
// positive, the fully kept ones are selected; without, the fully dropped
// ones are negated. Mixed children recurse.
func (n *node) emitChildren(out *[]string, p string, positive bool) {
	for _, name := range n.names {
		c := n.children[name]
		cp := name
		if p != "" {
			cp = p + "/" + name
		}
		switch {
		case c.state == mixed:
			c.emit(out, cp, positive)
		case positive && c.state == full, !positive && c.state == none:
			line := "/" + escapePath(cp)
			if !c.leaf || len(c.children) > 0 {
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
