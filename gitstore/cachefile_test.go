package gitstore

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/git-agentmine/git-agentmine/gitcmd"
)

// TestCacheFrame: a framed cache file reads back as written, and every
// single-bit flip, every truncation, an extension and every special file
// in its place read as no cache, at once and without reading a huge file.
func TestCacheFrame(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c")
	const format = "agentmine-test-cache 1"
	payload := []byte("a 0123 5\nhello\nb 4567 0\n")
	writeCacheFile(path, format, payload, nil)
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, fi := readCacheFile(path, format); fi == nil || string(got) != string(payload) {
		t.Fatalf("read back %q, %v", got, fi)
	}
	if _, fi := readCacheFile(path, "agentmine-test-cache 2"); fi != nil {
		t.Fatal("another format version was read")
	}
	bad := func(what string, data []byte) {
		t.Helper()
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if got, fi := readCacheFile(path, format); fi != nil {
			t.Fatalf("%s: read as %q", what, got)
		}
		if got, fi := readCacheText(path, format); fi != nil {
			t.Fatalf("%s: read as text %q", what, got)
		}
	}
	cases := 0
	for i := range good {
		for b := range 8 {
			d := append([]byte(nil), good...)
			d[i] ^= 1 << b
			bad("bit flipped", d)
			cases++
		}
	}
	for n := range len(good) {
		bad("truncated", good[:n])
		cases++
	}
	bad("extended", append(append([]byte(nil), good...), '\n'))
	t.Logf("%d damaged files refused", cases+1)

	special := map[string]func(p string) error{
		"a FIFO":      func(p string) error { return syscall.Mkfifo(p, 0o644) },
		"/dev/zero":   func(p string) error { return os.Symlink("/dev/zero", p) },
		"a directory": func(p string) error { return os.Mkdir(p, 0o755) },
		"a 2 GB sparse file after a valid header": func(p string) error {
			if err := os.WriteFile(p, good[:len(format)+4], 0o644); err != nil {
				return err
			}
			return os.Truncate(p, 2<<30)
		},
	}
	for what, mk := range special {
		os.RemoveAll(path)
		if err := mk(path); err != nil {
			t.Fatal(err)
		}
		if got, fi := readCacheFile(path, format); fi != nil {
			t.Fatalf("%s: read as %q", what, got)
		}
		// A writer replaces what it could not read (but a directory).
		writeCacheFile(path, format, payload, nil)
		if _, fi := readCacheFile(path, format); fi == nil && what != "a directory" {
			t.Fatalf("%s: not replaced by a good cache", what)
		}
	}
}

// TestNotesCacheDamage: a notes cache that was cut or changed reads as no
// cache (it once parsed up to the damage and was believed).
func TestNotesCacheDamage(t *testing.T) {
	s := &Store{loc: gitcmd.Location{CommonDir: t.TempDir()}, sha1: true}
	all := map[string][]string{"c1": {"line one", "line two"}, "c2": {"x"}}
	s.writeNotesCache("tip", all)
	if got, ok := s.readNotesCache("tip"); !ok || len(got) != 2 || len(got["c1"]) != 2 {
		t.Fatalf("read back %v, %v", got, ok)
	}
	if _, ok := s.readNotesCache("other"); ok {
		t.Fatal("another notes commit was read")
	}
	good, err := os.ReadFile(s.notesCachePath())
	if err != nil {
		t.Fatal(err)
	}
	for n := range len(good) {
		if err := os.WriteFile(s.notesCachePath(), good[:n], 0o644); err != nil {
			t.Fatal(err)
		}
		if got, ok := s.readNotesCache("tip"); ok {
			t.Fatalf("cut at %d: read as %v", n, got)
		}
	}
}

// TestLocalCache: another package's cache (the client versions) goes
// through the same frame: read back as written, refused when damaged.
func TestLocalCache(t *testing.T) {
	s := &Store{loc: gitcmd.Location{CommonDir: t.TempDir()}, sha1: true}
	const format = "agentmine-client-version 1"
	if _, ok := s.ReadLocalCache("client-version/abc", format); ok {
		t.Fatal("a missing cache was read")
	}
	s.WriteLocalCache("client-version/abc", format, []byte("tool 1.2.3\n"))
	if got, ok := s.ReadLocalCache("client-version/abc", format); !ok || string(got) != "tool 1.2.3\n" {
		t.Fatalf("read back %q, %v", got, ok)
	}
	path := s.localCachePath("client-version/abc")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	raw[len(format)+5] ^= 1 // inside "tool 1.2.3"
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	if got, ok := s.ReadLocalCache("client-version/abc", format); ok {
		t.Fatalf("a damaged version was read: %q", got)
	}
}

// TestReadJournalSpecialFile: a journal replaced by a FIFO with no writer
// is an error at once, not a supervisor or merge waiting forever.
func TestReadJournalSpecialFile(t *testing.T) {
	s := &Store{loc: gitcmd.Location{CommonDir: t.TempDir()}, sha1: true}
	if err := os.MkdirAll(filepath.Dir(s.journalPath()), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(s.journalPath(), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReadJournal(time.Time{}); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("ReadJournal of a FIFO = %v", err)
	}
}
