package gitstore

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
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

// ReleaseCaches drops what the in-process object reader holds for speed:
// the delta bases, the commits and trees kept on the way to paths, the
// pages of the packs it reads and packed-refs (mapped files, which count
// towards the process's resident memory once read). Nothing is lost; later reads are
// slower until the caches fill again. A command that reads a bounded share
// of the repository at a time (sync merges a chunk of entities at a time)
// calls it between shares, so that what it holds does not grow with the
// repository.
func (s *Store) ReleaseCaches() {
	if db := s.objects(); db != nil {
		db.release()
	}
	s.keptMu.Lock()
	s.kept, s.keptSize = nil, 0
	s.keptMu.Unlock()
	s.packed.mu.Lock()
	s.packed.release()
	s.packed.mu.Unlock()
}

// readLocal answers a cat-file request in-process: an object id, a full
// ref name, or <rev>:<path> with rev an id or a full ref name, optionally
// followed by ^{commit} (the path then read only from a commit, as git
// does: a tree there answers missing). ok is false
// when git must answer. A path that a tree read in-process does not hold is
// answered missing: that is a fact about the tree, not about the object
// store.
func (s *Store) readLocal(name string) (object, bool) {
	db := s.objects()
	if db == nil {
		return object{}, false
	}
	id, o, done, ok := s.resolveName(db, name)
	if !ok || done {
		return o, ok
	}
	return readID(db, id, nil)
}

// readID reads the object id through the reader memo rc (nil: none) as
// readLocal's answer.
func readID(db *odb, id string, rc *recent) (object, bool) {
	typ, data, err := db.readVia(id, rc)
	if err != nil {
		return object{}, false
	}
	return object{id: id, typ: typ, data: data}, true
}

// resolveName is readLocal up to the object a name names: its id, read
// through the commits and trees on the way to a path but not read itself.
// done is set when the answer (o) is known without reading it (a path
// that is not there is missing); ok is false when git must answer.
func (s *Store) resolveName(db *odb, name string) (id string, o object, done, ok bool) {
	rev, path, hasPath := strings.Cut(name, ":")
	rev, commitOnly := strings.CutSuffix(rev, "^{commit}")
	if commitOnly && !hasPath {
		return "", object{}, false, false
	}
	id, ok = s.resolveLocal(rev)
	if !ok {
		return "", object{}, false, false
	}
	if !hasPath {
		return id, object{}, false, true
	}
	// The commits and trees on the way to a path are read again and again
	// (every note lookup goes through the notes commit and its root tree):
	// they are kept for the store's life (objects never change).
	typ, data, err := s.readKept(db, id)
	if err != nil {
		return "", object{}, false, false
	}
	if commitOnly && typ != "commit" {
		if typ == "tag" {
			return "", object{}, false, false // git peels tags
		}
		return "", object{missing: true}, true, true
	}
	if typ == "commit" {
		// "tree <id>" is a commit's first line.
		if !bytes.HasPrefix(data, []byte("tree ")) {
			return "", object{}, false, false
		}
		tree, _, _ := strings.Cut(string(data[len("tree "):]), "\n")
		if typ, data, err = s.readKept(db, tree); err != nil {
			return "", object{}, false, false
		}
	}
	if path == "" {
		return "", object{}, false, false // "<rev>:" is the root tree; not asked for here
	}
	parts := strings.Split(path, "/")
	for i, part := range parts {
		if typ != "tree" || part == "" {
			return "", object{}, false, false
		}
		entry, found, ok := findTreeEntry(data, part, db.hashLen)
		if !ok {
			return "", object{}, false, false
		}
		if !found {
			// The tree, read whole, has no such entry: git would answer
			// "missing" too.
			return "", object{missing: true}, true, true
		}
		id = entry
		if i < len(parts)-1 {
			if typ, data, err = s.readKept(db, id); err != nil {
				return "", object{}, false, false
			}
		}
	}
	return id, object{}, false, true
}

// keptLimit bounds the objects readKept keeps: the commits and trees on
// the way to the paths a command reads, not its documents.
const keptLimit = 1 << 20

// readKept reads the commit or tree id through the store's memo of them.
func (s *Store) readKept(db *odb, id string) (string, []byte, error) {
	s.keptMu.Lock()
	o, ok := s.kept[id]
	s.keptMu.Unlock()
	if ok {
		return o.typ, o.data, nil
	}
	typ, data, err := db.read(id)
	if err != nil {
		return "", nil, err
	}
	s.keptMu.Lock()
	if s.keptSize+len(data) <= keptLimit {
		if s.kept == nil {
			s.kept = map[string]object{}
		}
		if _, dup := s.kept[id]; !dup {
			s.kept[id] = object{typ: typ, data: data}
			s.keptSize += len(data)
		}
	}
	s.keptMu.Unlock()
	return typ, data, nil
}

// findTreeEntry returns the id of the entry called name in the tree data,
// scanning it without decoding the other entries; ok is false for a tree
// that does not parse.
func findTreeEntry(data []byte, name string, hashLen int) (id string, found, ok bool) {
	for len(data) > 0 {
		sp := bytes.IndexByte(data, ' ')
		nul := bytes.IndexByte(data, 0)
		if sp < 0 || nul < sp || len(data) < nul+1+hashLen {
			return "", false, false
		}
		if string(data[sp+1:nul]) == name {
			return hex.EncodeToString(data[nul+1 : nul+1+hashLen]), true, true
		}
		data = data[nul+1+hashLen:]
	}
	return "", false, true
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
	refs, ids, err := listRefs(s.loc.CommonDir, hexLen, []string{rev}, nil, &s.packed)
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
// name, with the object each points at: in-process when it can, else with
// `git for-each-ref`.
func (s *Store) listRefs(ctx context.Context, patterns ...string) (refs, ids []string, err error) {
	if db := s.objects(); db != nil {
		if refs, ids, err := listRefs(s.loc.CommonDir, 2*s.hashLen(), patterns, db.haveHex, &s.packed); err == nil {
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

// haveHex reports whether the object id (hex) is in this object directory
// (a pack index lists it, or its loose file is there).
func (db *odb) haveHex(id string) bool {
	raw, err := hex.DecodeString(id)
	return err == nil && len(raw) == db.hashLen && db.has(raw)
}

// lookupRef reads one ref by its full name in-process: its object id and
// whether it exists; sure is false when git must answer (a symbolic or
// odd ref, a reftable repository).
func (s *Store) lookupRef(name string) (id string, found, sure bool) {
	refs, ids, err := listRefs(s.loc.CommonDir, 2*s.hashLen(), []string{name}, nil, &s.packed)
	if err != nil {
		return "", false, false
	}
	for i, r := range refs {
		if r == name {
			return ids[i], true, true
		}
	}
	return "", false, true
}

// ResolveCommit resolves rev — a full ref name, or a short one git would
// expand (a tag, a branch, a remote-tracking branch, in git's order) — to
// the commit it names, as `git rev-parse rev^{commit}` does, and the full
// ref name it went through (rev itself for another revision, or a name git
// finds ambiguous); ok is false when it names no commit. It reads refs
// in-process and asks git whatever it cannot settle (a tag to peel, a
// pseudo-ref, any other kind of revision).
func (s *Store) ResolveCommit(ctx context.Context, rev string) (ref, commit string, ok bool) {
	if db := s.objects(); db != nil && plainRefName(rev) {
		var candidates []string
		settled := true
		if strings.HasPrefix(rev, "refs/") {
			candidates = []string{rev}
		} else {
			// git tries the name itself first, as a file in the git dir.
			for _, dir := range []string{s.loc.GitDir, s.loc.CommonDir} {
				if _, err := os.Lstat(filepath.Join(dir, rev)); err == nil {
					settled = false
				}
			}
			candidates = []string{"refs/" + rev, "refs/tags/" + rev, "refs/heads/" + rev, "refs/remotes/" + rev, "refs/remotes/" + rev + "/HEAD"}
		}
		for _, c := range candidates {
			if !settled {
				break
			}
			id, found, sure := s.lookupRef(c)
			if !sure {
				settled = false
				break
			}
			if !found {
				continue
			}
			if typ, _, err := db.read(id); err != nil || typ != "commit" {
				settled = false
				break
			}
			return c, id, true
		}
		if settled {
			return "", "", false
		}
	}
	commit, err := s.git.Output(ctx, "rev-parse", "--verify", "-q", rev+"^{commit}")
	if err != nil || commit == "" {
		return "", "", false
	}
	// An ambiguous name (a tag and a branch) or a revision has no one full
	// name; the name itself stands for it.
	if ref, err = s.git.Output(ctx, "rev-parse", "--verify", "-q", "--symbolic-full-name", rev); err != nil || ref == "" {
		ref = rev
	}
	return ref, commit, true
}

// plainRefName reports whether rev is a ref name whose expansion
// ResolveCommit can follow in-process: no revision syntax, no pseudo-ref
// (HEAD, FETCH_HEAD, …) that lives in the git dir instead of refs/.
func plainRefName(rev string) bool {
	if rev == "" || strings.HasPrefix(rev, "-") || strings.HasSuffix(rev, "/") || strings.Contains(rev, "//") {
		return false
	}
	upper := true
	for _, part := range strings.Split(rev, "/") {
		if !refComponentOK(part) || strings.HasSuffix(part, ".lock") {
			return false
		}
		for i := 0; i < len(part); i++ {
			if c := part[i]; c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.' {
				upper = false
			}
		}
	}
	return !upper || strings.HasPrefix(rev, "refs/")
}
