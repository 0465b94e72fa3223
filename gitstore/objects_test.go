package gitstore

import (
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

// objRepo makes a repository with one commit in a scrubbed environment and
// returns its directory. extra are `git init` options.
func objRepo(t *testing.T, extra ...string) string {
	t.Helper()
	gittest.Scrub(t)
	// Author and committer dates that differ, in zones other than UTC, so
	// that a commit written in-process is seen to keep both.
	t.Setenv("GIT_AUTHOR_DATE", "1700000000 +0130")
	t.Setenv("GIT_COMMITTER_DATE", "1700000100 -0700")
	dir := filepath.Join(t.TempDir(), "repo")
	gittest.Git(t, "", append([]string{"init", "-q", "-b", "main"}, append(extra, dir)...)...)
	gittest.Git(t, dir, "commit", "-q", "--allow-empty", "-m", "init")
	return dir
}

func objOpen(t *testing.T, dir string) *Store {
	t.Helper()
	s, err := Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// objPath is where the loose object id lives in repo.
func objPath(t *testing.T, repo, id string) string {
	t.Helper()
	return filepath.Join(gittest.Git(t, repo, "rev-parse", "--path-format=absolute", "--git-path", "objects"), id[:2], id[2:])
}

// TestWriteObjectsAsGitDoes: the blob, tree and commit of a document are
// byte for byte what git writes for the same content and identities (with
// non-UTC time zones), in SHA-1 and SHA-256 repositories, stored loose and
// read-only as git stores them, and the result passes git fsck.
func TestWriteObjectsAsGitDoes(t *testing.T) {
	for _, format := range []string{"sha1", "sha256"} {
		t.Run(format, func(t *testing.T) {
			ctx := context.Background()
			repo := objRepo(t, "--object-format="+format)
			s := objOpen(t, repo)
			doc := []byte("{\"v\":1,\"title\":\"hello\"}\n")
			head := gittest.Git(t, repo, "rev-parse", "HEAD")
			c, err := s.writeDocCommit(ctx, "task.json", doc, []string{head}, "task add: hello\n\n")
			if err != nil {
				t.Fatal(err)
			}
			blob := gitHash(t, repo, "blob", string(doc))
			tree := gitHash(t, repo, "tree", "100644 blob "+blob+"\ttask.json\n")
			want := gitHash(t, repo, "commit", tree+" "+head+" task add: hello")
			if c != want {
				t.Fatalf("commit %s, git writes %s:\n%s", c, want, gittest.Git(t, repo, "cat-file", "-p", c))
			}
			if got := gittest.Git(t, repo, "cat-file", "blob", c+":task.json"); got+"\n" != string(doc) {
				t.Fatalf("document reads back as %q", got)
			}
			for _, id := range []string{c, blob, tree} {
				fi, err := os.Stat(objPath(t, repo, id))
				if err != nil {
					t.Fatalf("object %s is not stored loose: %v", id, err)
				}
				if fi.Mode().Perm() != 0o444 {
					t.Fatalf("object %s has mode %v, git writes 0444", id, fi.Mode().Perm())
				}
			}
			if tmps, _ := filepath.Glob(filepath.Join(filepath.Dir(objPath(t, repo, c)), "tmp_obj_*")); len(tmps) > 0 {
				t.Fatalf("temporary files left behind: %v", tmps)
			}
			gittest.Git(t, repo, "update-ref", "refs/agentmine/tasks/x", c)
			gittest.Git(t, repo, "fsck", "--strict", "--no-dangling")
			for _, bad := range []string{"not-an-id", strings.ToUpper(head), head[:len(head)-1]} {
				if _, err := s.writeCommit(ctx, bad, nil, "m"); err == nil {
					t.Fatalf("a commit naming the malformed tree id %q was written", bad)
				}
			}
		})
	}
}

// gitHash answers the id git computes, without writing, for a blob (text),
// tree (mktree input) or commit ("<tree> <parent> <message>").
func gitHash(t *testing.T, repo, typ, text string) string {
	t.Helper()
	switch typ {
	case "blob":
		return gittest.GitInput(t, repo, strings.NewReader(text), "hash-object", "--stdin")
	case "tree":
		return gittest.GitInput(t, repo, strings.NewReader(text), "mktree", "--missing")
	case "commit":
		f := strings.SplitN(text, " ", 3)
		return gittest.Git(t, repo, "commit-tree", f[0], "-p", f[1], "-m", f[2])
	}
	t.Fatalf("gitHash: unknown type %q", typ)
	return ""
}

// TestWriteObjectFreshensLoose: re-writing an object that already exists
// loose moves its mtime forward instead of leaving it alone, so a prune
// with an expiry keeps it; an old object not re-written is pruned by the
// same command, which shows the prune would have dropped it.
func TestWriteObjectFreshensLoose(t *testing.T) {
	ctx := context.Background()
	repo := objRepo(t)
	s := objOpen(t, repo)
	id, err := s.writeObject(ctx, "blob", []byte("kept\n"))
	if err != nil {
		t.Fatal(err)
	}
	other, err := s.writeObject(ctx, "blob", []byte("dropped\n"))
	if err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-72 * time.Hour).Truncate(time.Second)
	for _, o := range []string{id, other} {
		if err := os.Chtimes(objPath(t, repo, o), old, old); err != nil {
			t.Fatal(err)
		}
	}
	again, err := s.writeObject(ctx, "blob", []byte("kept\n"))
	if err != nil || again != id {
		t.Fatalf("re-write = %s, %v; want %s", again, err, id)
	}
	fi, err := os.Stat(objPath(t, repo, id))
	if err != nil {
		t.Fatal(err)
	}
	if !fi.ModTime().After(old) {
		t.Fatalf("mtime of the re-written object stayed at %v", fi.ModTime())
	}
	gittest.Git(t, repo, "prune", "--expire=1.day.ago")
	if _, err := os.Stat(objPath(t, repo, id)); err != nil {
		t.Fatalf("the freshened object was pruned: %v", err)
	}
	if _, err := os.Stat(objPath(t, repo, other)); !os.IsNotExist(err) {
		t.Fatalf("the old object that was not re-written survived the prune (%v): the test shows nothing", err)
	}
}

// TestWriteObjectFreshensPack: re-writing an object that exists only in a
// pack touches that pack (as git does) and writes no loose copy.
func TestWriteObjectFreshensPack(t *testing.T) {
	ctx := context.Background()
	repo := objRepo(t)
	s := objOpen(t, repo)
	c, err := s.writeDocCommit(ctx, "task.json", []byte("{\"v\":1}\n"), nil, "packed")
	if err != nil {
		t.Fatal(err)
	}
	gittest.Git(t, repo, "update-ref", "refs/agentmine/tasks/p", c)
	gittest.Git(t, repo, "repack", "-a", "-d", "-q")
	gittest.Git(t, repo, "prune-packed")
	if _, err := os.Stat(objPath(t, repo, c)); !os.IsNotExist(err) {
		t.Fatalf("commit still loose after repack: %v", err)
	}
	packs, _ := filepath.Glob(filepath.Join(repo, ".git", "objects", "pack", "*.pack"))
	if len(packs) != 1 {
		t.Fatalf("packs: %v", packs)
	}
	old := time.Now().Add(-72 * time.Hour).Truncate(time.Second)
	if err := os.Chtimes(packs[0], old, old); err != nil {
		t.Fatal(err)
	}
	// A fresh Store, as a new command would open.
	again, err := objOpen(t, repo).writeDocCommit(ctx, "task.json", []byte("{\"v\":1}\n"), nil, "packed")
	if err != nil || again != c {
		t.Fatalf("re-write = %s, %v; want %s", again, err, c)
	}
	fi, err := os.Stat(packs[0])
	if err != nil {
		t.Fatal(err)
	}
	if !fi.ModTime().After(old) {
		t.Fatalf("mtime of the pack holding the object stayed at %v", fi.ModTime())
	}
	if _, err := os.Stat(objPath(t, repo, c)); !os.IsNotExist(err) {
		t.Fatalf("a loose copy was written next to the packed object: %v", err)
	}
}

// TestObjectsFromLinkedSparseWorktree: a store opened in a linked worktree
// with sparse checkout (which sets extensions.worktreeConfig, refused by
// go-git's repository opener) writes into the common object directory.
func TestObjectsFromLinkedSparseWorktree(t *testing.T) {
	ctx := context.Background()
	repo := objRepo(t)
	wt := filepath.Join(t.TempDir(), "wt")
	gittest.Git(t, repo, "worktree", "add", "-q", "-b", "side", wt)
	gittest.Git(t, wt, "sparse-checkout", "set", "--no-cone", "/src/")
	if gittest.Git(t, repo, "config", "extensions.worktreeConfig") != "true" {
		t.Fatal("sparse checkout did not set extensions.worktreeConfig")
	}
	s := objOpen(t, wt)
	d, err := s.Create(ctx, syncKind, "w1", Change{Data: []byte("{\"v\":1}\n"), Message: "from the worktree"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(repo, ".git", "objects", d.Commit[:2], d.Commit[2:])); err != nil {
		t.Fatalf("object not in the common object directory: %v", err)
	}
	got, err := objOpen(t, repo).Get(ctx, syncKind, "w1")
	if err != nil || string(got.Data) != "{\"v\":1}\n" {
		t.Fatalf("main checkout reads %q, %v", got.Data, err)
	}
}

// TestObjectsWithAlternates: in a clone sharing another repository's
// objects through alternates, a commit whose parent lives only in the
// alternate is written locally and the history is whole for git.
func TestObjectsWithAlternates(t *testing.T) {
	gittest.SkipShort(t, "a repository borrowing objects through alternates")
	ctx := context.Background()
	src := objRepo(t)
	s := objOpen(t, src)
	base, err := s.Create(ctx, syncKind, "a1", Change{Data: []byte("{\"v\":1,\"n\":1}\n"), Message: "in the source"})
	if err != nil {
		t.Fatal(err)
	}
	clone := filepath.Join(t.TempDir(), "clone")
	gittest.Git(t, "", "clone", "-q", "--shared", src, clone)
	gittest.Git(t, clone, "fetch", "-q", "origin", "refs/agentmine/*:refs/agentmine/*")
	if _, err := os.Stat(objPath(t, clone, base.Commit)); !os.IsNotExist(err) {
		t.Fatalf("the source's object is in the clone's own store: %v", err)
	}
	cs := objOpen(t, clone)
	d, _, err := cs.Update(ctx, syncKind, "a1", func(cur Doc) (Change, error) {
		return Change{Data: []byte("{\"v\":1,\"n\":2}\n"), Message: "in the clone"}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if p := gittest.Git(t, clone, "rev-parse", d.Commit+"^"); p != base.Commit {
		t.Fatalf("parent %s, want %s", p, base.Commit)
	}
	if _, err := os.Stat(objPath(t, clone, d.Commit)); err != nil {
		t.Fatalf("new commit not in the clone's store: %v", err)
	}
	gittest.Git(t, clone, "fsck", "--strict", "--no-dangling")
}

// TestObjectsSHA256Store: the store's whole write path works in a SHA-256
// repository through git: create, update, list, notes.
func TestObjectsSHA256Store(t *testing.T) {
	gittest.SkipShort(t, "a SHA-256 repository round trip")
	ctx := context.Background()
	repo := objRepo(t, "--object-format=sha256")
	s := objOpen(t, repo)
	d, err := s.Create(ctx, syncKind, "s1", Change{Data: []byte("{\"v\":1}\n"), Message: "create"})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Commit) != 64 {
		t.Fatalf("commit id %q is not SHA-256", d.Commit)
	}
	if _, _, err := s.Update(ctx, syncKind, "s1", func(cur Doc) (Change, error) {
		return Change{Data: []byte("{\"v\":1,\"x\":2}\n"), Message: "update"}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendNote(ctx, d.Commit, []byte(`{"v":1,"exit_code":0}`)); err != nil {
		t.Fatal(err)
	}
	docs, problems, err := s.List(ctx, syncKind)
	if err != nil || len(problems) != 0 || len(docs) != 1 || string(docs[0].Data) != "{\"v\":1,\"x\":2}\n" {
		t.Fatalf("list = %v %v %v", docs, problems, err)
	}
	notes, err := s.ReadNotes(ctx, []string{d.Commit})
	if err != nil || fmt.Sprint(notes[d.Commit]) != `[{"v":1,"exit_code":0}]` {
		t.Fatalf("notes = %v, %v", notes, err)
	}
	gittest.Git(t, repo, "fsck", "--strict", "--no-dangling")
}

// TestIdxHas: the pack index lookup finds every object git packed, misses
// one it did not, and answers false for a truncated or foreign index.
func TestIdxHas(t *testing.T) {
	gittest.SkipShort(t, "builds and repacks many objects")
	repo := objRepo(t)
	for i := 0; i < 40; i++ {
		gittest.Git(t, repo, "commit", "-q", "--allow-empty", "-m", fmt.Sprint(i))
	}
	gittest.Git(t, repo, "repack", "-a", "-d", "-q")
	idxs, _ := filepath.Glob(filepath.Join(repo, ".git", "objects", "pack", "*.idx"))
	if len(idxs) != 1 {
		t.Fatalf("indexes: %v", idxs)
	}
	ids := strings.Fields(gittest.Git(t, repo, "rev-list", "--objects", "--no-object-names", "HEAD"))
	for _, id := range ids {
		if !idxHas(idxs[0], rawID(t, id)) {
			t.Fatalf("%s is packed but not found", id)
		}
	}
	absent := rawID(t, gitHash(t, repo, "blob", "never written\n"))
	if idxHas(idxs[0], absent) {
		t.Fatal("an object that was never written was found")
	}
	data, err := os.ReadFile(idxs[0])
	if err != nil {
		t.Fatal(err)
	}
	for name, bad := range map[string][]byte{"truncated": data[:600], "foreign": append([]byte("PACK"), data[4:]...)} {
		p := filepath.Join(t.TempDir(), name+".idx")
		if err := os.WriteFile(p, bad, 0o644); err != nil {
			t.Fatal(err)
		}
		if idxHas(p, rawID(t, ids[len(ids)-1])) {
			t.Fatalf("a %s index answered true", name)
		}
	}
}

// rawID decodes a hex object id.
func rawID(t *testing.T, id string) []byte {
	t.Helper()
	raw, err := hex.DecodeString(id)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// TestSharedRepositoryObjects: with core.sharedRepository=group, objects are
// written by git, which gives a new object directory the group's write
// permission (and setgid) that the setting asks for; written in-process
// with the umask's 0755, the group could not add objects beside them.
func TestSharedRepositoryObjects(t *testing.T) {
	ctx := context.Background()
	repo := objRepo(t)
	gittest.Git(t, repo, "config", "core.sharedRepository", "group")
	s := objOpen(t, repo)
	// A blob whose fan-out directory git has not created yet.
	var id string
	for i := 0; ; i++ {
		data := []byte(fmt.Sprintf("shared %d\n", i))
		want := gitHash(t, repo, "blob", string(data))
		if _, err := os.Stat(filepath.Dir(objPath(t, repo, want))); os.IsNotExist(err) {
			got, err := s.writeObject(ctx, "blob", data)
			if err != nil || got != want {
				t.Fatalf("writeObject = %s, %v; want %s", got, err, want)
			}
			id = got
			break
		}
	}
	fi, err := os.Stat(filepath.Dir(objPath(t, repo, id)))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm()&0o020 == 0 || fi.Mode()&os.ModeSetgid == 0 {
		t.Fatalf("object directory mode %v: the group cannot write objects into it", fi.Mode())
	}
}

// syncKind is a task-shaped kind for these tests' documents.
var syncKind = Kind{Dir: "tasks", File: "task.json", Noun: "task"}

// TestWriteObjectsReuseDeflaters: one store writes objects of very
// different sizes one after another and from several goroutines at once,
// reusing its zlib writers; each reads back from git as written (a writer
// carrying state over from the previous object would corrupt the next),
// and the repository passes git fsck.
func TestWriteObjectsReuseDeflaters(t *testing.T) {
	ctx := context.Background()
	repo := objRepo(t)
	s := objOpen(t, repo)
	sizes := []int{0, 1, 300, 70000, 5, 200000, 64, 65535, 65536, 2}
	content := func(g, i, n int) []byte {
		b := make([]byte, n)
		for j := range b {
			// Compressible runs mixed with bytes that vary by object.
			b[j] = byte((j/7)*31 + i*17 + g*101 + j%3)
		}
		return b
	}
	type written struct {
		id   string
		data []byte
	}
	var all []written
	var mu sync.Mutex
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i, n := range sizes {
				data := content(g, i, n)
				id, err := s.writeObject(ctx, "blob", data)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				all = append(all, written{id, data})
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	if len(all) != 4*len(sizes) {
		t.Fatalf("%d objects written, want %d", len(all), 4*len(sizes))
	}
	for _, w := range all {
		if want := gitHash(t, repo, "blob", string(w.data)); w.id != want {
			t.Fatalf("a blob of %d bytes was written as %s, git names it %s", len(w.data), w.id, want)
		}
		got, err := os.ReadFile(objPath(t, repo, w.id))
		if err != nil {
			t.Fatalf("blob %s is not stored loose: %v", w.id, err)
		}
		if len(got) == 0 {
			t.Fatalf("blob %s is empty on disk", w.id)
		}
		if back := gittest.Git(t, repo, "cat-file", "-s", w.id); back != fmt.Sprint(len(w.data)) {
			t.Fatalf("git reads blob %s as %s bytes, %d written", w.id, back, len(w.data))
		}
	}
	gittest.Git(t, repo, "fsck", "--strict")
}
