package gitstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
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
	// pointed at when the digest was made.
	Entries map[string]Doc
	// List holds the same digests in the file's order (by id, as written)
	// instead, when read with ReadSummaryListOf; Entries is then nil.
	List []Doc
	// gen is the file read (nil: none); drop is the drop marker seen
	// before anything was read.
	gen, drop os.FileInfo
}

func (s *Store) summaryPath(k Kind) string { return s.summaryPathOf(k, "") }

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
	out, key, list, ok := s.readSummaryFile(k, name)
	if ok {
		out.Key, out.Entries = key, make(map[string]Doc, len(list))
		for _, d := range list {
			out.Entries[d.ID] = d
		}
	}
	return out
}

// ReadSummaryListOf is ReadSummariesOf returning the digests as a list
// sorted by id (Summaries.List) rather than a map: for a caller that walks
// them beside another sorted list, without building a map of every entity.
func (s *Store) ReadSummaryListOf(k Kind, name string) Summaries {
	out, key, list, ok := s.readSummaryFile(k, name)
	if ok {
		if !sort.SliceIsSorted(list, func(i, j int) bool { return list[i].ID < list[j].ID }) {
			sort.Slice(list, func(i, j int) bool { return list[i].ID < list[j].ID })
		}
		out.Key, out.List = key, list
	}
	return out
}

// readSummaryFile reads and checks the summary file named name of kind k:
// the Summaries to fill (with the drop marker and file seen), and the
// file's key and entries in file order when it is whole.
func (s *Store) readSummaryFile(k Kind, name string) (out Summaries, key string, list []Doc, ok bool) {
	out = Summaries{drop: statOrNil(s.dropMarkerPath())}
	raw, gen := readCacheFile(s.summaryPathOf(k, name))
	out.gen = gen
	key, list, ok = parseSummaries(raw)
	return out, key, list, ok
}

func statOrNil(path string) os.FileInfo {
	fi, err := os.Stat(path)
	if err != nil {
		return nil
	}
	return fi
}

// parseSummaries checks the trailing checksum and parses the entries.
func parseSummaries(raw []byte) (string, []Doc, bool) {
	// trailer: "sha256 <64 hex>\n"
	const trailer = len("sha256 ") + 64 + 1
	if len(raw) < trailer {
		return "", nil, false
	}
	body, tail := raw[:len(raw)-trailer], raw[len(raw)-trailer:]
	sum := sha256.Sum256(body)
	if string(tail) != "sha256 "+hex.EncodeToString(sum[:])+"\n" {
		return "", nil, false
	}
	nl := bytes.IndexByte(body, '\n')
	if nl < 0 {
		return "", nil, false
	}
	head := string(body[:nl])
	key, ok := strings.CutPrefix(head, summaryMagic+" ")
	if !ok || key == "" {
		return "", nil, false
	}
	body = body[nl+1:]
	var m []Doc
	for len(body) > 0 {
		nl := bytes.IndexByte(body, '\n')
		if nl < 0 {
			return "", nil, false
		}
		// "<id> <commit> <length>": split by hand, one allocation per
		// line (the file can hold tens of thousands)
		head := body[:nl]
		sp1 := bytes.IndexByte(head, ' ')
		sp2 := sp1 + 1 + bytes.IndexByte(head[sp1+1:], ' ')
		if sp1 <= 0 || sp2 <= sp1+1 {
			return "", nil, false
		}
		n, err := strconv.Atoi(string(head[sp2+1:]))
		if err != nil || n < 0 || nl+1+n > len(body) {
			return "", nil, false
		}
		both := string(head[:sp2])
		m = append(m, Doc{ID: both[:sp1], Commit: both[sp1+1:], Data: body[nl+1 : nl+1+n]})
		body = body[nl+1+n:]
	}
	return key, m, true
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

// TipList is Tips as lists sorted by ref name, as git lists them: the full
// ref names and, at the same positions, their commits. It builds no map, for
// callers that walk tens of thousands of refs beside another sorted list.
func (s *Store) TipList(ctx context.Context, prefixes ...string) (refs, commits []string, err error) {
	lines, err := s.git.Lines(ctx, append([]string{"for-each-ref", "--format=%(objectname) %(refname)"}, prefixes...)...)
	if err != nil {
		return nil, nil, fmt.Errorf("listing refs: %w", err)
	}
	refs, commits = make([]string, 0, len(lines)), make([]string, 0, len(lines))
	for _, l := range lines {
		if c, name, ok := strings.Cut(l, " "); ok {
			refs, commits = append(refs, name), append(commits, c)
		}
	}
	return refs, commits, nil
}

// Tips lists where the refs under the given prefixes point, by full ref
// name, with one for-each-ref that reads no object.
func (s *Store) Tips(ctx context.Context, prefixes ...string) (map[string]string, error) {
	lines, err := s.git.Lines(ctx, append([]string{"for-each-ref", "--format=%(objectname) %(refname)"}, prefixes...)...)
	if err != nil {
		return nil, fmt.Errorf("listing refs: %w", err)
	}
	m := make(map[string]string, len(lines))
	for _, l := range lines {
		if c, name, ok := strings.Cut(l, " "); ok {
			m[name] = c
		}
	}
	return m, nil
}
