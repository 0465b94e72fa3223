package gitstore

import (
	"bufio"
	"context"
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
// came from). It is checked, never trusted: a file that does not check out
// (cachefile.go) is ignored, and the owning package uses it only when the key and
// every entity's tip match what git says now. A dropped cache
// (DropCaches) is never written back by a reader that started before the
// drop.

// summaryFormat frames a summary file (cachefile.go): its payload is the
// key's line, then per entry "<id> <commit> <digest length>\n<digest>".
const summaryFormat = "agentmine-summary-cache 2"

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
	raw, gen := readCacheText(s.summaryPathOf(k, name), summaryFormat)
	if gen == nil {
		return out, nil
	}
	key, list, ok := parseSummaries(raw)
	if !ok {
		return out, nil
	}
	out.gen, out.Key = gen, key
	return out, list
}

func statOrNil(path string) os.FileInfo {
	fi, err := os.Stat(path)
	if err != nil {
		return nil
	}
	return fi
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
	key, body, ok := strings.Cut(body, "\n")
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
	s.writeSummaries(s.summaryPathOf(k, name), prev, key, len(entries), func(i int) (string, string, []byte, string) {
		return entries[i].ID, entries[i].Commit, entries[i].Data, ""
	})
}

// WriteSummaryList is WriteSummaries of entries as ReadSummaryList returns
// them (digests as strings): a reader that made the digests keeps one copy
// of them.
func (s *Store) WriteSummaryList(k Kind, prev Summaries, key string, entries []SummaryEntry) {
	s.writeSummaries(s.summaryPathOf(k, ""), prev, key, len(entries), func(i int) (string, string, []byte, string) {
		return entries[i].ID, entries[i].Commit, nil, entries[i].Data
	})
}

// writeSummaries writes the summary file at path from n entries, entry i
// given by entry (its id, commit, and digest as bytes or as a string). The
// file is streamed from the entries (its size counted first): a copy of
// tens of thousands of digests in one buffer cost as much memory again.
func (s *Store) writeSummaries(path string, prev Summaries, key string, n int, entry func(i int) (id, commit string, data []byte, text string)) {
	if key == "" || strings.ContainsAny(key, " \n") {
		return
	}
	if !sameFile(prev.drop, statOrNil(s.dropMarkerPath())) {
		return
	}
	size := int64(len(key) + 1)
	for i := 0; i < n; i++ {
		id, commit, data, text := entry(i)
		if id == "" || commit == "" || strings.ContainsAny(id, " \n") || strings.ContainsAny(commit, " \n") {
			return
		}
		size += int64(len(summaryEntryHead(id, commit, len(data)+len(text))) + len(data) + len(text))
	}
	writeCacheStream(path, summaryFormat, size, prev.gen, func(w io.Writer) {
		io.WriteString(w, key+"\n")
		for i := 0; i < n; i++ {
			id, commit, data, text := entry(i)
			io.WriteString(w, summaryEntryHead(id, commit, len(data)+len(text)))
			w.Write(data)
			io.WriteString(w, text)
		}
	})
}

// summaryEntryHead is the line before an entry's digest in a summary file.
func summaryEntryHead(id, commit string, size int) string {
	return id + " " + commit + " " + strconv.Itoa(size) + "\n"
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
	fr := openCacheFrame(s.summaryPathOf(k, ""), summaryFormat)
	if fr == nil {
		return false
	}
	defer fr.close()
	r := bufio.NewReaderSize(fr.payload(), 1<<16)
	var read int64
	head, err := r.ReadString('\n')
	read += int64(len(head))
	if err != nil || head != key+"\n" {
		return false
	}
	var data []byte
	for {
		l, err := r.ReadString('\n')
		read += int64(len(l))
		if err == io.EOF && l == "" {
			// The end of the payload: the checksum says whether all of it
			// was what was written.
			return fr.check(read)
		}
		if err != nil {
			return false
		}
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
		read += int64(n)
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
	fr := openCacheFrame(s.summaryPathOf(k, ""), summaryFormat)
	if fr == nil {
		return out
	}
	defer fr.close()
	head, err := bufio.NewReaderSize(fr.payload(), 512).ReadString('\n')
	if err != nil || head == "\n" {
		return out
	}
	out.gen, out.Key = fr.fi, strings.TrimSuffix(head, "\n")
	return out
}
