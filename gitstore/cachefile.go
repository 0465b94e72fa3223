package gitstore

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/git-agentmine/git-agentmine/safefile"
)

// Every cache file under <common dir>/agentmine/cache is one frame:
//
//	<format> <payload length>\n
//	<payload>
//	sha256 <hex>\n
//
// where <format> names the cache and its version and the checksum is over
// everything before its line. A cache file is checked, never believed: it
// is opened without blocking, must be a regular file of exactly the size
// its header announces and at most maxCacheFile bytes, and its checksum
// must match, before anything of it is used. Anything else reads as no
// cache at all (and is rebuilt from git), so a damaged cache costs time,
// never a wrong answer. The sorted indexes (stamp.go) and lookups in a
// reach set (reach.go) are the exceptions that read only a few records or
// blocks of a file: each carries its own checksum, checked for every one
// read.

// maxCacheFile bounds a cache file: at 30,000 sessions the largest is tens
// of megabytes; one larger than this is treated as damaged (and a cache
// that would be larger is not written).
const maxCacheFile = 512 << 20

// frameTrailer is the length of the checksum line ending every frame.
const frameTrailer = len("sha256 ") + 2*sha256.Size + 1

// maxFrameHead bounds the header line of a frame.
const maxFrameHead = 128

// cacheFrame is an open cache file whose header and size checked out; its
// payload is read through payload and then checked.
type cacheFrame struct {
	f    *os.File
	fi   os.FileInfo
	head int64 // header length
	n    int64 // payload length
	h    hash.Hash
}

// openCacheFrame opens the cache file at path when it is a regular file in
// format whose size is what its header says; nil otherwise (then nothing
// of the file may be used).
func openCacheFrame(path, format string) *cacheFrame {
	f, fi, err := safefile.Open(path, maxCacheFile)
	if err != nil {
		return nil
	}
	head := make([]byte, maxFrameHead)
	m, _ := f.ReadAt(head, 0)
	line, _, ok := strings.Cut(string(head[:m]), "\n")
	size, isFormat := strings.CutPrefix(line, format+" ")
	n, err := strconv.ParseInt(size, 10, 64)
	if !ok || !isFormat || err != nil || n < 0 || n > maxCacheFile || fi.Size() != int64(len(line)+1)+n+int64(frameTrailer) {
		f.Close()
		return nil
	}
	fr := &cacheFrame{f: f, fi: fi, head: int64(len(line) + 1), n: n, h: sha256.New()}
	fr.h.Write([]byte(line + "\n"))
	return fr
}

// payload reads the payload, hashing it on the way: check tells, once it
// was read to its end, whether it is what was written.
func (fr *cacheFrame) payload() io.Reader {
	return io.TeeReader(io.NewSectionReader(fr.f, fr.head, fr.n), fr.h)
}

// check reports whether the payload read so far is whole and checks out
// against the trailer.
func (fr *cacheFrame) check(read int64) bool {
	if read != fr.n {
		return false
	}
	tail := make([]byte, frameTrailer)
	if _, err := fr.f.ReadAt(tail, fr.head+fr.n); err != nil {
		return false
	}
	return string(tail) == "sha256 "+hex.EncodeToString(fr.h.Sum(nil))+"\n"
}

func (fr *cacheFrame) close() { fr.f.Close() }

// readCacheFile reads the payload of the cache file at path in format,
// with the file read; nil, nil when there is no such file or it does not
// check out (nothing of it was used: a writer may replace it).
func readCacheFile(path, format string) ([]byte, os.FileInfo) {
	fr := openCacheFrame(path, format)
	if fr == nil {
		return nil, nil
	}
	defer fr.close()
	// One read of the whole payload: growing a buffer as io.ReadAll does
	// copied a cache of tens of megabytes over and over.
	raw := make([]byte, fr.n)
	m, _ := io.ReadFull(fr.payload(), raw)
	if !fr.check(int64(m)) {
		return nil, nil
	}
	return raw, fr.fi
}

// readCacheText is readCacheFile returning one string, so that entries can
// share it without a second copy of the file.
func readCacheText(path, format string) (string, os.FileInfo) {
	fr := openCacheFrame(path, format)
	if fr == nil {
		return "", nil
	}
	defer fr.close()
	var b strings.Builder
	b.Grow(int(fr.n))
	m, _ := io.Copy(&b, fr.payload())
	if !fr.check(m) {
		return "", nil
	}
	return b.String(), fr.fi
}

// writeCacheFile replaces the cache file at path with payload framed in
// format (see writeFileAtomic for prev). Failures are ignored (caches
// only).
func writeCacheFile(path, format string, payload []byte, prev os.FileInfo) {
	writeCacheStream(path, format, int64(len(payload)), prev, func(w io.Writer) { w.Write(payload) })
}

// writeCacheStream is writeCacheFile of a payload of size bytes that fill
// writes, streamed to the file as it is hashed: the list cache is tens of
// megabytes, and a copy of it in memory would cost as much again. Nothing
// is written when fill writes another size, or when the file would be
// larger than a reader accepts.
func writeCacheStream(path, format string, size int64, prev os.FileInfo, fill func(w io.Writer)) {
	head := fmt.Sprintf("%s %d\n", format, size)
	if int64(len(head))+size+int64(frameTrailer) > maxCacheFile || len(head) > maxFrameHead {
		return
	}
	writeFileWith(path, prev, func(f io.Writer) error {
		w := bufio.NewWriterSize(f, 1<<16)
		h := sha256.New()
		io.WriteString(w, head)
		h.Write([]byte(head))
		body := &countingWriter{w: io.MultiWriter(w, h)}
		fill(body)
		if body.n != size {
			return errors.New("the payload is not the size announced")
		}
		io.WriteString(w, "sha256 "+hex.EncodeToString(h.Sum(nil))+"\n")
		return w.Flush()
	})
}

// countingWriter counts what passes through it.
type countingWriter struct {
	w io.Writer
	n int64
	// scratch carries strings to w: io.WriteString would copy each one
	// into a new slice (every note line, every digest).
	scratch []byte
}

// WriteString writes s through one reused buffer.
func (c *countingWriter) WriteString(s string) (int, error) {
	c.scratch = append(c.scratch[:0], s...)
	return c.Write(c.scratch)
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// localCachePath is the path of the cache file name (slash-separated,
// under the local cache directory) that ReadLocalCache and WriteLocalCache
// use.
func (s *Store) localCachePath(name string) string {
	return filepath.Join(s.loc.CommonDir, "agentmine", "cache", filepath.FromSlash(name))
}

// ReadLocalCache reads the payload of the cache file name in format (a
// word and a version, e.g. "agentmine-client-version 1"), written by
// WriteLocalCache; ok is false when it is missing or does not check out.
// For caches of other packages, kept beside gitstore's own.
func (s *Store) ReadLocalCache(name, format string) (payload []byte, ok bool) {
	raw, fi := readCacheFile(s.localCachePath(name), format)
	return raw, fi != nil
}

// WriteLocalCache replaces the cache file name with payload in format,
// atomically; failures are ignored (it is only a cache).
func (s *Store) WriteLocalCache(name, format string, payload []byte) {
	writeCacheFile(s.localCachePath(name), format, payload, nil)
}

// cacheWriter writes a cache file whose payload size is not known until
// its end (documents read from git a chunk at a time): the payload goes
// straight to a temporary file behind a header whose size field is
// zero-padded to a fixed width (readers parse the number, leading zeros
// and all), the header is filled in once the size is known, and the
// checksum is taken by reading the file back. Nothing is held in memory
// but a write buffer.
type cacheWriter struct {
	path, format string
	prev         os.FileInfo
	f            *os.File
	w            *bufio.Writer
	n            int64
	failed       bool
}

// cacheSizeWidth is the width of a streamed frame's size field: any int64.
const cacheSizeWidth = 19

// newCacheWriter starts replacing the cache file at path in format (see
// writeFileAtomic for prev); nil when the temporary file cannot be made
// (then nothing is written).
func newCacheWriter(path, format string, prev os.FileInfo) *cacheWriter {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil
	}
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return nil
	}
	c := &cacheWriter{path: path, format: format, prev: prev, f: f, w: bufio.NewWriterSize(f, 1<<16)}
	if _, err := c.w.WriteString(c.head()); err != nil {
		c.failed = true
	}
	return c
}

// head is the frame's header line for the payload written so far.
func (c *cacheWriter) head() string {
	return fmt.Sprintf("%s %0*d\n", c.format, cacheSizeWidth, c.n)
}

// Write adds p to the payload.
func (c *cacheWriter) Write(p []byte) (int, error) {
	if c.failed {
		return 0, errors.New("the cache file could not be written")
	}
	n, err := c.w.Write(p)
	c.n += int64(n)
	if err != nil {
		c.failed = true
	}
	return n, err
}

// commit finishes the file and puts it in place, unless a write failed,
// the payload grew larger than a reader accepts, or the file prev is no
// longer in place (stillCurrent); failures are ignored (caches only).
func (c *cacheWriter) commit() {
	err := c.finish()
	if cerr := c.f.Close(); err == nil {
		err = cerr
	}
	if err == nil && !stillCurrent(c.path, c.prev) {
		err = os.ErrExist
	}
	if err == nil {
		err = os.Rename(c.f.Name(), c.path)
	}
	if err != nil {
		os.Remove(c.f.Name())
	}
}

// finish writes the header with the payload's size, then the checksum of
// the header and payload as read back from the file.
func (c *cacheWriter) finish() error {
	head := c.head()
	if c.failed || int64(len(head))+c.n+int64(frameTrailer) > maxCacheFile {
		return errors.New("the cache file could not be written")
	}
	if err := c.w.Flush(); err != nil {
		return err
	}
	if _, err := c.f.WriteAt([]byte(head), 0); err != nil {
		return err
	}
	h := sha256.New()
	if m, err := io.Copy(h, io.NewSectionReader(c.f, 0, int64(len(head))+c.n)); err != nil || m != int64(len(head))+c.n {
		return errors.New("the cache file did not read back")
	}
	_, err := c.f.WriteAt([]byte("sha256 "+hex.EncodeToString(h.Sum(nil))+"\n"), int64(len(head))+c.n)
	return err
}

// abort drops the file being written.
func (c *cacheWriter) abort() {
	c.f.Close()
	os.Remove(c.f.Name())
}
