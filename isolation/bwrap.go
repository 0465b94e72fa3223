package isolation

import (
	"os"
	"path/filepath"
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
//     configuration (clientConfig);
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
	a = append(a, "--bind", b.home, b.sandboxHome())
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
