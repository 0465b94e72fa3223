package gitstore

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
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
func (s *Store) readCache(k Kind) map[string]cacheEntry {
	raw, err := os.ReadFile(s.cachePath(k))
	if err != nil || !bytes.HasPrefix(raw, []byte(cacheMagic)) {
		return nil
	}
	raw = raw[len(cacheMagic):]
	m := make(map[string]cacheEntry)
	for len(raw) > 0 {
		nl := bytes.IndexByte(raw, '\n')
		if nl < 0 {
			return nil
		}
		f := bytes.Fields(raw[:nl])
		if len(f) != 3 {
			return nil
		}
		n, err := strconv.Atoi(string(f[2]))
		if err != nil || nl+1+n > len(raw) {
			return nil
		}
		data := raw[nl+1 : nl+1+n]
		m[string(f[0])] = cacheEntry{commit: string(f[1]), data: data}
		raw = raw[nl+1+n:]
	}
	return m
}

// writeCache replaces the cache atomically; failures are ignored because
// the cache is only an accelerator.
func (s *Store) writeCache(k Kind, docs []Doc) {
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
	if err == nil {
		err = os.Rename(f.Name(), p)
	}
	if err != nil {
		os.Remove(f.Name())
	}
}
