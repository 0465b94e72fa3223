package gitstore

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The list cache is local, disposable data under the common git dir: for
// each entity, the commit its ref pointed at and the document in that
// commit. It is only ever used for a ref whose current tip is exactly the
// cached commit, so a stale or missing cache costs speed, never correctness.
// Deleting it loses nothing.

// The formats of gitstore's cache files (cachefile.go frames them).
const (
	listFormat  = "agentmine-list-cache 2"
	notesFormat = "agentmine-notes-cache 2"
	rootsFormat = "agentmine-roots-cache 2"
)

type cacheEntry struct {
	commit string
	data   []byte
}

func (s *Store) cachePath(k Kind) string {
	return filepath.Join(s.loc.CommonDir, "agentmine", "cache", k.Dir)
}

// readCache loads the cache of kind k; any problem yields an empty cache.
// It also returns the file it read (nil when none), for writeCache.
func (s *Store) readCache(k Kind) (map[string]cacheEntry, os.FileInfo) {
	raw, gen := readCacheFile(s.cachePath(k), listFormat)
	if gen == nil {
		return nil, nil
	}
	m := make(map[string]cacheEntry)
	for len(raw) > 0 {
		nl := bytes.IndexByte(raw, '\n')
		if nl < 0 {
			return nil, nil
		}
		f := bytes.Fields(raw[:nl])
		if len(f) != 3 {
			return nil, nil
		}
		n, err := strconv.Atoi(string(f[2]))
		if err != nil || n < 0 || nl+1+n > len(raw) {
			return nil, nil
		}
		data := raw[nl+1 : nl+1+n]
		m[string(f[0])] = cacheEntry{commit: string(f[1]), data: data}
		raw = raw[nl+1+n:]
	}
	return m, gen
}

// A cache file is only ever replaced whole (a rename), so the file a reader
// read identifies what its entries came from. A writer whose entries came
// partly from a cache file writes only while that file is still in place:
// once it was dropped (DropCaches) or replaced, entries taken from it must
// not come back. A writer that read no cache file wrote only what it read
// from git, and may always write.

// stillCurrent reports whether a cache written from entries of the file
// prev (nil: none) may replace what is at path now.
func stillCurrent(path string, prev os.FileInfo) bool {
	if prev == nil {
		return true
	}
	cur, err := os.Stat(path)
	return err == nil && os.SameFile(prev, cur)
}

// DropCaches removes the local caches of the given kinds (lists and roots)
// and of the outcome notes, so that the next reader reads everything from
// git. A supervisor calls it after its worker ended: the worker runs as the
// same user and may have planted entries (a session document without its
// seal, notes that are not in git), which a cache would otherwise keep
// serving for as long as the refs they are keyed by do not move.
func (s *Store) DropCaches(kinds ...Kind) error {
	// The drop marker is replaced before and after the removals: a reader
	// that saw an older marker (it may have read files removed below) does
	// not write a summary made from them (WriteSummaries).
	if err := s.markDropped(); err != nil {
		return err
	}
	paths := []string{s.notesCachePath()}
	// The reach sets of every base (reach.go).
	reach, _ := filepath.Glob(filepath.Join(s.loc.CommonDir, "agentmine", "cache", "reach-*"))
	paths = append(paths, reach...)
	for _, k := range kinds {
		paths = append(paths, s.cachePath(k), s.rootsCachePath(k), s.summaryPath(k))
		// every other summary of the kind (ReadSummariesOf)
		named, _ := filepath.Glob(s.summaryPathOf(k, "*"))
		paths = append(paths, named...)
	}
	for _, p := range paths {
		if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("dropping the cache %s: %w", p, err)
		}
	}
	return s.markDropped()
}

// writeCache replaces the cache atomically, unless the cache file prev
// that some entries came from was replaced or dropped meanwhile; failures
// are ignored because the cache is only an accelerator.
func (s *Store) writeCache(k Kind, docs []Doc, prev os.FileInfo) {
	var size int64
	for _, d := range docs {
		size += int64(len(listEntryHead(d)) + len(d.Data))
	}
	writeCacheStream(s.cachePath(k), listFormat, size, prev, func(w io.Writer) {
		for _, d := range docs {
			io.WriteString(w, listEntryHead(d))
			w.Write(d.Data)
		}
	})
}

// listEntryHead is the line before an entry's document in the list cache.
func listEntryHead(d Doc) string {
	return d.ID + " " + d.Commit + " " + strconv.Itoa(len(d.Data)) + "\n"
}

// The notes cache holds every note of one notes commit: a header line with
// that commit id, then "<target> <line count>" followed by the lines. It is
// used only when the notes ref still points at that commit.

func (s *Store) notesCachePath() string {
	return filepath.Join(s.loc.CommonDir, "agentmine", "cache", "notes")
}

// readNotesCache returns the notes of the notes commit tip from the cache;
// false when the cache is of another commit or does not check out.
func (s *Store) readNotesCache(tip string) (map[string][]string, bool) {
	raw, gen := readCacheText(s.notesCachePath(), notesFormat)
	if gen == nil {
		return nil, false
	}
	head, body, ok := strings.Cut(raw, "\n")
	if !ok || head != tip {
		return nil, false
	}
	// Every line must parse, to the last one: a checked file that does
	// not parse was not written by this version.
	lines := strings.Split(body, "\n")
	if lines[len(lines)-1] != "" {
		return nil, false
	}
	lines = lines[:len(lines)-1]
	m := map[string][]string{}
	for i := 0; i < len(lines); {
		t, count, ok := strings.Cut(lines[i], " ")
		n, err := strconv.Atoi(count)
		if !ok || t == "" || err != nil || n < 0 || i+1+n > len(lines) {
			return nil, false
		}
		m[t] = lines[i+1 : i+1+n]
		i += 1 + n
	}
	return m, true
}

// The file is streamed from all (its size counted first): building it in
// memory held every note twice more.
func (s *Store) writeNotesCache(tip string, all map[string][]string) {
	targets := make([]string, 0, len(all))
	size := int64(len(tip) + 1)
	for t, ls := range all {
		targets = append(targets, t)
		size += int64(len(t) + 1 + len(strconv.Itoa(len(ls))) + 1)
		for _, l := range ls {
			if strings.Contains(l, "\n") {
				return // not a line: the cache could not say it
			}
			size += int64(len(l) + 1)
		}
	}
	writeCacheStream(s.notesCachePath(), notesFormat, size, nil, func(w io.Writer) {
		io.WriteString(w, tip+"\n")
		for _, t := range targets {
			ls := all[t]
			io.WriteString(w, t+" "+strconv.Itoa(len(ls))+"\n")
			for _, l := range ls {
				io.WriteString(w, l)
				io.WriteString(w, "\n")
			}
		}
	})
}

// The roots cache maps entity ids to the first commit of their chain, which
// never changes for an id; entries are used only for ids whose ref exists.

func (s *Store) rootsCachePath(k Kind) string {
	return filepath.Join(s.loc.CommonDir, "agentmine", "cache", "roots-"+k.Dir)
}

func (s *Store) readRootsCache(k Kind) (map[string]string, os.FileInfo) {
	raw, gen := readCacheText(s.rootsCachePath(k), rootsFormat)
	m := map[string]string{}
	if gen == nil {
		return m, nil
	}
	for l := range strings.Lines(raw) {
		id, root, ok := strings.Cut(strings.TrimSuffix(l, "\n"), " ")
		if !ok || id == "" || !isHexID(root, 2*s.hashLen()) || !strings.HasSuffix(l, "\n") {
			return map[string]string{}, nil
		}
		m[id] = root
	}
	return m, gen
}

func (s *Store) writeRootsCache(k Kind, m map[string]string, prev os.FileInfo) {
	var b strings.Builder
	for id, root := range m {
		b.WriteString(id + " " + root + "\n")
	}
	writeCacheFile(s.rootsCachePath(k), rootsFormat, []byte(b.String()), prev)
}

// writeFileAtomic replaces path with the chunks, one after the other
// (see writeFileWith).
func writeFileAtomic(path string, prev os.FileInfo, chunks ...[]byte) {
	writeFileWith(path, prev, func(w io.Writer) error {
		for _, c := range chunks {
			if _, err := w.Write(c); err != nil {
				return err
			}
		}
		return nil
	})
}

// writeFileWith replaces path with what fill writes, through a temporary
// file and a rename, unless fill fails or the cache file prev the data
// came from is no longer in place (stillCurrent); failures are ignored
// (caches only).
func writeFileWith(path string, prev os.FileInfo, fill func(w io.Writer) error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return
	}
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return
	}
	err = fill(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && !stillCurrent(path, prev) {
		err = os.ErrExist
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
}
