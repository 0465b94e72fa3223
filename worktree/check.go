package worktree

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/git-agentmine/git-agentmine/scope"
)

// Git modes of tree entries.
const (
	modeFile    = 0o100644
	modeExec    = 0o100755
	modeLink    = 0o120000
	modeGitlink = 0o160000
)

// entryList holds the entries of a tree in fixed-size blocks, so that it
// grows without copying what it holds.
type entryList struct {
	blocks [][]entry
	n      int
}

// entryBlock is the number of entries in one block of an entryList.
const entryBlock = 4096

func (l *entryList) add(e entry) {
	if l.n%entryBlock == 0 {
		l.blocks = append(l.blocks, make([]entry, 0, entryBlock))
	}
	b := &l.blocks[len(l.blocks)-1]
	*b = append(*b, e)
	l.n++
}

func (l *entryList) at(i int) *entry { return &l.blocks[i/entryBlock][i%entryBlock] }

func (l *entryList) len() int { return l.n }

// layout is the kept entries of a tree arranged by directory: what a
// checkout must hold, directory by directory, so that it can be checked
// one directory listing at a time instead of through a map of every path.
type layout struct {
	entries *entryList
	// dirs are the directories the kept entries need, parents before
	// children; dirs[0] is the root.
	dirs []dirPlan
}

// dirPlan is one directory of a layout.
type dirPlan struct {
	path   string // slash-separated, "" for the root
	parent int32  // index in layout.dirs; the root's is 0
	kids   []kid  // sorted by name, as os.ReadDir sorts
}

// kid is one name in a directory of a layout: an entry of the tree or a
// directory holding some.
type kid struct {
	name  string
	entry int32 // index in layout.entries, -1 for a directory
	dir   int32 // index in layout.dirs, -1 for an entry
}

// newLayout arranges the entries whose access is not Absent. Every
// directory's children share one array, each directory's part sized by
// counting first.
func newLayout(entries *entryList) *layout {
	l := &layout{entries: entries, dirs: []dirPlan{{}}}
	index := map[string]int32{"": 0}
	var counts []int
	var dirOf func(p string) int32
	dirOf = func(p string) int32 {
		if i, ok := index[p]; ok {
			return i
		}
		parent, _ := splitPath(p)
		pi := dirOf(parent)
		i := int32(len(l.dirs))
		l.dirs = append(l.dirs, dirPlan{path: p, parent: pi})
		counts = append(counts, 0)
		counts[pi]++
		index[p] = i
		return i
	}
	counts = append(counts, 0)
	parents := make([]int32, entries.len())
	total := 0
	for i := range entries.len() {
		e := entries.at(i)
		if e.access == scope.Absent {
			continue
		}
		parent, _ := splitPath(e.path)
		d := dirOf(parent)
		parents[i] = d
		counts[d]++
		total++
	}
	all := make([]kid, 0, total+len(l.dirs)-1)
	for d, n := range counts {
		l.dirs[d].kids = all[len(all) : len(all) : len(all)+n]
		all = all[:len(all)+n]
	}
	for d := 1; d < len(l.dirs); d++ {
		p := &l.dirs[l.dirs[d].parent]
		_, name := splitPath(l.dirs[d].path)
		p.kids = append(p.kids, kid{name: name, entry: -1, dir: int32(d)})
	}
	for i := range entries.len() {
		e := entries.at(i)
		if e.access == scope.Absent {
			continue
		}
		_, name := splitPath(e.path)
		p := &l.dirs[parents[i]]
		p.kids = append(p.kids, kid{name: name, entry: int32(i), dir: -1})
	}
	for i := range l.dirs {
		slices.SortStableFunc(l.dirs[i].kids, func(a, b kid) int { return strings.Compare(a.name, b.name) })
	}
	return l
}

// splitPath splits a slash-separated path into its directory ("" at the
// root) and its last element.
func splitPath(p string) (dir, name string) {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i], p[i+1:]
	}
	return "", p
}

// joinPath joins a slash-separated directory ("" for the root) and a name.
func joinPath(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// makeDirs creates under root every directory the layout needs: the
// parents of files and links, and the directories of gitlinks.
func (l *layout) makeDirs(root string) error {
	mk := func(rel string) error {
		if err := os.Mkdir(filepath.Join(root, filepath.FromSlash(rel)), 0o777); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("create the worktree's directories: %w", err)
		}
		return nil
	}
	for _, d := range l.dirs[1:] {
		if err := mk(d.path); err != nil {
			return err
		}
		// A gitlink's directory goes in right after its parent.
		for _, k := range d.kids {
			if k.entry >= 0 && l.entries.at(int(k.entry)).mode == modeGitlink {
				if err := mk(joinPath(d.path, k.name)); err != nil {
					return err
				}
			}
		}
	}
	for _, k := range l.dirs[0].kids {
		if k.entry >= 0 && l.entries.at(int(k.entry)).mode == modeGitlink {
			if err := mk(k.name); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkAndApply checks that the worktree at root holds exactly what the
// layout says (a regular file or link for each entry, a directory for
// each gitlink, and nothing else but the directories that lead to them;
// the root's .git is skipped), reporting every difference as one error.
// On the way it gives every file the write permission its access allows
// and makes read-only the directories that can hold no writable path,
// each directory opened once (through its parent's descriptor) and its
// files changed through it: after a mismatch some of them may have been
// changed, which does not matter to Create, which removes the worktree
// then. Symbolic links are never changed. git created the files with
// gitUmask while the process's umask is umask (-1 when unknown), so a
// file's mode is known without a stat.
func (l *layout) checkAndApply(root string, spec scope.Spec, umask, gitUmask int) error {
	c := checker{l: l, root: root, k: newDirCache(spec), umask: umask, gitUmask: gitUmask, buf: make([]byte, 32<<10)}
	fd, err := openDir(unix.AT_FDCWD, root, 0) // the root may be reached through a link
	if err != nil {
		return fmt.Errorf("apply permissions: %w", &fs.PathError{Op: "open", Path: root, Err: err})
	}
	err = c.dir(0, fd)
	unix.Close(fd)
	if err != nil {
		return fmt.Errorf("apply permissions: %w", err)
	}
	if len(c.unexpected) > 0 || len(c.missing) > 0 {
		return mismatchError(c.unexpected, c.missing)
	}
	return nil
}

// checker is the state of one checkAndApply.
type checker struct {
	l                   *layout
	root                string
	k                   *dirCache
	umask, gitUmask     int
	unexpected, missing []string
	buf                 []byte // for directory entries
}

// full is the file system path of the slash-separated rel.
func (c *checker) full(rel string) string {
	if rel == "" {
		return c.root
	}
	return c.root + string(filepath.Separator) + filepath.FromSlash(rel)
}

// openDir opens the directory name (relative to the directory open as
// at) for reading its entries, with the extra open flags (unix.O_NOFOLLOW
// not to follow a symbolic link).
func openDir(at int, name string, flags int) (int, error) {
	for {
		fd, err := unix.Openat(at, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC|flags, 0)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// dir checks the directory dirs[d], open as fd, against its entries, and
// applies the permissions of what it holds and then its own.
func (c *checker) dir(d int32, fd int) error {
	plan := &c.l.dirs[d]
	kids := plan.kids
	seen := make([]bool, len(kids))
	var subdirs []int
	err := readDirents(fd, c.buf, func(name []byte, typ uint8) error {
		if d == 0 && string(name) == ".git" {
			return nil
		}
		// kids are sorted by name: find this one, if it is there.
		lo, hi := 0, len(kids)
		for lo < hi {
			m := int(uint(lo+hi) >> 1)
			if kids[m].name < string(name) {
				lo = m + 1
			} else {
				hi = m
			}
		}
		if typ == unix.DT_UNKNOWN {
			var st unix.Stat_t
			if err := unix.Fstatat(fd, string(name), &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
				return &fs.PathError{Op: "stat", Path: c.full(joinPath(plan.path, string(name))), Err: err}
			}
			typ = direntType(uint32(st.Mode))
		}
		if lo == len(kids) || kids[lo].name != string(name) {
			return c.extra(joinPath(plan.path, string(name)), typ == unix.DT_DIR)
		}
		// A malformed tree may name the same path twice: only the first
		// can match what is there, and the others are missing.
		seen[lo] = true
		if k := kids[lo]; k.dir >= 0 && typ == unix.DT_DIR {
			subdirs = append(subdirs, lo)
			return nil
		}
		return c.match(fd, plan.path, kids[lo], typ)
	})
	if err != nil {
		return &fs.PathError{Op: "read", Path: c.full(plan.path), Err: err}
	}
	for i, k := range kids {
		if !seen[i] {
			c.absent(plan.path, k)
		}
	}
	for _, i := range subdirs {
		k := kids[i]
		sub, err := openDir(fd, k.name, unix.O_NOFOLLOW)
		if err != nil {
			return &fs.PathError{Op: "open", Path: c.full(c.l.dirs[k.dir].path), Err: err}
		}
		err = c.dir(k.dir, sub)
		unix.Close(sub)
		if err != nil {
			return err
		}
	}
	if c.k.writable(plan.path) {
		return nil
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return &fs.PathError{Op: "stat", Path: c.full(plan.path), Err: err}
	}
	perm := uint32(st.Mode) & 0o7777
	if want := perm &^ uint32(writeBits); want != perm {
		if err := unix.Fchmod(fd, want); err != nil {
			return &fs.PathError{Op: "chmod", Path: c.full(plan.path), Err: err}
		}
	}
	return nil
}

// direntType is the directory entry type of a file of mode.
func direntType(mode uint32) uint8 {
	switch mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return unix.DT_DIR
	case unix.S_IFREG:
		return unix.DT_REG
	case unix.S_IFLNK:
		return unix.DT_LNK
	}
	return unix.DT_UNKNOWN
}

// match checks the entry of type typ found in the directory dir (open as
// fd) where the layout has k, and gives a file the write permission its
// access allows.
func (c *checker) match(fd int, dir string, k kid, typ uint8) error {
	if k.dir >= 0 { // not a directory where the layout has one
		c.unexpected = append(c.unexpected, joinPath(dir, k.name))
		c.absent(dir, k)
		return nil
	}
	te := c.l.entries.at(int(k.entry))
	if te.mode == modeGitlink {
		if typ != unix.DT_DIR {
			rel := joinPath(dir, k.name)
			c.unexpected = append(c.unexpected, rel)
			c.missing = append(c.missing, rel)
		}
		return nil // never descended into
	}
	if typ == unix.DT_DIR {
		rel := joinPath(dir, k.name)
		c.missing = append(c.missing, rel)
		return c.extra(rel, true)
	}
	if typ != unix.DT_REG {
		return nil // a link: chmod would follow it
	}
	writable := te.access == scope.Writable
	if c.umask >= 0 && c.gitUmask >= 0 && (te.mode == modeFile || te.mode == modeExec) {
		// git created the file with 0666 or 0777 minus its umask; the
		// file's usual mode is that minus the process's umask.
		base := 0o666
		if te.mode == modeExec {
			base = 0o777
		}
		perm := base &^ c.umask
		want := perm &^ 0o222
		if writable {
			want = perm | 0o200
		}
		if want == base&^c.gitUmask {
			return nil
		}
		return c.chmodAt(fd, dir, k.name, uint32(want))
	}
	var st unix.Stat_t
	if err := unix.Fstatat(fd, k.name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return &fs.PathError{Op: "stat", Path: c.full(joinPath(dir, k.name)), Err: err}
	}
	if uint32(st.Mode)&unix.S_IFMT != unix.S_IFREG {
		return nil // changed since it was listed
	}
	perm := uint32(st.Mode) & 0o7777
	want := perm &^ uint32(writeBits)
	if writable {
		want = perm | 0o200
	}
	if want == perm {
		return nil
	}
	return c.chmodAt(fd, dir, k.name, want)
}

// chmodAt sets the mode of the file name in the directory dir, open as
// fd.
func (c *checker) chmodAt(fd int, dir, name string, mode uint32) error {
	for {
		err := unix.Fchmodat(fd, name, mode, 0)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return &fs.PathError{Op: "chmod", Path: c.full(joinPath(dir, name)), Err: err}
		}
		return nil
	}
}

// extra records what the layout does not have at rel: a file or link, or
// every file and link beneath a directory.
func (c *checker) extra(rel string, isDir bool) error {
	if !isDir {
		c.unexpected = append(c.unexpected, rel)
		return nil
	}
	return filepath.WalkDir(c.full(rel), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			r, err := filepath.Rel(c.root, p)
			if err != nil {
				return err
			}
			c.unexpected = append(c.unexpected, filepath.ToSlash(r))
		}
		return nil
	})
}

// absent records that k, in dir, is not there: the entry, or every entry
// beneath the directory.
func (c *checker) absent(dir string, k kid) {
	if k.entry >= 0 {
		c.missing = append(c.missing, joinPath(dir, k.name))
		return
	}
	for _, sub := range c.l.dirs[k.dir].kids {
		c.absent(c.l.dirs[k.dir].path, sub)
	}
}
