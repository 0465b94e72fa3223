package gitstore

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"strings"
)

// The store reads refs and objects in-process (refread.go, odb.go) and asks
// git for whatever those readers cannot answer. AGENTMINE_GIT_READS=1 in
// the environment at Open sends every read to git instead: the escape hatch,
// and what the tests compare the in-process answers with.

// objects returns the in-process object reader, nil when reads go to git.
func (s *Store) objects() *odb {
	if s.gitReads {
		return nil
	}
	s.odbOnce.Do(func() { s.odb = newODB(s.objDir, s.hashLen()) })
	return s.odb
}

// readLocal answers a cat-file request in-process: an object id, a full
// ref name, or <rev>:<path> with rev an id or a full ref name. ok is false
// when git must answer.
func (s *Store) readLocal(name string) (object, bool) {
	db := s.objects()
	if db == nil {
		return object{}, false
	}
	rev, path, hasPath := strings.Cut(name, ":")
	id, ok := s.resolveLocal(rev)
	if !ok {
		return object{}, false
	}
	typ, data, err := db.read(id)
	if err != nil {
		return object{}, false
	}
	if !hasPath {
		return object{id: id, typ: typ, data: data}, true
	}
	if typ == "commit" {
		// "tree <id>" is a commit's first line.
		if !bytes.HasPrefix(data, []byte("tree ")) {
			return object{}, false
		}
		tree, _, _ := strings.Cut(string(data[len("tree "):]), "\n")
		if typ, data, err = db.read(tree); err != nil {
			return object{}, false
		}
		id = tree
	}
	if path == "" {
		return object{}, false // "<rev>:" is the root tree; not asked for here
	}
	for _, part := range strings.Split(path, "/") {
		if typ != "tree" || part == "" {
			return object{}, false
		}
		entries, err := parseTree(data, db.hashLen)
		if err != nil {
			return object{}, false
		}
		found := false
		for _, e := range entries {
			if e.name == part {
				id, found = e.id, true
				break
			}
		}
		if !found {
			return object{}, false // git says "missing"
		}
		if typ, data, err = db.read(id); err != nil {
			return object{}, false
		}
	}
	return object{id: id, typ: typ, data: data}, true
}

// resolveLocal turns rev (a full object id or a full ref name) into an
// object id in-process.
func (s *Store) resolveLocal(rev string) (string, bool) {
	hexLen := 2 * s.hashLen()
	if isHexID(rev, hexLen) {
		return rev, true
	}
	if !strings.HasPrefix(rev, "refs/") {
		return "", false
	}
	refs, ids, err := listRefs(s.loc.CommonDir, hexLen, []string{rev})
	if err != nil {
		return "", false
	}
	for i, r := range refs {
		if r == rev {
			return ids[i], true
		}
	}
	return "", false
}

// listRefs lists the refs matching the for-each-ref patterns, sorted by
// name, with the object each points at: in-process when it can (and every
// object listed is there, since for-each-ref leaves out a ref whose object
// is missing), else with `git for-each-ref`.
func (s *Store) listRefs(ctx context.Context, patterns ...string) (refs, ids []string, err error) {
	if db := s.objects(); db != nil {
		refs, ids, err := listRefs(s.loc.CommonDir, 2*s.hashLen(), patterns)
		if err == nil && db.haveAll(ids) {
			return refs, ids, nil
		}
	}
	lines, err := s.git.Lines(ctx, append([]string{"for-each-ref", "--format=%(objectname) %(refname)"}, patterns...)...)
	if err != nil {
		return nil, nil, fmt.Errorf("listing refs: %w", err)
	}
	refs, ids = make([]string, 0, len(lines)), make([]string, 0, len(lines))
	for _, l := range lines {
		if c, name, ok := strings.Cut(l, " "); ok {
			refs, ids = append(refs, name), append(ids, c)
		}
	}
	return refs, ids, nil
}

// haveAll reports whether every object of ids is in this object directory
// (a pack index lists it, or its loose file is there).
func (db *odb) haveAll(ids []string) bool {
	raw := make([]byte, db.hashLen)
	for _, id := range ids {
		if _, err := hex.Decode(raw, []byte(id)); err != nil {
			return false
		}
		if !db.has(raw) {
			return false
		}
	}
	return true
}
