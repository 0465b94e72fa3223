package isolation

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// bwrapArgv wraps argv in bubblewrap. What the worker sees:
//
//   - the whole file system read-only, with a private /tmp, /dev and /proc
//     (its own PID namespace: when its first process ends, the kernel ends
//     every other one; --die-with-parent ends it with the supervisor);
//   - the main checkout hidden (an empty read-only directory), its worktree
//     read-write;
//   - bwrap: the repository's common dir read-only, except the object store
//     (read-write: commits write objects), its own git dir (index, HEAD;
//     its sparse-checkout patterns and per-worktree config stay read-only)
//     and refs/heads and logs/refs/heads, which are private copies: the
//     worker moves its branch there, agentmine moves the real branch
//     afterwards (Tip), and a write to any other branch is discarded;
//     notes, refs/agentmine, config and hooks are read-only;
//   - clone: none of the repository but its worktree, whose .git names a
//     repository of its own (writable but for its config and hooks);
//   - a private HOME at the user's HOME path holding only the clients'
//     configuration (clientConfig, ConfigVars);
//   - the client's executable and the package tree it runs from, where
//     the private HOME or /tmp would hide them, read-only (Visible);
//   - the network unless Plan.Network is false.
func (b *Box) bwrapArgv(argv []string) []string {
	p := b.p
	a := []string{p.Bwrap, "--die-with-parent", "--unshare-all"}
	if p.Network {
		a = append(a, "--share-net")
	}
	a = append(a, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp")
	if p.MainTop != "" {
		a = append(a, "--tmpfs", p.MainTop)
	}
	if !within(p.CommonDir, p.MainTop) {
		a = append(a, "--tmpfs", p.CommonDir)
	}
	// bubblewrap cannot mount through a link: a HOME reached through one
	// (/home/u to /data/u) is mounted where it leads, and its path still
	// leads there inside the sandbox.
	a = append(a, "--bind", b.home, realPath(b.sandboxHome()))
	for _, d := range b.Visible() {
		a = append(a, "--ro-bind", d, d)
	}
	switch p.Level {
	case Bwrap:
		objects := filepath.Join(p.CommonDir, "objects")
		a = append(a, "--ro-bind", p.CommonDir, p.CommonDir,
			"--bind", objects, objects,
			"--bind", b.heads, filepath.Join(p.CommonDir, "refs", "heads"),
			"--bind", filepath.Join(p.State, "logheads"), filepath.Join(p.CommonDir, "logs", "refs", "heads"),
			"--bind", p.GitDir, p.GitDir)
		for _, ro := range []string{"config.worktree", "info", "commondir", "gitdir"} {
			if f := filepath.Join(p.GitDir, ro); exists(f) {
				a = append(a, "--ro-bind", f, f)
			}
		}
		a = append(a, "--bind", p.Worktree, p.Worktree)
	case Clone:
		a = append(a, "--bind", b.clone, b.clone)
		for _, ro := range []string{"config", "hooks"} {
			if f := filepath.Join(b.clone, ro); exists(f) {
				a = append(a, "--ro-bind", f, f)
			}
		}
		a = append(a, "--bind", p.Worktree, p.Worktree, "--ro-bind", b.dotgit, filepath.Join(p.Worktree, ".git"))
	}
	// The hidden main checkout is an empty read-only directory: a write
	// there fails in the worker instead of vanishing with the sandbox.
	if p.MainTop != "" {
		a = append(a, "--remount-ro", p.MainTop)
	}
	a = append(a, "--chdir", p.Worktree, "--")
	return append(a, argv...)
}

// within reports whether path is dir or beneath it.
func within(path, dir string) bool {
	if dir == "" {
		return false
	}
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// fallbackHome is where the private HOME is mounted when the user's HOME
// is not an existing directory (the nobody account's /nonexistent): inside
// the private /tmp, since the root is read-only.
const fallbackHome = "/tmp/agentmine-home"

// sandboxHome is the path the private HOME is mounted at in the sandbox:
// the user's HOME, so that absolute paths into it keep working.
func (b *Box) sandboxHome() string {
	if st, err := os.Stat(b.p.Home); err == nil && st.IsDir() && b.p.Home != "/" {
		return b.p.Home
	}
	return fallbackHome
}

// Visible returns what of the host the sandbox shows read-only although
// the private HOME or /tmp would hide it: for every path of Plan.Programs
// there, its directory (a bin directory with its links) and the package
// tree it runs from — the outermost node_modules above it (a Node.js
// package and its dependencies), and beside a bin directory its lib
// directory and pyvenv.cfg (a prefix or a virtual environment). A
// directory that holds the user's HOME itself, /tmp, the repository, the
// worktree or the box's state is never shown whole: the file alone is.
// Nested paths are given once, by the outermost, each with the links of
// its directory resolved (bubblewrap mounts nothing through a link); a
// shown path that is a link itself is shown as what it leads to.
func (b *Box) Visible() []string {
	hidden := b.hiddenRoots()
	guarded := append([]string{b.p.MainTop, b.p.CommonDir, b.p.Worktree, b.p.State}, hidden...)
	isHidden := func(path string) bool {
		for _, h := range hidden {
			if within(path, h) {
				return true
			}
		}
		return false
	}
	holdsGuarded := func(dir string) bool {
		for _, g := range guarded {
			if g != "" && within(g, dir) {
				return true
			}
		}
		return false
	}
	var show []string
	add := func(path string) {
		if path != "" && exists(path) && isHidden(path) && !(b.p.Worktree != "" && within(path, b.p.Worktree)) {
			show = append(show, filepath.Join(realPath(filepath.Dir(path)), filepath.Base(path)))
		}
	}
	for _, path := range b.p.Programs {
		path = filepath.Clean(path)
		dir := filepath.Dir(path)
		if holdsGuarded(dir) {
			add(path)
			continue
		}
		add(dir)
		if tree := packageTree(path); tree != "" && !holdsGuarded(tree) {
			add(tree)
		}
		if prefix := filepath.Dir(dir); filepath.Base(dir) == "bin" && !holdsGuarded(prefix) {
			for _, extra := range []string{"lib", "lib64", "pyvenv.cfg"} {
				if p := filepath.Join(prefix, extra); !holdsGuarded(p) {
					add(p)
				}
			}
		}
	}
	return outermost(show)
}

// hiddenRoots returns what the sandbox replaces with private copies and
// the programs may lie in: /tmp and the user's HOME, each also where it
// leads when it is a link (the programs' real paths name the target).
func (b *Box) hiddenRoots() []string {
	hidden := []string{"/tmp"}
	if st, err := os.Stat(b.p.Home); err == nil && st.IsDir() && filepath.Clean(b.p.Home) != "/" {
		hidden = append(hidden, filepath.Clean(b.p.Home))
	}
	for _, h := range hidden {
		if real, err := filepath.EvalSymlinks(h); err == nil && real != h && real != "/" {
			hidden = append(hidden, real)
		}
	}
	return hidden
}

// packageTree returns the outermost node_modules directory above path,
// "" when there is none.
func packageTree(path string) string {
	tree := ""
	for d := filepath.Dir(path); d != "/" && d != "."; d = filepath.Dir(d) {
		if filepath.Base(d) == "node_modules" {
			tree = d
		}
	}
	return tree
}

// outermost sorts paths and drops each one inside another (and repeats).
func outermost(paths []string) []string {
	sort.Strings(paths)
	var out []string
next:
	for _, p := range paths {
		for _, o := range out {
			if within(p, o) {
				continue next
			}
		}
		out = append(out, p)
	}
	return out
}

// realPath returns path with every link resolved, path itself when that
// fails.
func realPath(path string) string {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		return real
	}
	return filepath.Clean(path)
}
