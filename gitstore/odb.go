package gitstore

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The object reader answers object reads in-process from the repository's
// own object directory: loose objects, and version 2 pack indexes with their
// packs (deltas included), both read through memory maps. It is an
// accelerator, never an authority: whatever it cannot answer with certainty
// — an object it does not find (it may live in an alternate, a pack written
// after the reader listed the packs, or a promisor remote), a pack it cannot
// parse, a name it does not understand — goes to `git cat-file`, and only git
// ever answers that an object is missing.
//
// Why: on a two-core virtual machine a git process costs 4–6 ms to start and
// every object piped through `cat-file --batch` costs the reader a wake-up;
// `task show` paid two of its three git processes for a handful of objects,
// and `task list` on a cold cache most of its time for 10,000 small blobs.
// Pack and index files are mapped, not read: pages of a file already in the
// page cache cost a fraction of the fresh memory a read into a buffer needs
// (50 MB: 21 ms mapped and touched, 237 ms read into a new buffer, on the
// development machine).
//
// Concurrent writers are safe to read next to: git never rewrites a pack or
// a loose object in place; it writes new files and renames them, and a pack
// that a repack deletes stays readable through the open mapping.

// odb is the in-process object reader of one object directory. It is safe
// for concurrent use.
type odb struct {
	dir     string
	hashLen int

	// mu guards packs: readers hold it shared while they use a mapping, so
	// that a pack gone from the directory is unmapped only when nobody
	// reads it.
	mu     sync.RWMutex
	packs  []*packFile
	listed bool
	// seen is the pack directory's modification time when the packs were
	// listed: a lookup that misses lists them again only when it changed.
	seen int64
	// listings counts the listings that changed the packs: a lookup that
	// missed retries when it moved since the lookup began, whichever
	// reader did the listing.
	listings atomic.Int64

	// bases caches delta bases (see baseCache).
	bases baseCache
	// lookedAt is when the pack directory was last looked at (unix
	// nanoseconds): a long-lived process (serve, mcp, a supervisor) looks
	// again every recheck, so that packs a gc replaced are unmapped and
	// their disk space freed, even when every read still succeeds.
	lookedAt atomic.Int64
	recheck  time.Duration
}

// recheckPacks is how often a reader looks at the pack directory again.
const recheckPacks = 10 * time.Second

// packFile is one mapped pack and its version 2 index.
type packFile struct {
	name      string
	idx, data []byte
	n         int
}

// Object types as a pack stores them.
const (
	objCommit   = 1
	objTree     = 2
	objBlob     = 3
	objTag      = 4
	objOfsDelta = 6
	objRefDelta = 7
)

var typeNames = [...]string{objCommit: "commit", objTree: "tree", objBlob: "blob", objTag: "tag"}

// maxObject bounds the size of an object the reader inflates; anything
// larger (never one of agentmine's documents) goes to git.
const maxObject = 64 << 20

// maxDeltaDepth bounds a delta chain (git writes at most 50 by default and
// 4095 at most): a deeper or cyclic chain goes to git.
const maxDeltaDepth = 10000

// errNotHere means the reader cannot answer: ask git.
var errNotHere = errors.New("object not readable in-process")

func newODB(dir string, hashLen int) *odb {
	return &odb{dir: dir, hashLen: hashLen, recheck: recheckPacks}
}

// read returns the type and content of the object with hex id, or
// errNotHere.
func (db *odb) read(id string) (typ string, data []byte, err error) {
	return db.readVia(id, nil)
}

// readVia is read through rc, the memo of one reader that reads objects in
// pack order (nil: none).
func (db *odb) readVia(id string, rc *recent) (typ string, data []byte, err error) {
	raw, err := hex.DecodeString(id)
	if err != nil || len(raw) != db.hashLen {
		return "", nil, errNotHere
	}
	return db.readRaw(raw, rc)
}

func (db *odb) readRaw(raw []byte, rc *recent) (typ string, data []byte, err error) {
	defer func() {
		// A damaged or hostile object directory must never take the
		// process down: git answers instead.
		if r := recover(); r != nil {
			typ, data, err = "", nil, errNotHere
		}
	}()
	if now := time.Now().UnixNano(); now-db.lookedAt.Load() > int64(db.recheck) {
		db.lookedAt.Store(now)
		db.relist()
	}
	listing := db.listings.Load()
	for attempt := 0; attempt < 2; attempt++ {
		if attempt > 0 && !db.relisted(listing) {
			break
		}
		if t, d, found, err := db.fromPacks(raw, rc); found {
			if err != nil {
				return "", nil, errNotHere
			}
			return typeNames[t], d, nil
		}
		if t, d, err := db.readLoose(raw); err == nil {
			return t, d, nil
		}
	}
	return "", nil, errNotHere
}

// has reports whether the object raw is in a pack or loose, without
// reading it.
func (db *odb) has(raw []byte) bool {
	listing := db.listings.Load()
	for attempt := 0; attempt < 2; attempt++ {
		if attempt > 0 && !db.relisted(listing) {
			break
		}
		db.rlockListed()
		for _, p := range db.packs {
			if _, ok := p.find(raw); ok {
				db.mu.RUnlock()
				return true
			}
		}
		db.mu.RUnlock()
		id := hex.EncodeToString(raw)
		if _, err := os.Stat(filepath.Join(db.dir, id[:2], id[2:])); err == nil {
			return true
		}
	}
	return false
}

// rlockListed read-locks the reader with its packs listed, listing them
// first if they never were; the caller unlocks db.mu.
func (db *odb) rlockListed() {
	db.mu.RLock()
	if !db.listed {
		db.mu.RUnlock()
		db.relist()
		db.mu.RLock()
	}
}

// fromPacks looks raw up in the mapped packs (listing them on first use).
func (db *odb) fromPacks(raw []byte, rc *recent) (typ int, data []byte, found bool, err error) {
	db.rlockListed()
	defer db.mu.RUnlock()
	for _, p := range db.packs {
		if off, ok := p.find(raw); ok {
			t, d, err := db.unpack(p, off, 0, rc)
			return t, d, true, err
		}
	}
	return 0, nil, false, nil
}

// locate returns where the object with hex id lies in the packs as listed
// now: the pack's position in the listing, the pack and the object's offset
// in it. ok is false for an object in no mapped pack (loose, elsewhere, or
// a bad id).
func (db *odb) locate(id string) (pack int, p *packFile, off int64, ok bool) {
	var raw [64]byte
	if len(id) != 2*db.hashLen || db.hashLen > len(raw) {
		return 0, nil, 0, false
	}
	if _, err := hex.Decode(raw[:db.hashLen], []byte(id)); err != nil {
		return 0, nil, 0, false
	}
	db.rlockListed()
	defer db.mu.RUnlock()
	for i, p := range db.packs {
		if off, ok := p.find(raw[:db.hashLen]); ok {
			return i, p, off, true
		}
	}
	return 0, nil, 0, false
}

// readAt reads the object at offset off of pack p, as locate found it,
// through rc; ok is false when p is no longer mapped (the packs were
// listed again since) or the object does not read: the caller reads it by
// id instead.
func (db *odb) readAt(p *packFile, off int64, rc *recent) (typ string, data []byte, ok bool) {
	defer func() {
		// A damaged or hostile object directory must never take the
		// process down: the read by id, then git, answers instead.
		if r := recover(); r != nil {
			typ, data, ok = "", nil, false
		}
	}()
	db.mu.RLock()
	defer db.mu.RUnlock()
	if !slices.Contains(db.packs, p) {
		return "", nil, false
	}
	t, d, err := db.unpack(p, off, 0, rc)
	if err != nil || t <= 0 || t >= len(typeNames) || typeNames[t] == "" {
		return "", nil, false
	}
	return typeNames[t], d, true
}

// relisted lists the packs again if the pack directory changed (relist)
// and reports whether the packs changed since listing was read from
// db.listings: by this listing or by another reader's meanwhile. Many
// readers that miss at once after a fetch wrote a new pack all find it,
// not only the one whose relist saw the directory change.
func (db *odb) relisted(listing int64) bool {
	db.relist()
	return db.listings.Load() != listing
}

// relist lists the packs again if the pack directory changed since they
// were last listed (or never was), mapping new ones and unmapping those
// gone. It reports whether anything changed.
func (db *odb) relist() bool {
	dir := filepath.Join(db.dir, "pack")
	fi, err := os.Stat(dir)
	db.mu.Lock()
	defer db.mu.Unlock()
	if err != nil {
		changed := !db.listed
		db.listed = true
		return changed
	}
	if db.listed && fi.ModTime().UnixNano() == db.seen {
		return false
	}
	db.listed, db.seen = true, fi.ModTime().UnixNano()
	defer db.listings.Add(1)
	names, _ := filepath.Glob(filepath.Join(dir, "pack-*.idx"))
	now := make(map[string]bool, len(names))
	for _, idx := range names {
		now[idx[:len(idx)-len(".idx")]] = true
	}
	kept := db.packs[:0]
	have := make(map[string]bool, len(db.packs))
	for _, p := range db.packs {
		if now[p.name] {
			kept = append(kept, p)
			have[p.name] = true
			continue
		}
		p.unmap()
	}
	db.packs = kept
	for _, idx := range names {
		name := idx[:len(idx)-len(".idx")]
		if have[name] {
			continue
		}
		if p, err := mapPack(name, db.hashLen); err == nil {
			db.packs = append(db.packs, p)
		}
	}
	db.bases.clear()
	return true
}

func (p *packFile) unmap() {
	syscall.Munmap(p.idx)
	syscall.Munmap(p.data)
}

// mapPack maps name.idx and name.pack and checks their headers.
func mapPack(name string, hashLen int) (*packFile, error) {
	idx, err := mapFile(name + ".idx")
	if err != nil {
		return nil, err
	}
	data, err := mapFile(name + ".pack")
	if err != nil {
		syscall.Munmap(idx)
		return nil, err
	}
	p := &packFile{name: name, idx: idx, data: data}
	if err := p.check(hashLen); err != nil {
		syscall.Munmap(idx)
		syscall.Munmap(data)
		return nil, err
	}
	return p, nil
}

func mapFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() == 0 || fi.Size() > 1<<40 {
		return nil, fmt.Errorf("%s: unusable size %d", path, fi.Size())
	}
	return syscall.Mmap(int(f.Fd()), 0, int(fi.Size()), syscall.PROT_READ, syscall.MAP_SHARED)
}

// check validates the index header, its size against the object count, and
// the pack header, so that every later offset computation stays in bounds
// of the index.
func (p *packFile) check(hashLen int) error {
	if len(p.idx) < 8+256*4 || !bytes.Equal(p.idx[:8], []byte{0xff, 't', 'O', 'c', 0, 0, 0, 2}) {
		return errors.New("not a version 2 pack index")
	}
	n := int(binary.BigEndian.Uint32(p.idx[8+255*4:]))
	// fan-out, names, CRCs, 4-byte offsets, (large offsets), two checksums
	if min := 8 + 256*4 + n*(hashLen+8) + 2*hashLen; len(p.idx) < min {
		return errors.New("pack index shorter than its object count")
	}
	if len(p.data) < 12 || string(p.data[:4]) != "PACK" {
		return errors.New("not a pack")
	}
	p.n = n
	return nil
}

// find returns the pack offset of the object raw, as git's index lookup
// does: the fan-out table narrows the sorted names to those sharing the
// first byte, then a binary search.
func (p *packFile) find(raw []byte) (int64, bool) {
	hl := len(raw)
	fan := p.idx[8:]
	lo := 0
	if raw[0] > 0 {
		lo = int(binary.BigEndian.Uint32(fan[(int(raw[0])-1)*4:]))
	}
	hi := int(binary.BigEndian.Uint32(fan[int(raw[0])*4:]))
	if hi > p.n || lo > hi {
		return 0, false
	}
	names := p.idx[8+256*4:]
	i, found := searchNames(names, raw, lo, hi)
	if !found {
		return 0, false
	}
	offs := 8 + 256*4 + p.n*(hl+4)
	off := binary.BigEndian.Uint32(p.idx[offs+i*4:])
	if off&0x80000000 == 0 {
		return int64(off), true
	}
	large := offs + p.n*4 + int(off&0x7fffffff)*8
	if large+8 > len(p.idx)-2*hl {
		return 0, false
	}
	return int64(binary.BigEndian.Uint64(p.idx[large:])), true
}

// searchNames finds raw among the sorted names (each len(raw) bytes) at
// positions lo to hi: a binary search that compares the first eight bytes
// as one number and the rest only when those are equal (bytes.Compare
// through a closure for every step was a tenth of a cold status's CPU).
func searchNames(names, raw []byte, lo, hi int) (int, bool) {
	hl := len(raw)
	if hl < 8 {
		i := lo + sort.Search(hi-lo, func(k int) bool {
			return bytes.Compare(names[(lo+k)*hl:(lo+k+1)*hl], raw) >= 0
		})
		return i, i < hi && bytes.Equal(names[i*hl:(i+1)*hl], raw)
	}
	key := binary.BigEndian.Uint64(raw)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		name := names[mid*hl : (mid+1)*hl]
		v := binary.BigEndian.Uint64(name)
		c := 0
		switch {
		case v < key:
			c = -1
		case v > key:
			c = 1
		default:
			c = bytes.Compare(name[8:], raw[8:])
		}
		if c == 0 {
			return mid, true
		}
		if c < 0 {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo, false
}

// unpack returns the type and content of the object at offset off of p,
// resolving deltas against their bases. Bases (depth > 0) come from rc,
// the memo of a reader reading in pack order, when it has them, else go
// through the delta base cache: the objects of a chain share them. Every
// object read through rc is remembered there, the one asked for too: in
// pack order the next object's base is most often one just read.
func (db *odb) unpack(p *packFile, off int64, depth int, rc *recent) (int, []byte, error) {
	if depth > maxDeltaDepth {
		return 0, nil, errNotHere
	}
	if rc != nil {
		return db.unpackVia(p, off, depth, rc)
	}
	if depth > 0 {
		if t, d, ok := db.bases.get(p, off); ok {
			return t, d, nil
		}
		t, d, err := db.unpackAt(p, off, depth, nil)
		if err == nil {
			db.bases.put(p, off, t, d)
		}
		return t, d, err
	}
	return db.unpackAt(p, off, depth, nil)
}

// unpackVia is unpack for a reader with the memo rc: the memo first, then
// (for a base) the delta base cache (rc.bases, else the reader's own), and
// what is unpacked is remembered in both (a base) or in the memo (the
// object asked for, as a copy: the caller's to keep, the memo's a base that
// must not change).
func (db *odb) unpackVia(p *packFile, off int64, depth int, rc *recent) (int, []byte, error) {
	if t, d, ok := rc.get(p, off); ok {
		if depth == 0 {
			d = bytes.Clone(d)
		}
		return t, d, nil
	}
	bases := rc.bases
	if bases == nil {
		bases = &db.bases
	}
	if depth > 0 {
		if t, d, ok := bases.get(p, off); ok {
			rc.put(p, off, t, d)
			return t, d, nil
		}
	}
	t, d, err := db.unpackAt(p, off, depth, rc)
	switch {
	case err != nil:
	case depth == 0:
		if rc.fits(d) {
			rc.put(p, off, t, bytes.Clone(d))
		}
	default:
		rc.put(p, off, t, d)
		bases.put(p, off, t, d)
	}
	return t, d, err
}

func (db *odb) unpackAt(p *packFile, off int64, depth int, rc *recent) (int, []byte, error) {
	if off < 12 || off >= int64(len(p.data)) {
		return 0, nil, errNotHere
	}
	pos := int(off)
	c := p.data[pos]
	pos++
	typ := int(c>>4) & 7
	size := uint64(c & 15)
	for shift := 4; c&0x80 != 0; shift += 7 {
		if pos >= len(p.data) || shift > 56 {
			return 0, nil, errNotHere
		}
		c = p.data[pos]
		pos++
		size |= uint64(c&0x7f) << shift
	}
	if size > maxObject {
		return 0, nil, errNotHere
	}
	switch typ {
	case objCommit, objTree, objBlob, objTag:
		data, err := inflate(p.data[pos:], int(size))
		return typ, data, err
	case objOfsDelta:
		if pos >= len(p.data) {
			return 0, nil, errNotHere
		}
		c = p.data[pos]
		pos++
		rel := int64(c & 0x7f)
		for c&0x80 != 0 {
			if pos >= len(p.data) || rel > 1<<50 {
				return 0, nil, errNotHere
			}
			c = p.data[pos]
			pos++
			rel = ((rel + 1) << 7) | int64(c&0x7f)
		}
		if rel <= 0 || rel > off {
			return 0, nil, errNotHere
		}
		return db.undelta(p, off-rel, pos, size, depth, rc)
	case objRefDelta:
		hl := db.hashLen
		if pos+hl > len(p.data) {
			return 0, nil, errNotHere
		}
		baseID := p.data[pos : pos+hl]
		pos += hl
		// git completes thin packs when it stores them: a base is in the
		// same pack. One that is not goes to git.
		boff, ok := p.find(baseID)
		if !ok {
			return 0, nil, errNotHere
		}
		return db.undelta(p, boff, pos, size, depth, rc)
	}
	return 0, nil, errNotHere
}

// undelta applies the delta of size bytes (inflated) whose stream starts at
// pos of p to the object at base, and returns the result with the type of
// the base.
func (db *odb) undelta(p *packFile, base int64, pos int, size uint64, depth int, rc *recent) (int, []byte, error) {
	bt, b, err := db.unpack(p, base, depth+1, rc)
	if err != nil {
		return 0, nil, err
	}
	delta, err := inflate(p.data[pos:], int(size))
	if err != nil {
		return 0, nil, err
	}
	out, err := applyDelta(b, delta)
	return bt, out, err
}

func typeCode(name string) int {
	for i, n := range typeNames {
		if n == name && n != "" {
			return i
		}
	}
	return 0
}

// readLoose reads the loose object raw, if there is one.
func (db *odb) readLoose(raw []byte) (string, []byte, error) {
	id := hex.EncodeToString(raw)
	z, err := os.ReadFile(filepath.Join(db.dir, id[:2], id[2:]))
	if err != nil {
		return "", nil, errNotHere
	}
	full, err := inflate(z, -1)
	if err != nil {
		return "", nil, errNotHere
	}
	sp := bytes.IndexByte(full, ' ')
	nul := bytes.IndexByte(full, 0)
	if sp <= 0 || nul <= sp {
		return "", nil, errNotHere
	}
	typ := string(full[:sp])
	n, err := strconv.Atoi(string(full[sp+1 : nul]))
	if err != nil || n != len(full)-nul-1 || typeCode(typ) == 0 {
		return "", nil, errNotHere
	}
	return typ, full[nul+1:], nil
}

// inflaters reuses zlib readers: each holds a few tens of kilobytes of
// state that would otherwise be allocated for every object.
var inflaters sync.Pool

// inflater is what inflaters holds: a zlib reader and its input.
type inflater struct {
	br bytes.Reader
	zr io.ReadCloser
}

// inflate decompresses the zlib stream at the start of z. With size >= 0
// the result must be exactly size bytes long; with size < 0 (a loose
// object) it is whatever the stream holds, up to maxObject.
func inflate(z []byte, size int) ([]byte, error) {
	// The zlib reader and the bytes.Reader it reads from are reused
	// together: a new bytes.Reader for every object was a tenth of what a
	// cold read of the task list allocated.
	in, ok := inflaters.Get().(*inflater)
	if !ok {
		in = &inflater{}
	}
	in.br.Reset(z)
	if in.zr == nil {
		r, err := zlib.NewReader(&in.br)
		if err != nil {
			return nil, errNotHere
		}
		in.zr = r
	} else if err := in.zr.(zlib.Resetter).Reset(&in.br, nil); err != nil {
		return nil, errNotHere
	}
	defer inflaters.Put(in)
	zr := in.zr
	if size >= 0 {
		out := make([]byte, size)
		if _, err := io.ReadFull(zr, out); err != nil {
			return nil, errNotHere
		}
		// The stream must end here (one more byte means a lying header),
		// and its checksum, checked at the end, must hold.
		var one [1]byte
		if n, err := zr.Read(one[:]); n != 0 || err != io.EOF {
			return nil, errNotHere
		}
		return out, nil
	}
	out, err := io.ReadAll(io.LimitReader(zr, maxObject+1))
	if err != nil || len(out) > maxObject {
		return nil, errNotHere
	}
	return out, nil
}

// applyDelta applies a git delta to base: the delta starts with the sizes
// of its source and result, then copy (from base) and insert (literal)
// instructions.
func applyDelta(base, delta []byte) ([]byte, error) {
	pos := 0
	varint := func() (int, bool) {
		v, shift := 0, 0
		for {
			if pos >= len(delta) || shift > 56 {
				return 0, false
			}
			c := delta[pos]
			pos++
			v |= int(c&0x7f) << shift
			shift += 7
			if c&0x80 == 0 {
				return v, true
			}
		}
	}
	src, ok := varint()
	if !ok || src != len(base) {
		return nil, errNotHere
	}
	dst, ok := varint()
	if !ok || dst > maxObject {
		return nil, errNotHere
	}
	out := make([]byte, 0, dst)
	for pos < len(delta) {
		op := delta[pos]
		pos++
		switch {
		case op&0x80 != 0:
			var off, n int
			for i := 0; i < 4; i++ {
				if op&(1<<i) != 0 {
					if pos >= len(delta) {
						return nil, errNotHere
					}
					off |= int(delta[pos]) << (8 * i)
					pos++
				}
			}
			for i := 0; i < 3; i++ {
				if op&(0x10<<i) != 0 {
					if pos >= len(delta) {
						return nil, errNotHere
					}
					n |= int(delta[pos]) << (8 * i)
					pos++
				}
			}
			if n == 0 {
				n = 0x10000
			}
			if off+n > len(base) || len(out)+n > dst {
				return nil, errNotHere
			}
			out = append(out, base[off:off+n]...)
		case op != 0:
			n := int(op)
			if pos+n > len(delta) || len(out)+n > dst {
				return nil, errNotHere
			}
			out = append(out, delta[pos:pos+n]...)
			pos += n
		default:
			return nil, errNotHere
		}
	}
	if len(out) != dst {
		return nil, errNotHere
	}
	return out, nil
}

// release drops the delta bases and the pages of the packs and their
// indexes from this process's memory. The mappings stay: a later read
// faults its pages in again from the page cache (the kernel keeps them
// there, shared with git, as it sees fit).
func (db *odb) release() {
	db.bases.clear()
	db.releasePages()
}

// releasePages lets go of the pages of the packs read so far (they count
// towards the process's resident memory once read), keeping the delta
// bases: a reader that goes on through the same packs would inflate the
// bases of its deltas again without them.
func (db *odb) releasePages() {
	db.mu.RLock()
	defer db.mu.RUnlock()
	for _, p := range db.packs {
		// MADV_DONTNEED on a shared, read-only file mapping only unmaps
		// pages; it cannot lose data.
		unix.Madvise(p.idx, unix.MADV_DONTNEED)
		unix.Madvise(p.data, unix.MADV_DONTNEED)
	}
}

// close unmaps the packs.
func (db *odb) close() {
	db.mu.Lock()
	defer db.mu.Unlock()
	for _, p := range db.packs {
		p.unmap()
	}
	db.packs, db.listed = nil, false
	db.bases.clear()
}

// baseCache keeps recently used delta bases, by pack and offset, up to
// baseCacheBytes: the blobs of one kind of document are stored as chains of
// deltas against each other, and without it reading every object of a chain
// would inflate every base below it again. When documents were read in
// the order of their refs, not of the pack, the cache had to hold a good
// part of the chains at once: a cold task list of 100,000 tasks (one run
// each, twice, alternating) took 6.2-7.4 s with 8 MB, 2.8-3.3 s with 32 MB
// and 2.6-2.8 s with git's own default of 96 MB, at about the same peak
// memory; 32 MB keeps a long-lived server's share small. Bulk reads now go
// in pack order, each reader with its own memo of what it just read
// (recent), and reach this cache only for a base outside what they read
// (or at the edge of a chunk); reads one at a time still rely on it.
type baseCache struct {
	// limit is the most bytes of bases kept; 0 is baseCacheBytes.
	limit int
	mu    sync.Mutex
	m     map[baseKey]baseEntry
	bytes int
	// order is insertion order, for eviction of the oldest.
	order []baseKey
}

type baseKey struct {
	p   *packFile
	off int64
}

type baseEntry struct {
	typ  int
	data []byte
}

const baseCacheBytes = 32 << 20

func (c *baseCache) get(p *packFile, off int64) (int, []byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[baseKey{p, off}]
	return e.typ, e.data, ok
}

func (c *baseCache) put(p *packFile, off int64, typ int, data []byte) {
	limit := c.limit
	if limit == 0 {
		limit = baseCacheBytes
	}
	if len(data) > limit/4 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[baseKey]baseEntry{}
	}
	k := baseKey{p, off}
	if _, ok := c.m[k]; ok {
		return
	}
	for c.bytes+len(data) > limit && len(c.order) > 0 {
		old := c.order[0]
		c.order = c.order[1:]
		c.bytes -= len(c.m[old].data)
		delete(c.m, old)
	}
	c.m[k] = baseEntry{typ, data}
	c.order = append(c.order, k)
	c.bytes += len(data)
}

func (c *baseCache) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m, c.order, c.bytes = nil, nil, 0
}

// recent is the memo of one reader that reads objects in the order they
// lie in a pack (each reader its own; not safe for concurrent use): the
// last objects it unpacked, whatever their depth in a chain. git stores a
// delta after its base, and its chains run through objects written
// together (fast-import deltas each blob against the one before it), so in
// pack order the base of an object is most often among the last few read:
// a chain is inflated once, in order, while the shared delta base cache
// stays small. A base it does not hold goes through that cache as before.
type recent struct {
	// bases, when set, is the delta base cache of the bulk read this
	// reader is part of, used instead of the object reader's own: a read
	// in pack order needs few bases beyond the memo, and leaves the shared
	// cache to the reads one at a time.
	bases *baseCache
	keys  [recentObjects]baseKey
	typs  [recentObjects]int
	data  [recentObjects][]byte
	next  int
}

// recentObjects is how many objects a recent memo holds; recentBytes
// bounds their size together.
const (
	recentObjects = 16
	recentBytes   = 4 << 20
)

func (rc *recent) get(p *packFile, off int64) (int, []byte, bool) {
	k := baseKey{p, off}
	for i := range rc.keys {
		if rc.keys[i] == k && rc.data[i] != nil {
			return rc.typs[i], rc.data[i], true
		}
	}
	return 0, nil, false
}

// fits reports whether data is small enough for the memo to hold.
func (rc *recent) fits(data []byte) bool { return len(data) <= recentBytes/recentObjects }

func (rc *recent) put(p *packFile, off int64, typ int, data []byte) {
	if !rc.fits(data) {
		return
	}
	i := rc.next
	rc.next = (rc.next + 1) % recentObjects
	rc.keys[i], rc.typs[i], rc.data[i] = baseKey{p, off}, typ, data
}
