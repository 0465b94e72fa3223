package isolation

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
)

// HelperArg is the first argument that makes the agentmine binary act as
// the Landlock helper (RunHelper) instead of the CLI: the supervisor
// starts `<agentmine> HelperArg --rw DIR… [--no-net] -- ARGV…`, and the
// helper restricts itself, then execs ARGV. The restriction therefore
// applies to the worker's processes only, never to the supervisor.
const HelperArg = "__agentmine-landlock"

// landlockArgv wraps argv in the helper. What the worker may write: its
// worktree and its own git dir (index, HEAD), the object store, the branch
// namespace (refs/heads and its logs: git writes a branch by creating a
// lock file next to it, so the directory must be writable, and with it
// every branch — moving another branch is still caught by verification,
// ref-changed), its private HOME and temp dir, and /dev. It reads the
// whole system. It cannot write the main checkout, other worktrees, the
// repository's config, hooks, notes, refs/agentmine or packed-refs.
func (b *Box) landlockArgv(argv []string) []string {
	p := b.p
	c := p.CommonDir
	a := []string{p.Self, HelperArg,
		"--rw", p.Worktree, "--rw", p.GitDir, "--rw", filepath.Join(c, "objects"),
		"--rw", filepath.Join(c, "refs", "heads"), "--rw", filepath.Join(c, "logs", "refs", "heads"),
		"--rw", b.home, "--rw", b.tmp, "--rw", "/dev"}
	if !p.Network {
		a = append(a, "--no-net")
	}
	a = append(a, "--")
	return append(a, argv...)
}

// RunHelper is the Landlock helper (HelperArg): it parses args (without
// HelperArg), restricts the process with Landlock (best effort: the
// strongest the kernel supports, nothing where it has none) and execs the
// command. It returns only on failure, with an exit code: 127 when the
// command cannot be run, 126 when the restriction cannot be applied.
func RunHelper(args []string, stderr io.Writer) int {
	var rw []string
	noNet := false
	i := 0
	for ; i < len(args); i++ {
		switch args[i] {
		case "--rw":
			if i+1 >= len(args) {
				fmt.Fprintln(stderr, "agentmine landlock helper: --rw needs a directory")
				return 126
			}
			rw = append(rw, args[i+1])
			i++
			continue
		case "--no-net":
			noNet = true
			continue
		case "--":
			i++
		default:
			fmt.Fprintf(stderr, "agentmine landlock helper: unexpected argument %q\n", args[i])
			return 126
		}
		break
	}
	argv := args[i:]
	if len(argv) == 0 {
		fmt.Fprintln(stderr, "agentmine landlock helper: no command")
		return 126
	}
	ppid := os.Getppid()
	if err := restrict(rw, noNet); err != nil {
		fmt.Fprintf(stderr, "agentmine landlock helper: restricting the worker: %v\n", err)
		return 126
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		fmt.Fprintf(stderr, "agentmine landlock helper: %v\n", err)
		return 127
	}
	if err := dieWithParent(ppid); err != nil {
		fmt.Fprintf(stderr, "agentmine landlock helper: %v\n", err)
		return 126
	}
	err = syscall.Exec(path, argv, os.Environ())
	fmt.Fprintf(stderr, "agentmine landlock helper: running %s: %v\n", argv[0], err)
	if errors.Is(err, syscall.ENOENT) {
		return 127
	}
	return 126
}

// restrict applies the rules: read and execute everywhere, write only in
// rw (directories that do not exist are skipped). Landlock also keeps the
// worker from tracing processes outside its domain, so it cannot read its
// supervisor's memory (the seal's nonce) even as root.
func restrict(rw []string, noNet bool) error {
	rules := []landlock.Rule{
		landlock.RODirs("/").WithResolveUnix(),
		landlock.RWDirs(rw...).IgnoreIfMissing().WithRefer().WithIoctlDev().WithResolveUnix(),
	}
	cfg := landlock.V9.BestEffort()
	if noNet {
		// Restrict also handles TCP bind and connect (ABI 4+), with no
		// port allowed, and the scopes below.
		return cfg.Restrict(rules...)
	}
	if err := cfg.RestrictPaths(rules...); err != nil {
		return err
	}
	// Scoped (ABI 6+): no signals to processes outside the worker's
	// domain (its supervisor) and no abstract UNIX sockets outside it.
	return cfg.RestrictScoped()
}
