package gitstore

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/git-agentmine/git-agentmine/safefile"
)

// A refs stamp tells whether the refs under a prefix may have changed since
// it was taken, without listing them: the identity of packed-refs (device,
// inode, size, modification and change times: git replaces the file with a
// rename, and a change time cannot be set back) and the loose refs under
// the prefix with their values (few: agentmine packs them once there are
// more than a few hundred). A cache keyed by a stamp is used only while the
// stamp is the same; it answers "which of these refs" questions in a few
// reads where checking it against a listing of every ref would read them
// all.
//
// File times have the resolution of the kernel's clock tick, and a freed
// inode number is reused: two versions of packed-refs written within one
// tick could, in principle, look the same. So, as git does with its index
// ("racily clean" entries), a stamp is settled only once packed-refs has
// not changed for settleTime, and a cache is written only under a settled
// stamp: any later version of the file then has later times.

// settleTime is how long packed-refs must be unchanged for a stamp taken of
// it to be settled.
const settleTime = 2 * time.Second

// RefsStamp returns the stamp of the refs under prefix (a directory name
// ending in "/"), or "" when it cannot be taken in-process (reads go to git,
// a reftable repository, a loose ref it does not vouch for); settled tells
// whether a cache may be written under it.
func (s *Store) RefsStamp(prefix string) (stamp string, settled bool) {
	if s.objects() == nil || !strings.HasSuffix(prefix, "/") {
		return "", false
	}
	rp, ok := parseRefPattern(prefix)
	if !ok {
		return "", false
	}
	if _, err := os.Stat(filepath.Join(s.loc.CommonDir, "reftable")); err == nil {
		return "", false
	}
	var b strings.Builder
	// packed-refs first, then the loose refs: a pack-refs in between moves
	// loose refs into a new packed-refs, whose identity then differs from
	// the one a later stamp sees; read the other way round, a stamp could
	// miss the refs that moved.
	var st syscall.Stat_t
	settled = true
	switch err := syscall.Stat(filepath.Join(s.loc.CommonDir, "packed-refs"), &st); {
	case err == nil:
		mtim, ctim := statTimes(&st)
		fmt.Fprintf(&b, "packed %d %d %d %d.%d %d.%d\n", st.Dev, st.Ino, st.Size, mtim.Sec, mtim.Nsec, ctim.Sec, ctim.Nsec)
		newest := time.Unix(mtim.Sec, mtim.Nsec)
		if c := time.Unix(ctim.Sec, ctim.Nsec); c.After(newest) {
			newest = c
		}
		settled = time.Since(newest) >= settleTime
	case os.IsNotExist(err):
		b.WriteString("packed none\n")
	default:
		return "", false
	}
	loose := map[string]string{}
	if err := readLooseRefs(s.loc.CommonDir, rp, 2*s.hashLen(), loose); err != nil {
		return "", false
	}
	names := make([]string, 0, len(loose))
	for n := range loose {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		b.WriteString(n + " " + loose[n] + "\n")
	}
	return b.String(), settled
}

// A sorted index is a cache file of fixed-length records ("<key> <rest>
// <crc>\n", every record as long as the first) sorted by key, after a header
// holding the stamp it was made under. A lookup reads the header and a
// handful of records by binary search, never the whole file: with 30,000
// sessions the index of their tasks is megabytes, and reading it whole cost
// as much as the work it saved. Each record carries the CRC-32 of its own
// text and every record read is checked against it, the two records around
// the key's run included: whatever damage could change the answer for a
// key (a record of its run changed, moved out by a changed key, or another
// moved in) is in a record the lookup reads. The file's size must match its
// header; anything else is no index.

const sortedIndexMagic = "agentmine-sorted-index 1"

// crcLen is what each record's CRC adds to it: " %08x".
const crcLen = 9

// DropToken is the drop marker as seen before reading what an index will be
// made from; WriteSortedIndex refuses to write after a drop (DropCaches).
type DropToken struct{ fi os.FileInfo }

// DropToken returns the current drop token.
func (s *Store) DropToken() DropToken { return DropToken{statOrNil(s.dropMarkerPath())} }

// WriteSortedIndex replaces the sorted index name of kind k with records
// (each "<key> <rest>\n", all the same length, sorted) under stamp, unless
// caches were dropped since tok was taken. Failures are ignored: it is
// only an accelerator.
func (s *Store) WriteSortedIndex(k Kind, name, stamp string, records []string, tok DropToken) {
	if stamp == "" || !sameFile(tok.fi, statOrNil(s.dropMarkerPath())) {
		return
	}
	recLen := 0
	if len(records) > 0 {
		recLen = len(records[0])
	}
	for i, r := range records {
		if len(r) != recLen || r[recLen-1] != '\n' || strings.IndexByte(r, '\n') != recLen-1 || (i > 0 && records[i-1] > r) {
			return
		}
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %d %d %d\n%s", sortedIndexMagic, recLen+crcLen, len(records), len(stamp), stamp)
	for _, r := range records {
		text := r[:len(r)-1]
		fmt.Fprintf(&b, "%s %08x\n", text, crc32.ChecksumIEEE([]byte(text)))
	}
	writeFileAtomic(s.summaryPathOf(k, name), nil, b.Bytes())
}

// readSortedHeader reads the header of the sorted index open in f (size
// bytes long) and returns where its records begin, their length and count;
// ok is false unless the header is well formed, was made under stamp, its
// records are long enough to hold key, and the file is exactly as long as
// they say.
func readSortedHeader(f io.ReaderAt, size int64, stamp, key string) (body int64, recLen, count int, ok bool) {
	head := make([]byte, 128+len(stamp))
	n, err := f.ReadAt(head, 0)
	if err != nil && err != io.EOF {
		return 0, 0, 0, false
	}
	head = head[:n]
	nl := bytes.IndexByte(head, '\n')
	if nl < 0 {
		return 0, 0, 0, false
	}
	f4 := strings.Fields(string(head[:nl]))
	if len(f4) != 5 || f4[0]+" "+f4[1] != sortedIndexMagic {
		return 0, 0, 0, false
	}
	var err1, err2 error
	recLen, err1 = strconv.Atoi(f4[2])
	count, err2 = strconv.Atoi(f4[3])
	stampLen, err3 := strconv.Atoi(f4[4])
	if err1 != nil || err2 != nil || err3 != nil || recLen < 0 || recLen > maxCacheFile || count < 0 || count > maxCacheFile || stampLen != len(stamp) || recLen <= len(key)+1+crcLen && count > 0 {
		return 0, 0, 0, false
	}
	body = int64(nl + 1 + stampLen)
	if int64(len(head)) < body || string(head[nl+1:body]) != stamp || size != body+int64(count)*int64(recLen) {
		return 0, 0, 0, false
	}
	return body, recLen, count, true
}

// LookupSortedIndex returns the records of the sorted index name of kind k
// whose key is key, when the index was made under stamp; ok is false when
// there is no such index (missing, another stamp, damaged).
func (s *Store) LookupSortedIndex(k Kind, name, stamp, key string) (records []string, ok bool) {
	if stamp == "" {
		return nil, false
	}
	f, fi, err := safefile.Open(s.summaryPathOf(k, name), maxCacheFile)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	body, recLen, count, ok := readSortedHeader(f, fi.Size(), stamp, key)
	if !ok {
		return nil, false
	}
	if recLen <= crcLen {
		return nil, count == 0
	}
	rec := make([]byte, recLen)
	read := func(i int) (string, bool) {
		if _, err := f.ReadAt(rec, body+int64(i)*int64(recLen)); err != nil || rec[recLen-1] != '\n' || rec[len(key)] != ' ' {
			return "", false
		}
		text := rec[:recLen-crcLen-1]
		if fmt.Sprintf(" %08x\n", crc32.ChecksumIEEE(text)) != string(rec[recLen-crcLen-1:]) {
			return "", false
		}
		return string(text) + "\n", true
	}
	bad := false
	first := sort.Search(count, func(i int) bool {
		r, ok := read(i)
		if !ok {
			bad = true
			return true
		}
		return r[:len(key)] >= key
	})
	if bad {
		return nil, false
	}
	for i := first; i < count; i++ {
		r, ok := read(i)
		if !ok {
			return nil, false
		}
		if r[:len(key)] != key {
			break
		}
		records = append(records, r)
	}
	return records, true
}
