package gitstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
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

const reachFormat = "agentmine-reach 2"

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
	nl := bytes.IndexByte(body, '\n')
	if nl != 2*hl || !isHexID(string(body[:nl]), 2*hl) || (len(body)-nl-1)%hl != 0 {
		return "", nil, nil
	}
	ids = body[nl+1:]
	for i := hl; i < len(ids); i += hl {
		if bytes.Compare(ids[i-hl:i], ids[i:i+hl]) >= 0 {
			return "", nil, nil
		}
	}
	return string(body[:nl]), ids, prev
}

// writeReach replaces the reach cache file, unless the file prev that the
// set was built on was dropped or replaced meanwhile (see stillCurrent).
func writeReach(path, at string, ids []byte, prev os.FileInfo) {
	var buf bytes.Buffer
	buf.WriteString(at + "\n")
	buf.Write(ids)
	writeCacheFile(path, reachFormat, buf.Bytes(), prev)
}
