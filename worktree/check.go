package worktree

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

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
// the root's .git is skipped), reporting every difference as one error
// and changing nothing. It then gives every file the write permission
// its access allows and makes read-only the directories that can hold no
// writable path. Symbolic links are never changed. git created the files
// with gitUmask while the process's umask is umask (-1 when unknown), so
// a file's mode is known without a stat.
func (l *layout) checkAndApply(root string, spec scope.Spec, umask, gitUmask int) error {
	c := checker{l: l, root: root, k: newDirCache(spec), umask: umask, gitUmask: gitUmask}
	if err := c.dir(0); err != nil {
		return fmt.Errorf("apply permissions: %w", err)
	}
	if len(c.unexpected) > 0 || len(c.missing) > 0 {
		return mismatchError(c.unexpected, c.missing)
	}
	if err := runChmods(c.jobs); err != nil {
		return fmt.Errorf("apply permissions: %w", err)
	}
	for _, d := range c.readOnlyDirs {
		if err := setWrite(d, false); err != nil {
			return fmt.Errorf("apply permissions: %w", err)
		}
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
	jobs                []chmodJob
	readOnlyDirs        []string
}

// full is the file system path of the slash-separated rel.
func (c *checker) full(rel string) string {
	if rel == "" {
		return c.root
	}
	return c.root + string(filepath.Separator) + filepath.FromSlash(rel)
}

// dir checks the directory dirs[d], which exists, against its listing.
func (c *checker) dir(d int32) error {
	plan := &c.l.dirs[d]
	full := c.full(plan.path)
	found, err := os.ReadDir(full)
	if err != nil {
		return err
	}
	if !c.k.writable(plan.path) {
		c.readOnlyDirs = append(c.readOnlyDirs, full)
	}
	kids := plan.kids
	for len(found) > 0 || len(kids) > 0 {
		switch {
		case len(kids) == 0 || len(found) > 0 && found[0].Name() < kids[0].name:
			f := found[0]
			found = found[1:]
			if plan.path == "" && f.Name() == ".git" {
				continue
			}
			if err := c.extra(joinPath(plan.path, f.Name()), f); err != nil {
				return err
			}
		case len(found) == 0 || kids[0].name < found[0].Name():
			c.absent(plan.path, kids[0])
			kids = kids[1:]
		default:
			f, k := found[0], kids[0]
			found, kids = found[1:], kids[1:]
			if err := c.match(plan.path, f, k); err != nil {
				return err
			}
			// A malformed tree may name the same path twice: only the
			// first can match what is there.
			for len(kids) > 0 && kids[0].name == k.name {
				c.absent(plan.path, kids[0])
				kids = kids[1:]
			}
		}
	}
	return nil
}

// match checks the directory entry f found where the layout has k.
func (c *checker) match(dir string, f fs.DirEntry, k kid) error {
	rel := joinPath(dir, k.name)
	if k.dir >= 0 {
		if !f.IsDir() {
			c.unexpected = append(c.unexpected, rel)
			c.absent(dir, k)
			return nil
		}
		return c.dir(k.dir)
	}
	e := c.l.entries.at(int(k.entry))
	if e.mode == modeGitlink {
		if !f.IsDir() {
			c.unexpected = append(c.unexpected, rel)
			c.missing = append(c.missing, rel)
		}
		return nil // never descended into
	}
	if f.IsDir() {
		c.missing = append(c.missing, rel)
		return c.extra(rel, f)
	}
	if !f.Type().IsRegular() {
		return nil // a link: chmod would follow it
	}
	job := chmodJob{path: c.full(rel), writable: e.access == scope.Writable, mode: -1}
	if c.umask >= 0 && c.gitUmask >= 0 && (e.mode == modeFile || e.mode == modeExec) {
		// git created the file with 0666 or 0777 minus its umask; the
		// file's usual mode is that minus the process's umask.
		base := 0o666
		if e.mode == modeExec {
			base = 0o777
		}
		perm := base &^ c.umask
		want := perm &^ 0o222
		if job.writable {
			want = perm | 0o200
		}
		if want == base&^c.gitUmask {
			return nil
		}
		job.mode = want
	}
	c.jobs = append(c.jobs, job)
	return nil
}

// extra records what the layout does not have at rel: a file or link, or
// every file and link beneath a directory.
func (c *checker) extra(rel string, f fs.DirEntry) error {
	if !f.IsDir() {
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
