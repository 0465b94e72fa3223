package isolation

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// seatbeltArgv wraps argv in macOS's sandbox-exec with the profile
// seatbeltProfile makes for the box (Prepare made it, with every path
// resolved: the sandbox matches real paths, /private/tmp, not /tmp).
func (b *Box) seatbeltArgv(argv []string) []string {
	a := []string{b.p.SandboxExec, "-p", b.profile, "--"}
	return append(a, argv...)
}

// seatbeltPaths is what a seatbelt profile is made from: the run's paths,
// absolute, clean and with symbolic links resolved.
type seatbeltPaths struct {
	// Worktree, GitDir and CommonDir are the worker's worktree, its own
	// git dir and the repository's common dir.
	Worktree, GitDir, CommonDir string
	// MainTop is the main checkout, "" when there is none; hidden.
	MainTop string
	// Branch is the worker's branch (without refs/heads/).
	Branch string
	// Home and Tmp are the private HOME and temp dir.
	Home, Tmp string
	// RealHome is the user's HOME, which must not be writable.
	RealHome string
	// Network keeps the network.
	Network bool
}

// seatbeltProfile returns the sandbox profile (Apple's SBPL) for a worker
// at the seatbelt level. Later rules take precedence over earlier ones:
//
//   - everything is allowed, then every file write is denied;
//   - the main checkout is hidden (neither read nor written), the common
//     dir readable again where it lies inside it;
//   - writable, and readable: the worktree, its own git dir, the object
//     store, the worker's branch and its log (those files alone, and their
//     lock files: no other branch), the private HOME and temp dir, /dev;
//   - of its git dir, its sparse-checkout patterns (info), its own config
//     and its links to the repository are not writable, as at bwrap;
//   - without Network, no network at all.
//
// It reads the rest of the system, as at landlock. A path that holds a
// control character, is not absolute or clean, or a writable path that
// is or contains the main checkout, the common dir or the user's HOME is
// an error: the profile would say something else than meant.
func seatbeltProfile(p seatbeltPaths) (string, error) {
	c := p.CommonDir
	dirs := []string{p.Worktree, p.GitDir, filepath.Join(c, "objects"), p.Home, p.Tmp}
	var files []string
	if p.Branch != "" {
		for _, ref := range []string{filepath.Join(c, "refs", "heads", filepath.FromSlash(p.Branch)), filepath.Join(c, "logs", "refs", "heads", filepath.FromSlash(p.Branch))} {
			files = append(files, ref, ref+".lock")
		}
	}
	for _, x := range append([]string{p.MainTop, c, p.RealHome}, append(dirs, files...)...) {
		if err := sbplPathOK(x); err != nil {
			return "", fmt.Errorf("making the seatbelt profile: %w", err)
		}
	}
	for _, d := range dirs {
		for _, keep := range []string{p.MainTop, c, p.RealHome} {
			if keep != "" && within(keep, d) {
				return "", fmt.Errorf("making the seatbelt profile: writable %s holds %s", d, keep)
			}
		}
	}
	var b strings.Builder
	b.WriteString("(version 1)\n(allow default)\n(deny file-write*)\n")
	if p.MainTop != "" {
		fmt.Fprintf(&b, "(deny file-read* file-write* (subpath %s))\n", sbplString(p.MainTop))
		if within(c, p.MainTop) {
			fmt.Fprintf(&b, "(allow file-read* (subpath %s))\n", sbplString(c))
		}
	}
	b.WriteString("(allow file-read* file-write*\n")
	for _, d := range dirs {
		fmt.Fprintf(&b, "  (subpath %s)\n", sbplString(d))
	}
	for _, f := range files {
		fmt.Fprintf(&b, "  (literal %s)\n", sbplString(f))
	}
	b.WriteString("  (subpath \"/dev\"))\n")
	// As at bwrap, the worktree's sparse-checkout patterns, its own config
	// and its links to the repository stay as agentmine made them.
	g := p.GitDir
	fmt.Fprintf(&b, "(deny file-write* (literal %s) (subpath %s) (literal %s) (literal %s))\n",
		sbplString(filepath.Join(g, "config.worktree")), sbplString(filepath.Join(g, "info")),
		sbplString(filepath.Join(g, "commondir")), sbplString(filepath.Join(g, "gitdir")))
	if !p.Network {
		b.WriteString("(deny network*)\n")
	}
	return b.String(), nil
}

// sbplPathOK refuses a path that a profile could not name exactly: not
// absolute, not clean, or holding a control character. "" is no path and
// passes.
func sbplPathOK(p string) error {
	if p == "" {
		return nil
	}
	if !filepath.IsAbs(p) || filepath.Clean(p) != p {
		return fmt.Errorf("path %q is not absolute and clean", p)
	}
	for _, r := range p {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("path %q holds a control character", p)
		}
	}
	return nil
}

// sbplString quotes s as an SBPL string: backslashes and double quotes
// escaped, so that nothing in a path can end the string early.
func sbplString(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// prepareSeatbelt makes the seatbelt profile of the box: the paths
// resolved as the sandbox sees them, the directories of the branch's ref
// and log made (the worker may write those files alone, not make
// directories beside them).
func (b *Box) prepareSeatbelt() error {
	p := b.p
	if p.SandboxExec == "" {
		return errors.New("preparing seatbelt isolation: no sandbox-exec binary")
	}
	if p.Branch != "" {
		for _, d := range []string{filepath.Join(p.CommonDir, "refs", "heads"), filepath.Join(p.CommonDir, "logs", "refs", "heads")} {
			if err := os.MkdirAll(filepath.Dir(filepath.Join(d, filepath.FromSlash(p.Branch))), 0o755); err != nil {
				return fmt.Errorf("preparing seatbelt isolation: %w", err)
			}
		}
	}
	sp := seatbeltPaths{Worktree: seatbeltPath(p.Worktree), GitDir: seatbeltPath(p.GitDir), CommonDir: seatbeltPath(p.CommonDir),
		MainTop: seatbeltPath(p.MainTop), Branch: p.Branch, Home: seatbeltPath(b.home), Tmp: seatbeltPath(b.tmp),
		RealHome: seatbeltPath(p.Home), Network: p.Network}
	prof, err := seatbeltProfile(sp)
	if err != nil {
		return fmt.Errorf("preparing seatbelt isolation: %w", err)
	}
	b.profile = prof
	return nil
}

// seatbeltPath is p absolute, with symbolic links resolved as far as it
// exists ("" stays "").
func seatbeltPath(p string) string {
	if p == "" {
		return ""
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return filepath.Clean(p)
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		return r
	}
	return abs
}

// probeSeatbelt finds sandbox-exec and tries it with a profile made the
// way a worker's is, for a scratch repository: a write to the worktree
// must succeed and a write to the main checkout must fail. It returns the
// binary and why the level cannot be used ("" when it can).
func probeSeatbelt(ctx context.Context, goos string) (path, why string) {
	if goos != "darwin" {
		return "", "sandbox-exec is macOS's (this is " + goos + ")"
	}
	path, err := exec.LookPath("sandbox-exec")
	if err != nil {
		return "", "sandbox-exec is not in PATH (it ships with macOS in /usr/bin)"
	}
	dir, err := os.MkdirTemp("", "agentmine-seatbelt-probe")
	if err != nil {
		return path, "seatbelt cannot be tried: " + err.Error()
	}
	defer os.RemoveAll(dir)
	dir = seatbeltPath(dir)
	sp := seatbeltPaths{MainTop: filepath.Join(dir, "main"), CommonDir: filepath.Join(dir, "main", ".git"),
		Worktree: filepath.Join(dir, "main", "wt"), GitDir: filepath.Join(dir, "main", ".git", "worktrees", "wt"),
		Branch: "probe", Home: filepath.Join(dir, "home"), Tmp: filepath.Join(dir, "tmp")}
	for _, d := range []string{sp.Worktree, sp.GitDir, filepath.Join(sp.CommonDir, "objects"), sp.Home, sp.Tmp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return path, "seatbelt cannot be tried: " + err.Error()
		}
	}
	prof, err := seatbeltProfile(sp)
	if err != nil {
		return path, err.Error()
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	script := `echo ok > "$1/probe" || exit 3; echo no > "$2/probe" 2>/dev/null && exit 4; exit 0`
	cmd := exec.CommandContext(ctx, path, "-p", prof, "--", "/bin/sh", "-c", script, "sh", sp.Worktree, sp.MainTop)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return path, ""
	case errors.As(err, &ee) && ee.ExitCode() == 3:
		return path, "sandbox-exec kept the worker from writing its own worktree"
	case errors.As(err, &ee) && ee.ExitCode() == 4:
		return path, "sandbox-exec let the worker write the main checkout"
	}
	msg := strings.TrimSpace(stderr.String())
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	if msg == "" {
		msg = err.Error()
	}
	return path, "sandbox-exec does not run here: " + msg
}
