package gitstore

import (
	"encoding/hex"
	"slices"
	"strings"

	"github.com/git-agentmine/git-agentmine/parallel"
)

// Reading many documents in the order of their refs (ids, which are
// random) jumps about the packs: every document's delta chain is resolved
// from wherever the delta base cache last left it, so a cold read of a
// hundred thousand tasks needed most of the packs' chains held at once.
// Read in the order the blobs lie in the packs, each document's base is
// one of the last few read, and the cache can stay small.

// orderedBaseBytes bounds the delta bases a read in the packs' order keeps
// (listChunks with an order).
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
	if err != nil || typ != "commit" || !strings.HasPrefix(string(data[:min(len(data), 5)]), "tree ") {
		return blobSpot{}
	}
	tree, _, _ := strings.Cut(string(data[len("tree "):]), "\n")
	typ, data, err = db.read(tree)
	if err != nil || typ != "tree" {
		return blobSpot{}
	}
	blob, found, ok := findTreeEntry(data, file, db.hashLen)
	if !ok || !found {
		return blobSpot{}
	}
	raw, err := hex.DecodeString(blob)
	if err != nil {
		return blobSpot{}
	}
	pack, off, ok := db.locate(raw)
	if !ok {
		return blobSpot{blob: blob} // loose, or not here: read by its id
	}
	return blobSpot{blob: blob, packed: true, pack: pack, off: off}
}

// locate returns which of the mapped packs holds the object raw and at
// which offset; false when none does (loose, or not here).
func (db *odb) locate(raw []byte) (int, int64, bool) {
	db.mu.RLock()
	if !db.listed {
		db.mu.RUnlock()
		db.relist()
		db.mu.RLock()
	}
	defer db.mu.RUnlock()
	for i, p := range db.packs {
		if off, ok := p.find(raw); ok {
			return i, off, true
		}
	}
	return 0, 0, false
}

// packOrder returns the positions idx sorted by where their blobs lie in
// the packs (spots, indexed by position); then, in the order given, the
// ones whose blob is loose, then the ones not located.
func packOrder(idx []int, spots []blobSpot) []int {
	class := func(s blobSpot) int {
		switch {
		case s.packed:
			return 0
		case s.blob != "":
			return 1
		}
		return 2
	}
	out := slices.Clone(idx)
	slices.SortStableFunc(out, func(a, b int) int {
		sa, sb := spots[a], spots[b]
		switch ca, cb := class(sa), class(sb); {
		case ca != cb:
			return ca - cb
		case ca != 0:
			return 0
		case sa.pack != sb.pack:
			return sa.pack - sb.pack
		}
		return cmpInt64(sa.off, sb.off)
	})
	return out
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
