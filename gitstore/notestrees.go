package gitstore

import (
	"bytes"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/git-agentmine/git-agentmine/safefile"
)

// Reading one session's note goes through the notes commit's root tree
// and the fan-out subtree holding the note: with 30,000 notes, a 7 KB root
// and a 7 KB subtree per note, inflated whole, were a fifteenth of task
// show. The notes-trees cache keeps those trees as read, one file per tree
// named by its id, each checked against that id (the hash of its type, size
// and content, as git names it) before it is used: a tree from the cache is
// the object itself whoever wrote the file, so nothing in it is believed.
// When a root tree is written, the files of trees it does not name (an
// older root, subtrees since replaced) are removed: the cache holds at most
// one root and its subtrees.

// notesTreeMax bounds a tree file of the notes-trees cache.
const notesTreeMax = 1 << 20

func (s *Store) notesTreesDir() string {
	return filepath.Join(s.loc.CommonDir, "agentmine", "cache", "notes-trees")
}

// cachedNotesTree returns the tree id from the notes-trees cache when its
// file holds exactly that tree; nil otherwise.
func (s *Store) cachedNotesTree(id string) []byte {
	f, fi, err := safefile.Open(filepath.Join(s.notesTreesDir(), id), notesTreeMax)
	if err != nil {
		return nil
	}
	defer f.Close()
	data := make([]byte, fi.Size())
	if _, err := io.ReadFull(f, data); err != nil || hex.EncodeToString(s.objectSum(objectHeader("tree", data), data)) != id {
		return nil
	}
	return data
}

// keepTree puts the tree id with content data among the store's kept
// objects (readKept), unless they are full.
func (s *Store) keepTree(id string, data []byte) {
	s.keptMu.Lock()
	defer s.keptMu.Unlock()
	if _, dup := s.kept[id]; dup || s.keptSize+len(data) > keptLimit {
		return
	}
	if s.kept == nil {
		s.kept = map[string]object{}
	}
	s.kept[id] = object{typ: "tree", data: data}
	s.keptSize += len(data)
}

// keptTree returns the tree id when the store keeps it.
func (s *Store) keptTree(id string) ([]byte, bool) {
	s.keptMu.Lock()
	defer s.keptMu.Unlock()
	o, ok := s.kept[id]
	if !ok || o.typ != "tree" {
		return nil, false
	}
	return o.data, true
}

// warmNotesTrees puts the trees on the way to the notes of targets in the
// notes commit head among the store's kept objects, from the notes-trees
// cache where it has them (each checked against its id), so that the
// lookups that follow do not inflate them from the packs; the trees it
// lacked are read from the packs here and written to it. Nothing is done
// without the in-process object reader.
func (s *Store) warmNotesTrees(head string, targets []string) {
	db := s.objects()
	if db == nil {
		return
	}
	typ, commit, err := s.readKept(db, head)
	if err != nil || typ != "commit" || !bytes.HasPrefix(commit, []byte("tree ")) {
		return
	}
	root, _, _ := strings.Cut(string(commit[len("tree "):]), "\n")
	var missing []string
	get := func(id string) ([]byte, bool) {
		if data, ok := s.keptTree(id); ok {
			return data, true
		}
		if data := s.cachedNotesTree(id); data != nil {
			s.keepTree(id, data)
			return data, true
		}
		typ, data, err := s.readKept(db, id)
		if err != nil || typ != "tree" {
			return nil, false
		}
		missing = append(missing, id)
		return data, true
	}
	rootData, ok := get(root)
	if !ok {
		return
	}
	for _, t := range targets {
		if sub, found, ok := findTreeEntry(rootData, t[:2], s.hashLen()); ok && found {
			get(sub)
		}
	}
	if len(missing) > 0 {
		s.writeNotesTrees(root, rootData, missing)
	}
}

// writeNotesTrees writes the trees missing (the root tree of the notes or
// subtrees of it) to the notes-trees cache; when the root is among them,
// the files of every tree rootData does not name go.
func (s *Store) writeNotesTrees(root string, rootData []byte, missing []string) {
	dir := s.notesTreesDir()
	for _, id := range missing {
		if data, ok := s.keptTree(id); ok {
			writeFileAtomic(filepath.Join(dir, id), nil, data)
		}
	}
	if missing[0] != root {
		return
	}
	names, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range names {
		id := e.Name()
		if raw, err := hex.DecodeString(id); err == nil && len(raw) == s.hashLen() && (id == root || bytes.Contains(rootData, raw)) {
			continue
		}
		if !strings.Contains(id, ".tmp") {
			os.Remove(filepath.Join(dir, id))
		}
	}
}
