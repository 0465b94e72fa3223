package verify

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Tree paths that git refuses to check out.
//
// A worker can write any tree it likes into the object store (git mktree,
// git hash-object) and commit it; git's index refuses such paths only when
// a checkout or an `add` reads them. Check therefore judges every committed
// path itself, with the rules git applies to a path before it lets it into
// the index, so that a tree the DoD cannot even check out, or one that
// writes into a .git directory when checked out on another file system, is
// named as what it is:
//
//   - no empty component (a leading, trailing or doubled "/"), and no "."
//     or ".." component;
//   - no component that is ".git" in any letter case, or that a
//     case-insensitive file system would take for ".git": on NTFS ".git"
//     followed by nothing but spaces and dots, the short name "git~1", and
//     either of them cut off at a ":" (an alternate data stream); on HFS+
//     ".git" with code points HFS+ ignores (zero-width joiners,
//     direction marks, the byte-order mark) anywhere in it;
//   - no symbolic link named .gitmodules, .gitattributes, .gitignore or
//     .mailmap, again in any spelling NTFS or HFS+ takes for them (short
//     names included): git reads these files from the work tree, so a
//     link makes it read a file outside the repository.
//
// Git checks the NTFS rules only up to a backslash; here every
// backslash-separated piece of a component is checked, which refuses a
// little more (a name such as `a\.git`) and nothing that a Windows checkout
// could hold.

// BadPath returns why git would refuse p (slash-separated, as in a tree)
// as a path, or "" when it would not; link says p is a symbolic link. The
// gated merge asks it of every path a session's commits change.
func BadPath(p string, link bool) string { return badPathReason(p, link) }

// badPathReason returns why git would refuse p (slash-separated, as in a
// tree) as a path, or "" when it would not. link says p is a symbolic link.
func badPathReason(p string, link bool) string {
	if p == "" {
		return "an empty path"
	}
	comps := strings.Split(p, "/")
	for i, c := range comps {
		switch {
		case c == "":
			return "an empty path component"
		case c == "." || c == "..":
			return "a " + c + " path component"
		case isDotGit(c):
			if c == ".git" {
				return "a .git path component"
			}
			return "a path component " + quoteName(c) + " that a checkout takes for .git"
		case link && i == len(comps)-1:
			if name := dotGitFile(c); name != "" {
				return "a symbolic link named " + quoteName(c) + ", which git reads as " + name
			}
		}
	}
	return ""
}

// quoteName quotes a path component for a reason; invisible code points
// show as escapes.
func quoteName(c string) string { return strconv.Quote(c) }

// isDotGit reports whether the path component c is .git, or something a
// case-insensitive (HFS+, NTFS) file system would take for it.
func isDotGit(c string) bool {
	if strings.EqualFold(c, ".git") || hfsFold(c) == ".git" {
		return true
	}
	for _, piece := range strings.Split(c, `\`) {
		if ntfsName(piece, ".git") || ntfsName(piece, "git~1") {
			return true
		}
	}
	return false
}

// dotGitFiles are the files git reads from the work tree that must not be
// symbolic links, with the prefix NTFS builds their hashed short names
// from.
var dotGitFiles = []struct{ name, short string }{
	{".gitmodules", "gi7eba"},
	{".gitattributes", "gi7d29"},
	{".gitignore", "gi250a"},
	{".mailmap", "maba30"},
}

// dotGitFile returns which of dotGitFiles the component c names, in any
// spelling HFS+ or NTFS takes for it, or "".
func dotGitFile(c string) string {
	folded := hfsFold(c)
	for _, f := range dotGitFiles {
		if folded == f.name {
			return f.name
		}
		for _, piece := range strings.Split(c, `\`) {
			if ntfsName(piece, f.name) || ntfsShortName(piece, f.name, f.short) {
				return f.name
			}
		}
	}
	return ""
}

// ntfsName reports whether NTFS would open name as want: the same letters
// in any case, then only spaces and dots (which NTFS drops), up to the end
// or a ":" that starts an alternate data stream.
func ntfsName(name, want string) bool {
	if len(name) < len(want) || !strings.EqualFold(name[:len(want)], want) {
		return false
	}
	return onlyDotsAndSpaces(name[len(want):])
}

// onlyDotsAndSpaces reports whether rest holds nothing but spaces and dots
// before its end or its first ":".
func onlyDotsAndSpaces(rest string) bool {
	if i := strings.IndexByte(rest, ':'); i >= 0 {
		rest = rest[:i]
	}
	return strings.Trim(rest, " .") == ""
}

// ntfsShortName reports whether name is an 8.3 short name NTFS may give to
// the dot file want: its first six letters after the dot and "~1" to "~4",
// or a prefix of the hashed form short followed by "~" and a number, the
// whole at most eight characters; then only spaces and dots as in ntfsName.
func ntfsShortName(name, want, short string) bool {
	stem := strings.TrimPrefix(want, ".")
	if len(stem) >= 6 && len(name) >= 8 && strings.EqualFold(name[:6], stem[:6]) &&
		name[6] == '~' && name[7] >= '1' && name[7] <= '4' {
		return onlyDotsAndSpaces(name[8:])
	}
	tilde := strings.IndexByte(name, '~')
	if tilde < 1 || tilde > 6 || !strings.EqualFold(name[:tilde], short[:tilde]) {
		return false
	}
	end := tilde + 1
	if end >= len(name) || name[end] < '1' || name[end] > '9' {
		return false
	}
	for end++; end < 8 && end < len(name) && name[end] >= '0' && name[end] <= '9'; end++ {
	}
	if end < 8 {
		// A short name fills all eight characters.
		return false
	}
	return onlyDotsAndSpaces(name[end:])
}

// hfsFold returns c as HFS+ compares it: code points it ignores removed,
// ASCII letters lowered. Invalid UTF-8 is returned unchanged (HFS+ would
// not accept it, and it cannot spell .git).
func hfsFold(c string) string {
	if !utf8.ValidString(c) {
		return c
	}
	var b strings.Builder
	for _, r := range c {
		if hfsIgnorable(r) {
			continue
		}
		if r >= 'A' && r <= 'Z' {
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// hfsIgnorable reports whether HFS+ ignores the code point r in names.
func hfsIgnorable(r rune) bool {
	switch {
	case r >= 0x200c && r <= 0x200f: // zero-width non-joiner, joiner; direction marks
		return true
	case r >= 0x202a && r <= 0x202e: // directional embeddings and overrides
		return true
	case r >= 0x206a && r <= 0x206f: // deprecated format characters
		return true
	case r == 0xfeff: // byte-order mark
		return true
	}
	return false
}
