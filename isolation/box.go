package isolation

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/git-agentmine/git-agentmine/gitcmd"
)

// Plan is what Prepare needs to know about one run.
type Plan struct {
	// Level is the level to give (already chosen: see Caps.Choose).
	Level Level
	// Network keeps the network (bwrap and clone; a landlock worker keeps
	// it always).
	Network bool
	// Worktree is the worker's worktree; GitDir its own git dir
	// (<common>/worktrees/<name>); CommonDir the repository's common dir;
	// MainTop the main checkout ("" if none), hidden at bwrap and clone.
	Worktree, GitDir, CommonDir, MainTop string
	// Branch is the worker's branch (without refs/heads/).
	Branch string
	// Home is the user's HOME: the clients' own configuration is copied
	// from it into the worker's private HOME.
	Home string
	// State is a new private directory for this run (temp dir, HOME, refs,
	// clone); Close removes it.
	State string
	// Self is the agentmine binary, which restricts itself with Landlock
	// before running the worker (HelperArg); needed at Landlock.
	Self string
	// Bwrap is the bubblewrap binary; needed at Bwrap and Clone.
	Bwrap string
	// SandboxExec is macOS's sandbox-exec; needed at Seatbelt.
	SandboxExec string
	// Git runs git for the clone level.
	Git gitcmd.Runner
	// WriteBlob stores data as a blob in the repository and returns its
	// id (the clone level's scope filter); the store's object writer.
	WriteBlob func(ctx context.Context, data []byte) (string, error)
	// Programs are the paths the worker's command runs from: the client's
	// executable as found in PATH, the links to it, the file itself, and
	// the same for its #! interpreters (launch.Program.Paths). At bwrap
	// and clone those hidden by the private HOME and /tmp are shown
	// read-only, with the package tree each runs from (Visible).
	Programs []string
	// Environ is the worker's environment (KEY=VALUE) before the box's
	// additions: the configuration variables it names (ConfigVars) are
	// honoured. Nil reads this process's environment.
	Environ []string
}

// Box is a prepared isolation for one run: Command wraps the worker's
// argv, Env adds to its environment, Tip reads what the worker did to its
// branch where that is kept apart, and Close removes what Prepare made.
type Box struct {
	// env holds the configuration variables (ConfigVars) as the worker
	// sees them, host the same as this process sees them.
	env, host []string

	p      Plan
	home   string
	tmp    string
	heads  string // bwrap: the private copy of refs/heads
	clone  string // clone: the worker's repository (its git dir)
	dotgit string // clone: the .git file the worker sees
	// profile is the seatbelt level's sandbox profile.
	profile string
}

// gitEnv keeps git from starting housekeeping that writes outside what a
// worker may write (gc --auto, maintenance).
func gitEnv() []string {
	return []string{"GIT_CONFIG_COUNT=2", "GIT_CONFIG_KEY_0=gc.auto", "GIT_CONFIG_VALUE_0=0",
		"GIT_CONFIG_KEY_1=maintenance.auto", "GIT_CONFIG_VALUE_1=false"}
}

// Prepare makes what level p.Level needs for one run. At None it makes
// nothing. A failure removes what was made and says which step failed.
func Prepare(ctx context.Context, p Plan) (b *Box, err error) {
	b = &Box{p: p}
	if p.Level == None || p.Level == Auto || p.Level == "" {
		b.p.Level = None
		return b, nil
	}
	if b.p.Environ == nil {
		b.p.Environ = os.Environ()
	}
	if err := Check(b.p); err != nil {
		return nil, err
	}
	if p.State == "" {
		return nil, errors.New("preparing isolation: no state directory")
	}
	defer func() {
		if err != nil {
			b.Close()
			b = nil
		}
	}()
	b.home, b.tmp = filepath.Join(p.State, "home"), filepath.Join(p.State, "tmp")
	for _, d := range []string{b.home, b.tmp} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("preparing isolation: %w", err)
		}
	}
	if err := copyClientConfig(p.Home, b.home); err != nil {
		return nil, fmt.Errorf("preparing isolation: copying the clients' configuration: %w", err)
	}
	seen := b.home
	if p.Level == Bwrap || p.Level == Clone {
		seen = b.sandboxHome()
	}
	if b.env, b.host, err = b.copyConfigVars(seen); err != nil {
		return nil, fmt.Errorf("preparing isolation: copying the configuration the environment names: %w", err)
	}
	switch p.Level {
	case Landlock:
		if p.Self == "" {
			return nil, errors.New("preparing landlock isolation: the agentmine binary is unknown")
		}
		// git appends to logs/refs/heads/<branch>; the directory must exist
		// for the rule that allows it.
		if err := os.MkdirAll(filepath.Join(p.CommonDir, "logs", "refs", "heads"), 0o755); err != nil {
			return nil, fmt.Errorf("preparing landlock isolation: %w", err)
		}
	case Bwrap:
		if p.Bwrap == "" {
			return nil, errors.New("preparing bwrap isolation: no bwrap binary")
		}
		// The private refs/heads and its logs are mounted over these.
		for _, d := range []string{filepath.Join(p.CommonDir, "refs", "heads"), filepath.Join(p.CommonDir, "logs", "refs", "heads")} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				return nil, fmt.Errorf("preparing bwrap isolation: %w", err)
			}
		}
		b.heads = filepath.Join(p.State, "heads")
		if err := copyTree(filepath.Join(p.CommonDir, "refs", "heads"), b.heads); err != nil {
			return nil, fmt.Errorf("preparing bwrap isolation: copying refs/heads: %w", err)
		}
		if err := copyTree(filepath.Join(p.CommonDir, "logs", "refs", "heads"), filepath.Join(p.State, "logheads")); err != nil {
			return nil, fmt.Errorf("preparing bwrap isolation: copying the branch logs: %w", err)
		}
	case Seatbelt:
		if err := b.prepareSeatbelt(); err != nil {
			return nil, err
		}
	case Clone:
		if p.Bwrap == "" {
			return nil, errors.New("preparing clone isolation: no bwrap binary")
		}
		if err := b.makeClone(ctx); err != nil {
			return nil, fmt.Errorf("preparing clone isolation: %w", err)
		}
	default:
		return nil, fmt.Errorf("preparing isolation: unknown level %q", p.Level)
	}
	return b, nil
}

// Bwrap is the bubblewrap binary the box runs ("" below bwrap).
func (b *Box) Bwrap() string { return b.p.Bwrap }

// Level is the level the box gives.
func (b *Box) Level() Level { return b.p.Level }

// Command returns argv wrapped so that it runs isolated.
func (b *Box) Command(argv []string) []string {
	switch b.p.Level {
	case Landlock:
		return b.landlockArgv(argv)
	case Bwrap, Clone:
		return b.bwrapArgv(argv)
	case Seatbelt:
		return b.seatbeltArgv(argv)
	}
	return argv
}

// Env returns KEY=VALUE pairs to add to the worker's environment: its
// private HOME and temp dir, the configuration variables (ConfigVars)
// pointing at their copies in that HOME, and git settings that keep git's
// housekeeping inside what the worker may write.
func (b *Box) Env() []string {
	switch b.p.Level {
	case Landlock, Seatbelt:
		// The configuration variables (ConfigVars) point at their copies
		// in the private HOME; other variables keep their values (the
		// worker reads everything, and writes only its own places).
		env := append([]string{"HOME=" + b.home, "TMPDIR=" + b.tmp}, gitEnv()...)
		return append(env, b.env...)
	case Bwrap, Clone:
		// The private HOME is mounted at the user's HOME, the private temp
		// dir at /tmp.
		env := append([]string{"HOME=" + b.sandboxHome(), "TMPDIR=/tmp"}, gitEnv()...)
		return append(env, b.env...)
	}
	return nil
}

// HostEnv returns KEY=VALUE pairs that point agentmine, after the run, at
// the files the worker wrote in its private HOME (a client's own logs):
// HOME and the configuration variables as the supervisor sees them. None
// at none.
func (b *Box) HostEnv() []string {
	if b.home == "" {
		return nil
	}
	return append([]string{"HOME=" + b.home}, b.host...)
}

// Tip returns the commit the worker left its branch at when the branch is
// kept apart from the repository during the run (bwrap: a private refs/heads;
// clone: its own repository), "" when the worker wrote the branch in place
// or left it unchanged or deleted it. At Clone the commits are fetched into
// the repository first, so that the caller can move the branch to Tip.
func (b *Box) Tip(ctx context.Context, current string) (string, error) {
	switch b.p.Level {
	case Bwrap:
		data, err := os.ReadFile(filepath.Join(b.heads, filepath.FromSlash(b.p.Branch)))
		if err != nil {
			return "", nil
		}
		tip := strings.TrimSpace(string(data))
		if !isHex(tip) || tip == current {
			return "", nil
		}
		if _, err := b.p.Git.In(b.p.Worktree).Output(ctx, "cat-file", "-e", tip+"^{commit}"); err != nil {
			return "", fmt.Errorf("the worker's branch points at %s, which is not a commit in the repository", short(tip))
		}
		return tip, nil
	case Clone:
		return b.fetchBack(ctx, current)
	}
	return "", nil
}

// Close removes what Prepare made. Files the worker made read-only are
// made writable first.
func (b *Box) Close() error {
	if b == nil || b.p.State == "" || b.p.Level == None {
		return nil
	}
	_ = filepath.WalkDir(b.p.State, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Chmod(path, 0o755)
		}
		return nil
	})
	return os.RemoveAll(b.p.State)
}

// clientConfig lists what of HOME a worker's private HOME gets: git's own
// configuration and the files the clients need to start and authenticate,
// nothing else (no history, no caches, no other projects).
func clientConfig() []string {
	return []string{
		".gitconfig", ".config/git/config", ".config/git/ignore",
		".claude.json", ".claude/settings.json", ".claude/.credentials.json",
		".codex/config.toml", ".codex/auth.json",
		".gemini/settings.json", ".gemini/oauth_creds.json", ".gemini/google_accounts.json",
		".config/opencode/opencode.json", ".config/opencode/config.json", ".local/share/opencode/auth.json",
	}
}

// copyClientConfig copies clientConfig from home into dst, keeping modes.
func copyClientConfig(home, dst string) error {
	if home == "" {
		return nil
	}
	for _, rel := range clientConfig() {
		src := filepath.Join(home, filepath.FromSlash(rel))
		st, err := os.Stat(src)
		if err != nil || !st.Mode().IsRegular() {
			continue
		}
		if err := copyFile(src, filepath.Join(dst, filepath.FromSlash(rel)), st.Mode().Perm()); err != nil {
			return err
		}
	}
	return nil
}

func copyFile(src, dst string, perm fs.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return err
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, perm|0o200)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// copyTree copies the regular files under src into dst (made even when
// src does not exist).
func copyTree(src, dst string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && path == src {
			return nil
		}
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case d.Type().IsRegular():
			return copyFile(path, target, 0o644)
		}
		return nil
	})
}

func isHex(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
