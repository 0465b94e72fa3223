package gitstore

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The summary cache is local, disposable data under the common git dir: per
// entity of one kind, a compact digest of the entity (whatever its owning
// package needs to answer the questions asked over and over, e.g. a
// session's status facts), keyed by the commit its ref pointed at, and the
// whole file by one more key (e.g. the notes commit the digests' outcomes
// came from). It is checked, never trusted: a file whose checksum does not
// match is ignored, and the owning package uses it only when the key and
// every entity's tip match what git says now. A dropped cache
// (DropCaches) is never written back by a reader that started before the
// drop.

const summaryMagic = "agentmine-summary-cache 1"

// Summaries is one read of the summary cache of a kind.
type Summaries struct {
	// Key is the file's key; "" when there was no usable file.
	Key string
	// Entries holds each entity's digest, by id, with the commit its ref
	// pointed at when the digest was made (nil from ReadSummaryList and
	// ReadSummaryListOf, which return them as a list).
	Entries map[string]Doc
	// gen is the file read (nil: none); drop is the drop marker seen
	// before anything was read.
	gen, drop os.FileInfo
}

func (s *Store) summaryPath(k Kind) string { return s.summaryPathOf(k, "") }

// Size is the size of the file the summaries were read from (0: none).
func (c Summaries) Size() int64 {
	if c.gen == nil {
		return 0
	}
	return c.gen.Size()
}

// summaryPathOf is the file of the summary named name of kind k ("" is the
// kind's main summary). DropCaches removes every summary of the kind.
func (s *Store) summaryPathOf(k Kind, name string) string {
	file := "summary-" + k.Dir
	if name != "" {
		file += "-" + name
	}
	return filepath.Join(s.loc.CommonDir, "agentmine", "cache", file)
}

func (s *Store) dropMarkerPath() string {
	return filepath.Join(s.loc.CommonDir, "agentmine", "cache", "dropped")
}

// ReadSummaries reads the summary cache of kind k. Call it before reading
// anything the new digests will be made from: WriteSummaries refuses to
// write when caches were dropped after this read. A missing, corrupt or
// foreign file reads as empty.
func (s *Store) ReadSummaries(k Kind) Summaries { return s.ReadSummariesOf(k, "") }

// ReadSummariesOf is ReadSummaries of another summary of kind k, named name
// (letters and '-'): an owning package may keep more than one digest per
// entity, e.g. an index from each session to its task.
func (s *Store) ReadSummariesOf(k Kind, name string) Summaries {
	out, list := s.ReadSummaryListOf(k, name)
	if out.Key == "" {
		return out
	}
	out.Entries = make(map[string]Doc, len(list))
	for _, e := range list {
		out.Entries[e.ID] = Doc{ID: e.ID, Commit: e.Commit, Data: []byte(e.Data)}
	}
	return out
}

// SummaryEntry is one entry of a summary cache read as a list: the
// entity's id, the commit its ref pointed at, and its digest.
type SummaryEntry struct {
	ID, Commit, Data string
}

// ReadSummaryList is ReadSummaries for a reader of every entry: the
// entries as a list in the order they were written, their fields sharing
// one copy of the file, and no Entries map. At tens of thousands of
// entities the map and a copy of every digest cost more than the digests.
func (s *Store) ReadSummaryList(k Kind) (Summaries, []SummaryEntry) {
	return s.ReadSummaryListOf(k, "")
}

// ReadSummaryListOf is ReadSummaryList of the summary named name of kind k
// (see ReadSummariesOf).
func (s *Store) ReadSummaryListOf(k Kind, name string) (Summaries, []SummaryEntry) {
	out := Summaries{drop: statOrNil(s.dropMarkerPath())}
	raw, gen := readCheckedText(s.summaryPathOf(k, name))
	out.gen = gen
	key, list, ok := parseSummaries(raw)
	if ok {
		out.Key = key
		return out, list
	}
	return out, nil
}

func statOrNil(path string) os.FileInfo {
	fi, err := os.Stat(path)
	if err != nil {
		return nil
	}
	return fi
}

// checksumTrailer is the length of a summary file's last line:
// "sha256 <64 hex>\n", the checksum of everything before it.
const checksumTrailer = len("sha256 ") + 64 + 1

// readCheckedText reads a summary file as one string, hashing it on the
// way, and returns everything before its trailer when the trailer is the
// checksum of it ("" otherwise), with the file read (nil when none).
func readCheckedText(path string) (string, os.FileInfo) {
	f, err := os.Open(path)
	if err != nil {
		return "", nil
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", fi
	}
	n := fi.Size() - int64(checksumTrailer)
	if n < 0 {
		return "", fi
	}
	// The body goes straight into the string the entries will share: no
	// second copy of a file of tens of megabytes.
	var body strings.Builder
	body.Grow(int(n))
	h := sha256.New()
	if _, err := io.Copy(io.MultiWriter(&body, h), io.LimitReader(f, n)); err != nil || int64(body.Len()) != n {
		return "", fi
	}
	tail := make([]byte, checksumTrailer+1)
	if m, _ := io.ReadFull(f, tail); m != checksumTrailer {
		return "", fi
	}
	if string(tail[:checksumTrailer]) != "sha256 "+hex.EncodeToString(h.Sum(nil))+"\n" {
		return "", fi
	}
	return body.String(), fi
}

// countSummaries counts the entries of a body (after the head line), so
// that the list is made once, not grown entry by entry; it stops at the
// first line that does not parse (parseSummaries then refuses the body).
func countSummaries(body string) int {
	n := 0
	for len(body) > 0 {
		line, rest, ok := strings.Cut(body, "\n")
		i := strings.LastIndexByte(line, ' ')
		if !ok || i < 0 {
			break
		}
		size, err := strconv.Atoi(line[i+1:])
		if err != nil || size < 0 || size > len(rest) {
			break
		}
		n++
		body = rest[size:]
	}
	return n
}

// parseSummaries parses a checked body into its key and entries.
func parseSummaries(body string) (string, []SummaryEntry, bool) {
	head, body, ok := strings.Cut(body, "\n")
	if !ok {
		return "", nil, false
	}
	key, ok := strings.CutPrefix(head, summaryMagic+" ")
	if !ok || key == "" {
		return "", nil, false
	}
	list := make([]SummaryEntry, 0, countSummaries(body))
	for len(body) > 0 {
		line, rest, ok := strings.Cut(body, "\n")
		if !ok {
			return "", nil, false
		}
		id, line, ok1 := strings.Cut(line, " ")
		commit, size, ok2 := strings.Cut(line, " ")
		n, err := strconv.Atoi(size)
		if !ok1 || !ok2 || id == "" || commit == "" || err != nil || n < 0 || n > len(rest) {
			return "", nil, false
		}
		list = append(list, SummaryEntry{ID: id, Commit: commit, Data: rest[:n]})
		body = rest[n:]
	}
	return key, list, true
}

// WriteSummaries replaces the summary cache of kind k with entries (each
// Doc's ID, Commit and Data) under key, atomically. It writes nothing when
// the caches were dropped since prev was read, or when another writer
// replaced the file prev read; failures are ignored (it is only a cache).
func (s *Store) WriteSummaries(k Kind, prev Summaries, key string, entries []Doc) {
	s.WriteSummariesOf(k, "", prev, key, entries)
}

// WriteSummariesOf is WriteSummaries of the summary named name of kind k
// (see ReadSummariesOf).
func (s *Store) WriteSummariesOf(k Kind, name string, prev Summaries, key string, entries []Doc) {
	if key == "" || strings.ContainsAny(key, " \n") {
		return
	}
	if !sameFile(prev.drop, statOrNil(s.dropMarkerPath())) {
		return
	}
	var b bytes.Buffer
	b.WriteString(summaryMagic + " " + key + "\n")
	for _, e := range entries {
		if e.ID == "" || e.Commit == "" || strings.ContainsAny(e.ID+e.Commit, " \n") {
			return
		}
		fmt.Fprintf(&b, "%s %s %d\n", e.ID, e.Commit, len(e.Data))
		b.Write(e.Data)
	}
	sum := sha256.Sum256(b.Bytes())
	b.WriteString("sha256 " + hex.EncodeToString(sum[:]) + "\n")
	writeFileAtomic(s.summaryPathOf(k, name), b.Bytes(), prev.gen)
}

// sameFile reports whether a and b are the same file, or both absent.
func sameFile(a, b os.FileInfo) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return os.SameFile(a, b)
}

// markDropped replaces the drop marker with a new file, so that readers
// that started before the drop do not write summaries made from what was
// dropped.
func (s *Store) markDropped() error {
	p := s.dropMarkerPath()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("marking the caches dropped: %w", err)
	}
	f, err := os.CreateTemp(filepath.Dir(p), "dropped.tmp*")
	if err != nil {
		return fmt.Errorf("marking the caches dropped: %w", err)
	}
	f.Close()
	if err := os.Rename(f.Name(), p); err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("marking the caches dropped: %w", err)
	}
	return nil
}

// TipList lists where the refs under the given prefixes point, sorted by
// ref name as git lists them, reading no object: the full ref names and, at
// the same positions, their commits (in-process where it can, see
// listRefs). It builds no map, for callers that walk tens of thousands of
// refs beside another sorted list.
func (s *Store) TipList(ctx context.Context, prefixes ...string) (refs, commits []string, err error) {
	return s.listRefs(ctx, prefixes...)
}

// StreamSummaries reads the summary cache of kind k entry by entry,
// calling fn with each one's id, commit and digest, when the file's key is
// key; it never holds the whole file (tens of megabytes at tens of
// thousands of sessions), only one entry at a time. The checksum can only
// be checked at the end: ok reports whether the file had that key, parsed
// and checked out, and a caller must drop whatever it made of the entries
// when it did not. Each digest is a string of its own (fn may keep it).
func (s *Store) StreamSummaries(k Kind, key string, fn func(e SummaryEntry)) (ok bool) {
	f, err := os.Open(s.summaryPathOf(k, ""))
	if err != nil {
		return false
	}
	defer f.Close()
	h := sha256.New()
	r := bufio.NewReaderSize(f, 1<<16)
	line := func() (string, bool) {
		l, err := r.ReadString('\n')
		if err != nil {
			return "", false
		}
		return l, true
	}
	head, ok := line()
	if !ok || head != summaryMagic+" "+key+"\n" {
		return false
	}
	h.Write([]byte(head))
	var data []byte
	for {
		l, ok := line()
		if !ok {
			return false
		}
		if sum, trailer := strings.CutPrefix(l, "sha256 "); trailer {
			// The trailer: the checksum of everything before it, and then
			// the end of the file.
			if _, err := r.ReadByte(); err != io.EOF {
				return false
			}
			return sum == hex.EncodeToString(h.Sum(nil))+"\n"
		}
		h.Write([]byte(l))
		id, rest, ok1 := strings.Cut(strings.TrimSuffix(l, "\n"), " ")
		commit, size, ok2 := strings.Cut(rest, " ")
		n, err := strconv.Atoi(size)
		if !ok1 || !ok2 || id == "" || commit == "" || err != nil || n < 0 || n > maxSummary {
			return false
		}
		if cap(data) < n {
			data = make([]byte, n)
		}
		data = data[:n]
		if _, err := io.ReadFull(r, data); err != nil {
			return false
		}
		h.Write(data)
		fn(SummaryEntry{ID: id, Commit: commit, Data: string(data)})
	}
}

// maxSummary bounds one digest StreamSummaries reads (a damaged length
// must not allocate gigabytes).
const maxSummary = 1 << 20

// SummaryHead reads only the key of the summary cache of kind k (the
// first line of its file), for a reader that streams the entries
// (StreamSummaries); the Summaries it returns (no entries) serves
// WriteSummaries as ReadSummaryList's does.
func (s *Store) SummaryHead(k Kind) Summaries {
	out := Summaries{drop: statOrNil(s.dropMarkerPath())}
	f, err := os.Open(s.summaryPathOf(k, ""))
	if err != nil {
		return out
	}
	defer f.Close()
	out.gen, _ = f.Stat()
	head, err := bufio.NewReaderSize(f, 512).ReadString('\n')
	if err != nil {
		return out
	}
	if key, ok := strings.CutPrefix(strings.TrimSuffix(head, "\n"), summaryMagic+" "); ok {
		out.Key = key
	}
	return out
}
