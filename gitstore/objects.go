package gitstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	gitobject "github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/go-git/go-git/v5/storage/filesystem/dotgit"
	"golang.org/x/sys/unix"
)

// Objects are encoded and stored in-process with go-git's object layer
// (plumbing/object encoders, storage/filesystem's loose-object writer): about
// 12x faster than forking git per object (design §2). Only its object storage
// is used, opened on the object directory itself: never go-git's repository
// opener (it refuses extensions.worktreeConfig) and never its ref writer
// (every ref write goes through `git update-ref --stdin`).
//
// go-git v5 fixes the hash at build time (plumbing.Hash is 20 bytes unless
// built with the sha256 tag), so in a SHA-256 repository, and when the object
// directory is not named "objects" (a custom GIT_OBJECT_DIRECTORY), objects
// go through `git hash-object` instead.
//
// Reads stay with git: every read starts from a ref, which only git resolves
// safely next to concurrent writers, so `git cat-file --batch` answers the ref
// and the objects in one process. Reading a document through go-git after a
// `git rev-parse` measured the same as one cat-file process (10,000 tasks:
// 5.3-7.1 ms against 6.1-7.0 ms per Get), and bulk reads through go-git's
// object decoding were ~6x slower (design §2).

// objectDB is the repository's object directory opened with go-git's
// storage layer, once per Store.
type objectDB struct {
	// mu serialises use of storage, which is not safe for concurrent use.
	mu      sync.Mutex
	storage *filesystem.ObjectStorage
	// objDir is the object directory, for freshening by path.
	objDir string
}

// objects opens the go-git object storage on first use. It returns nil when
// objects must go through git instead (see above).
func (s *Store) objects() *objectDB {
	s.objOnce.Do(func() {
		if !s.sha1 || filepath.Base(s.objDir) != "objects" {
			return
		}
		// Rooted at the directory holding "objects" (the common git dir, also
		// for a linked worktree): go-git's object store reads and writes
		// <root>/objects and nothing else.
		dg := dotgit.New(osfs.New(filepath.Dir(s.objDir)))
		s.objDB = &objectDB{
			storage: filesystem.NewObjectStorage(dg, cache.NewObjectLRUDefault()),
			objDir:  s.objDir,
		}
	})
	return s.objDB
}

// writeObject stores an object of type typ ("blob", "tree", "commit") and
// returns its id. An object that already exists is freshened instead, as git
// does, so that a concurrent prune cannot drop it before a ref points at it.
func (s *Store) writeObject(ctx context.Context, typ string, data []byte) (string, error) {
	db := s.objects()
	if db == nil {
		// git hash-object -w freshens an existing object itself.
		out, err := s.git.RunInput(ctx, bytes.NewReader(data), "hash-object", "-w", "-t", typ, "--stdin")
		if err != nil {
			return "", fmt.Errorf("writing %s object: %w", typ, err)
		}
		return strings.TrimSpace(string(out)), nil
	}
	t, err := plumbing.ParseObjectType(typ)
	if err != nil {
		return "", fmt.Errorf("writing %s object: %w", typ, err)
	}
	obj := &plumbing.MemoryObject{}
	obj.SetType(t)
	obj.Write(data)
	return s.storeObject(obj)
}

// storeObject writes an encoded object into the go-git object storage, or
// freshens it when it is already there.
func (s *Store) storeObject(obj plumbing.EncodedObject) (string, error) {
	db := s.objects()
	h := obj.Hash()
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.freshen(h) {
		return h.String(), nil
	}
	if _, err := db.storage.SetEncodedObject(obj); err != nil {
		return "", fmt.Errorf("writing %s object %s: %w", obj.Type(), h, err)
	}
	return h.String(), nil
}

// freshen reports whether the object h already exists in the repository's
// own object directory, after updating the modification time of its loose
// file or of the pack holding it to now, as git does before it skips a
// write. Anything that fails (a pack that a concurrent repack removed, a file
// that cannot be touched) answers false, and the caller writes the object: a
// duplicate is harmless, a missing object is not.
func (db *objectDB) freshen(h plumbing.Hash) bool {
	id := h.String()
	// A nil time list sets both times to now, needing only write permission
	// or ownership, as git's utime(path, NULL).
	if unix.Utimes(filepath.Join(db.objDir, id[:2], id[2:]), nil) == nil {
		return true
	}
	idxs, _ := filepath.Glob(filepath.Join(db.objDir, "pack", "pack-*.idx"))
	for _, idx := range idxs {
		if idxHas(idx, h) {
			return unix.Utimes(strings.TrimSuffix(idx, ".idx")+".pack", nil) == nil
		}
	}
	return false
}

// idxHas reports whether the version 2 pack index at path lists h. Like git,
// it reads only the fan-out table and the run of sorted names sharing h's
// first byte, not the whole index: go-git's idxfile decoder reads and
// checksums every index in full, a cost that grows with the repository on
// every write of a new object. A version 1 or damaged index answers false.
func idxHas(path string, h plumbing.Hash) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return false
	}
	var hdr [8 + 256*4]byte
	if _, err := f.ReadAt(hdr[:], 0); err != nil || !bytes.Equal(hdr[:8], []byte{0xff, 't', 'O', 'c', 0, 0, 0, 2}) {
		return false
	}
	fan := hdr[8:]
	var lo int64
	if h[0] > 0 {
		lo = int64(binary.BigEndian.Uint32(fan[(int(h[0])-1)*4:]))
	}
	hi := int64(binary.BigEndian.Uint32(fan[int(h[0])*4:]))
	n, size := hi-lo, int64(len(h))
	if n <= 0 || int64(len(hdr))+hi*size > fi.Size() {
		return false
	}
	names := make([]byte, n*size)
	if _, err := f.ReadAt(names, int64(len(hdr))+lo*size); err != nil {
		return false
	}
	i := sort.Search(int(n), func(i int) bool {
		return bytes.Compare(names[int64(i)*size:int64(i+1)*size], h[:]) >= 0
	})
	return i < int(n) && bytes.Equal(names[int64(i)*size:int64(i+1)*size], h[:])
}

// writeDocCommit writes blob, tree and commit for one entity document and
// returns the commit id.
func (s *Store) writeDocCommit(ctx context.Context, file string, doc []byte, parents []string, message string) (string, error) {
	blob, err := s.writeObject(ctx, "blob", doc)
	if err != nil {
		return "", err
	}
	if s.objects() == nil {
		raw, err := hex.DecodeString(blob)
		if err != nil {
			return "", fmt.Errorf("writing tree: bad blob id %q", blob)
		}
		var tree bytes.Buffer
		fmt.Fprintf(&tree, "100644 %s\x00", file)
		tree.Write(raw)
		treeID, err := s.writeObject(ctx, "tree", tree.Bytes())
		if err != nil {
			return "", err
		}
		return s.writeCommit(ctx, treeID, parents, message)
	}
	tree := &gitobject.Tree{Entries: []gitobject.TreeEntry{{Name: file, Mode: filemode.Regular, Hash: plumbing.NewHash(blob)}}}
	obj := &plumbing.MemoryObject{}
	if err := tree.Encode(obj); err != nil {
		return "", fmt.Errorf("writing tree for %s: %w", file, err)
	}
	treeID, err := s.storeObject(obj)
	if err != nil {
		return "", err
	}
	return s.writeCommit(ctx, treeID, parents, message)
}

// writeCommit writes a commit object for tree with the given parents.
func (s *Store) writeCommit(ctx context.Context, tree string, parents []string, message string) (string, error) {
	s.vars()
	message = strings.TrimRight(message, "\n") + "\n"
	if s.objects() == nil {
		var c bytes.Buffer
		fmt.Fprintf(&c, "tree %s\n", tree)
		for _, p := range parents {
			fmt.Fprintf(&c, "parent %s\n", p)
		}
		fmt.Fprintf(&c, "author %s\ncommitter %s\n\n", s.author, s.committer)
		c.WriteString(message)
		return s.writeObject(ctx, "commit", c.Bytes())
	}
	c := &gitobject.Commit{Author: s.author.signature(), Committer: s.committer.signature(), Message: message}
	ids := append([]string{tree}, parents...)
	for i, id := range ids {
		if !plumbing.IsHash(id) {
			return "", fmt.Errorf("writing commit: bad object id %q", id)
		}
		if i == 0 {
			c.TreeHash = plumbing.NewHash(id)
		} else {
			c.ParentHashes = append(c.ParentHashes, plumbing.NewHash(id))
		}
	}
	obj := &plumbing.MemoryObject{}
	if err := c.Encode(obj); err != nil {
		return "", fmt.Errorf("writing commit: %w", err)
	}
	return s.storeObject(obj)
}

// signature converts the identity to go-git's, keeping git's time zone.
func (i Ident) signature() gitobject.Signature {
	var sig gitobject.Signature
	sig.Decode([]byte(i.String()))
	return sig
}
