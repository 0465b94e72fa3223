package verify

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/git-agentmine/git-agentmine/gitcmd"
	"github.com/git-agentmine/git-agentmine/scope"
)

// Generated paths.
//
// agentmine writes a prompt, a Memory Bank snapshot and the client's
// context file into every worktree. They are exempt from the scope only as
// written: the session records the git blob id of each file at prepare
// time (GeneratedBlobs), and at the end a file under a generated path is
// the worker's business unless it still has that content. Committing a
// generated file unchanged is a warning (generated-committed); everything
// else beneath a generated path is judged by the scope like any other
// path, and is a generated-modified violation where the scope does not let
// the worker write it: a new file (text slipped into the Memory Bank of
// every later worker once merged), other content, a link, a committed
// change to a file the base holds there, and the same left uncommitted in
// the worktree. A generated file the worker deleted is not a finding (it
// was never part of the branch).

// GeneratedBlobs returns the git blob id of each of the files (paths
// relative to the top of worktree, slash-separated) as they are now, in
// the repository's object format: what Input.GeneratedBlobs wants,
// recorded right after agentmine wrote them. A path that is not a regular
// file is an error.
func GeneratedBlobs(ctx context.Context, worktree string, paths []string) (map[string]string, error) {
	format, err := (gitcmd.Runner{Dir: worktree}).Output(ctx, "rev-parse", "--show-object-format")
	if err != nil {
		return nil, fmt.Errorf("hash generated files: %w", err)
	}
	return GeneratedBlobsIn(worktree, format, paths)
}

// GeneratedBlobsIn is GeneratedBlobs for a caller that knows the
// repository's object format ("sha1" or "sha256"), without asking git.
func GeneratedBlobsIn(worktree, format string, paths []string) (map[string]string, error) {
	out := make(map[string]string, len(paths))
	for _, p := range paths {
		rel := strings.Trim(filepath.ToSlash(p), "/")
		id, ok, err := blobOfFile(filepath.Join(worktree, filepath.FromSlash(rel)), format)
		if err != nil {
			return nil, fmt.Errorf("hash generated file %s: %w", rel, err)
		}
		if !ok {
			return nil, fmt.Errorf("hash generated file %s: not a regular file", rel)
		}
		out[rel] = id
	}
	return out, nil
}

// generatedFile is one entry found under a generated path at the end of a
// run.
type generatedFile struct {
	path string
	blob string // "" when it is not a regular file
}

// why says how f differs from what agentmine wrote.
func (f generatedFile) why(blobs map[string]string) string {
	want, ok := blobs[f.path]
	switch {
	case f.blob == "":
		return "not a regular file where agentmine generates files"
	case !ok:
		return "not a file agentmine generated"
	case want != f.blob:
		return "not the content agentmine generated"
	}
	return "as generated"
}

// readGenerated lists every non-directory entry under the generated paths
// in the worktree wt, with the blob id of the regular files.
func readGenerated(wt string, generated []string, format string) ([]generatedFile, error) {
	var out []generatedFile
	seen := map[string]bool{}
	add := func(full string, regular bool) error {
		rel, err := filepath.Rel(wt, full)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if seen[rel] {
			return nil
		}
		seen[rel] = true
		f := generatedFile{path: rel}
		if regular {
			id, ok, err := blobOfFile(full, format)
			if err != nil {
				return err
			}
			if ok {
				f.blob = id
			}
		}
		out = append(out, f)
		return nil
	}
	for _, g := range generated {
		g = strings.Trim(filepath.ToSlash(g), "/")
		if g == "" {
			continue
		}
		root := filepath.Join(wt, filepath.FromSlash(g))
		fi, err := os.Lstat(root)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if !fi.IsDir() {
			if err := add(root, fi.Mode().IsRegular()); err != nil {
				return nil, err
			}
			continue
		}
		err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil
				}
				return err
			}
			if d.IsDir() {
				return nil
			}
			return add(p, d.Type().IsRegular())
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// blobOfFile returns the git blob id of the regular file at p in the
// object format ("sha1" or "sha256"); ok is false when p is not a regular
// file (it is opened without following a link and without blocking on a
// pipe).
func blobOfFile(p, format string) (id string, ok bool, err error) {
	var h hash.Hash
	switch format {
	case "sha1":
		h = sha1.New()
	case "sha256":
		h = sha256.New()
	default:
		return "", false, fmt.Errorf("unknown object format %q", format)
	}
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return "", false, nil
		}
		return "", false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", false, err
	}
	if !fi.Mode().IsRegular() {
		return "", false, nil
	}
	fmt.Fprintf(h, "blob %d\x00", fi.Size())
	n, err := io.Copy(h, f)
	if err != nil {
		return "", false, err
	}
	if n != fi.Size() {
		return "", false, fmt.Errorf("%s changed while it was read", p)
	}
	return fmt.Sprintf("%x", h.Sum(nil)), true, nil
}

// generatedAsWritten reports whether a committed change adds a generated
// file exactly as agentmine wrote it.
func (c *checker) generatedAsWritten(e diffEntry) bool {
	want, ok := c.in.GeneratedBlobs[e.Path]
	return ok && want != "" && e.Status == "A" && e.OldPath == "" &&
		(e.mode == "100644" || e.mode == "100755") && e.blob == want
}

// judgeGeneratedChange judges a committed change that touches a generated
// path and is not a generated file as written.
func (c *checker) judgeGeneratedChange(e diffEntry) {
	ch := e.Change
	word := "committed: " + statusWord(ch.Status)
	if c.gen.match(ch.Path) {
		why := ""
		switch {
		case ch.OldPath != "" && !c.gen.match(ch.OldPath):
			why = "from " + ch.OldPath + " into a generated path"
		case ch.Status == "A" && e.mode == "120000":
			why = "a symbolic link where agentmine generates files"
		case ch.Status == "A":
			why = generatedFile{path: ch.Path, blob: e.blob}.why(c.in.GeneratedBlobs)
		default:
			why = "a file the base holds under a generated path"
		}
		c.judgeGenerated(ch.Path, word+", "+why)
	} else {
		c.judgePath(ch.Path, word)
	}
	if ch.OldPath != "" {
		if c.gen.match(ch.OldPath) {
			c.judgeGenerated(ch.OldPath, "committed: renamed to "+ch.Path)
		} else {
			c.judgePath(ch.OldPath, "committed: renamed to "+ch.Path)
		}
	}
}

// judgeGenerated records a generated-modified violation unless the scope
// lets the worker write p; it reports whether it does.
func (c *checker) judgeGenerated(p, what string) bool {
	if a, _ := c.accessOf(p); a == scope.Writable {
		return true
	}
	c.violate(ViolationGeneratedModified, p, what)
	return false
}

// checkLiveGap judges an incomplete live record (see LiveGap*) and returns
// the judgement.
func (c *checker) checkLiveGap(rec Record) string {
	if !rec.Incomplete {
		return ""
	}
	if rec.Unsupervised {
		return LiveGapUnsupervised
	}
	typ, what := ViolationWatchIncomplete, "the live record is incomplete"
	if rec.Overflows > 0 {
		typ, what = ViolationWatchOverflow, "the watcher's event queue overflowed"
	}
	if rec.Reason != "" {
		what += " (" + rec.Reason + ")"
	}
	if !rec.OutsideIncomplete && writesEverything(c.in.Scope) {
		c.warn(typ, "", what+"; nothing missed can have been out of scope: only the worktree's files were unwatched, the write scope is every path and nothing is excluded")
		return LiveGapProved
	}
	why := "the scope leaves paths read-only or excluded, and a change to one of them made and undone meanwhile would not show"
	if rec.OutsideIncomplete {
		why = "the gap covers the git internals and the worktree's surroundings too, where a change made and undone meanwhile would not show"
	}
	c.violate(typ, "", what+"; nothing proves the run kept to its scope: "+why)
	return LiveGapUnproved
}

// writesEverything reports whether the scope lets the worker write every
// path of the worktree: a write pattern "**" (or "**/*") and no exclude.
func writesEverything(s scope.Spec) bool {
	if len(s.Exclude) > 0 {
		return false
	}
	for _, p := range s.Write {
		p = strings.TrimPrefix(strings.TrimPrefix(p, "./"), "/")
		if p == "**" || p == "**/*" {
			return true
		}
	}
	return false
}
