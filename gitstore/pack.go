package gitstore

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"strconv"

	"github.com/git-agentmine/git-agentmine/gitcmd"
)

// Sync writes its merge commits (a blob, a tree and a commit per merged
// entity) in bulk: ObjectID names each object before anything is written, so
// a tree and a commit can refer to objects still to be written, and
// WriteObjects stores them all at once at the end. Many objects go into one
// pack, streamed to `git index-pack --stdin`: on a 10,000-entity sync with
// 500 merges, writing 1,500 loose objects (a temporary file, a rename and a
// freshness check each) took about 0.8 s of the sync's own time, and `git
// push` then read, compressed and searched each loose object for deltas
// again, about 1.1 s more than for the same objects in a pack. A new pack's
// objects are as fresh as new loose ones for a prune with an expiry. Below
// looseLimit objects a pack is not worth a process, and they are written
// one by one, as git itself unpacks a fetch of fewer than 100 objects.

// looseLimit is the number of objects below which WriteObjects writes loose
// objects rather than a pack.
const looseLimit = 100

// ObjectID returns the id an object of type typ ("blob", "tree", "commit")
// with content data has in this repository, without writing it.
func (s *Store) ObjectID(typ string, data []byte) string {
	return hex.EncodeToString(s.objectSum(objectHeader(typ, data), data))
}

// objectHeader is the header git hashes and stores before an object's
// content: "<type> <size>\x00".
func objectHeader(typ string, data []byte) string {
	return typ + " " + strconv.Itoa(len(data)) + "\x00"
}

// objectSum is the raw id of the object with header hdr and content data.
func (s *Store) objectSum(hdr string, data []byte) []byte {
	h := s.newHash()
	h.Write([]byte(hdr))
	h.Write(data)
	return h.Sum(nil)
}

func (s *Store) newHash() hash.Hash {
	if s.sha1 {
		return sha1.New()
	}
	return sha256.New()
}

// WriteObjects stores objects (Type and Data set), in one pack when there
// are many. An object already in the repository is stored again (in the
// pack) or freshened (loose), never skipped. An object of a type other than
// blob, tree, commit or tag is refused before anything is written.
func (s *Store) WriteObjects(ctx context.Context, objs []Object) error {
	// Checked before anything is written: then a failure below is git's
	// or the pipe's, and index-pack's stderr says which.
	for _, o := range objs {
		if _, ok := packTypes[o.Type]; !ok {
			return fmt.Errorf("writing objects: unknown object type %q", o.Type)
		}
	}
	if len(objs) < looseLimit {
		for _, o := range objs {
			if _, err := s.writeObject(ctx, o.Type, o.Data); err != nil {
				return err
			}
		}
		return nil
	}
	// Kept until a transaction points a ref at them, as loose ones are
	// (durable.go): a repack that began before may drop the pack's copy.
	for _, o := range objs {
		s.written.remember(s.ObjectID(o.Type, o.Data), o.Type, o.Data)
	}
	cmd := s.git.Command(ctx, "index-pack", "--stdin")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return fmt.Errorf("writing a pack: %w", err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("writing a pack: starting git index-pack: %w", err)
	}
	werr := writePack(stdin, s.newHash(), objs)
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("writing a pack: %w", gitcmd.Failure(ctx, []string{"index-pack", "--stdin"}, err, stderr.String()))
	}
	if werr != nil {
		return fmt.Errorf("writing a pack: %w", werr)
	}
	return nil
}

// packTypes are the pack entry type numbers of the object types.
var packTypes = map[string]byte{"commit": 1, "tree": 2, "blob": 3, "tag": 4}

// writePack writes objs to w as a version 2 pack: a header, each object
// whole (no deltas) and zlib-compressed, and the checksum of all of it.
func writePack(w io.Writer, sum hash.Hash, objs []Object) error {
	bw := bufio.NewWriterSize(io.MultiWriter(w, sum), 64<<10)
	var hdr [12]byte
	copy(hdr[:], "PACK")
	binary.BigEndian.PutUint32(hdr[4:], 2)
	binary.BigEndian.PutUint32(hdr[8:], uint32(len(objs)))
	bw.Write(hdr[:])
	zw, _ := zlib.NewWriterLevel(bw, zlib.BestSpeed)
	for _, o := range objs {
		t, ok := packTypes[o.Type]
		if !ok {
			return fmt.Errorf("unknown object type %q", o.Type)
		}
		// Type and size: 3 bits of type and the low 4 bits of the size,
		// then 7 bits of size a byte, the high bit saying more follow.
		n := uint64(len(o.Data))
		b := t<<4 | byte(n&0x0f)
		n >>= 4
		for n > 0 {
			bw.WriteByte(b | 0x80)
			b = byte(n & 0x7f)
			n >>= 7
		}
		bw.WriteByte(b)
		zw.Reset(bw)
		zw.Write(o.Data)
		if err := zw.Close(); err != nil {
			return err
		}
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	_, err := w.Write(sum.Sum(nil))
	return err
}
