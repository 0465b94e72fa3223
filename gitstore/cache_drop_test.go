package gitstore

import (
	"context"
	"os"
	"testing"
)

// TestDroppedCacheStaysDropped: a reader that took entries from a cache
// file does not write them back once the file was dropped or replaced
// (DropCaches after a worker could have planted entries); a reader that
// read no cache writes what it read from git.
func TestDroppedCacheStaysDropped(t *testing.T) {
	ctx := context.Background()
	dir := objRepo(t)
	s := objOpen(t, dir)
	k := Kind{Dir: "things", File: "thing.json", Noun: "thing", Version: 1}
	// more entities than Roots walks without its cache
	tips := map[string]string{}
	for len(tips) <= fewRoots {
		doc, err := s.Create(ctx, k, NewID(), Change{Data: []byte(`{"v":1}`), Message: "one"})
		if err != nil {
			t.Fatal(err)
		}
		tips[doc.ID] = doc.Commit
	}
	if _, _, err := s.List(ctx, k); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Roots(ctx, k, tips); err != nil {
		t.Fatal(err)
	}
	entries, gen := s.readCache(k)
	if len(entries) != len(tips) || gen == nil {
		t.Fatalf("cache %v, file %v: List wrote no cache", entries, gen)
	}
	roots, rgen := s.readRootsCache(k)
	if len(roots) != len(tips) || rgen == nil {
		t.Fatalf("roots cache %v, file %v: Roots wrote no cache", roots, rgen)
	}
	if err := s.DropCaches(k); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{s.cachePath(k), s.rootsCachePath(k), s.notesCachePath()} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Fatalf("%s still there: %v", p, err)
		}
	}
	// late writers holding entries of the dropped files
	s.writeCache(k, []Doc{{ID: "x", Commit: "y", Data: []byte("planted")}}, gen)
	s.writeRootsCache(k, roots, rgen)
	for _, p := range []string{s.cachePath(k), s.rootsCachePath(k)} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Fatalf("%s was written back from a dropped file: %v", p, err)
		}
	}
	// a reader with nothing cached writes what git says
	docs, _, err := s.List(ctx, k)
	if err != nil || len(docs) != len(tips) {
		t.Fatal(docs, err)
	}
	if entries, _ := s.readCache(k); len(entries) != len(tips) {
		t.Fatalf("cache after a fresh read: %v", entries)
	}
	// a writer whose file was replaced meanwhile does not overwrite
	_, gen = s.readCache(k)
	if _, _, err := s.List(ctx, k); err != nil { // rewrites nothing: all cached
		t.Fatal(err)
	}
	writeCacheFile(s.cachePath(k)+".new", listFormat, nil, nil)
	if err := os.Rename(s.cachePath(k)+".new", s.cachePath(k)); err != nil {
		t.Fatal(err)
	}
	s.writeCache(k, []Doc{{ID: "x", Commit: "y", Data: []byte("stale")}}, gen)
	if entries, _ := s.readCache(k); len(entries) != 0 {
		t.Fatalf("a stale writer replaced a newer cache file: %v", entries)
	}
}
