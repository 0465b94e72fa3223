package gitstore

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// listed is what a listing says: each document's id, commit and bytes, and
// each problem's message, in order.
func listed(docs []Doc, problems []error) []string {
	var out []string
	for _, d := range docs {
		out = append(out, d.ID+" "+d.Commit+" "+string(d.Data))
	}
	for _, p := range problems {
		out = append(out, "problem: "+p.Error())
	}
	return out
}

// listEachAll collects what ListEach gives, checking that every call is
// told the number of refs listed.
func listEachAll(t *testing.T, st *Store, k Kind, refs int) []string {
	t.Helper()
	var docs []Doc
	problems, err := st.ListEach(context.Background(), k, func(total int, chunk []Doc) {
		if total != refs {
			t.Errorf("told of %d refs, want %d", total, refs)
		}
		docs = append(docs, chunk...)
	})
	if err != nil {
		t.Fatal(err)
	}
	return listed(docs, problems)
}

// TestListEachAsList: ListEach gives the documents and problems List gives,
// in the same order, cold (no cache), with one entity changed since the
// cache was written, and from the cache; the cache it streams reads back as
// the one List writes, and serves the next reader.
func TestListEachAsList(t *testing.T) {
	repo := objRepo(t)
	ctx := context.Background()
	writer := objOpen(t, repo)
	commits := map[string]string{}
	for i := 0; i < 9; i++ {
		id := fmt.Sprintf("%02x", 0xa0+i)
		d, err := writer.Create(ctx, durableKind, id, Change{Data: []byte(fmt.Sprintf(`{"v":1,"id":%q,"n":%d}`, id, i)), Message: "add"})
		if err != nil {
			t.Fatal(err)
		}
		commits[id] = d.Commit
	}
	// One entity whose document is gone: a problem, in its place.
	blob, _ := docObjects(t, repo, commits["a4"])
	if err := os.Remove(objPath(t, repo, blob)); err != nil {
		t.Fatal(err)
	}
	cache := filepath.Join(repo, ".git", "agentmine", "cache")
	list := func() ([]string, map[string]cacheEntry) {
		t.Helper()
		if err := os.RemoveAll(cache); err != nil {
			t.Fatal(err)
		}
		st := objOpen(t, repo)
		docs, problems, err := st.List(ctx, durableKind)
		if err != nil {
			t.Fatal(err)
		}
		written, _ := st.readCache(durableKind)
		return listed(docs, problems), written
	}
	want, wantCache := list()
	if len(want) != 9 || len(wantCache) != 8 {
		t.Fatalf("List gave %d lines and cached %d documents: %q", len(want), len(wantCache), want)
	}
	if err := os.RemoveAll(cache); err != nil {
		t.Fatal(err)
	}
	st := objOpen(t, repo)
	if got := listEachAll(t, st, durableKind, 9); !reflect.DeepEqual(got, want) {
		t.Fatalf("cold ListEach:\n%q\nList:\n%q", got, want)
	}
	if got, _ := st.readCache(durableKind); !reflect.DeepEqual(got, wantCache) {
		t.Fatalf("ListEach cached %v, List %v", got, wantCache)
	}
	// From the cache, as written: the same.
	if got := listEachAll(t, objOpen(t, repo), durableKind, 9); !reflect.DeepEqual(got, want) {
		t.Fatalf("ListEach from its cache:\n%q\nList:\n%q", got, want)
	}
	// One entity changed: read from git, the rest from the cache.
	if _, _, err := writer.Update(ctx, durableKind, "a7", func(Doc) (Change, error) {
		return Change{Data: []byte(`{"v":1,"id":"a7","n":"changed"}`), Message: "edit"}, nil
	}); err != nil {
		t.Fatal(err)
	}
	warmList := objOpen(t, repo)
	docs, problems, err := warmList.List(ctx, durableKind)
	if err != nil {
		t.Fatal(err)
	}
	want = listed(docs, problems)
	if got := listEachAll(t, objOpen(t, repo), durableKind, 9); !reflect.DeepEqual(got, want) {
		t.Fatalf("ListEach after a change:\n%q\nList:\n%q", got, want)
	}
}

// TestListChunks: documents come chunk refs at a time, in the order
// listed, the cached ones in their places among those read from git.
func TestListChunks(t *testing.T) {
	repo := objRepo(t)
	ctx := context.Background()
	st := objOpen(t, repo)
	var refs, commits []string
	for i := 0; i < 7; i++ {
		id := fmt.Sprintf("%02x", 0xb0+i)
		d, err := st.Create(ctx, durableKind, id, Change{Data: []byte(fmt.Sprintf(`{"v":1,"id":%q}`, id)), Message: "add"})
		if err != nil {
			t.Fatal(err)
		}
		refs = append(refs, durableKind.Ref(id))
		commits = append(commits, d.Commit)
	}
	// Every other one "cached" with other bytes, to tell them apart.
	cached := func(i int) (Doc, bool) {
		if i%2 == 1 {
			return Doc{ID: fmt.Sprintf("%02x", 0xb0+i), Ref: refs[i], Commit: commits[i], Data: []byte("cached")}, true
		}
		return Doc{}, false
	}
	// With overlap, fn takes each chunk on its own goroutine while the
	// next is read: the same chunks, in the same order (run with -race).
	for _, overlap := range []bool{false, true} {
		var sizes []int
		var got []string
		problems, err := st.listChunks(ctx, durableKind, refs, commits, 3, cached, func(docs []Doc) {
			sizes = append(sizes, len(docs))
			for _, d := range docs {
				got = append(got, d.ID+" "+string(d.Data))
			}
		}, nil, nil, overlap)
		if err != nil || len(problems) != 0 {
			t.Fatal(err, problems)
		}
		if !reflect.DeepEqual(sizes, []int{3, 3, 1}) {
			t.Errorf("overlap %v: chunks of %v, want 3, 3, 1", overlap, sizes)
		}
		var want []string
		for i := range refs {
			id := fmt.Sprintf("%02x", 0xb0+i)
			if i%2 == 1 {
				want = append(want, id+" cached")
			} else {
				want = append(want, id+" "+fmt.Sprintf(`{"v":1,"id":%q}`, id))
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("overlap %v: got %q, want %q", overlap, got, want)
		}
	}
}

// TestCacheWriter: a frame streamed without knowing its size reads back as
// the payload written; one whose file was replaced meanwhile (prev no
// longer in place) is not written, and an aborted one leaves nothing.
func TestCacheWriter(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c")
	const format = "test-cache 1"
	w := newCacheWriter(path, format, nil)
	var want []byte
	for i := 0; i < 5000; i++ {
		line := fmt.Sprintf("line %d\n", i)
		w.Write([]byte(line))
		want = append(want, line...)
	}
	w.commit()
	got, fi := readCacheFile(path, format)
	if fi == nil || string(got) != string(want) {
		t.Fatalf("read back %d bytes (file %v), wrote %d", len(got), fi != nil, len(want))
	}
	stale := newCacheWriter(path, format, nil)
	writeCacheFile(path, format, []byte("other"), fi)
	replaced, _ := readCacheFile(path, format)
	stale2 := newCacheWriter(path, format, fi) // made from the file now replaced
	stale2.Write([]byte("old"))
	stale2.commit()
	if now, _ := readCacheFile(path, format); string(now) != string(replaced) {
		t.Fatalf("a writer from a replaced file wrote %q", now)
	}
	stale.Write([]byte("dropped"))
	stale.abort()
	if now, _ := readCacheFile(path, format); string(now) != "other" {
		t.Fatalf("an aborted writer left %q", now)
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 1 {
		t.Fatalf("left %v in the cache directory (%v)", entries, err)
	}
}
