package gitstore

import (
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

// TestWriteObjectsPackOrLoose: ObjectID names objects as git does, and
// WriteObjects stores them so that git reads them back byte for byte: one
// pack (no loose object) when there are many, loose objects when there are
// few, in SHA-1 and SHA-256 repositories; git fsck finds nothing wrong.
func TestWriteObjectsPackOrLoose(t *testing.T) {
	for _, format := range []string{"sha1", "sha256"} {
		for _, n := range []int{3, looseLimit + 20} {
			t.Run(fmt.Sprintf("%s/%d", format, n), func(t *testing.T) {
				ctx := context.Background()
				repo := objRepo(t, "--object-format="+format)
				s := objOpen(t, repo)
				objDir := gittest.Git(t, repo, "rev-parse", "--path-format=absolute", "--git-path", "objects")
				packsBefore, _ := filepath.Glob(filepath.Join(objDir, "pack", "*.pack"))
				var objs []Object
				var ids []string
				for i := 0; i < n; i++ {
					// Sizes on both sides of the 4-bit and 11-bit boundaries of
					// a pack entry's size field.
					blob := []byte(fmt.Sprintf("{\"v\":1,\"n\":%d,\"pad\":%q}\n", i, strings.Repeat("x", i*37%3000)))
					id := s.ObjectID("blob", blob)
					if i < 2 {
						if want := gittest.GitInput(t, repo, strings.NewReader(string(blob)), "hash-object", "--stdin"); id != want {
							t.Fatalf("ObjectID %s, git says %s", id, want)
						}
					}
					tree := fmt.Sprintf("100644 f%d.json\x00", i)
					raw, _ := hex.DecodeString(id)
					treeBytes := append([]byte(tree), raw...)
					commit := []byte(fmt.Sprintf("tree %s\nauthor A <a@b> 1700000000 +0000\ncommitter A <a@b> 1700000000 +0000\n\nc%d\n", s.ObjectID("tree", treeBytes), i))
					objs = append(objs, Object{Type: "blob", Data: blob}, Object{Type: "tree", Data: treeBytes}, Object{Type: "commit", Data: commit})
					ids = append(ids, id, s.ObjectID("tree", treeBytes), s.ObjectID("commit", commit))
				}
				if err := s.WriteObjects(ctx, objs); err != nil {
					t.Fatal(err)
				}
				b, err := s.OpenBatch(ctx)
				if err != nil {
					t.Fatal(err)
				}
				back, err := b.ReadMany(ids)
				b.Close()
				if err != nil {
					t.Fatal(err)
				}
				for i, o := range back {
					if o.Missing || o.Type != objs[i].Type || string(o.Data) != string(objs[i].Data) {
						t.Fatalf("object %s reads back as %+v, want %+v", ids[i], o, objs[i])
					}
				}
				packs, _ := filepath.Glob(filepath.Join(objDir, "pack", "*.pack"))
				_, err = os.Stat(objPath(t, repo, ids[0]))
				if n >= looseLimit && (len(packs) != len(packsBefore)+1 || err == nil) {
					t.Fatalf("%d objects: %d packs (before %d), loose object: %v", len(objs), len(packs), len(packsBefore), err)
				}
				if n < looseLimit && (len(packs) != len(packsBefore) || err != nil) {
					t.Fatalf("%d objects: %d packs (before %d), loose object: %v", len(objs), len(packs), len(packsBefore), err)
				}
				gittest.Git(t, repo, "update-ref", "refs/heads/last", ids[len(ids)-1])
				if out := gittest.Git(t, repo, "fsck", "--strict", "--no-dangling"); out != "" {
					t.Fatalf("fsck: %s", out)
				}
			})
		}
	}
}

// TestWriteObjectsRefusesUnknownType: an object of no known type among
// many or few is refused by name before anything is written: no pack, no
// loose object of the good ones before it.
func TestWriteObjectsRefusesUnknownType(t *testing.T) {
	for _, n := range []int{3, looseLimit + 20} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			ctx := context.Background()
			repo := objRepo(t)
			s := objOpen(t, repo)
			objDir := gittest.Git(t, repo, "rev-parse", "--path-format=absolute", "--git-path", "objects")
			var objs []Object
			for i := 0; i < n; i++ {
				objs = append(objs, Object{Type: "blob", Data: []byte(fmt.Sprintf("blob %d\n", i))})
			}
			objs[n-1].Type = "note"
			err := s.WriteObjects(ctx, objs)
			if err == nil || !strings.Contains(err.Error(), `unknown object type "note"`) {
				t.Fatalf("err = %v, want the unknown type named", err)
			}
			if packs, _ := filepath.Glob(filepath.Join(objDir, "pack", "*.pack")); len(packs) != 0 {
				t.Errorf("packs written: %v", packs)
			}
			if _, err := os.Stat(objPath(t, repo, s.ObjectID("blob", objs[0].Data))); err == nil {
				t.Error("the first object was written loose")
			}
		})
	}
}
