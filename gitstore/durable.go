package gitstore

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// A write is acknowledged only once the objects its refs point at are
// sure to stay. git's own race: `git gc --prune=now` (or `git prune` with
// any expiry a fresh object falls under) lists what the refs reach, then
// deletes every loose object outside that list. An object written after
// the listing, or written before it and pointed at by a ref only after it,
// is deleted although a ref now names it: the write "succeeded" and the
// ref points at nothing. Plain git loses writes this way (README has the
// numbers, from scripts/prune-race).
//
// The store closes the race for the objects it writes itself:
//
//   - it remembers each object it wrote, content included, until a ref
//     transaction points at it (written);
//   - after `update-ref` commits, every object of the transaction's new
//     tips that this process wrote is made sure of: found loose (or
//     written loose again from the content kept, when a prune removed it
//     or it only existed in a pack that a concurrent repack may drop), its
//     modification time set one second past the current second (a prune
//     keeps a loose object newer than its expiry, which a prune already
//     running took at its start, in whole seconds), then checked again;
//   - a transaction git refuses because its new value is missing (pruned
//     between the write and the ref update) has its objects written again
//     and is retried;
//   - creating a loose object retries when a prune removed the fan-out
//     directory or the temporary file under it (writeLoose).
//
// Only then does Transact return. An object it cannot bring back (its
// content is not known here: written by another process, or beyond what is
// kept) is an error naming the ref and the missing object, never a
// silent success.

// keptWrittenLimit bounds the content kept of objects not yet pointed at
// by a ref; past it the memory is cleared, and the objects written before
// are only checked for, not written again.
const keptWrittenLimit = 64 << 20

// secureRounds bounds the rounds of "write back what is missing, check
// again" after a transaction.
const secureRounds = 20

// writtenObject is an object this process wrote: its type and content.
type writtenObject struct {
	typ  string
	data []byte
}

// written holds the objects this process wrote that no transaction has
// secured yet.
type written struct {
	mu   sync.Mutex
	objs map[string]writtenObject
	size int
}

// remember keeps the object id (type typ, content data) until a
// transaction secures it.
func (w *written) remember(id, typ string, data []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.objs[id]; ok {
		return
	}
	if w.objs == nil || w.size+len(data) > keptWrittenLimit {
		w.objs, w.size = map[string]writtenObject{}, 0
	}
	w.objs[id] = writtenObject{typ: typ, data: bytes.Clone(data)}
	w.size += len(data)
}

// lookup returns the object id if this process wrote it and it is still
// kept.
func (w *written) lookup(id string) (writtenObject, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	o, ok := w.objs[id]
	return o, ok
}

// forget drops the objects ids, secured.
func (w *written) forget(ids []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, id := range ids {
		if o, ok := w.objs[id]; ok {
			w.size -= len(o.data)
			delete(w.objs, id)
		}
	}
}

// newTips returns the new values of the refs ops create or update.
func newTips(ops []RefOp) []string {
	var tips []string
	for _, op := range ops {
		if (op.Verb == "create" || op.Verb == "update") && op.New != "" {
			tips = append(tips, op.New)
		}
	}
	return tips
}

// ownObjects returns the objects reachable from tips, through objects
// this process wrote and still keeps, that it wrote: what a prune may
// have removed from under the transaction and what the store can put back.
// The tips it did not write are returned apart (others).
func (s *Store) ownObjects(tips []string) (own []string, others []string) {
	seen := map[string]bool{}
	var walk func(id string, top bool)
	walk = func(id string, top bool) {
		if seen[id] {
			return
		}
		seen[id] = true
		o, ok := s.written.lookup(id)
		if !ok {
			if top {
				others = append(others, id)
			}
			return
		}
		own = append(own, id)
		for _, c := range s.children(o) {
			walk(c, false)
		}
	}
	for _, t := range tips {
		walk(t, true)
	}
	return own, others
}

// children returns the objects a commit (its tree and parents) or a tree
// (its entries, submodules aside) names.
func (s *Store) children(o writtenObject) []string {
	var ids []string
	switch o.typ {
	case "commit":
		for _, l := range strings.Split(string(o.data), "\n") {
			if l == "" {
				break
			}
			if id, ok := strings.CutPrefix(l, "tree "); ok {
				ids = append(ids, id)
			} else if id, ok := strings.CutPrefix(l, "parent "); ok {
				ids = append(ids, id)
			}
		}
	case "tree":
		n := s.hashLen()
		data := o.data
		for len(data) > 0 {
			sp := bytes.IndexByte(data, ' ')
			nul := bytes.IndexByte(data, 0)
			if sp < 0 || nul < sp || len(data) < nul+1+n {
				break
			}
			if string(data[:sp]) != "160000" {
				ids = append(ids, hex.EncodeToString(data[nul+1:nul+1+n]))
			}
			data = data[nul+1+n:]
		}
	}
	return ids
}

// secure makes sure that the objects the new tips of ops reach, among
// those this process wrote, are in the object directory and will stay
// there (see the comment at the top), and that every other new tip exists.
func (s *Store) secure(ctx context.Context, ops []RefOp) error {
	tips := newTips(ops)
	if len(tips) == 0 {
		return nil
	}
	own, others := s.ownObjects(tips)
	for round := 0; len(own) > 0; round++ {
		if round == secureRounds {
			return fmt.Errorf("updating refs: object %s keeps being removed by a concurrent prune", own[0])
		}
		for _, id := range own {
			if err := s.keepLoose(ctx, id); err != nil {
				return fmt.Errorf("updating refs: writing back object %s: %w", id, err)
			}
		}
		var gone []string
		for _, id := range own {
			if !s.present(id) {
				gone = append(gone, id)
			}
		}
		if len(gone) == 0 {
			s.written.forget(own)
			break
		}
		own = gone
	}
	if db := s.objects(); db != nil {
		for _, id := range others {
			if !db.haveHex(id) {
				return missingTipError(ops, id)
			}
		}
	}
	return nil
}

// missingTipError names the ref of ops whose new value id is missing.
func missingTipError(ops []RefOp, id string) error {
	for _, op := range ops {
		if op.New == id {
			return &RefError{Ref: op.Ref, Err: fmt.Errorf("points at %s, which is missing from the object store", id)}
		}
	}
	return fmt.Errorf("updating refs: object %s is missing from the object store", id)
}

// keepLoose makes sure the object id (one this process wrote) is a loose
// file whose modification time is past the current second: written again
// from the content kept when it is not loose (a prune removed it, or it
// exists only in a pack, which a concurrent repack may drop).
func (s *Store) keepLoose(ctx context.Context, id string) error {
	path := filepath.Join(s.objDir, id[:2], id[2:])
	if !s.present(id) {
		o, ok := s.written.lookup(id)
		if !ok {
			return errors.New("its content is no longer known")
		}
		if err := s.storeLoose(ctx, id, o); err != nil {
			return err
		}
	}
	// A time past the current second keeps the object from any prune that
	// began before now. Setting a time other than now needs the file's
	// owner; anyone else (a shared repository) can only set it to now.
	ahead := time.Unix(time.Now().Unix()+1, 0)
	if err := os.Chtimes(path, ahead, ahead); err != nil && !errors.Is(err, fs.ErrNotExist) {
		unix.Utimes(path, nil)
	}
	return nil
}

// storeLoose writes the object id again as a loose object.
func (s *Store) storeLoose(ctx context.Context, id string, o writtenObject) error {
	if s.sharedRepository() {
		// git knows the permissions the setting asks for (and freshens
		// the pack instead when one holds the object: see present).
		_, err := s.git.RunInput(ctx, bytes.NewReader(o.data), "hash-object", "-w", "-t", o.typ, "--stdin")
		return err
	}
	return writeLoose(s.objDir, id, objectHeader(o.typ, o.data), o.data)
}

// present reports whether the object id is a loose file, or, in a
// shared repository (whose objects only git writes, and git leaves an
// object in the pack that holds it), in the object directory at all.
func (s *Store) present(id string) bool {
	if _, err := os.Stat(filepath.Join(s.objDir, id[:2], id[2:])); err == nil {
		return true
	}
	if !s.sharedRepository() {
		return false
	}
	db := s.objects()
	return db != nil && db.haveHex(id)
}

// isMissingObjectRefusal recognises update-ref refusing a new value whose
// object does not exist.
func isMissingObjectRefusal(err error) bool {
	return err != nil && strings.Contains(err.Error(), "nonexistent object")
}
