package worktree

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/git-agentmine/git-agentmine/gitcmd"
	"github.com/git-agentmine/git-agentmine/scope"
)

// SparseState is a worktree's sparse-checkout as git sees it now, for
// checking after a run that the worker did not disable or change it.
type SparseState struct {
	// Enabled is the effective core.sparseCheckout of the worktree.
	Enabled bool `json:"enabled"`
	// Cone is the effective core.sparseCheckoutCone of the worktree.
	Cone bool `json:"cone"`
	// Patterns are the lines of the worktree's info/sparse-checkout file
	// (nil when it does not exist).
	Patterns []string `json:"patterns"`
}

// Sparse reads the sparse-checkout state of the worktree at path. Compare
// Enabled and Patterns with the Result of Create to detect tampering.
func Sparse(ctx context.Context, path string) (SparseState, error) {
	wt := gitcmd.Runner{Dir: path}
	var st SparseState
	for _, c := range []struct {
		key string
		dst *bool
	}{{"core.sparseCheckout", &st.Enabled}, {"core.sparseCheckoutCone", &st.Cone}} {
		v, err := wt.Output(ctx, "config", "--type=bool", "--get", c.key)
		if err != nil && !gitcmd.IsExit(err, 1) { // 1: not set
			return SparseState{}, fmt.Errorf("read sparse-checkout state of %s: %w", path, err)
		}
		*c.dst = v == "true"
	}
	file, err := wt.Output(ctx, "rev-parse", "--path-format=absolute", "--git-path", "info/sparse-checkout")
	if err != nil {
		return SparseState{}, fmt.Errorf("read sparse-checkout state of %s: %w", path, err)
	}
	data, err := os.ReadFile(file)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return SparseState{}, fmt.Errorf("read sparse-checkout state of %s: %w", path, err)
	default:
		st.Patterns = strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
		if len(data) == 0 {
			st.Patterns = []string{}
		}
	}
	return st, nil
}

// Loosened lists (sorted, slash-separated, relative to root) the files and
// directories of the worktree that carry a write bit although spec says
// they must be read-only: the trace of a worker that gave itself write
// permission back. Symbolic links and submodule directories are ignored.
func Loosened(root string, spec scope.Spec) ([]string, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	classify := spec.Classifier()
	dirs := newDirCache(spec)
	var out []string
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
		if d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		if d.IsDir() && rel != "" && isGitlinkDir(p) {
			return filepath.SkipDir
		}
		var mustBeReadOnly bool
		if d.IsDir() {
			mustBeReadOnly = !dirs.writable(rel)
		} else {
			mustBeReadOnly = classify(rel) == scope.ReadOnly
		}
		if !mustBeReadOnly {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if fi.Mode().Perm()&writeBits != 0 {
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("check permissions of %s: %w", root, err)
	}
	return out, nil
}
