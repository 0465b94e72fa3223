package gitstore

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

// allObjects returns every object of repo as git's cat-file reads it, by id.
func allObjects(t *testing.T, repo string) map[string]Object {
	t.Helper()
	cmd := exec.Command("git", "cat-file", "--batch-all-objects", "--batch")
	cmd.Dir = repo
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(bytes.NewReader(out))
	m := map[string]Object{}
	for {
		line, err := r.ReadString('\n')
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		f := strings.Fields(line)
		n, _ := strconv.Atoi(f[2])
		data := make([]byte, n+1)
		if _, err := io.ReadFull(r, data); err != nil {
			t.Fatal(err)
		}
		m[f[0]] = Object{Type: f[1], Data: data[:n]}
	}
	return m
}

// deltaRepo makes a repository whose history edits a few files many times,
// so that a repack stores most blobs and trees as deltas, some of them in
// long chains.
func deltaRepo(t *testing.T, extra ...string) string {
	t.Helper()
	repo := objRepo(t, extra...)
	var in bytes.Buffer
	body := strings.Repeat("line of a document that changes a little every time\n", 40)
	for i := 0; i < 120; i++ {
		doc := fmt.Sprintf("%s{\"n\": %d}\n%s", body[:len(body)/2], i, body[len(body)/2:])
		fmt.Fprintf(&in, "commit refs/heads/main\ncommitter A <a@example.com> %d +0000\ndata 4\nedit\n", 1700000000+i)
		if i == 0 {
			fmt.Fprintf(&in, "from refs/heads/main^0\n")
		}
		fmt.Fprintf(&in, "M 100644 inline doc.json\ndata %d\n%s\n", len(doc), doc)
		fmt.Fprintf(&in, "M 100644 inline dir/f%d\ndata %d\n%s\n", i%7, len(doc)+1, doc+"x")
	}
	gittest.GitInput(t, repo, &in, "fast-import", "--quiet", "--force")
	return repo
}

// TestODBReadsWhatGitReads: every object of repositories packed with
// offset deltas and with reference deltas, in long chains, plus loose
// objects, in SHA-1 and SHA-256, reads in-process exactly as git's
// cat-file reads it; an object the reader does not have is not answered.
func TestODBReadsWhatGitReads(t *testing.T) {
	for _, c := range []struct {
		name   string
		format string
		repack []string
	}{
		{"ofs-delta", "sha1", []string{"repack", "-a", "-d", "-f", "-q", "--depth=50", "--window=50"}},
		{"ref-delta", "sha1", []string{"-c", "repack.useDeltaBaseOffset=false", "repack", "-a", "-d", "-f", "-q", "--depth=50", "--window=50"}},
		{"sha256", "sha256", []string{"repack", "-a", "-d", "-f", "-q", "--depth=50", "--window=50"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			repo := deltaRepo(t, "--object-format="+c.format)
			gittest.Git(t, repo, c.repack...)
			gittest.Git(t, repo, "prune-packed")
			// Loose objects beside the pack.
			s := objOpen(t, repo)
			for i := 0; i < 5; i++ {
				if _, err := s.writeDocCommit(t.Context(), "task.json", []byte(fmt.Sprintf("{\"v\":1,\"i\":%d}\n", i)), nil, "loose"); err != nil {
					t.Fatal(err)
				}
			}
			want := allObjects(t, repo)
			verify := gittest.Git(t, repo, "verify-pack", "-v", packOf(t, repo)+".idx")
			if !strings.Contains(verify, "chain length = 10") {
				t.Fatalf("the pack has no delta chain of length 10; the test shows little:\n%s", verify)
			}
			hl := 20
			if c.format == "sha256" {
				hl = 32
			}
			db := newODB(filepath.Join(repo, ".git", "objects"), hl)
			defer db.close()
			for id, o := range want {
				typ, data, err := db.read(id)
				if err != nil {
					t.Fatalf("%s %s: %v", o.Type, id, err)
				}
				if typ != o.Type || !bytes.Equal(data, o.Data) {
					t.Fatalf("%s reads as %s %q, git reads %s %q", id, typ, data, o.Type, o.Data)
				}
			}
			absent := gitHash(t, repo, "blob", "never written\n")
			if _, _, err := db.read(absent); err != errNotHere {
				t.Fatalf("an absent object answered %v", err)
			}
		})
	}
}

// packOf returns the path of repo's one pack, without its extension.
func packOf(t *testing.T, repo string) string {
	t.Helper()
	idxs, _ := filepath.Glob(filepath.Join(repo, ".git", "objects", "pack", "*.idx"))
	if len(idxs) != 1 {
		t.Fatalf("packs: %v", idxs)
	}
	return strings.TrimSuffix(idxs[0], ".idx")
}

// TestODBFollowsRepacks: a reader opened before a repack (which deletes the
// pack it mapped and writes a new one) still reads every object, and one
// written after it had listed the packs is found in the new pack.
func TestODBFollowsRepacks(t *testing.T) {
	repo := deltaRepo(t)
	gittest.Git(t, repo, "repack", "-a", "-d", "-q")
	db := newODB(filepath.Join(repo, ".git", "objects"), 20)
	defer db.close()
	head := gittest.Git(t, repo, "rev-parse", "HEAD")
	if typ, _, err := db.read(head); err != nil || typ != "commit" {
		t.Fatalf("HEAD reads as %q, %v", typ, err)
	}
	old := packOf(t, repo)
	gittest.CommitFiles(t, repo, "after", map[string]string{"late.txt": "late\n"})
	late := gittest.Git(t, repo, "rev-parse", "HEAD:late.txt")
	gittest.Git(t, repo, "repack", "-a", "-d", "-f", "-q")
	gittest.Git(t, repo, "prune-packed")
	if packOf(t, repo) == old {
		t.Fatal("the repack kept the old pack: the test shows nothing")
	}
	for id, o := range allObjects(t, repo) {
		typ, data, err := db.read(id)
		if err != nil || typ != o.Type || !bytes.Equal(data, o.Data) {
			t.Fatalf("%s after the repack: %s, %v", id, typ, err)
		}
	}
	if _, data, err := db.read(late); err != nil || string(data) != "late\n" {
		t.Fatalf("the object packed after listing reads as %q, %v", data, err)
	}
}

// TestODBUnmapsReplacedPacks: a reader that keeps reading objects it finds
// in a pack a repack has since deleted looks at the pack directory again
// after its recheck interval and unmaps the deleted pack, so that a
// long-lived process does not keep its disk space.
func TestODBUnmapsReplacedPacks(t *testing.T) {
	repo := deltaRepo(t)
	gittest.Git(t, repo, "repack", "-a", "-d", "-q")
	db := newODB(filepath.Join(repo, ".git", "objects"), 20)
	defer db.close()
	head := gittest.Git(t, repo, "rev-parse", "HEAD")
	if _, _, err := db.read(head); err != nil {
		t.Fatal(err)
	}
	old := packOf(t, repo)
	gittest.CommitFiles(t, repo, "more", map[string]string{"more.txt": "more\n"})
	gittest.Git(t, repo, "repack", "-a", "-d", "-f", "-q")
	if packOf(t, repo) == old {
		t.Fatal("the repack kept the old pack: the test shows nothing")
	}
	mapped := func() []string {
		db.mu.RLock()
		defer db.mu.RUnlock()
		var names []string
		for _, p := range db.packs {
			names = append(names, p.name)
		}
		return names
	}
	if _, _, err := db.read(head); err != nil || !slices.Contains(mapped(), old) {
		t.Fatalf("before the recheck: %v, mapped %v", err, mapped())
	}
	db.recheck = 0
	if _, _, err := db.read(head); err != nil {
		t.Fatal(err)
	}
	if slices.Contains(mapped(), old) {
		t.Fatalf("the deleted pack is still mapped: %v", mapped())
	}
}

// TestODBDamage: a truncated pack, a pack index that lies about its
// objects, a corrupt loose object: the reader answers none of them (git
// does, or says what is wrong) and never panics.
func TestODBDamage(t *testing.T) {
	repo := deltaRepo(t)
	gittest.Git(t, repo, "repack", "-a", "-d", "-q")
	want := allObjects(t, repo)
	pack := packOf(t, repo)
	data, err := os.ReadFile(pack + ".pack")
	if err != nil {
		t.Fatal(err)
	}
	objDir := filepath.Join(t.TempDir(), "objects")
	if err := os.MkdirAll(filepath.Join(objDir, "pack"), 0o755); err != nil {
		t.Fatal(err)
	}
	idx, err := os.ReadFile(pack + ".idx")
	if err != nil {
		t.Fatal(err)
	}
	for _, cut := range []int{len(data) / 2, 100, 13} {
		if err := os.WriteFile(filepath.Join(objDir, "pack", "pack-x.pack"), data[:cut], 0o444); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(objDir, "pack", "pack-x.idx"), idx, 0o444); err != nil {
			t.Fatal(err)
		}
		db := newODB(objDir, 20)
		for id, o := range want {
			typ, got, err := db.read(id)
			if err == nil && (typ != o.Type || !bytes.Equal(got, o.Data)) {
				t.Fatalf("pack cut at %d: %s reads as %s %q", cut, id, typ, got)
			}
		}
		db.close()
		os.Remove(filepath.Join(objDir, "pack", "pack-x.pack"))
		os.Remove(filepath.Join(objDir, "pack", "pack-x.idx"))
	}
	// A loose object whose content does not match its header.
	id := strings.Repeat("ab", 20)
	if err := os.MkdirAll(filepath.Join(objDir, "ab"), 0o755); err != nil {
		t.Fatal(err)
	}
	var z bytes.Buffer
	zw := newZlibWriter(&z)
	zw.Write([]byte("blob 10\x00short"))
	zw.Close()
	if err := os.WriteFile(filepath.Join(objDir, "ab", id[2:]), z.Bytes(), 0o444); err != nil {
		t.Fatal(err)
	}
	if _, _, err := newODB(objDir, 20).read(id); err != errNotHere {
		t.Fatalf("a loose object shorter than its header answered %v", err)
	}
}

func newZlibWriter(w io.Writer) *zlib.Writer { return zlib.NewWriter(w) }

// mappedRss returns how many kB of the file at path this process has
// resident through its mappings (/proc/self/smaps).
func mappedRss(t *testing.T, path string) int {
	t.Helper()
	data, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Skipf("no /proc/self/smaps: %v", err)
	}
	total, in := 0, false
	for _, l := range strings.Split(string(data), "\n") {
		f := strings.Fields(l)
		if len(f) >= 5 && strings.Contains(f[0], "-") && !strings.HasSuffix(f[0], ":") {
			in = len(f) >= 6 && f[5] == path
			continue
		}
		if in && len(f) >= 2 && f[0] == "Rss:" {
			n, _ := strconv.Atoi(f[1])
			total += n
		}
	}
	return total
}

// TestReleaseCachesKeepsReadsRight: after ReleaseCaches the pack and its
// index hold no resident page and no delta base is cached, and every
// object still reads exactly as git reads it (the pages come back from the
// file).
func TestReleaseCachesKeepsReadsRight(t *testing.T) {
	repo := deltaRepo(t)
	gittest.Git(t, repo, "repack", "-a", "-d", "-f", "-q", "--depth=50", "--window=50")
	gittest.Git(t, repo, "prune-packed")
	want := allObjects(t, repo)
	pack := packOf(t, repo)
	s := objOpen(t, repo)
	readAll := func() {
		t.Helper()
		for id, o := range want {
			got, ok := s.readLocal(id)
			if !ok || got.typ != o.Type || !bytes.Equal(got.data, o.Data) {
				t.Fatalf("%s reads as %s %q (ok %v), git reads %s %q", id, got.typ, got.data, ok, o.Type, o.Data)
			}
		}
	}
	readAll()
	if mappedRss(t, pack+".pack") == 0 || mappedRss(t, pack+".idx") == 0 {
		t.Fatal("reading every object left no page of the pack resident; the test shows nothing")
	}
	if s.odb.bases.bytes == 0 {
		t.Fatal("reading delta chains cached no base; the test shows nothing")
	}
	s.ReleaseCaches()
	if p, i := mappedRss(t, pack+".pack"), mappedRss(t, pack+".idx"); p != 0 || i != 0 {
		t.Errorf("after ReleaseCaches %d kB of the pack and %d kB of its index are resident", p, i)
	}
	if s.odb.bases.bytes != 0 || len(s.kept) != 0 {
		t.Errorf("after ReleaseCaches %d bytes of delta bases and %d kept objects remain", s.odb.bases.bytes, len(s.kept))
	}
	readAll()
}

// TestReadManyInPackOrder: many objects asked for at once in an order that
// is not the pack's (by id, with paths through commits among them, some of
// them not there) read exactly as git reads them, from the pack
// fast-import wrote (each blob a delta of the one written before it) and
// from a repacked one. And reading the fast-import pack's blobs at once,
// in pack order, leaves the shared delta base cache a fraction of what
// reading them one at a time in id order leaves there.
func TestReadManyInPackOrder(t *testing.T) {
	for _, repack := range []bool{false, true} {
		t.Run(fmt.Sprintf("repacked=%v", repack), func(t *testing.T) {
			repo := deltaRepo(t)
			if repack {
				gittest.Git(t, repo, "repack", "-a", "-d", "-f", "-q", "--depth=50", "--window=50")
			}
			want := allObjects(t, repo)
			var names, blobs []string
			for id, o := range want {
				names = append(names, id)
				switch o.Type {
				case "commit":
					names = append(names, id+"^{commit}:doc.json", id+"^{commit}:dir/f3", id+"^{commit}:nothere")
				case "blob":
					blobs = append(blobs, id)
				}
			}
			slices.Sort(names)
			slices.Sort(blobs)
			s := objOpen(t, repo)
			cf := s.catFile(t.Context())
			defer cf.close()
			got, err := cf.getMany(names)
			if err != nil {
				t.Fatal(err)
			}
			for i, name := range names {
				id, _, hasPath := strings.Cut(name, "^{commit}:")
				if hasPath {
					out, err := exec.Command("git", "-C", repo, "rev-parse", "--verify", "-q", name).Output()
					if err != nil {
						if !got[i].missing {
							t.Fatalf("%s: git has none, read %s %q", name, got[i].typ, got[i].data)
						}
						continue
					}
					id = strings.TrimSpace(string(out))
				}
				o := want[id]
				if got[i].missing || got[i].typ != o.Type || !bytes.Equal(got[i].data, o.Data) {
					t.Fatalf("%s reads as %s %q (missing %v), git reads %s %q", name, got[i].typ, got[i].data, got[i].missing, o.Type, o.Data)
				}
			}
			if repack {
				return
			}
			inOrder := objOpen(t, repo)
			cf2 := inOrder.catFile(t.Context())
			defer cf2.close()
			if _, err := cf2.getMany(blobs); err != nil {
				t.Fatal(err)
			}
			oneByOne := objOpen(t, repo)
			for _, id := range blobs {
				if _, ok := oneByOne.readLocal(id); !ok {
					t.Fatalf("%s does not read in-process", id)
				}
			}
			if a, b := inOrder.odb.bases.bytes, oneByOne.odb.bases.bytes; b == 0 || a > b/4 {
				t.Errorf("reading the blobs in pack order cached %d bytes of delta bases, one at a time %d", a, b)
			}
		})
	}
}
