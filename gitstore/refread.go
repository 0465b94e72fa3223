package gitstore

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Refs are listed in-process from git's files backend, the way git itself
// reads it: the loose ref files first, then packed-refs. That order is what
// keeps a concurrent `git pack-refs` (which writes packed-refs before it
// deletes the loose files) from hiding a ref: a loose file that vanished
// between the directory listing and its read is found in the packed-refs
// read after it. Every ref file is replaced by rename, never rewritten in
// place, so each read sees a whole value. Like for-each-ref, a listing is
// not one atomic snapshot of all refs at once; each ref is a value it had.
//
// Only what agentmine's own listings need is handled: patterns that are a
// ref name (matching it and the refs below it), a directory ending in "/",
// or a name ending in one "*". Anything else — another pattern, a symbolic
// or malformed loose ref, a name git would refuse, a reftable repository —
// answers "not here" and the caller asks `git for-each-ref`, so the answer
// is always git's.
//
// Why: each for-each-ref is a process (4–6 ms on a two-core virtual
// machine), and the board lists refs on every read; packed-refs is mapped
// rather than read, as with packs (see odb.go).

// errRefsNotHere means the listing must come from git.
var errRefsNotHere = errors.New("refs not listable in-process")

// refPattern is one for-each-ref pattern in the forms listRefs handles.
type refPattern struct {
	// prefix is what a matching name starts with.
	prefix string
	// exact is set for a plain ref name: the name itself, or names below
	// it (prefix + "/...").
	exact bool
	// star is set for a pattern ending in "*": as for-each-ref matches it
	// (wildmatch with WM_PATHNAME), the rest of the name after prefix holds
	// no "/".
	star bool
}

func parseRefPattern(p string) (refPattern, bool) {
	if !strings.HasPrefix(p, "refs/") || strings.ContainsAny(p, "?[\\") {
		return refPattern{}, false
	}
	switch {
	case strings.HasSuffix(p, "*"):
		pre := strings.TrimSuffix(p, "*")
		if strings.Contains(pre, "*") {
			return refPattern{}, false
		}
		return refPattern{prefix: pre, star: true}, true
	case strings.Contains(p, "*"):
		return refPattern{}, false
	case strings.HasSuffix(p, "/"):
		return refPattern{prefix: p}, true
	}
	return refPattern{prefix: p, exact: true}, true
}

func (rp refPattern) match(name string) bool {
	switch {
	case rp.exact:
		return name == rp.prefix || strings.HasPrefix(name, rp.prefix+"/")
	case rp.star:
		return strings.HasPrefix(name, rp.prefix) && !strings.Contains(name[len(rp.prefix):], "/")
	}
	return strings.HasPrefix(name, rp.prefix)
}

// dir is the directory under which every loose ref the pattern matches
// lives.
func (rp refPattern) dir() string {
	if rp.exact {
		return rp.prefix
	}
	return rp.prefix[:strings.LastIndex(rp.prefix, "/")+1]
}

// listRefs lists the refs matching patterns from the common git dir, sorted
// by name, with the object each points at, as `git for-each-ref
// --format='%(objectname) %(refname)'` would; errRefsNotHere when git must
// answer. have, when not nil, tells whether a loose ref's object exists:
// for-each-ref leaves out a ref whose object is missing, and a loose ref is
// where a broken or planted value shows up (packed refs were written by
// git's pack-refs from refs it could read). pm, when not nil, keeps
// packed-refs mapped between listings (packedMap).
func listRefs(commonDir string, hexLen int, patterns []string, have func(id string) bool, pm *packedMap) (refs, ids []string, err error) {
	pats := make([]refPattern, 0, len(patterns))
	for _, p := range patterns {
		rp, ok := parseRefPattern(p)
		if !ok {
			return nil, nil, errRefsNotHere
		}
		pats = append(pats, rp)
	}
	if _, err := os.Stat(filepath.Join(commonDir, "reftable")); err == nil {
		return nil, nil, errRefsNotHere
	}
	loose := map[string]string{}
	for _, rp := range pats {
		if err := readLooseRefs(commonDir, rp, hexLen, loose); err != nil {
			return nil, nil, err
		}
	}
	if have != nil {
		for _, id := range loose {
			if !have(id) {
				return nil, nil, errRefsNotHere
			}
		}
	}
	prefs, pids, err := readPackedRefs(commonDir, hexLen, pats, pm)
	if err != nil {
		return nil, nil, err
	}
	// Merge the two sorted lists; a loose ref overrides its packed value.
	names := make([]string, 0, len(loose))
	for name := range loose {
		names = append(names, name)
	}
	sort.Strings(names)
	refs = make([]string, 0, len(prefs)+len(names))
	ids = make([]string, 0, len(prefs)+len(names))
	i, j := 0, 0
	for i < len(prefs) || j < len(names) {
		switch {
		case j == len(names) || i < len(prefs) && prefs[i] < names[j]:
			refs, ids = append(refs, prefs[i]), append(ids, pids[i])
			i++
		default:
			if i < len(prefs) && prefs[i] == names[j] {
				i++
			}
			refs, ids = append(refs, names[j]), append(ids, loose[names[j]])
			j++
		}
	}
	return refs, ids, nil
}

// readLooseRefs adds the loose refs the pattern matches to out.
func readLooseRefs(commonDir string, rp refPattern, hexLen int, out map[string]string) error {
	dir := rp.dir()
	if rp.exact {
		// The name itself may be a file (the ref) or a directory (refs
		// below it).
		fi, err := os.Lstat(filepath.Join(commonDir, dir))
		switch {
		case err != nil:
			return nil
		case fi.Mode().IsRegular():
			return readLooseRef(commonDir, dir, hexLen, out)
		case !fi.IsDir():
			return errRefsNotHere
		}
		dir += "/"
	}
	return walkLooseRefs(commonDir, dir, rp, hexLen, out)
}

// walkLooseRefs reads the ref files under dir (a name ending in "/").
func walkLooseRefs(commonDir, dir string, rp refPattern, hexLen int, out map[string]string) error {
	f, err := os.Open(filepath.Join(commonDir, dir))
	if err != nil {
		return nil // no loose refs there (or the directory just went)
	}
	ents, err := f.ReadDir(-1)
	f.Close()
	if err != nil {
		return nil
	}
	for _, e := range ents {
		name := dir + e.Name()
		if strings.HasSuffix(e.Name(), ".lock") {
			continue // a ref being written: its old value is elsewhere
		}
		if !refComponentOK(e.Name()) {
			return errRefsNotHere
		}
		switch {
		case e.IsDir():
			// A star pattern matches nothing below its own directory.
			if !rp.star {
				if err := walkLooseRefs(commonDir, name+"/", rp, hexLen, out); err != nil {
					return err
				}
			}
		case e.Type().IsRegular():
			if rp.match(name) {
				if err := readLooseRef(commonDir, name, hexLen, out); err != nil {
					return err
				}
			}
		default:
			return errRefsNotHere // a symbolic link, or something stranger
		}
	}
	return nil
}

// readLooseRef reads one loose ref file. One that vanished since it was
// listed is left to packed-refs; one that is not an object id (a symbolic
// ref, a damaged file) goes to git.
func readLooseRef(commonDir, name string, hexLen int, out map[string]string) error {
	data, err := os.ReadFile(filepath.Join(commonDir, name))
	if err != nil {
		if os.IsNotExist(err) {
			return nil
		}
		return errRefsNotHere
	}
	id := strings.TrimSuffix(string(data), "\n")
	if !isHexID(id, hexLen) {
		return errRefsNotHere
	}
	out[name] = id
	return nil
}

// refComponentOK accepts the ref name components agentmine and git users
// write (letters, digits, "-", "_", ".", not starting with "."); any other
// name goes to git, whose rules decide what is a ref.
func refComponentOK(c string) bool {
	if c == "" || c[0] == '.' || strings.Contains(c, "..") {
		return false
	}
	for i := 0; i < len(c); i++ {
		b := c[i]
		if !(b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '-' || b == '_' || b == '.') {
			return false
		}
	}
	return true
}

func isHexID(id string, n int) bool {
	if len(id) != n {
		return false
	}
	for i := 0; i < n; i++ {
		if c := id[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// readPackedRefs returns the packed refs matching pats, sorted by name.
// The file is mapped; when git marked it sorted, each pattern's range is
// found by binary search instead of a scan of every line, and the range is
// copied into one string that the names and ids are cut from, instead of
// two allocations per ref.
func readPackedRefs(commonDir string, hexLen int, pats []refPattern, pm *packedMap) (refs, ids []string, err error) {
	err = pm.with(commonDir, func(data []byte) error {
		refs, ids, err = parsePackedRefs(data, hexLen, pats)
		return err
	})
	return refs, ids, err
}

// parsePackedRefs is readPackedRefs of the file's contents, data (nil for
// no file).
func parsePackedRefs(data []byte, hexLen int, pats []refPattern) (refs, ids []string, err error) {
	if len(data) == 0 {
		return nil, nil, nil
	}
	body := data
	sorted := false
	if bytes.HasPrefix(body, []byte("# pack-refs with:")) {
		nl := bytes.IndexByte(body, '\n')
		if nl < 0 {
			return nil, nil, errRefsNotHere
		}
		traits := " " + string(body[len("# pack-refs with:"):nl]) + " "
		sorted = strings.Contains(traits, " sorted ")
		body = body[nl+1:]
	}
	if len(body) > 0 && body[len(body)-1] != '\n' {
		return nil, nil, errRefsNotHere // git always ends the file with a newline
	}
	lineLen := hexLen + 1 // "<id> " before the name
	// scan adds the matching refs of the lines in region (whole lines).
	scan := func(region []byte, rp refPattern) error {
		text := string(region)
		for len(text) > 0 {
			nl := strings.IndexByte(text, '\n')
			line := text[:nl]
			text = text[nl+1:]
			if len(line) > 0 && line[0] == '^' {
				continue // the peeled value of the tag above
			}
			if len(line) <= lineLen || line[hexLen] != ' ' {
				return errRefsNotHere
			}
			name := line[lineLen:]
			if sorted && !strings.HasPrefix(name, rp.prefix) && name > rp.prefix {
				return nil // past the pattern's range
			}
			if rp.match(name) {
				if !isHexID(line[:hexLen], hexLen) {
					return errRefsNotHere
				}
				refs, ids = append(refs, name), append(ids, line[:hexLen])
			}
		}
		return nil
	}
	regions := make([][]byte, len(pats))
	lines := 0
	for i, rp := range pats {
		region := body
		if sorted {
			from := seekPacked(body, rp.prefix, lineLen)
			// The range ends before the first line past the prefix.
			to := from + seekPacked(body[from:], prefixEnd(rp.prefix), lineLen)
			region = body[from:to]
		}
		regions[i] = region
		lines += bytes.Count(region, []byte{'\n'})
	}
	refs, ids = make([]string, 0, lines), make([]string, 0, lines)
	for i, rp := range pats {
		if err := scan(regions[i], rp); err != nil {
			return nil, nil, err
		}
	}
	if !sorted || len(pats) > 1 {
		refs, ids = sortUnique(refs, ids)
	}
	return refs, ids, nil
}

// prefixEnd returns the smallest string greater than every string with the
// given prefix (the prefix with its last byte incremented; prefixes here
// are printable ASCII).
func prefixEnd(prefix string) string {
	b := []byte(prefix)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return string(b[:i+1])
		}
	}
	return "\xff"
}

// sortUnique sorts refs (with ids alongside) by name and drops repeats (two
// patterns can match one ref), unless they already are in order.
func sortUnique(refs, ids []string) ([]string, []string) {
	inOrder := true
	for i := 1; i < len(refs); i++ {
		if refs[i-1] >= refs[i] {
			inOrder = false
			break
		}
	}
	if inOrder {
		return refs, ids
	}
	idx := make([]int, len(refs))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return refs[idx[a]] < refs[idx[b]] })
	outRefs, outIDs := make([]string, 0, len(refs)), make([]string, 0, len(refs))
	for _, i := range idx {
		if n := len(outRefs); n > 0 && outRefs[n-1] == refs[i] {
			continue
		}
		outRefs, outIDs = append(outRefs, refs[i]), append(outIDs, ids[i])
	}
	return outRefs, outIDs
}

// seekPacked returns the offset in the sorted packed-refs body of the first
// line whose ref name is not before prefix (or of a peeled line just before
// it), by binary search over byte offsets, each probe moved to the start of
// its line. A peeled line ("^<id>") is judged by the ref line above it.
func seekPacked(body []byte, prefix string, lineLen int) int {
	lo, hi := 0, len(body)
	for lo < hi {
		mid := lo + (hi-lo)/2
		start := bytes.LastIndexByte(body[:mid], '\n') + 1
		if start < lo {
			start = lo
		}
		end := bytes.IndexByte(body[start:], '\n')
		if end < 0 {
			hi = start
			continue
		}
		end += start + 1 // the start of the next line
		// The ref line this line belongs to: itself, or the one above a
		// peeled line.
		ref := start
		if body[start] == '^' {
			ref = bytes.LastIndexByte(body[:max(start-1, 0)], '\n') + 1
			if ref >= start || body[ref] == '^' {
				return lo // damaged: let the scan from lo refuse it
			}
		}
		nl := bytes.IndexByte(body[ref:], '\n')
		line := body[ref : ref+nl]
		if len(line) <= lineLen {
			return lo
		}
		if string(line[lineLen:]) < prefix {
			lo = end
		} else {
			hi = min(ref, start)
			if hi < lo {
				hi = lo
			}
		}
	}
	return lo
}
