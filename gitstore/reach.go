package gitstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Whether a session's work reached its base is whether its tip is an
// ancestor of the base branch. `git for-each-ref --merged` answers that by
// walking the base's whole history every time (on a board of 30,000
// sessions, about as long as everything else status does together), and
// `task show` paid the same walk for one task.
//
// Reach is the set of commits reachable from one commit, computed
// in-process from the commit objects and kept in a cache per base ref
// (reach-<hash of the ref name> under the cache directory): the sorted raw
// ids of every commit reachable from the commit the ref pointed at. When the
// ref has moved, the walk starts at its new commit and stops at commits the
// cached set holds (their ancestors are all in it). If it meets the cached
// commit itself, the ref moved forward and the new set is the old one plus
// what the walk met; if not (the branch was rewound or rewritten), the set
// is walked again in full. No date heuristics: the answer is exact.
//
// Like every cache it is checked, not trusted for its integrity (framed
// with a checksum, cachefile.go; anything damaged is recomputed), and it is one of the caches a
// supervisor drops after its worker ended (DropCaches): a worker running
// as the same user could plant a set claiming its tip reached the base.
// A shallow or grafted repository, or a commit the in-process reader cannot
// read, is answered by `git rev-list` instead.

// Reach is the set of commits reachable from one commit (Reachable).
type Reach struct {
	// ids are the sorted raw ids.
	ids     []byte
	hashLen int
}

// Has reports whether the commit id (hex) is in the set.
func (r *Reach) Has(id string) bool {
	var buf [32]byte
	if len(id) != 2*r.hashLen {
		return false
	}
	raw := buf[:r.hashLen]
	if _, err := hex.Decode(raw, []byte(id)); err != nil {
		return false
	}
	_, found := r.search(raw)
	return found
}

// Len returns the number of commits in the set.
func (r *Reach) Len() int { return len(r.ids) / r.hashLen }

// search finds raw among the sorted ids by binary search.
func (r *Reach) search(raw []byte) (int, bool) {
	hl := r.hashLen
	lo, hi := 0, r.Len()
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if bytes.Compare(r.ids[mid*hl:(mid+1)*hl], raw) < 0 {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo, lo < r.Len() && bytes.Equal(r.ids[lo*hl:(lo+1)*hl], raw)
}

// reachFormat is the format of a reach cache file. Its payload is the line
// "<commit> <number of ids>", then a table with, for each block of
// reachBlock ids, the block's first id and the CRC-32 (IEEE, big-endian) of
// its ids, then the CRC-32 of the line and the table, then the sorted raw
// ids. A whole read checks the frame's checksum as every cache does; a
// lookup of a few ids (ReachableHas) reads the line, the table and one
// block per id, and checks the CRC of each part it reads instead, as the
// sorted indexes do (stamp.go): at 10,000 merged commits the set is 200 KB,
// and reading and checksumming it whole was a twentieth of task show.
const reachFormat = "agentmine-reach 3"

// reachBlock is the number of ids in a block of a reach file.
const reachBlock = 128

// reachLookupMax is the most ids ReachableHas looks up in a reach file
// block by block; for more, the set is read whole.
const reachLookupMax = 64

func (s *Store) reachPath(ref string) string {
	sum := sha256.Sum256([]byte(ref))
	return filepath.Join(s.loc.CommonDir, "agentmine", "cache", "reach-"+hex.EncodeToString(sum[:8]))
}

// Reachable returns the commits reachable from commit (hex), which the ref
// named ref points at: ref names the cache slot.
func (s *Store) Reachable(ctx context.Context, ref, commit string) (*Reach, error) {
	hl := s.hashLen()
	db := s.objects()
	if db == nil || s.historyRewritten() {
		return s.reachFromGit(ctx, commit)
	}
	path := s.reachPath(ref)
	cachedAt, cached, prev := readReach(path, hl)
	if cachedAt == commit {
		return &Reach{ids: cached, hashLen: hl}, nil
	}
	old := &Reach{ids: cached, hashLen: hl}
	walked, metOld, err := walkCommits(db, commit, old, cachedAt)
	if err != nil {
		return s.reachFromGit(ctx, commit)
	}
	var ids []byte
	if cachedAt != "" && metOld {
		ids = mergeSorted(cached, walked, hl)
	} else {
		if cachedAt != "" {
			// The ref did not move forward: walk the whole history.
			if walked, _, err = walkCommits(db, commit, &Reach{hashLen: hl}, ""); err != nil {
				return s.reachFromGit(ctx, commit)
			}
		}
		ids = walked
		prev = nil // nothing of the old file is in the new set
	}
	writeReach(path, commit, ids, prev)
	return &Reach{ids: ids, hashLen: hl}, nil
}

// historyRewritten reports whether the repository changes what a commit's
// parents are (shallow boundaries, grafts): its walks are left to git.
func (s *Store) historyRewritten() bool {
	for _, p := range []string{"shallow", filepath.Join("info", "grafts")} {
		if _, err := os.Stat(filepath.Join(s.loc.CommonDir, p)); err == nil {
			return true
		}
	}
	return false
}

// walkCommits walks the history of start in-process and returns the sorted
// raw ids of the commits it met, not descending below commits that stop
// holds; metStop reports whether it met stopAt (hex) itself.
func walkCommits(db *odb, start string, stop *Reach, stopAt string) (ids []byte, metStop bool, err error) {
	hl := db.hashLen
	seen := map[string]bool{}
	queue := []string{start}
	var out []byte
	for len(queue) > 0 {
		id := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		if seen[id] {
			continue
		}
		seen[id] = true
		if id == stopAt {
			metStop = true
		}
		raw, err := hex.DecodeString(id)
		if err != nil || len(raw) != hl {
			return nil, false, errNotHere
		}
		if _, in := stop.search(raw); in {
			continue
		}
		typ, data, err := db.read(id)
		if err != nil || typ != "commit" {
			return nil, false, errNotHere
		}
		out = append(out, raw...)
		for _, line := range bytes.Split(data, []byte("\n")) {
			if len(line) == 0 {
				break // end of the header
			}
			if p, ok := bytes.CutPrefix(line, []byte("parent ")); ok {
				queue = append(queue, string(p))
			}
		}
	}
	sortIDs(out, hl)
	return out, metStop, nil
}

// reachFromGit lists the commits reachable from commit with git rev-list.
func (s *Store) reachFromGit(ctx context.Context, commit string) (*Reach, error) {
	hl := s.hashLen()
	out, err := s.git.Run(ctx, "rev-list", commit)
	if err != nil {
		return nil, fmt.Errorf("listing the history of %s: %w", commit, err)
	}
	var ids []byte
	for _, l := range strings.Fields(string(out)) {
		raw, err := hex.DecodeString(l)
		if err != nil || len(raw) != hl {
			return nil, fmt.Errorf("listing the history of %s: unexpected %q", commit, l)
		}
		ids = append(ids, raw...)
	}
	sortIDs(ids, hl)
	return &Reach{ids: ids, hashLen: hl}, nil
}

// sortIDs sorts a run of raw ids of hl bytes each in place.
func sortIDs(ids []byte, hl int) {
	n := len(ids) / hl
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return bytes.Compare(ids[a*hl:(a+1)*hl], ids[b*hl:(b+1)*hl]) })
	sorted := make([]byte, 0, len(ids))
	for _, i := range idx {
		sorted = append(sorted, ids[i*hl:(i+1)*hl]...)
	}
	copy(ids, sorted)
}

// mergeSorted merges two sorted runs of raw ids, dropping duplicates.
func mergeSorted(a, b []byte, hl int) []byte {
	out := make([]byte, 0, len(a)+len(b))
	for len(a) > 0 || len(b) > 0 {
		switch {
		case len(b) == 0:
			out, a = append(out, a[:hl]...), a[hl:]
		case len(a) == 0:
			out, b = append(out, b[:hl]...), b[hl:]
		default:
			switch c := bytes.Compare(a[:hl], b[:hl]); {
			case c < 0:
				out, a = append(out, a[:hl]...), a[hl:]
			case c > 0:
				out, b = append(out, b[:hl]...), b[hl:]
			default:
				out, a, b = append(out, a[:hl]...), a[hl:], b[hl:]
			}
		}
	}
	return out
}

// readReach reads a reach cache file: the commit it was computed for and
// its sorted ids, or "" when there is none or it does not check out. prev
// is the file read, for writeReach.
func readReach(path string, hl int) (at string, ids []byte, prev os.FileInfo) {
	body, prev := readCacheFile(path, reachFormat)
	if prev == nil {
		return "", nil, nil
	}
	at, count, rest, ok := parseReachLine(body, hl)
	if !ok {
		return "", nil, nil
	}
	tableLen := reachBlocks(count) * (hl + 4)
	if len(body)-rest != tableLen+4+count*hl {
		return "", nil, nil
	}
	ids = body[rest+tableLen+4:]
	for i := hl; i < len(ids); i += hl {
		if bytes.Compare(ids[i-hl:i], ids[i:i+hl]) >= 0 {
			return "", nil, nil
		}
	}
	return at, ids, prev
}

// parseReachLine parses the first line of a reach file's payload (data
// holds at least its start): the commit, the number of ids, and where the
// table begins.
func parseReachLine(data []byte, hl int) (at string, count, rest int, ok bool) {
	nl := bytes.IndexByte(data, '\n')
	if nl < 0 {
		return "", 0, 0, false
	}
	at, n, found := strings.Cut(string(data[:nl]), " ")
	count, err := strconv.Atoi(n)
	if !found || !isHexID(at, 2*hl) || err != nil || count < 0 || count > maxCacheFile/hl || strconv.Itoa(count) != n {
		return "", 0, 0, false
	}
	return at, count, nl + 1, true
}

// reachBlocks is the number of blocks count ids make.
func reachBlocks(count int) int { return (count + reachBlock - 1) / reachBlock }

// writeReach replaces the reach cache file, unless the file prev that the
// set was built on was dropped or replaced meanwhile (see stillCurrent).
func writeReach(path, at string, ids []byte, prev os.FileInfo) {
	hl := len(at) / 2
	if hl == 0 || len(ids)%hl != 0 {
		return
	}
	count := len(ids) / hl
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "%s %d\n", at, count)
	for b := 0; b < reachBlocks(count); b++ {
		block := ids[b*reachBlock*hl : min((b+1)*reachBlock, count)*hl]
		buf.Write(block[:hl])
		buf.Write(binary.BigEndian.AppendUint32(nil, crc32.ChecksumIEEE(block)))
	}
	buf.Write(binary.BigEndian.AppendUint32(nil, crc32.ChecksumIEEE(buf.Bytes())))
	buf.Write(ids)
	writeCacheFile(path, reachFormat, buf.Bytes(), prev)
}

// lookupReach answers, for each id (hex), whether it is in the reach set
// cached at path when that set was computed for commit, reading only the
// parts of the file it needs and checking each against its CRC; ok is
// false when there is no such file, it is of another commit, or anything
// read does not check out (the caller then reads the set whole).
func lookupReach(path string, hl int, commit string, ids []string) (in []bool, ok bool) {
	fr := openCacheFrame(path, reachFormat)
	if fr == nil {
		return nil, false
	}
	defer fr.close()
	head := make([]byte, 2*hl+1+21)
	n, _ := fr.f.ReadAt(head, fr.head)
	at, count, rest, ok := parseReachLine(head[:n], hl)
	nb := reachBlocks(count)
	if !ok || at != commit || fr.n != int64(rest+nb*(hl+4)+4+count*hl) {
		return nil, false
	}
	table := make([]byte, nb*(hl+4)+4)
	if _, err := fr.f.ReadAt(table, fr.head+int64(rest)); err != nil {
		return nil, false
	}
	sum := crc32.Update(crc32.ChecksumIEEE(head[:rest]), crc32.IEEETable, table[:nb*(hl+4)])
	if binary.BigEndian.Uint32(table[nb*(hl+4):]) != sum {
		return nil, false
	}
	first := func(b int) []byte { return table[b*(hl+4) : b*(hl+4)+hl] }
	for b := 1; b < nb; b++ {
		if bytes.Compare(first(b-1), first(b)) >= 0 {
			return nil, false
		}
	}
	idsAt := fr.head + int64(rest+len(table))
	in = make([]bool, len(ids))
	block := make([]byte, reachBlock*hl)
	for i, id := range ids {
		raw, err := hex.DecodeString(id)
		if err != nil || len(raw) != hl {
			continue
		}
		// The last block whose first id is not above raw holds it, if any.
		b := sort.Search(nb, func(b int) bool { return bytes.Compare(first(b), raw) > 0 }) - 1
		if b < 0 {
			continue
		}
		blk := block[:(min((b+1)*reachBlock, count)-b*reachBlock)*hl]
		if _, err := fr.f.ReadAt(blk, idsAt+int64(b*reachBlock*hl)); err != nil ||
			crc32.ChecksumIEEE(blk) != binary.BigEndian.Uint32(table[b*(hl+4)+hl:]) || !bytes.Equal(blk[:hl], first(b)) {
			return nil, false
		}
		r := &Reach{ids: blk, hashLen: hl}
		for j := hl; j < len(blk); j += hl {
			if bytes.Compare(blk[j-hl:j], blk[j:j+hl]) >= 0 {
				return nil, false
			}
		}
		_, in[i] = r.search(raw)
	}
	return in, true
}

// ReachableHas reports, for each commit id (hex) of ids, whether it is
// reachable from commit, which the ref named ref points at (Reachable).
// While the ref has not moved since its set was cached, a few ids are
// looked up in the cache file without reading it whole.
func (s *Store) ReachableHas(ctx context.Context, ref, commit string, ids []string) ([]bool, error) {
	if len(ids) <= reachLookupMax && s.objects() != nil && !s.historyRewritten() {
		if in, ok := lookupReach(s.reachPath(ref), s.hashLen(), commit, ids); ok {
			return in, nil
		}
	}
	r, err := s.Reachable(ctx, ref, commit)
	if err != nil {
		return nil, err
	}
	in := make([]bool, len(ids))
	for i, id := range ids {
		in[i] = r.Has(id)
	}
	return in, nil
}
