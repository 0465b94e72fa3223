package isolation

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// noRemote is where the worker's repository's promisor remote points: a
// path that never exists, so that a missing (excluded) object is never
// fetched lazily (GIT_NO_LAZY_FETCH needs git 2.44).
const noRemote = "/nonexistent/agentmine-promisor-cut"

// makeClone makes the worker's own repository: a partial clone of its
// branch filtered by the worktree's sparse-checkout patterns
// (--filter=sparse:oid), so that excluded files are not in its object
// store at all, with the promisor link cut. Its index is the worktree's
// (the same commit, the same files, the same skip-worktree bits), and
// the .git file the worker sees names it.
func (b *Box) makeClone(ctx context.Context) error {
	p := b.p
	patterns, err := os.ReadFile(filepath.Join(p.GitDir, "info", "sparse-checkout"))
	if err != nil {
		return fmt.Errorf("reading the worktree's sparse-checkout patterns: %w", err)
	}
	g := p.Git.In(p.Worktree)
	if p.WriteBlob == nil {
		return fmt.Errorf("storing the scope filter: no object writer")
	}
	blob, err := p.WriteBlob(ctx, patterns)
	if err != nil {
		return fmt.Errorf("storing the scope filter: %w", err)
	}
	dir := filepath.Join(p.State, "clone")
	if _, err := g.Run(ctx, "clone", "-q", "--no-local", "--no-checkout", "--single-branch", "--no-tags",
		"--branch", p.Branch, "--filter=sparse:oid="+blob,
		"--upload-pack", "git -c uploadpack.allowFilter=true upload-pack", p.CommonDir, dir); err != nil {
		return fmt.Errorf("cloning the branch filtered by the scope: %w", err)
	}
	b.clone = filepath.Join(dir, ".git")
	cg := p.Git.In(dir)
	set := [][2]string{{"remote.origin.url", noRemote}, {"core.sparseCheckout", "true"}, {"gc.auto", "0"}, {"maintenance.auto", "false"}}
	// The committer identity the repository configures, if any: the
	// worker's repository does not share the config.
	for _, k := range []string{"user.name", "user.email"} {
		if v, err := p.Git.In(p.Worktree).Output(ctx, "config", "--get", k); err == nil && v != "" {
			set = append(set, [2]string{k, v})
		}
	}
	for _, kv := range set {
		if _, err := cg.Run(ctx, "config", kv[0], kv[1]); err != nil {
			return fmt.Errorf("configuring the worker's repository: %w", err)
		}
	}
	if err := copyFile(filepath.Join(p.GitDir, "info", "sparse-checkout"), filepath.Join(b.clone, "info", "sparse-checkout"), 0o644); err != nil {
		return fmt.Errorf("copying the sparse-checkout patterns: %w", err)
	}
	if err := copyFile(filepath.Join(p.GitDir, "index"), filepath.Join(b.clone, "index"), 0o644); err != nil {
		return fmt.Errorf("copying the worktree's index: %w", err)
	}
	if err := b.copyExcludes(ctx); err != nil {
		return err
	}
	b.dotgit = filepath.Join(p.State, "dotgit")
	if err := os.WriteFile(b.dotgit, []byte("gitdir: "+b.clone+"\n"), 0o644); err != nil {
		return err
	}
	return nil
}

// copyExcludes gives the worker's repository the worktree's own excludes
// file (the core.excludesFile its per-worktree configuration names, which
// lists the files agentmine generated there) as its info/exclude, so that
// the worker's `git add -A` leaves those files out there too: the file it
// names lies outside the sandbox.
func (b *Box) copyExcludes(ctx context.Context) error {
	file, err := b.p.Git.In(b.p.Worktree).Output(ctx, "config", "--get", "core.excludesFile")
	if err != nil || strings.TrimSpace(file) == "" {
		return nil
	}
	if err := copyFile(strings.TrimSpace(file), filepath.Join(b.clone, "info", "exclude"), 0o644); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("copying the worktree's excludes file: %w", err)
	}
	return nil
}

// fetchBack fetches the worker's branch from its repository into the
// shared one (objects only: the caller moves the branch) and returns its
// tip, "" when unchanged or gone. git runs in the worker's repository with
// its hooks and fsmonitor off: the worker wrote that repository.
func (b *Box) fetchBack(ctx context.Context, current string) (string, error) {
	cg := b.p.Git.In(b.clone)
	safe := []string{"-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false"}
	tip, err := cg.Output(ctx, append(safe, "--git-dir="+b.clone, "rev-parse", "--verify", "-q", "refs/heads/"+b.p.Branch+"^{commit}")...)
	if err != nil || !isHex(tip) || tip == current {
		return "", nil
	}
	g := b.p.Git.In(b.p.Worktree)
	if _, err := g.Run(ctx, "-c", "core.hooksPath=/dev/null", "fetch", "-q", "--no-tags", "--no-write-fetch-head",
		"--upload-pack", "git -c core.hooksPath=/dev/null -c core.fsmonitor=false upload-pack", b.clone, "refs/heads/"+b.p.Branch); err != nil {
		return "", fmt.Errorf("fetching the worker's branch back from its repository: %w", err)
	}
	if _, err := g.Output(ctx, "cat-file", "-e", tip+"^{commit}"); err != nil {
		return "", fmt.Errorf("the worker's branch tip %s did not arrive: %w", short(tip), err)
	}
	return strings.TrimSpace(tip), nil
}
