package worker

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"hash"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// mainLocal reads in-process what a snapshot of the main checkout would
// otherwise ask git for: its HEAD, the path of its index (rev-parse) and
// the index entries marked assume-unchanged or skip-worktree (ls-files
// -v). Each read gives up, leaving the answer to git, on anything but the
// plain case: a symbolic or unusual HEAD, a ref the store is not sure of,
// an index that is split, sparse or does not parse.
type mainLocal struct {
	// gitDir is the main checkout's git directory.
	gitDir string
	// lookup reads a ref in-process (gitstore's Store.LookupRef).
	lookup func(name string) (id string, found, sure bool)
	// hashLen is the length of a raw object id.
	hashLen int
}

// indexVars are the environment variables that move the index or the
// repository away from where the main checkout's .git directory has them.
var indexVars = []string{"GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_INDEX_FILE"}

// mainLocalFor returns the in-process reader of the main checkout at top,
// nil when git must answer: top is not the working tree of the common git
// directory's own .git, or the environment moves the index or repository.
func (e *Env) mainLocalFor(top string) *mainLocal {
	common := e.St.Location().CommonDir
	if filepath.Base(common) != ".git" || filepath.Dir(common) != top {
		return nil
	}
	for _, v := range indexVars {
		if os.Getenv(v) != "" {
			return nil
		}
	}
	if !e.St.ReadsInProcess() {
		return nil
	}
	fi, err := os.Lstat(common)
	if err != nil || !fi.IsDir() {
		return nil
	}
	return &mainLocal{gitDir: common, lookup: e.St.LookupRef, hashLen: e.St.HashLen()}
}

// headAndIndex fills in snap's HEAD as `rev-parse HEAD --symbolic-full-name
// HEAD` answers it and returns the index's path; ok is false when git
// must answer (an unborn branch, a HEAD that is a link or names a ref the
// store is not sure of).
func (l *mainLocal) headAndIndex(snap *mainSnapshot) (string, bool) {
	p := filepath.Join(l.gitDir, "HEAD")
	fi, err := os.Lstat(p)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > 4096 {
		return "", false
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return "", false
	}
	text := strings.TrimRight(string(b), "\n")
	if ref, ok := strings.CutPrefix(text, "ref: "); ok {
		if !strings.HasPrefix(ref, "refs/heads/") || strings.ContainsAny(ref, " \t\n\r") {
			return "", false
		}
		id, found, sure := l.lookup(ref)
		if !found || !sure {
			return "", false
		}
		snap.head, snap.headRef = id, ref
	} else {
		if !isHex(text, 2*l.hashLen) {
			return "", false
		}
		snap.head, snap.headRef = text, "HEAD"
	}
	return filepath.Join(l.gitDir, "index"), true
}

// isHex reports whether s is n lower-case hex digits.
func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// errIndexUnread says the index is one git must read: split, sparse, of
// an unknown version, or not as the format says.
var errIndexUnread = errors.New("index not read in-process")

// flagsOf is indexFlags of a reader that may be nil (then git answers).
func (l *mainLocal) flagsOf(path string) (map[string]string, bool) {
	if l == nil {
		return nil, false
	}
	return l.indexFlags(path)
}

// indexFlags reads the index file at path and returns the entries
// `git ls-files -v` tags with a lower-case letter (assume-unchanged) or
// "S" (skip-worktree), by path, with their tag. A missing index has no
// entries, as for git. ok is false when git must answer.
func (l *mainLocal) indexFlags(path string) (map[string]string, bool) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]string{}, true
	}
	if err != nil {
		return nil, false
	}
	flags, err := parseIndexFlags(data, l.hashLen)
	if err != nil {
		return nil, false
	}
	return flags, true
}

// Index entry flags (git's index format).
const (
	ceValid        = 0x8000
	ceExtended     = 0x4000
	ceStageMask    = 0x3000
	ceNameMask     = 0x0fff
	ceSkipWorktree = 0x4000 // in the extended flags
	modeDirectory  = 0o040000
	indexEntryHead = 40 // ctime, mtime, dev, ino, mode, uid, gid, size
)

// parseIndexFlags parses an index file of version 2, 3 or 4 (its
// checksum checked unless it is all zeros, index.skipHash) and returns
// the tags ls-files -v gives the flagged entries. A split index (a "link"
// extension) or a sparse one (a directory entry, or an "sdir" extension)
// is left to git.
func parseIndexFlags(data []byte, hashLen int) (map[string]string, error) {
	if len(data) < 12+hashLen || string(data[:4]) != "DIRC" {
		return nil, errIndexUnread
	}
	body, sum := data[:len(data)-hashLen], data[len(data)-hashLen:]
	if !bytes.Equal(sum, make([]byte, hashLen)) {
		var h hash.Hash = sha1.New()
		if hashLen == sha256.Size {
			h = sha256.New()
		}
		h.Write(body)
		if !bytes.Equal(h.Sum(nil), sum) {
			return nil, errIndexUnread
		}
	}
	version := binary.BigEndian.Uint32(body[4:8])
	if version < 2 || version > 4 {
		return nil, errIndexUnread
	}
	n := binary.BigEndian.Uint32(body[8:12])
	flags := map[string]string{}
	rest := body[12:]
	var prev []byte
	for i := uint32(0); i < n; i++ {
		e, size, err := parseIndexEntry(rest, version, hashLen, prev)
		if err != nil {
			return nil, err
		}
		if e.mode&0o170000 == modeDirectory {
			return nil, errIndexUnread // a sparse directory entry
		}
		if tag := lsFilesTag(e.flags, e.extended); tag == "S" || tag >= "a" && tag <= "z" {
			flags[string(e.path)] = tag
		}
		prev = e.path
		rest = rest[size:]
	}
	for len(rest) >= 8 {
		sig := string(rest[:4])
		size := binary.BigEndian.Uint32(rest[4:8])
		if sig == "link" || sig == "sdir" {
			return nil, errIndexUnread
		}
		if uint64(size) > uint64(len(rest)-8) {
			return nil, errIndexUnread
		}
		rest = rest[8+size:]
	}
	if len(rest) != 0 {
		return nil, errIndexUnread
	}
	return flags, nil
}

// indexEntry is what the flags need of one index entry.
type indexEntry struct {
	mode            uint32
	flags, extended uint16
	path            []byte
}

// parseIndexEntry parses the entry at the start of b (prev is the path
// of the entry before, for version 4's prefix compression) and returns
// it with its size on disk.
func parseIndexEntry(b []byte, version uint32, hashLen int, prev []byte) (indexEntry, int, error) {
	fixed := indexEntryHead + hashLen + 2
	if len(b) < fixed {
		return indexEntry{}, 0, errIndexUnread
	}
	e := indexEntry{mode: binary.BigEndian.Uint32(b[24:28]), flags: binary.BigEndian.Uint16(b[fixed-2 : fixed])}
	if e.flags&ceExtended != 0 {
		if version < 3 || len(b) < fixed+2 {
			return indexEntry{}, 0, errIndexUnread
		}
		e.extended = binary.BigEndian.Uint16(b[fixed : fixed+2])
		fixed += 2
	}
	name := b[fixed:]
	if version == 4 {
		strip, used := indexVarint(name)
		if used == 0 || strip > uint64(len(prev)) {
			return indexEntry{}, 0, errIndexUnread
		}
		name = name[used:]
		nul := bytes.IndexByte(name, 0)
		if nul < 0 {
			return indexEntry{}, 0, errIndexUnread
		}
		e.path = append(append([]byte{}, prev[:uint64(len(prev))-strip]...), name[:nul]...)
		return e, fixed + used + nul + 1, nil
	}
	nul := bytes.IndexByte(name, 0)
	if nul < 0 || (e.flags&ceNameMask != ceNameMask && int(e.flags&ceNameMask) != nul) {
		return indexEntry{}, 0, errIndexUnread
	}
	e.path = name[:nul]
	size := (fixed + nul + 8) &^ 7
	if size > len(b) {
		return indexEntry{}, 0, errIndexUnread
	}
	return e, size, nil
}

// indexVarint decodes git's offset varint (version 4 path compression):
// the value and the bytes it took, 0 when it does not decode.
func indexVarint(b []byte) (uint64, int) {
	if len(b) == 0 {
		return 0, 0
	}
	c := b[0]
	v := uint64(c & 127)
	i := 1
	for c&128 != 0 {
		if i >= len(b) || i > 9 {
			return 0, 0
		}
		c = b[i]
		i++
		v = ((v + 1) << 7) + uint64(c&127)
	}
	return v, i
}

// lsFilesTag is the tag `git ls-files -v` prints for an entry with these
// flags: M unmerged, S skip-worktree, H cached, lower case when the entry
// is marked assume-unchanged.
func lsFilesTag(flags, extended uint16) string {
	tag := "H"
	switch {
	case flags&ceStageMask != 0:
		tag = "M"
	case extended&ceSkipWorktree != 0:
		tag = "S"
	}
	if flags&ceValid != 0 {
		tag = strings.ToLower(tag)
	}
	return tag
}
