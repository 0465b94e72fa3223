package gitstore

import (
	"bufio"
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

const cacheMagic = "agentmine-list-cache 1\n"

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
	raw, gen := readCacheFile(s.cachePath(k))
	if !bytes.HasPrefix(raw, []byte(cacheMagic)) {
		return nil, gen
	}
	raw = raw[len(cacheMagic):]
	m := make(map[string]cacheEntry)
	for len(raw) > 0 {
		nl := bytes.IndexByte(raw, '\n')
		if nl < 0 {
			return nil, gen
		}
		f := bytes.Fields(raw[:nl])
		if len(f) != 3 {
			return nil, gen
		}
		n, err := strconv.Atoi(string(f[2]))
		if err != nil || nl+1+n > len(raw) {
			return nil, gen
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

// readCacheFile reads a cache file and returns the file it read; nil when
// there is none.
func readCacheFile(path string) ([]byte, os.FileInfo) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil
	}
	// One read of the whole file: growing a buffer as io.ReadAll does
	// copied a cache of tens of megabytes over and over.
	raw := make([]byte, fi.Size())
	if _, err := io.ReadFull(f, raw); err != nil {
		return nil, nil
	}
	return raw, fi
}

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
	p := s.cachePath(k)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return
	}
	f, err := os.CreateTemp(filepath.Dir(p), k.Dir+".tmp*")
	if err != nil {
		return
	}
	w := bufio.NewWriterSize(f, 1<<16)
	io.WriteString(w, cacheMagic)
	for _, d := range docs {
		fmt.Fprintf(w, "%s %s %d\n", d.ID, d.Commit, len(d.Data))
		w.Write(d.Data)
	}
	err = w.Flush()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && !stillCurrent(p, prev) {
		err = os.ErrExist
	}
	if err == nil {
		err = os.Rename(f.Name(), p)
	}
	if err != nil {
		os.Remove(f.Name())
	}
}

// The notes cache holds every note of one notes commit: a header line with
// that commit id, then "<target> <line count>" followed by the lines. It is
// used only when the notes ref still points at that commit.

func (s *Store) notesCachePath() string {
	return filepath.Join(s.loc.CommonDir, "agentmine", "cache", "notes")
}

func (s *Store) readNotesCache(tip string) (map[string][]string, bool) {
	raw, err := os.ReadFile(s.notesCachePath())
	if err != nil {
		return nil, false
	}
	lines := strings.Split(string(raw), "\n")
	if len(lines) == 0 || lines[0] != cacheMagic[:len(cacheMagic)-1]+" notes "+tip {
		return nil, false
	}
	m := map[string][]string{}
	for i := 1; i < len(lines); {
		f := strings.Fields(lines[i])
		if len(f) != 2 {
			break
		}
		n, err := strconv.Atoi(f[1])
		if err != nil || i+1+n > len(lines) {
			return nil, false
		}
		m[f[0]] = lines[i+1 : i+1+n]
		i += 1 + n
	}
	return m, true
}

func (s *Store) writeNotesCache(tip string, all map[string][]string) {
	var b strings.Builder
	b.WriteString(cacheMagic[:len(cacheMagic)-1] + " notes " + tip + "\n")
	for t, ls := range all {
		fmt.Fprintf(&b, "%s %d\n", t, len(ls))
		for _, l := range ls {
			b.WriteString(l)
			b.WriteByte('\n')
		}
	}
	writeFileAtomic(s.notesCachePath(), []byte(b.String()), nil)
}

// The roots cache maps entity ids to the first commit of their chain, which
// never changes for an id; entries are used only for ids whose ref exists.

func (s *Store) rootsCachePath(k Kind) string {
	return filepath.Join(s.loc.CommonDir, "agentmine", "cache", "roots-"+k.Dir)
}

func (s *Store) readRootsCache(k Kind) (map[string]string, os.FileInfo) {
	raw, gen := readCacheFile(s.rootsCachePath(k))
	m := map[string]string{}
	for _, l := range strings.Split(string(raw), "\n") {
		if id, root, ok := strings.Cut(l, " "); ok {
			m[id] = root
		}
	}
	return m, gen
}

func (s *Store) writeRootsCache(k Kind, m map[string]string, prev os.FileInfo) {
	var b strings.Builder
	for id, root := range m {
		b.WriteString(id + " " + root + "\n")
	}
	writeFileAtomic(s.rootsCachePath(k), []byte(b.String()), prev)
}

// writeFileAtomic replaces path through a temporary file and a rename,
// unless the cache file prev the data came from is no longer in place
// (stillCurrent); failures are ignored (caches only).
func writeFileAtomic(path string, data []byte, prev os.FileInfo) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return
	}
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return
	}
	_, err = f.Write(data)
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
