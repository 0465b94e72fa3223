// Package scope owns the meaning of an agent's file scope: the read, write
// and exclude glob lists of an agent definition, how a repository path is
// classified against them (absent, read-only or writable), which directories
// must stay writable, and the translation of a classified file list into
// literal non-cone sparse-checkout patterns. It is pure: it never runs git
// and never touches the file system.
//
// Patterns are doublestar globs (github.com/bmatcuk/doublestar/v4) matched
// against slash-separated, repository-relative paths. A pattern that matches
// a directory covers everything beneath it, so "docs" covers "docs/a.md".
// A leading "/" or "./" is ignored (every pattern is anchored at the
// repository root anyway); a trailing "/" restricts the pattern to
// directories. Precedence is exclude > write > read; read defaults to "**".
package scope

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/git-agentmine/git-agentmine/exitcode"
)

// Spec is the [scope] table of an agent definition.
type Spec struct {
	// Read lists the paths the worker may see; empty means everything ("**").
	Read []string `toml:"read" json:"read,omitempty"`
	// Write lists the paths the worker may change. It must not be empty.
	Write []string `toml:"write" json:"write"`
	// Exclude lists the paths the worker must never see. It wins over both
	// Read and Write.
	Exclude []string `toml:"exclude" json:"exclude,omitempty"`
}

// Access is what a scope allows a worker to do with one path.
type Access int

// The possible accesses, weakest first.
const (
	// Absent paths are not checked out and must not be created.
	Absent Access = iota
	// ReadOnly paths are checked out and made read-only.
	ReadOnly
	// Writable paths are checked out and may be changed, created or deleted.
	Writable
)

// String returns the lowercase name of the access ("absent", "read-only",
// "writable").
func (a Access) String() string {
	switch a {
	case Absent:
		return "absent"
	case ReadOnly:
		return "read-only"
	case Writable:
		return "writable"
	}
	return fmt.Sprintf("access(%d)", int(a))
}

// pattern is one normalised scope glob.
type pattern struct {
	glob    string // doublestar glob without leading "/" or trailing "/"
	dirOnly bool   // the original ended in "/": it matches directories only
	// shape, set when the pattern is compiled, lets match answer common
	// globs without the general matcher; tail is what it compares.
	shape shape
	tail  string
}

// shape is a form of glob that match answers directly.
type shape int

const (
	shapeGlob    shape = iota // anything else: doublestar decides
	shapeLiteral              // no special character: the path itself
	shapeBase                 // "**/" and one segment: the path's last segment matches tail
	shapeSegment              // "**/" + a plain segment + "/**": some segment is tail
)

// globMeta are the characters that make a glob more than a literal path.
const globMeta = "*?[]{}\\"

// shapeOf recognises the globs match can answer without doublestar: only
// ASCII ones, as doublestar compares runes and reads an invalid byte of a
// path as U+FFFD.
func shapeOf(glob string) (shape, string) {
	for i := 0; i < len(glob); i++ {
		if glob[i] >= utf8.RuneSelf {
			return shapeGlob, ""
		}
	}
	if !strings.ContainsAny(glob, globMeta) {
		return shapeLiteral, glob
	}
	rest, ok := strings.CutPrefix(glob, "**/")
	if !ok || rest == "" {
		return shapeGlob, ""
	}
	if seg, ok := strings.CutSuffix(rest, "/**"); ok && seg != "" && !strings.ContainsAny(seg, globMeta+"/") {
		return shapeSegment, seg
	}
	if !strings.Contains(rest, "/") && !strings.Contains(rest, "**") && !strings.Contains(rest, "\\") {
		return shapeBase, rest
	}
	return shapeGlob, ""
}

// match reports whether the pattern matches path, as doublestar would.
func (p pattern) match(path string) bool {
	switch p.shape {
	case shapeLiteral:
		return path == p.tail
	case shapeBase:
		return doublestar.MatchUnvalidated(p.tail, path[strings.LastIndexByte(path, '/')+1:])
	case shapeSegment:
		for seg := range strings.SplitSeq(path, "/") {
			if seg == p.tail {
				return true
			}
		}
		return false
	}
	return doublestar.MatchUnvalidated(p.glob, path)
}

// normalize turns a user pattern into its matching form, or returns an
// error explaining why it cannot be used.
func normalize(p string) (pattern, error) {
	q := p
	for {
		switch {
		case strings.HasPrefix(q, "./"):
			q = q[2:]
			continue
		case strings.HasPrefix(q, "/"):
			q = q[1:]
			continue
		}
		break
	}
	dirOnly := false
	for strings.HasSuffix(q, "/") {
		dirOnly = true
		q = strings.TrimSuffix(q, "/")
	}
	if q == "" || q == "." {
		if p == "" {
			return pattern{}, errors.New("empty pattern")
		}
		// "/" or "./" name the repository root: everything.
		return pattern{glob: "**"}, nil
	}
	for _, seg := range strings.Split(q, "/") {
		if seg == "" {
			return pattern{}, errors.New("empty path segment")
		}
		if seg == "." || seg == ".." {
			return pattern{}, fmt.Errorf("%q segment: patterns are repository-relative", seg)
		}
	}
	if !doublestar.ValidatePattern(q) {
		return pattern{}, errors.New("not a valid glob")
	}
	return pattern{glob: q, dirOnly: dirOnly}, nil
}

// Validate checks every pattern and that write access is explicit. Its
// errors carry exitcode.Config and name the offending pattern.
func (s Spec) Validate() error {
	if len(s.Write) == 0 {
		return exitcode.New(exitcode.Config,
			errors.New("scope: write must be explicit: the agent's [scope] table has no write patterns"),
			`add write = ["<glob>", ...] to the agent's [scope] table`)
	}
	lists := []struct {
		name string
		pats []string
	}{{"read", s.Read}, {"write", s.Write}, {"exclude", s.Exclude}}
	for _, l := range lists {
		for _, p := range l.pats {
			if _, err := normalize(p); err != nil {
				return exitcode.New(exitcode.Config,
					fmt.Errorf("scope: invalid %s pattern %q: %w", l.name, p, err),
					"scope patterns are doublestar globs relative to the repository root, e.g. src/** or **/*.env")
			}
		}
	}
	return nil
}

// compiled is a Spec with its patterns normalised. Invalid patterns are
// dropped: callers validate first.
type compiled struct {
	read, write, exclude []pattern
}

func compileList(ps []string) []pattern {
	out := make([]pattern, 0, len(ps))
	for _, p := range ps {
		if n, err := normalize(p); err == nil {
			n.shape, n.tail = shapeOf(n.glob)
			out = append(out, n)
		}
	}
	return out
}

func (s Spec) compile() compiled {
	read := s.Read
	if len(read) == 0 {
		read = []string{"**"}
	}
	return compiled{read: compileList(read), write: compileList(s.Write), exclude: compileList(s.Exclude)}
}

// matchSelf reports whether one of ps matches path itself, where isDir says
// whether path is a directory.
func matchSelf(ps []pattern, path string, isDir bool) bool {
	for _, p := range ps {
		if p.dirOnly && !isDir {
			continue
		}
		if p.match(path) {
			return true
		}
	}
	return false
}

// cover records which pattern lists cover a directory (match it or one of
// its ancestors).
type cover struct {
	read, write, exclude bool
}

// classifier classifies many paths, remembering per directory which lists
// cover it so that each path costs one match per pattern.
type classifier struct {
	c    compiled
	dirs map[string]cover
}

func newClassifier(s Spec) *classifier {
	return &classifier{c: s.compile(), dirs: map[string]cover{"": {}}}
}

func (k *classifier) dir(d string) cover {
	if cv, ok := k.dirs[d]; ok {
		return cv
	}
	parent := ""
	if i := strings.LastIndexByte(d, '/'); i >= 0 {
		parent = d[:i]
	}
	cv := k.dir(parent)
	cv.exclude = cv.exclude || matchSelf(k.c.exclude, d, true)
	cv.write = cv.write || matchSelf(k.c.write, d, true)
	cv.read = cv.read || matchSelf(k.c.read, d, true)
	k.dirs[d] = cv
	return cv
}

func parentOf(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i]
	}
	return ""
}

func (k *classifier) classify(path string) Access {
	path = cleanPath(path)
	if path == "" {
		return Absent
	}
	cv := k.dir(parentOf(path))
	switch {
	case cv.exclude || matchSelf(k.c.exclude, path, false):
		return Absent
	case cv.write || matchSelf(k.c.write, path, false):
		return Writable
	case cv.read || matchSelf(k.c.read, path, false):
		return ReadOnly
	}
	return Absent
}

// cleanPath trims what may surround a repository-relative path.
func cleanPath(p string) string {
	for strings.HasPrefix(p, "./") {
		p = p[2:]
	}
	return strings.Trim(p, "/")
}

// Classify returns the access the scope gives the file at path, a
// slash-separated repository-relative path. Call Validate first: invalid
// patterns are ignored here.
func (s Spec) Classify(path string) Access {
	return newClassifier(s).classify(path)
}

// ClassifyAll classifies many paths at once, faster than calling Classify
// for each. The result is parallel to paths.
func (s Spec) ClassifyAll(paths []string) []Access {
	k := newClassifier(s)
	out := make([]Access, len(paths))
	for i, p := range paths {
		out[i] = k.classify(p)
	}
	return out
}

// Classifier returns a function that classifies paths like Classify but
// remembers what it learnt about directories between calls, so that
// classifying many paths one at a time stays cheap. The function is not
// safe for concurrent use.
func (s Spec) Classifier() func(path string) Access {
	return newClassifier(s).classify
}

// DirWritable reports whether the directory dir (repository-relative, ""
// for the root) can hold a writable path, existing or new. Such directories
// must stay writable so that the worker can create, rename and delete files
// in its write scope; every other checked-out directory is made read-only.
// The answer errs on the side of writable when a pattern is too complex to
// decide (brace alternatives that contain "/").
func (s Spec) DirWritable(dir string) bool {
	dir = cleanPath(dir)
	c := s.compile()
	if dir != "" {
		k := &classifier{c: c, dirs: map[string]cover{"": {}}}
		cv := k.dir(dir)
		if cv.exclude {
			return false
		}
		if cv.write {
			return true
		}
	}
	var segs []string
	if dir != "" {
		segs = strings.Split(dir, "/")
	}
	for _, p := range c.write {
		if couldMatchBeneath(p.glob, segs) {
			return true
		}
	}
	return false
}

// maxAlternatives bounds brace expansion in couldMatchBeneath.
const maxAlternatives = 256

// couldMatchBeneath reports whether glob could match some path strictly
// beneath the directory whose segments are dir.
func couldMatchBeneath(glob string, dir []string) bool {
	alts, ok := expandBraces(glob, maxAlternatives)
	if !ok {
		return true
	}
	for _, a := range alts {
		segs, ok := globSegments(a)
		if !ok || prefixMatch(segs, dir) {
			return true
		}
	}
	return false
}

// globSegments splits a glob at its path separators: "/" and the escaped
// "\/", which matches the separator too. Other escapes stay in their
// segment. It reports false when a character class holds a "/" (such as
// "[/]"), which may or may not match a separator.
func globSegments(glob string) ([]string, bool) {
	var segs []string
	start := 0
	for i := 0; i < len(glob); i++ {
		switch {
		case glob[i] == '/':
			segs = append(segs, glob[start:i])
			start = i + 1
		case glob[i] == '\\' && i+1 < len(glob) && glob[i+1] == '/':
			segs = append(segs, glob[start:i])
			i++
			start = i + 1
		case glob[i] == '\\':
			i++
		case glob[i] == '[':
			j := i + 1
			for ; j < len(glob) && glob[j] != ']'; j++ {
				if glob[j] == '\\' {
					j++
				}
				if j < len(glob) && glob[j] == '/' {
					return nil, false
				}
			}
			i = j
		}
	}
	return append(segs, glob[start:]), true
}

func prefixMatch(segs, dir []string) bool {
	for {
		if len(segs) == 0 {
			// The pattern ends at dir or above it: it covers dir itself,
			// which the caller has already ruled out.
			return false
		}
		if segs[0] == "**" || len(dir) == 0 {
			return true
		}
		if !doublestar.MatchUnvalidated(collapseStars(segs[0]), dir[0]) {
			return false
		}
		segs, dir = segs[1:], dir[1:]
	}
}

// collapseStars turns every run of unescaped "*" in one segment of a glob
// into a single "*", which means the same there. doublestar does not match
// "0***" against "0" on its own although it matches "0***/0" against "0/0",
// so DirWritable would otherwise miss a directory of writable files.
func collapseStars(seg string) string {
	if !strings.Contains(seg, "**") {
		return seg
	}
	var b strings.Builder
	star := false // the last byte written is an unescaped "*"
	for i := 0; i < len(seg); i++ {
		switch c := seg[i]; {
		case c == '*':
			if !star {
				b.WriteByte(c)
			}
			star = true
			continue
		case c == '\\' && i+1 < len(seg):
			b.WriteString(seg[i : i+2])
			i++
		case c == '[' && strings.IndexByte(seg[i:], ']') > 0:
			j := strings.IndexByte(seg[i:], ']')
			b.WriteString(seg[i : i+j+1])
			i += j
		default:
			b.WriteByte(c)
		}
		star = false
	}
	return b.String()
}

// expandBraces expands doublestar brace alternatives ({a,b}) into plain
// globs. It reports false when the expansion would exceed limit.
func expandBraces(glob string, limit int) ([]string, bool) {
	open := -1
	for i := 0; i < len(glob); i++ {
		if glob[i] == '\\' {
			i++
			continue
		}
		if glob[i] == '{' {
			open = i
			break
		}
	}
	if open < 0 {
		return []string{glob}, true
	}
	depth := 0
	var parts []string
	start := open + 1
	closeAt := -1
	for i := open; i < len(glob) && closeAt < 0; i++ {
		switch glob[i] {
		case '\\':
			i++
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				parts = append(parts, glob[start:i])
				closeAt = i
			}
		case ',':
			if depth == 1 {
				parts = append(parts, glob[start:i])
				start = i + 1
			}
		}
	}
	if closeAt < 0 {
		return []string{glob}, true
	}
	prefix, suffix := glob[:open], glob[closeAt+1:]
	var out []string
	for _, p := range parts {
		sub, ok := expandBraces(prefix+p+suffix, limit)
		if !ok || len(out)+len(sub) > limit {
			return nil, false
		}
		out = append(out, sub...)
	}
	return out, true
}
