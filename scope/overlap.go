package scope

import (
	"strings"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"
)

// CheckPattern checks one path pattern as a scope list would take it
// (repository-relative doublestar glob; "docs" covers "docs/a.md") and
// returns why it cannot be used, nil when it can.
func CheckPattern(p string) error {
	_, err := normalize(p)
	return err
}

// Overlap reports whether some repository path could be covered by both
// patterns, with the meaning a scope list gives them: a pattern covers the
// paths it matches and everything beneath them. It is conservative: when it
// cannot decide (a character class that may hold "/", a brace expansion
// too large, two wildcard segments whose literal ends agree) it answers
// true, so that two tasks it calls disjoint never touch the same path.
// A pattern that does not validate overlaps everything.
func Overlap(a, b string) bool {
	pa, err := normalize(a)
	if err != nil {
		return true
	}
	pb, err := normalize(b)
	if err != nil {
		return true
	}
	as, ok := alternatives(pa.glob)
	if !ok {
		return true
	}
	bs, ok := alternatives(pb.glob)
	if !ok {
		return true
	}
	for _, x := range as {
		for _, y := range bs {
			if segmentsOverlap(x, y) {
				return true
			}
		}
	}
	return false
}

// FirstOverlap returns the first pair of patterns, one of a and one of b,
// that overlap (Overlap), and whether there is one.
func FirstOverlap(a, b []string) (string, string, bool) {
	for _, x := range a {
		for _, y := range b {
			if Overlap(x, y) {
				return x, y, true
			}
		}
	}
	return "", "", false
}

// alternatives expands a glob's braces and splits each alternative into
// segments, with a final "**" for the paths beneath what it matches. It
// reports false when that cannot be done soundly.
func alternatives(glob string) ([][]string, bool) {
	alts, ok := expandBraces(glob, maxAlternatives)
	if !ok {
		return nil, false
	}
	if (len(alts) > 1 || alts[0] != glob) && !utf8.ValidString(glob) {
		// The matcher reads an invalid byte as U+FFFD where it stands,
		// but joining around a brace can make two such bytes one valid
		// character ("\xd1{}\xa8" matches "\x81\x81", "\xd1\xa8" does not).
		return nil, false
	}
	out := make([][]string, 0, len(alts))
	for _, a := range alts {
		segs, ok := globSegments(a)
		if !ok {
			return nil, false
		}
		for i, s := range segs {
			if s != "**" {
				segs[i] = collapseStars(s)
			}
		}
		out = append(out, append(segs, "**"))
	}
	return out, true
}

// segmentsOverlap reports whether some path matches both segment lists,
// where "**" stands for any number of segments (none included).
func segmentsOverlap(a, b []string) bool {
	memo := make(map[[2]int]bool)
	var walk func(i, j int) bool
	walk = func(i, j int) bool {
		key := [2]int{i, j}
		if v, ok := memo[key]; ok {
			return v
		}
		var r bool
		switch {
		case i == len(a) && j == len(b):
			r = true
		case i < len(a) && a[i] == "**":
			// Either "**" ends here, or it takes the next segment of b
			// (any segment b's element can match).
			r = walk(i+1, j) || j < len(b) && walk(i, j+1)
		case j < len(b) && b[j] == "**":
			r = walk(i, j+1) || i < len(a) && walk(i+1, j)
		case i == len(a) || j == len(b):
			r = false
		default:
			r = segmentOverlap(a[i], b[j]) && walk(i+1, j+1)
		}
		memo[key] = r
		return r
	}
	return walk(0, 0)
}

// segmentOverlap reports whether some single path segment could match
// both segment globs. Two wildcard segments overlap unless their literal
// starts or ends differ ("a*" and "b*", "*.go" and "*.md" do not).
func segmentOverlap(x, y string) bool {
	if x == y {
		return true
	}
	xl, yl := !strings.ContainsAny(x, globMeta), !strings.ContainsAny(y, globMeta)
	switch {
	case xl && yl:
		// The matcher reads an invalid UTF-8 byte as U+FFFD: "\x80"
		// matches "\xb0". Ask it rather than compare bytes.
		return doublestar.MatchUnvalidated(x, y)
	case !utf8.ValidString(x) || !utf8.ValidString(y):
		return true // the literal ends below compare bytes, the matcher runes
	case xl:
		return doublestar.MatchUnvalidated(y, x)
	case yl:
		return doublestar.MatchUnvalidated(x, y)
	}
	px, py := literalHead(x), literalHead(y)
	if !strings.HasPrefix(px, py) && !strings.HasPrefix(py, px) {
		return false
	}
	sx, sy := literalTail(x), literalTail(y)
	if !strings.HasSuffix(sx, sy) && !strings.HasSuffix(sy, sx) {
		return false
	}
	return true
}

// literalHead is the part of a segment glob before its first special
// character: every match starts with it.
func literalHead(seg string) string {
	if i := strings.IndexAny(seg, globMeta); i >= 0 {
		return seg[:i]
	}
	return seg
}

// literalTail is the part of a segment glob after its last special
// character: every match ends with it.
func literalTail(seg string) string {
	if i := strings.LastIndexAny(seg, globMeta); i >= 0 {
		return seg[i+1:]
	}
	return seg
}
