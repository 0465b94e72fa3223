package gitstore

import (
	"crypto/sha256"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// A worker runs as the same user as agentmine and can plant entries in the
// local caches, so its supervisor drops them once the worker ended. When
// the cache directory is exactly as it was before the worker started (the same files, byte for byte), the worker planted
// nothing that a drop would remove, and the caches are kept: after a no-op
// or a quick worker the next reader (the run's next look, the next
// worker's preparation) then reads the few documents that changed instead
// of the whole board from git. Any change at all, by the worker or by
// anyone else meanwhile, drops them as before.

// maxKeptCacheBytes bounds the cache directory that is compared: a larger
// one is dropped without reading it, as the comparison would read it twice
// for every worker.
const maxKeptCacheBytes = 8 << 20

// CacheSnapshot is the content of the local cache directory at one moment:
// a digest per regular file. ok is false when the directory could not be
// read whole (too large, an entry that is not a regular file, a read
// error): such a snapshot never matches.
type CacheSnapshot struct {
	ok    bool
	files map[string][sha256.Size]byte
}

// SnapshotCaches reads the files of the local cache directory: what
// DropCaches removes is files there, never what the
// directories in it hold (the notes trees, each named by the notes commit
// it lists, which the supervisor itself adds to while the worker runs). A
// directory that does not exist is an empty snapshot.
func (s *Store) SnapshotCaches() CacheSnapshot {
	dir := filepath.Dir(s.notesCachePath())
	ents, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return CacheSnapshot{ok: true}
	}
	if err != nil {
		return CacheSnapshot{}
	}
	snap := CacheSnapshot{ok: true, files: make(map[string][sha256.Size]byte, len(ents))}
	var total int64
	for _, ent := range ents {
		switch {
		case ent.IsDir():
			continue
		case !ent.Type().IsRegular():
			return CacheSnapshot{}
		}
		sum, n, err := digestFile(filepath.Join(dir, ent.Name()), maxKeptCacheBytes-total)
		if err != nil {
			return CacheSnapshot{}
		}
		total += n
		snap.files[ent.Name()] = sum
	}
	return snap
}

// digestFile returns the SHA-256 of the file at path and its size; an
// error when it cannot be read or holds more than limit bytes.
func digestFile(path string, limit int64) ([sha256.Size]byte, int64, error) {
	var sum [sha256.Size]byte
	f, err := os.Open(path)
	if err != nil {
		return sum, 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(f, limit+1))
	if err != nil {
		return sum, n, err
	}
	if n > limit {
		return sum, n, errCacheTooLarge
	}
	copy(sum[:], h.Sum(nil))
	return sum, n, nil
}

// errCacheTooLarge is a cache directory above maxKeptCacheBytes.
var errCacheTooLarge = errors.New("the local caches are too large to compare")

// ChangedKinds compares the snapshot taken before the worker (c) with
// the one after it (o) and returns which of kinds must be dropped, and
// whether anything must be at all: the kinds with a file that changed
// (its list, roots or summary files: cachePath, rootsCachePath,
// summaryPathOf), and
// every one of them when a file changed that belongs to none and that a
// drop does not always remove (the notes cache and the reach sets go with
// any drop; the drop marker holds no entry and is left out), or when either snapshot
// could not be taken whole. A file that is the same byte for byte holds
// nothing the worker planted.
func (c CacheSnapshot) ChangedKinds(o CacheSnapshot, kinds []Kind) (drop []Kind, any bool) {
	if !c.ok || !o.ok {
		return kinds, true
	}
	marked := make([]bool, len(kinds))
	note := func(name string) {
		if name == "dropped" {
			return // the marker of a drop, by anyone: it holds no entry
		}
		any = true
		for i, k := range kinds {
			if name == k.Dir || name == "roots-"+k.Dir || name == "summary-"+k.Dir || strings.HasPrefix(name, "summary-"+k.Dir+"-") {
				marked[i] = true
				return
			}
		}
		if name == "notes" || strings.HasPrefix(name, "reach-") {
			return
		}
		for i := range marked {
			marked[i] = true
		}
	}
	for name, sum := range c.files {
		if got, ok := o.files[name]; !ok || got != sum {
			note(name)
		}
	}
	for name := range o.files {
		if _, ok := c.files[name]; !ok {
			note(name)
		}
	}
	for i, k := range kinds {
		if marked[i] {
			drop = append(drop, k)
		}
	}
	return drop, any
}
