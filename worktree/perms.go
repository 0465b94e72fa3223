package worktree

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/git-agentmine/git-agentmine/scope"
)

// writeBits are the permission bits that allow writing.
const writeBits fs.FileMode = 0o222

// maxNamed is how many paths an error lists before summarising.
const maxNamed = 5

// walkScope walks the worktree at root (skipping its .git entry and the
// directories of gitlinks), giving every file the write permission spec
// allows and making read-only the directories that can hold no writable
// path. Symbolic links are never changed. It returns the numbers of
// read-only and writable entries found.
func walkScope(root string, spec scope.Spec) (Counts, error) {
	var counts Counts
	var readOnlyDirs []string
	var jobs []chmodJob
	k := newDirCache(spec)
	classify := spec.Classifier()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if rel == "." {
			rel = ""
		}
		if rel == ".git" {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			if rel != "" && isGitlinkDir(p) {
				return filepath.SkipDir
			}
			if !k.writable(rel) {
				readOnlyDirs = append(readOnlyDirs, p)
			}
			return nil
		}
		access := classify(rel)
		countAccess(&counts, access)
		if d.Type()&fs.ModeSymlink != 0 || !d.Type().IsRegular() {
			return nil // chmod would follow a link
		}
		jobs = append(jobs, chmodJob{path: p, writable: access == scope.Writable})
		return nil
	})
	if err != nil {
		return counts, fmt.Errorf("apply permissions: %w", err)
	}
	if err := runChmods(jobs); err != nil {
		return counts, fmt.Errorf("apply permissions: %w", err)
	}
	for _, d := range readOnlyDirs {
		if err := setWrite(d, false); err != nil {
			return counts, fmt.Errorf("apply permissions: %w", err)
		}
	}
	counts.Present = counts.ReadOnly + counts.Writable
	return counts, nil
}

// chmodJob is one file whose write permission must change.
type chmodJob struct {
	path     string
	writable bool
}

// runChmods applies jobs with a few goroutines: on a busy disk the
// metadata updates overlap.
func runChmods(jobs []chmodJob) error {
	workers := min(max(4, 2*runtime.NumCPU()), 16, len(jobs))
	if workers <= 1 {
		for _, j := range jobs {
			if err := j.run(); err != nil {
				return err
			}
		}
		return nil
	}
	var wg sync.WaitGroup
	errs := make([]error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; i < len(jobs); i += workers {
				if err := jobs[i].run(); err != nil {
					errs[w] = err
					return
				}
			}
		}(w)
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func (j chmodJob) run() error { return setWrite(j.path, j.writable) }

// processUmask reads the process's umask without changing it (Linux
// /proc); it returns -1 when it cannot tell.
func processUmask() int {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "Umask:"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 8, 32)
			if err != nil {
				return -1
			}
			return int(n)
		}
	}
	return -1
}

func countAccess(c *Counts, a scope.Access) {
	switch a {
	case scope.ReadOnly:
		c.ReadOnly++
	case scope.Writable:
		c.Writable++
	default:
		c.Absent++
	}
}

// isGitlinkDir reports whether dir looks like a submodule's checkout.
func isGitlinkDir(dir string) bool {
	_, err := os.Lstat(filepath.Join(dir, ".git"))
	return err == nil
}

func mismatchError(unexpected, missing []string) error {
	sort.Strings(unexpected)
	sort.Strings(missing)
	var parts []string
	if len(unexpected) > 0 {
		parts = append(parts, fmt.Sprintf("%d present but out of scope (%s)", len(unexpected), nameSome(unexpected)))
	}
	if len(missing) > 0 {
		parts = append(parts, fmt.Sprintf("%d in scope but missing (%s)", len(missing), nameSome(missing)))
	}
	return fmt.Errorf("checked-out files differ from the scope: %s", strings.Join(parts, "; "))
}

func nameSome(paths []string) string {
	quoted := make([]string, 0, maxNamed)
	for i, p := range paths {
		if i == maxNamed {
			quoted = append(quoted, fmt.Sprintf("and %d more", len(paths)-maxNamed))
			break
		}
		quoted = append(quoted, fmt.Sprintf("%q", p))
	}
	return strings.Join(quoted, ", ")
}

// setWrite gives p write permission for its owner only (writable) or
// takes write permission away from everyone, keeping every other bit.
func setWrite(p string, writable bool) error {
	fi, err := os.Lstat(p)
	if err != nil {
		return err
	}
	mode := fi.Mode()
	if mode&fs.ModeSymlink != 0 {
		return nil
	}
	perm := mode & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)
	want := perm &^ writeBits
	if writable {
		want = perm | 0o200
	}
	if want == perm {
		return nil
	}
	return os.Chmod(p, want)
}

// dirCache answers DirWritable for many directories, reusing the answers
// for parents.
type dirCache struct {
	spec scope.Spec
	memo map[string]bool
}

func newDirCache(spec scope.Spec) *dirCache {
	return &dirCache{spec: spec, memo: map[string]bool{}}
}

func (c *dirCache) writable(dir string) bool {
	if w, ok := c.memo[dir]; ok {
		return w
	}
	w := c.spec.DirWritable(dir)
	c.memo[dir] = w
	return w
}

// ApplyPermissions gives every file under the worktree root the write
// permission spec allows (read-only files lose every write bit, writable
// files get the owner's) and makes read-only the directories that can hold
// no writable path. Symbolic links and submodule directories are left
// alone. Use it to restore the guard rails after MakeWritable.
func ApplyPermissions(root string, spec scope.Spec) (Counts, error) {
	if err := spec.Validate(); err != nil {
		return Counts{}, err
	}
	return walkScope(root, spec)
}

// MakeWritable gives the owner write permission on every directory and
// file under root (symbolic links excepted), undoing the read-only guard
// rails, for example before removing the worktree or running commands that
// must write anywhere.
func MakeWritable(root string) error {
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		return setWrite(p, true)
	})
	if err != nil {
		return fmt.Errorf("make %s writable: %w", root, err)
	}
	return nil
}

// WriteFile writes a generated file (memory snapshot, prompt, context
// file) at the slash-separated path rel inside the worktree root, creating
// its directories. A read-only parent directory is opened for the write
// and closed again, and directories created beneath a read-only one are
// read-only too. With readOnly the file itself ends up read-only;
// otherwise it is writable by its owner. An existing file is replaced.
func WriteFile(root, rel string, data []byte, readOnly bool) error {
	clean := filepath.ToSlash(filepath.Clean(filepath.FromSlash(rel)))
	if rel == "" || filepath.IsAbs(rel) || clean == "." || clean == ".." || strings.HasPrefix(clean, "../") ||
		clean == ".git" || strings.HasPrefix(clean, ".git/") {
		return fmt.Errorf("write %q into the worktree: not a path inside the worktree", rel)
	}
	full := filepath.Join(root, filepath.FromSlash(clean))
	dir := filepath.Dir(full)

	// Find the nearest existing ancestor and the directories to create.
	var create []string
	anc := dir
	for {
		fi, err := os.Lstat(anc)
		if err == nil {
			if !fi.IsDir() {
				return fmt.Errorf("write %q into the worktree: %s is not a directory", rel, anc)
			}
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("write %q into the worktree: %w", rel, err)
		}
		create = append(create, anc)
		anc = filepath.Dir(anc)
	}
	fi, err := os.Lstat(anc)
	if err != nil {
		return fmt.Errorf("write %q into the worktree: %w", rel, err)
	}
	lockedAnc := fi.Mode().Perm()&0o200 == 0
	if lockedAnc {
		if err := setWrite(anc, true); err != nil {
			return fmt.Errorf("write %q into the worktree: %w", rel, err)
		}
		defer func() { _ = setWrite(anc, false) }()
	}
	for i := len(create) - 1; i >= 0; i-- {
		if err := os.Mkdir(create[i], 0o755); err != nil {
			return fmt.Errorf("write %q into the worktree: %w", rel, err)
		}
		if lockedAnc {
			// Deferred calls run last-in first-out: deepest first.
			d := create[i]
			defer func() { _ = setWrite(d, false) }()
		}
	}
	if fi, err := os.Lstat(full); err == nil {
		if fi.IsDir() {
			return fmt.Errorf("write %q into the worktree: it is a directory", rel)
		}
		if err := os.Remove(full); err != nil {
			return fmt.Errorf("write %q into the worktree: %w", rel, err)
		}
	}
	if err := os.WriteFile(full, data, 0o644); err != nil {
		return fmt.Errorf("write %q into the worktree: %w", rel, err)
	}
	if err := setWrite(full, !readOnly); err != nil {
		return fmt.Errorf("write %q into the worktree: %w", rel, err)
	}
	return nil
}
