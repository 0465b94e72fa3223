package gitstore

import (
	"bytes"
	"encoding/hex"
	"strconv"
)

// ReadsInProcess reports whether the store reads refs and objects
// in-process (not AGENTMINE_GIT_READS=1): other readers of the
// repository's files follow it.
func (s *Store) ReadsInProcess() bool { return s.objects() != nil }

// LookupRef reads the ref with the full name in-process: the object it
// points at and whether it exists; sure is false when git must answer
// (reads go to git, a symbolic or odd ref, a reftable repository).
func (s *Store) LookupRef(name string) (id string, found, sure bool) {
	if s.objects() == nil {
		return "", false, false
	}
	return s.lookupRef(name)
}

// ListTree lists the tree of commit (a full commit id) recursively and
// in-process, exactly as `git ls-tree -r -z --full-tree <commit>` prints it:
// "<mode> SP <type> SP <id> TAB <path> NUL" for every blob and gitlink,
// in git's order, modes canonical as git reads them. ok is false when git
// must answer (reads go to git, an object that does not read in-process,
// a tree that does not parse).
func (s *Store) ListTree(commit string) ([]byte, bool) {
	db := s.objects()
	if db == nil || !isHexID(commit, 2*s.hashLen()) {
		return nil, false
	}
	typ, data, err := db.read(commit)
	if err != nil || typ != "commit" {
		return nil, false
	}
	tree, ok := bytes.CutPrefix(data, []byte("tree "))
	if !ok || len(tree) < 2*s.hashLen() {
		return nil, false
	}
	var out []byte
	if !listTreeInto(db, string(tree[:2*s.hashLen()]), "", s.hashLen(), &out, 0) {
		return nil, false
	}
	return out, true
}

// maxTreeDepth bounds the nesting ListTree follows (git's own limit on
// tree depth is of the same order).
const maxTreeDepth = 4096

// listTreeInto appends the entries of tree (under prefix) to out, walking
// the subtrees in place, which is git's order.
func listTreeInto(db *odb, tree, prefix string, hashLen int, out *[]byte, depth int) bool {
	if depth > maxTreeDepth {
		return false
	}
	typ, data, err := db.read(tree)
	if err != nil || typ != "tree" {
		return false
	}
	for len(data) > 0 {
		sp := bytes.IndexByte(data, ' ')
		nul := bytes.IndexByte(data, 0)
		if sp <= 0 || nul < sp || len(data) < nul+1+hashLen {
			return false
		}
		mode, err := strconv.ParseUint(string(data[:sp]), 8, 32)
		if err != nil {
			return false
		}
		name := data[sp+1 : nul]
		id := hex.EncodeToString(data[nul+1 : nul+1+hashLen])
		data = data[nul+1+hashLen:]
		if len(name) == 0 {
			return false
		}
		if mode&0o170000 == 0o040000 {
			if !listTreeInto(db, id, prefix+string(name)+"/", hashLen, out, depth+1) {
				return false
			}
			continue
		}
		*out = appendTreeRecord(*out, canonMode(mode), prefix, name, id)
	}
	return true
}

// canonMode is the mode git reads a tree entry's mode as (canon_mode),
// trees aside: a regular file is 100755 when its owner may execute it, else 100644; a
// symbolic link 120000; anything else a gitlink.
func canonMode(mode uint64) uint64 {
	switch mode & 0o170000 {
	case 0o100000:
		if mode&0o100 != 0 {
			return 0o100755
		}
		return 0o100644
	case 0o120000:
		return 0o120000
	}
	return 0o160000
}

// appendTreeRecord appends one ls-tree -z record.
func appendTreeRecord(out []byte, mode uint64, prefix string, name []byte, id string) []byte {
	typ := "blob"
	if mode == 0o160000 {
		typ = "commit"
	}
	out = strconv.AppendUint(out, mode, 8)
	out = append(out, ' ')
	out = append(out, typ...)
	out = append(out, ' ')
	out = append(out, id...)
	out = append(out, '\t')
	out = append(out, prefix...)
	out = append(out, name...)
	return append(out, 0)
}
