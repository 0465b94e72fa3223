package gitstore

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

// TestListEachPackOrder: with the documents packed as deltas (and one
// loose), a cold ListEach reads them in the packs' order (not the refs')
// and gives exactly the documents and problems List gives through git, the
// problems in the order listed, and caches what List caches; the object
// reader's own delta base cache is left empty (the read kept its bases in
// a small cache of its own).
func TestListEachPackOrder(t *testing.T) {
	repo := packedDocsRepo(t)
	ctx := context.Background()
	cache := filepath.Join(repo, ".git", "agentmine", "cache")
	t.Setenv("AGENTMINE_GIT_READS", "1") // List through git alone
	viaGit := objOpen(t, repo)
	docs, problems, err := viaGit.List(ctx, durableKind)
	if err != nil {
		t.Fatal(err)
	}
	os.Unsetenv("AGENTMINE_GIT_READS")
	wantCache, _ := viaGit.readCache(durableKind)
	want := listed(docs, problems)
	if len(docs) != packedDocs+1 || len(problems) != 2 {
		t.Fatalf("List through git gave %d documents and %d problems", len(docs), len(problems))
	}
	if err := os.RemoveAll(cache); err != nil {
		t.Fatal(err)
	}
	st := objOpen(t, repo)
	var got []Doc
	var order []string
	gotProblems, err := st.ListEach(ctx, durableKind, func(total int, chunk []Doc) {
		for _, d := range chunk {
			got = append(got, d)
			order = append(order, d.ID)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if slices.IsSorted(order) {
		t.Errorf("the documents came in the order of their refs, not of the pack: %v", order)
	}
	slices.SortFunc(got, func(a, b Doc) int { return strings.Compare(a.ID, b.ID) })
	if g := listed(got, gotProblems); !reflect.DeepEqual(g, want) {
		t.Fatalf("cold ListEach, sorted by id:\n%q\nList through git:\n%q", g, want)
	}
	if c, _ := st.readCache(durableKind); !reflect.DeepEqual(c, wantCache) {
		t.Fatalf("ListEach cached %v, List %v", c, wantCache)
	}
	if db := st.objects(); db.bases.bytes != 0 {
		t.Errorf("the object reader's own cache holds %d bytes of delta bases after the read", db.bases.bytes)
	}
}

// packedDocs is how many documents packedDocsRepo packs.
const packedDocs = 60

// packedDocsRepo returns a repository with packedDocs documents packed as
// deltas of each other (their ids in an order unlike the order written),
// two refs whose commits hold no document, listed apart, and one document
// written since, its objects loose.
func packedDocsRepo(t *testing.T) string {
	t.Helper()
	repo := objRepo(t)
	ctx := context.Background()
	writer := objOpen(t, repo)
	const n = packedDocs
	for i := 0; i < n; i++ {
		// Ids in an order unlike the order written, documents alike
		// enough to be stored as deltas of each other.
		id := fmt.Sprintf("5%02x", (i*37)%256)
		doc := fmt.Sprintf(`{"v":1,"id":%q,"n":%d,"text":%q}`, id, i, strings.Repeat("same words again ", 20))
		if _, err := writer.Create(ctx, durableKind, id, Change{Data: []byte(doc), Message: "add"}); err != nil {
			t.Fatal(err)
		}
	}
	// Two refs whose commits hold no document, listed apart: problems.
	empty := gittest.Git(t, repo, "hash-object", "-t", "tree", "-w", "--stdin")
	for _, id := range []string{"0f0", "f00"} {
		c := gittest.Git(t, repo, "commit-tree", "-m", "no document", empty)
		gittest.Git(t, repo, "update-ref", durableKind.RefPrefix()+id, c)
	}
	gittest.Git(t, repo, "repack", "-a", "-d", "-f", "-q", "--depth=50", "--window=250")
	gittest.Git(t, repo, "prune-packed")
	if out := gittest.Git(t, repo, "verify-pack", "-v", filepath.Join(repo, ".git", "objects", "pack", packName(t, repo))); !strings.Contains(out, "chain length = ") {
		t.Fatalf("the documents were not stored as deltas:\n%s", out)
	}
	// One entity written since: its objects loose, read by its blob's id.
	if _, err := writer.Create(ctx, durableKind, "6aa", Change{Data: []byte(`{"v":1,"id":"6aa","n":"loose"}`), Message: "add"}); err != nil {
		t.Fatal(err)
	}
	return repo
}

// TestEachDocPackOrder: EachDoc over the tips of packed documents gives
// them in the packs' order (not the refs'), exactly as List reads them
// through git, the refs whose commits hold none as problems in the order
// listed, and leaves the object reader's own delta base cache empty.
func TestEachDocPackOrder(t *testing.T) {
	repo := packedDocsRepo(t)
	ctx := context.Background()
	t.Setenv("AGENTMINE_GIT_READS", "1")
	viaGit := objOpen(t, repo)
	want, wantProblems, err := viaGit.List(ctx, durableKind)
	if err != nil {
		t.Fatal(err)
	}
	os.Unsetenv("AGENTMINE_GIT_READS")
	st := objOpen(t, repo)
	refs, commits, err := st.TipList(ctx, durableKind.RefPrefix())
	if err != nil {
		t.Fatal(err)
	}
	var got []Doc
	var order []string
	problems, err := st.EachDoc(ctx, durableKind, refs, commits, func(chunk []Doc) {
		for _, d := range chunk {
			got = append(got, d)
			order = append(order, d.ID)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if slices.IsSorted(order) {
		t.Errorf("the documents came in the order of their refs, not of the pack: %v", order)
	}
	slices.SortFunc(got, func(a, b Doc) int { return strings.Compare(a.ID, b.ID) })
	if g, w := listed(got, problems), listed(want, wantProblems); !reflect.DeepEqual(g, w) {
		t.Fatalf("EachDoc, sorted by id:\n%q\nList through git:\n%q", g, w)
	}
	if db := st.objects(); db.bases.bytes != 0 {
		t.Errorf("the object reader's own cache holds %d bytes of delta bases after the read", db.bases.bytes)
	}
}

// packName returns the name of the one pack of repo.
func packName(t *testing.T, repo string) string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(repo, ".git", "objects", "pack", "*.pack"))
	if err != nil || len(m) != 1 {
		t.Fatalf("packs %v: %v", m, err)
	}
	return filepath.Base(m[0])
}
