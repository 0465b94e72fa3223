package gitstore

import (
	"bytes"
	"cmp"
	"slices"
	"strings"

	"github.com/git-agentmine/git-agentmine/parallel"
)

// Reading many documents in the order of their refs (ids, which are
// random) jumps about the packs: every document's delta chain is resolved
// from wherever the delta base cache last left it, so a cold read of a
// hundred thousand tasks needed most of the packs' chains held at once.
// Read in the order the blobs lie in the packs, each document's base is
// most often one of the last few read. This file finds that order for a
// whole read (every chunk of a list, every note); getMany
// (readInPackOrder) then reads each chunk in it, every core a contiguous
// run with its own memo of the objects it just read (recent), and the few
// bases outside the memos go through a small cache of the read's own.

// orderedBaseBytes bounds the delta bases a read in the packs' order keeps
// beside its cores' memos (listChunks with an order).
const orderedBaseBytes = 4 << 20

// blobSpot is where the document of one listed ref lies: its blob and
// the blob's place in the packs.
type blobSpot struct {
	blob   string // hex id; "" when not found in-process
	packed bool   // found in a pack (else loose)
	pack   int    // index of the pack holding it
	off    int64  // offset in that pack
}

// locateDocs finds, in-process, the blob of file in the tree of each of
// commits and where it lies in the packs. A commit whose blob is not
// found in-process (not a commit, no such entry, or git needed) has a
// spot with no blob: it is read by path as before.
// Only the positions idx are located; the spots are indexed by position.
func (s *Store) locateDocs(file string, commits []string, idx []int) []blobSpot {
	spots := make([]blobSpot, len(commits))
	db := s.objects()
	if db == nil || strings.Contains(file, "/") {
		return spots
	}
	parallel.For(len(idx), func(j int) {
		spots[idx[j]] = s.locateDoc(db, file, commits[idx[j]])
	})
	return spots
}

func (s *Store) locateDoc(db *odb, file, commit string) blobSpot {
	// Read past the store's memo of commits and trees: each is read once
	// here, and the documents are then read by their blobs.
	typ, data, err := db.read(commit)
	if err != nil || typ != "commit" || !bytes.HasPrefix(data, []byte("tree ")) {
		return blobSpot{}
	}
	line, _, _ := bytes.Cut(data[len("tree "):], []byte("\n"))
	tree := string(line) // the tree's id, not a copy of the whole commit
	typ, data, err = db.read(tree)
	if err != nil || typ != "tree" {
		return blobSpot{}
	}
	blob, found, ok := findTreeEntry(data, file, db.hashLen)
	if !ok || !found {
		return blobSpot{}
	}
	return db.spotOf(blob)
}

// spotOf returns where the object with hex id lies in the packs; a spot
// not packed when it is in none (loose, or not here: read by its id).
func (db *odb) spotOf(id string) blobSpot {
	pack, _, off, ok := db.locate(id)
	if !ok {
		return blobSpot{blob: id}
	}
	return blobSpot{blob: id, packed: true, pack: pack, off: off}
}

// inPackOrder returns names and ids (at the same positions; new slices)
// in the order the objects ids lie in the packs, those in no pack last in
// the order given.
func inPackOrder(db *odb, names, ids []string) ([]string, []string) {
	spots := make([]blobSpot, len(ids))
	all := make([]int, len(ids))
	parallel.For(len(ids), func(i int) {
		all[i], spots[i] = i, db.spotOf(ids[i])
	})
	n, d := make([]string, len(ids)), make([]string, len(ids))
	for j, i := range packOrder(all, spots) {
		n[j], d[j] = names[i], ids[i]
	}
	return n, d
}

// packOrder returns the positions idx sorted by where their blobs lie in
// the packs (spots, indexed by position); then, in the order given, the
// ones whose blob is loose, then the ones not located.
func packOrder(idx []int, spots []blobSpot) []int {
	// Each position's key is made once and sorted by value, with its place
	// in idx last (what a stable sort keeps): a stable sort comparing the
	// spots themselves took a tenth of a second, on one core, for 100,000
	// documents.
	type key struct {
		class, pack int
		off         int64
		j, pos      int
	}
	keys := make([]key, len(idx))
	for j, i := range idx {
		s := spots[i]
		k := key{class: 2, j: j, pos: i}
		switch {
		case s.packed:
			k.class, k.pack, k.off = 0, s.pack, s.off
		case s.blob != "":
			k.class = 1
		}
		keys[j] = k
	}
	slices.SortFunc(keys, func(a, b key) int {
		if c := cmp.Compare(a.class, b.class); c != 0 {
			return c
		}
		if c := cmp.Compare(a.pack, b.pack); c != 0 {
			return c
		}
		if c := cmp.Compare(a.off, b.off); c != 0 {
			return c
		}
		return cmp.Compare(a.j, b.j)
	})
	out := make([]int, len(keys))
	for j, k := range keys {
		out[j] = k.pos
	}
	return out
}
