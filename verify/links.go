package verify

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/git-agentmine/git-agentmine/gitcmd"
	"github.com/git-agentmine/git-agentmine/scope"
)

// Committed symbolic links.
//
// A link is judged by where it leads, not only by where it is: a link in
// the write scope that points at ../.env, at /etc/passwd or at a read-only
// file hands whoever follows it later (the DoD, a reviewer, the next
// worker, a build on the base branch) a path the scope kept from this
// worker. So a committed link (mode 120000 between the base and the tip)
// is a symlink-escape violation unless its target, resolved from the
// link's directory in the tip's tree (following the tip's other links,
// base ones included), is a path the worker may write:
//
//   - an absolute target, or one whose ".." climbs above the repository,
//     leaves the repository;
//   - a target with a .git component leads into git's own files;
//   - a target that is read-only or excluded leaves the write scope. A
//     link to an excluded file lets the DoD or a later reader read it
//     under a writable name; a link to a read-only file lets the next
//     writer of the link change it;
//   - a target that is a directory of the tip is judged by every file
//     the tip holds beneath it: each must be writable;
//   - a target that does not exist is judged by its path, like a file.
//
// A committed path beneath a link of the tip (a tree that holds "a" as a
// link and "a/b" as a file) is a bad-path violation: git refuses to check
// out a path beyond a symbolic link.

// maxLinkHops bounds how many links one resolution follows (as the
// kernel's limit does); more is reported as a loop.
const maxLinkHops = 40

// diffEntry is one committed change with its new side's mode and blob.
type diffEntry struct {
	Change
	mode string // new mode, "000000" for a deletion
	blob string // new object id
}

// tipTree is what Check knows of the tip's tree without listing it: the
// base's files and the committed changes on top of them.
type tipTree struct {
	base      []treeFile
	committed []diffEntry
	links     map[string]string // path of every link in the tip -> blob
	targets   map[string]string // blob -> link target
	paths     []string          // every file of the tip, sorted; built when first needed
}

func newTipTree(base []treeFile, committed []diffEntry) *tipTree {
	t := &tipTree{base: base, committed: committed, links: map[string]string{}}
	for _, f := range base {
		if f.mode == "120000" {
			t.links[f.path] = f.obj
		}
	}
	for _, e := range committed {
		if e.OldPath != "" {
			delete(t.links, e.OldPath)
		}
		if e.Status != "D" && e.mode == "120000" {
			t.links[e.Path] = e.blob
		} else {
			delete(t.links, e.Path)
		}
	}
	return t
}

// files returns every file path of the tip, sorted.
func (t *tipTree) files() []string {
	if t.paths != nil {
		return t.paths
	}
	gone := map[string]bool{}
	for _, e := range t.committed {
		if e.OldPath != "" {
			gone[e.OldPath] = true
		}
		if e.Status == "D" {
			gone[e.Path] = true
		}
	}
	t.paths = make([]string, 0, len(t.base)+len(t.committed))
	seen := map[string]bool{}
	for _, f := range t.base {
		if !gone[f.path] {
			t.paths = append(t.paths, f.path)
			seen[f.path] = true
		}
	}
	for _, e := range t.committed {
		if e.Status != "D" && !seen[e.Path] {
			t.paths = append(t.paths, e.Path)
			seen[e.Path] = true
		}
	}
	sort.Strings(t.paths)
	return t.paths
}

// beneath returns the tip's files beneath dir ("" for all of them).
func (t *tipTree) beneath(dir string) []string {
	all := t.files()
	if dir == "" {
		return all
	}
	prefix := dir + "/"
	i := sort.SearchStrings(all, prefix)
	j := i
	for j < len(all) && strings.HasPrefix(all[j], prefix) {
		j++
	}
	return all[i:j]
}

// linkAbove returns the nearest proper parent directory of p that is a
// link in the tip, or "".
func (t *tipTree) linkAbove(p string) string {
	for d := path.Dir(p); d != "." && d != "/" && d != ""; d = path.Dir(d) {
		if _, ok := t.links[d]; ok {
			return d
		}
	}
	return ""
}

// loadTargets reads the targets of every link in the tip in one git
// process.
func (t *tipTree) loadTargets(ctx context.Context, g gitcmd.Runner) error {
	ids := make([]string, 0, len(t.links))
	seen := map[string]bool{}
	for _, id := range t.links {
		if !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	blobs, err := readBlobs(ctx, g, ids)
	if err != nil {
		return err
	}
	t.targets = make(map[string]string, len(blobs))
	for id, b := range blobs {
		t.targets[id] = string(b)
	}
	return nil
}

// resolve follows the link at link through the tip's tree. It returns the
// repository-relative path it leads to ("" for the top), or why it leaves
// the repository.
func (t *tipTree) resolve(link string) (target, escape string) {
	dir := path.Dir(link)
	var resolved []string
	if dir != "." {
		resolved = strings.Split(dir, "/")
	}
	text, ok := t.targets[t.links[link]]
	if !ok {
		return "", "its target could not be read"
	}
	if text == "" {
		return "", "it has an empty target"
	}
	queue := strings.Split(text, "/")
	if strings.HasPrefix(text, "/") {
		return "", "it points to the absolute path " + strconv.Quote(text) + ", outside the repository"
	}
	hops := 0
	for len(queue) > 0 {
		c := queue[0]
		queue = queue[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(resolved) == 0 {
				return "", "its target " + strconv.Quote(text) + " climbs above the top of the repository"
			}
			resolved = resolved[:len(resolved)-1]
			continue
		}
		if isDotGit(c) {
			return "", "its target " + strconv.Quote(text) + " leads into " + strconv.Quote(strings.Join(append(resolved, c), "/")) + ", git's own files"
		}
		resolved = append(resolved, c)
		p := strings.Join(resolved, "/")
		blob, isLink := t.links[p]
		if !isLink {
			continue
		}
		if hops++; hops > maxLinkHops {
			return "", "its target " + strconv.Quote(text) + " does not resolve: too many levels of symbolic links"
		}
		next, ok := t.targets[blob]
		if !ok {
			return "", "the target of the link " + p + " on its way could not be read"
		}
		if next == "" || strings.HasPrefix(next, "/") {
			return "", "its target " + strconv.Quote(text) + " passes through the link " + p + ", which points to " + strconv.Quote(next) + ", outside the repository"
		}
		resolved = resolved[:len(resolved)-1]
		queue = append(strings.Split(next, "/"), queue...)
	}
	return strings.Join(resolved, "/"), ""
}

// checkTree judges the committed paths as paths (bad-path) and the
// committed links by where they lead (symlink-escape).
func (c *checker) checkTree(ctx context.Context, g gitcmd.Runner, t *tipTree) error {
	var links []diffEntry
	for _, e := range t.committed {
		if e.Status == "D" {
			continue
		}
		isLink := e.mode == "120000"
		if r := badPathReason(e.Path, isLink); r != "" {
			c.violate(ViolationBadPath, e.Path, "committed: "+r)
			continue
		}
		if l := t.linkAbove(e.Path); l != "" {
			c.violate(ViolationBadPath, e.Path, "committed: beyond the symbolic link "+l)
			continue
		}
		if isLink {
			links = append(links, e)
		}
	}
	if len(links) == 0 {
		return nil
	}
	if err := t.loadTargets(ctx, g); err != nil {
		return fmt.Errorf("read the targets of committed symbolic links: %w", err)
	}
	for _, e := range links {
		target, escape := t.resolve(e.Path)
		if escape != "" {
			c.violate(ViolationSymlinkEscape, e.Path, "committed symbolic link: "+escape)
			continue
		}
		if why := c.linkTargetProblem(t, target); why != "" {
			c.violate(ViolationSymlinkEscape, e.Path, "committed symbolic link to "+displayTarget(target)+": "+why)
		}
	}
	return nil
}

func displayTarget(p string) string {
	if p == "" {
		return "the top of the repository"
	}
	return p
}

// linkTargetProblem says why a link may not lead to target (a resolved,
// repository-relative path), or "" when it may.
func (c *checker) linkTargetProblem(t *tipTree, target string) string {
	inside := t.beneath(target)
	if len(inside) == 0 {
		// A file of the tip, or nothing: judged by its path.
		a, excl := c.accessOf(target)
		switch {
		case a == scope.Writable:
			return ""
		case excl:
			return "the scope excludes it"
		default:
			return "it is outside the write scope"
		}
	}
	acc := c.in.Scope.ClassifyAll(inside)
	excl := scope.Spec{Write: c.in.Scope.Exclude}.ClassifyAll(inside)
	for i, p := range inside {
		if excl[i] == scope.Writable {
			return "the directory holds " + p + ", which the scope excludes"
		}
		if acc[i] != scope.Writable {
			return "the directory holds " + p + ", which is outside the write scope"
		}
	}
	return ""
}

// readBlobs reads the given blobs with one `git cat-file --batch`.
func readBlobs(ctx context.Context, g gitcmd.Runner, ids []string) (map[string][]byte, error) {
	out := map[string][]byte{}
	if len(ids) == 0 {
		return out, nil
	}
	var in strings.Builder
	for _, id := range ids {
		in.WriteString(id + "\n")
	}
	raw, err := g.RunInput(ctx, strings.NewReader(in.String()), "cat-file", "--batch")
	if err != nil {
		return nil, err
	}
	r := bufio.NewReader(bytes.NewReader(raw))
	for range ids {
		header, err := r.ReadString('\n')
		if err != nil {
			return nil, fmt.Errorf("short cat-file output: %w", err)
		}
		f := strings.Fields(header)
		if len(f) == 2 && f[1] == "missing" {
			continue
		}
		if len(f) != 3 {
			return nil, fmt.Errorf("unexpected cat-file header %q", strings.TrimSpace(header))
		}
		n, err := strconv.Atoi(f[2])
		if err != nil || n < 0 {
			return nil, fmt.Errorf("unexpected cat-file header %q", strings.TrimSpace(header))
		}
		body := make([]byte, n+1) // content and its trailing newline
		if _, err := io.ReadFull(r, body); err != nil {
			return nil, fmt.Errorf("short cat-file output: %w", err)
		}
		if f[1] == "blob" {
			out[f[0]] = body[:n]
		}
	}
	return out, nil
}
