// Package worktree owns the worker's isolated checkout: creating a linked
// git worktree on a new branch with the agent's scope applied (excluded and
// unread paths absent through a per-worktree, non-cone sparse-checkout;
// read-only paths and the directories that can hold no writable path made
// read-only), checking that what is on disk is exactly what the scope
// allows, and removing the worktree again.
//
// Limits, stated plainly: sparse-checkout prevents accidents, not
// determined access (the object store is shared, so `git show` reaches
// excluded files), and write bits do not stop root or an owner who runs
// chmod. Post-run verification is the enforcement. Symbolic links are
// checked out as links and never chmod'ed (chmod would follow them).
// Submodules (gitlinks) are classified like files; their directories are
// left alone and never descended into.
package worktree

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/gitcmd"
	"github.com/git-agentmine/git-agentmine/scope"
)

// Options says what worktree to create.
type Options struct {
	// Repo is any directory of the repository (main or linked worktree).
	Repo string
	// Path is the directory of the new worktree; it must not exist yet. A
	// relative path is taken relative to the current directory.
	Path string
	// Branch is the new branch created at Base; it must not exist yet,
	// unless BranchMade.
	Branch string
	// BranchMade says the caller has created Branch at Base itself (in a
	// ref transaction of its own): Create checks that it points at Base
	// and adds the worktree on it. A Create that fails after those checks
	// deletes it, as it deletes a branch it made.
	BranchMade bool
	// Base is the commit (or any revision naming one) to start from.
	Base string
	// Scope is applied to the checkout.
	Scope scope.Spec
	// CommonDir is the repository's common git directory when the caller
	// already knows it; Repo must then be the top of one of its working
	// trees, and Create does not ask git where the repository is.
	CommonDir string
	// Config looks up the repository's git configuration as the caller
	// has already read it (such as gitstore's Store.Config), so that
	// Create need not run git to learn whether extensions.worktreeConfig
	// is on; nil asks git.
	Config func(key string) (string, bool)
	// NoteConfig, when not nil, is told what Create had git set in the
	// repository's shared configuration (extensions.worktreeConfig, the
	// first time), so that the view Config reads stays current for the
	// next Create in the same process.
	NoteConfig func(key, value string)
	// ExcludesFile, when not empty, names a file under the new worktree's
	// git directory (slash-separated, such as "info/exclude-more") that
	// the worktree's own configuration sets as its core.excludesFile.
	// The file need not exist yet.
	ExcludesFile string
	// Reader, when not nil, answers in-process what Create would
	// otherwise ask git (whether the branch exists, the base tree's
	// listing); whatever it is not sure of, git answers.
	Reader Reader
}

// Reader reads refs and trees of the repository in-process, as gitstore's
// Store does.
type Reader interface {
	// LookupRef reads the ref with the full name: the object it points
	// at and whether it exists; sure is false when git must answer.
	LookupRef(name string) (id string, found, sure bool)
	// ListTree returns what `git ls-tree -r -z --full-tree commit`
	// prints, for a full commit id; ok is false when git must answer.
	ListTree(commit string) ([]byte, bool)
}

// Result describes a created worktree.
type Result struct {
	// Path is the absolute path of the worktree.
	Path string `json:"path"`
	// GitDir is the worktree's private git directory (holding its index,
	// HEAD, config.worktree and info/sparse-checkout).
	GitDir string `json:"git_dir"`
	// Branch is the branch checked out in the worktree.
	Branch string `json:"branch"`
	// Base is the full id of the commit the branch starts at.
	Base string `json:"base"`
	// Patterns are the sparse-checkout lines written for the worktree.
	Patterns []string `json:"patterns"`
	// Counts of the base tree's entries by what the scope allows.
	Counts
}

// Counts tallies the entries of a tree by access.
type Counts struct {
	// Present is the number of entries checked out (ReadOnly + Writable).
	Present int `json:"present"`
	// ReadOnly is the number of read-only entries checked out.
	ReadOnly int `json:"read_only"`
	// Writable is the number of writable entries checked out.
	Writable int `json:"writable"`
	// Absent is the number of entries left out by the scope.
	Absent int `json:"absent"`
}

// entry is one path of the base tree.
type entry struct {
	path   string
	mode   uint32 // git mode: modeFile, modeExec, modeLink, modeGitlink
	access scope.Access
}

// Create makes a new branch at opts.Base and a linked worktree for it at
// opts.Path holding exactly the files the scope lets the worker see, with
// the permissions it allows. The sparse-checkout lives in the worktree's
// own configuration, so later merges and checkouts inside the worktree
// keep honouring it; files are written by one git checkout, read-only
// from the start where the process umask is known (git runs with the write
// bits in its umask), so that only the writable files need a chmod. The
// listing and classification of the base tree run while git creates the
// worktree. The checked-out file set is compared with the computed one and any
// difference is an error. On any failure everything Create did is undone
// (worktree, branch) and the error says why.
func Create(ctx context.Context, opts Options) (res *Result, err error) {
	if err := opts.Scope.Validate(); err != nil {
		return nil, err
	}
	for _, f := range []struct{ name, val string }{{"path", opts.Path}, {"branch", opts.Branch}, {"base", opts.Base}} {
		if f.val == "" {
			return nil, exitcode.New(exitcode.Usage, fmt.Errorf("create worktree: no %s given", f.name), "")
		}
	}
	repo := opts.Repo
	if repo == "" {
		repo = "."
	}
	var loc gitcmd.Location
	if opts.CommonDir != "" {
		top, err := filepath.Abs(repo)
		if err != nil {
			return nil, fmt.Errorf("create worktree: %w", err)
		}
		loc = gitcmd.Location{Top: top, CommonDir: opts.CommonDir}
	} else if loc, err = gitcmd.Locate(ctx, repo); err != nil {
		return nil, fmt.Errorf("create worktree: %w", err)
	}
	if loc.Top == "" {
		return nil, exitcode.New(exitcode.State, errors.New("create worktree: the repository has no working tree"), "")
	}
	git, err := gitcmd.New(loc.Top)
	if err != nil {
		return nil, fmt.Errorf("create worktree: %w", err)
	}

	path, err := filepath.Abs(opts.Path)
	if err != nil {
		return nil, fmt.Errorf("create worktree: %w", err)
	}
	if _, err := os.Lstat(path); err == nil {
		return nil, exitcode.New(exitcode.State, fmt.Errorf("create worktree: %s already exists", path),
			"remove it, or finish the session that owns it")
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("create worktree: %w", err)
	}
	base, verified, err := checkInputs(ctx, git, opts.Reader, opts.Branch, opts.Base, opts.BranchMade)
	if err != nil {
		return nil, err
	}
	// baseError is the error for a failure that may come from a base
	// not yet verified to be a commit (a full object id is taken as one
	// until git uses it).
	baseError := func(err error) error {
		if !verified {
			if _, verr := verifyBase(ctx, git, base); verr != nil {
				return verr
			}
		}
		return err
	}

	// What the worktree will hold is worked out while git creates it: the
	// listing and classification of the base tree overlap the worktree's
	// creation, and are needed only when the files are checked out.
	var plan planResult
	planned := make(chan struct{})
	go func() {
		defer close(planned)
		plan = planCheckout(ctx, git, opts.Reader, base, opts.Scope)
	}()
	var wtConfigOn bool
	configRead := make(chan struct{})
	if opts.Config != nil {
		// Not set (or not yet seen set) takes the path that sets it.
		v, _ := opts.Config("extensions.worktreeconfig")
		wtConfigOn = isTrue(v)
		close(configRead)
	} else {
		go func() {
			defer close(configRead)
			on, _ := git.Output(ctx, "config", "--type=bool", "--get", "extensions.worktreeConfig")
			wtConfigOn = on == "true"
		}()
	}
	// Neither goroutine outlives Create, even on an early return.
	defer func() { <-planned; <-configRead }()

	lock, err := lockRepo(ctx, loc.CommonDir)
	if err != nil {
		return nil, fmt.Errorf("create worktree: %w", err)
	}
	// Check again under the lock: another process may have created the
	// worktree since the first check, and the rollback below must never
	// remove a directory this call did not create.
	if _, serr := os.Lstat(path); serr == nil {
		lock.unlock()
		return nil, exitcode.New(exitcode.State, fmt.Errorf("create worktree: %s already exists", path),
			"remove it, or finish the session that owns it")
	}
	// From here on, every failure undoes what was done.
	created := false
	defer func() {
		lock.unlock()
		if err == nil {
			return
		}
		if rbErr := rollback(context.WithoutCancel(ctx), git, loc.CommonDir, path, opts.Branch, created); rbErr != nil {
			err = fmt.Errorf("%w (and rolling back failed: %v)", err, rbErr)
		}
	}()
	if _, err = git.Run(ctx, addArgs(opts, path, base)...); err != nil {
		return nil, baseError(fmt.Errorf("create worktree: %w", err))
	}
	created = true
	wt := git.In(path)
	gitDir, err := linkedGitDir(path)
	if err != nil {
		return nil, fmt.Errorf("create worktree: %w", err)
	}
	<-configRead
	excludes := ""
	if opts.ExcludesFile != "" {
		excludes = filepath.Join(gitDir, filepath.FromSlash(opts.ExcludesFile))
	}
	if err = enableSparseNoting(ctx, wt, gitDir, wtConfigOn, excludes, opts.NoteConfig); err != nil {
		return nil, fmt.Errorf("create worktree: enable sparse-checkout: %w", err)
	}
	lock.unlock()
	<-planned
	if err = plan.err; err != nil {
		return nil, baseError(fmt.Errorf("create worktree: list %s: %w", base, err))
	}
	if err = writePatterns(gitDir, plan.patterns); err != nil {
		return nil, fmt.Errorf("create worktree: %w", err)
	}
	umask := processUmask()
	gitUmask, err := populate(ctx, wt, path, gitDir, base, plan, umask)
	if err != nil {
		return nil, err
	}
	if err = plan.layout.checkAndApply(path, opts.Scope, umask, gitUmask); err != nil {
		return nil, fmt.Errorf("create worktree: %w", err)
	}
	return &Result{Path: path, GitDir: gitDir, Branch: opts.Branch, Base: base, Patterns: plan.patterns, Counts: plan.counts}, nil
}

// addArgs is the git worktree add that makes the worktree at path
// without checking anything out: on a new branch at base, or on the
// branch the caller made.
func addArgs(opts Options, path, base string) []string {
	if opts.BranchMade {
		return []string{"worktree", "add", "--quiet", "--no-checkout", path, opts.Branch}
	}
	return []string{"worktree", "add", "--quiet", "--no-checkout", "-b", opts.Branch, path, base}
}

// populate checks out the planned files of base into the new worktree at
// path and returns the umask git wrote them with. With nothing to check
// out it only fills the index, every entry skip-worktree: git refuses a
// sparse checkout that leaves no file.
func populate(ctx context.Context, wt gitcmd.Runner, path, gitDir, base string, plan planResult, umask int) (int, error) {
	if plan.counts.Present == 0 {
		if err := fillIndexSkipped(ctx, wt); err != nil {
			return umask, fmt.Errorf("create worktree: %w", err)
		}
		return umask, nil
	}
	gitUmask, err := checkOut(ctx, wt, path, gitDir, plan.layout, umask)
	if err != nil {
		return umask, fmt.Errorf("create worktree: check out %s: %w", base, err)
	}
	return gitUmask, nil
}

// checkInputs checks, with git processes run side by side, that branch is
// a valid branch name that does not exist yet (or, made, that it points
// at base) and that base names a commit, and returns the commit's full
// id. The errors keep that order.
// Git is not asked about a branch name made only of letters, digits,
// "_", "-" and "/" between non-empty parts (valid by git's rules), nor
// about a base that is a full object id: verified then says false, and
// it is taken as a commit until git uses it.
func checkInputs(ctx context.Context, git gitcmd.Runner, rd Reader, branch, base string, made bool) (commit string, verified bool, err error) {
	var wg sync.WaitGroup
	var badName, exists bool
	at := ""
	var baseErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		at, exists = branchAt(ctx, git, rd, branch)
	}()
	if !plainBranchName(branch) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := git.Run(ctx, "check-ref-format", "--branch", branch)
			badName = err != nil
		}()
	}
	if fullID(base) {
		commit = base
	} else {
		verified = true
		wg.Add(1)
		go func() {
			defer wg.Done()
			commit, baseErr = verifyBase(ctx, git, base)
		}()
	}
	wg.Wait()
	switch {
	case badName:
		return "", false, exitcode.New(exitcode.Usage, fmt.Errorf("create worktree: %q is not a valid branch name", branch), "")
	case made && (!exists || at != commit):
		return "", false, exitcode.New(exitcode.State, fmt.Errorf("create worktree: branch %s is not at the base %s", branch, base), "")
	case exists && !made:
		return "", false, exitcode.New(exitcode.State, fmt.Errorf("create worktree: branch %s already exists", branch), "")
	case baseErr != nil:
		return "", false, baseErr
	}
	return commit, verified, nil
}

// verifyBase returns the full id of the commit base names, or the error
// saying it names none.
func verifyBase(ctx context.Context, git gitcmd.Runner, base string) (string, error) {
	commit, err := git.Output(ctx, "rev-parse", "--verify", "--quiet", "--end-of-options", base+"^{commit}")
	if err != nil || commit == "" {
		return "", exitcode.New(exitcode.NotFound, fmt.Errorf("create worktree: base %q is not a commit", base), "")
	}
	return commit, nil
}

// plainBranchName reports whether name is made only of letters, digits,
// "_" and "-" in non-empty parts separated by "/", the first character
// of each part not "-", and is not "HEAD": a valid branch name by every
// rule of git check-ref-format --branch.
func plainBranchName(name string) bool {
	if name == "" || name == "HEAD" {
		return false
	}
	for _, part := range strings.Split(name, "/") {
		if part == "" || part[0] == '-' {
			return false
		}
		for i := 0; i < len(part); i++ {
			switch c := part[i]; {
			case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-':
			default:
				return false
			}
		}
	}
	return true
}

// fullID reports whether s is a full object id in lower-case hex (SHA-1
// or SHA-256), which git takes as that object whatever refs exist.
func fullID(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// isTrue reports whether a git configuration value is boolean true.
func isTrue(v string) bool {
	switch strings.ToLower(v) {
	case "true", "yes", "on", "1":
		return true
	}
	return false
}

// planResult is what the scope makes of the base tree.
type planResult struct {
	layout   *layout
	patterns []string
	counts   Counts
	err      error
}

// planCheckout lists commit's tree and classifies every entry by what
// spec allows, computing the sparse-checkout patterns that keep exactly
// the present ones and the layout they make.
func planCheckout(ctx context.Context, git gitcmd.Runner, rd Reader, commit string, spec scope.Spec) planResult {
	entries, err := listTree(ctx, git, rd, commit)
	if err != nil {
		return planResult{err: err}
	}
	paths := make([]string, entries.len())
	keep := make([]bool, entries.len())
	var counts Counts
	classify := spec.Classifier()
	for i := range paths {
		e := entries.at(i)
		paths[i] = e.path
		e.access = classify(e.path)
		keep[i] = e.access != scope.Absent
		countAccess(&counts, e.access)
	}
	counts.Present = counts.ReadOnly + counts.Writable
	return planResult{layout: newLayout(entries), patterns: scope.SparsePatternsWithRoots(paths, keep, spec.WriteRoots()), counts: counts}
}

// linkedGitDir reads the private git directory of the linked worktree at
// path from the ".git" file git worktree add wrote there.
func linkedGitDir(path string) (string, error) {
	data, err := os.ReadFile(filepath.Join(path, ".git"))
	if err != nil {
		return "", fmt.Errorf("find the worktree's git directory: %w", err)
	}
	dir, ok := strings.CutPrefix(strings.TrimRight(string(data), "\r\n"), "gitdir: ")
	if !ok || dir == "" {
		return "", fmt.Errorf("find the worktree's git directory: unexpected %s", filepath.Join(path, ".git"))
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(path, dir)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("find the worktree's git directory: %s is not a directory", dir)
	}
	return filepath.Clean(dir), nil
}

func branchExists(ctx context.Context, git gitcmd.Runner, branch string) bool {
	_, err := git.Run(ctx, "show-ref", "--verify", "--quiet", "refs/heads/"+branch)
	return err == nil
}

// branchAt returns what the branch points at and whether it exists,
// asking rd first (nil: git alone).
func branchAt(ctx context.Context, git gitcmd.Runner, rd Reader, branch string) (string, bool) {
	if rd != nil {
		if id, found, sure := rd.LookupRef("refs/heads/" + branch); sure {
			return id, found
		}
	}
	out, err := git.Output(ctx, "show-ref", "--verify", "--hash", "refs/heads/"+branch)
	return out, err == nil
}

// listTree lists every entry of commit's tree, recursively, without
// descending into submodules: read in-process by rd when it can (nil: by
// git). The listing is read as git writes it, and the paths are kept in a
// few large strings, not one allocation each.
func listTree(ctx context.Context, git gitcmd.Runner, rd Reader, commit string) (*entryList, error) {
	if rd != nil && fullID(commit) {
		if data, ok := rd.ListTree(commit); ok {
			return parseTree(bufio.NewReaderSize(bytes.NewReader(data), 64<<10))
		}
	}
	// Not --format: git 2.39 quotes %(path) even with -z.
	args := []string{"ls-tree", "-r", "-z", "--full-tree", "--end-of-options", commit}
	s, err := git.Stream(ctx, args...)
	if err != nil {
		return nil, err
	}
	entries, perr := parseTree(bufio.NewReaderSize(s, 64<<10))
	if err := s.Wait(); err != nil {
		return nil, err
	}
	return entries, perr
}

// pathArena is how many bytes of paths parseTree gathers before it turns
// them into one string.
const pathArena = 256 << 10

// parseTree reads `ls-tree -z` records: <mode> SP <type> SP <object> TAB
// <path> NUL.
func parseTree(r *bufio.Reader) (*entryList, error) {
	entries := &entryList{}
	// The paths of entries[flushed:] are arena's bytes from their
	// offsets in spans; flush makes them strings of arena's one string
	// and starts a new arena.
	var arena strings.Builder
	var spans []int
	flushed := 0
	flush := func() {
		s := arena.String()
		for i, start := range spans {
			end := len(s)
			if i+1 < len(spans) {
				end = spans[i+1]
			}
			entries.at(flushed + i).path = s[start:end]
		}
		flushed = entries.len()
		arena, spans = strings.Builder{}, spans[:0]
	}
	var long []byte
	for {
		rec, err := r.ReadSlice(0)
		if err == bufio.ErrBufferFull {
			long = append(long[:0], rec...)
			for err == bufio.ErrBufferFull {
				rec, err = r.ReadSlice(0)
				long = append(long, rec...)
			}
			rec = long
		}
		if err == io.EOF && len(rec) == 0 {
			break
		}
		if err != nil && err != io.EOF {
			return nil, err
		}
		rec = bytes.TrimSuffix(rec, []byte{0})
		tab := bytes.IndexByte(rec, '\t')
		sp := bytes.IndexByte(rec, ' ')
		if tab < 0 || sp < 0 || sp > tab || tab == len(rec)-1 {
			return nil, fmt.Errorf("unexpected ls-tree record %q", rec)
		}
		mode, ok := parseMode(rec[:sp])
		if !ok {
			return nil, fmt.Errorf("unexpected ls-tree record %q", rec)
		}
		p := rec[tab+1:]
		if arena.Len()+len(p) > arena.Cap() {
			if arena.Len() > 0 {
				flush()
			}
			arena.Grow(max(pathArena, len(p)))
		}
		spans = append(spans, arena.Len())
		arena.Write(p)
		entries.add(entry{mode: mode})
		if err == io.EOF {
			break
		}
	}
	flush()
	return entries, nil
}

// parseMode parses a git mode: up to seven octal digits.
func parseMode(b []byte) (uint32, bool) {
	if len(b) == 0 || len(b) > 7 {
		return 0, false
	}
	var m uint32
	for _, c := range b {
		if c < '0' || c > '7' {
			return 0, false
		}
		m = m<<3 | uint32(c-'0')
	}
	return m, true
}

// writePatterns replaces the worktree's sparse-checkout file.
func writePatterns(gitDir string, patterns []string) error {
	dir := filepath.Join(gitDir, "info")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write sparse-checkout patterns: %w", err)
	}
	var b strings.Builder
	for _, p := range patterns {
		b.WriteString(p)
		b.WriteByte('\n')
	}
	if err := os.WriteFile(filepath.Join(dir, "sparse-checkout"), []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("write sparse-checkout patterns: %w", err)
	}
	return nil
}

// fillIndexSkipped fills the index from HEAD with every entry marked
// skip-worktree, writing nothing to the working tree.
func fillIndexSkipped(ctx context.Context, wt gitcmd.Runner) error {
	if _, err := wt.Run(ctx, "read-tree", "HEAD"); err != nil {
		return fmt.Errorf("fill the index: %w", err)
	}
	files, err := wt.Run(ctx, "ls-files", "-z")
	if err != nil {
		return fmt.Errorf("fill the index: %w", err)
	}
	if len(files) == 0 {
		return nil
	}
	if _, err := wt.RunInput(ctx, strings.NewReader(string(files)), "update-index", "-z", "--skip-worktree", "--stdin"); err != nil {
		return fmt.Errorf("mark the index skip-worktree: %w", err)
	}
	return nil
}

// enableSparseNoting is enableSparse, telling note (when not nil) that
// git turned extensions.worktreeConfig on when it was not on before.
func enableSparseNoting(ctx context.Context, wt gitcmd.Runner, gitDir string, worktreeConfig bool, excludes string, note func(key, value string)) error {
	if err := enableSparse(ctx, wt, gitDir, worktreeConfig, excludes); err != nil {
		return err
	}
	if !worktreeConfig && note != nil {
		note("extensions.worktreeConfig", "true")
	}
	return nil
}

// enableSparse turns on non-cone sparse-checkout in the new worktree's
// own config.worktree, and sets core.excludesFile there to excludes when
// that is not empty. The first time in a repository (worktreeConfig
// false: extensions.worktreeConfig is not set yet) it lets `git
// sparse-checkout` do it, which also enables extensions.worktreeConfig in
// the shared config (and moves core.bare/core.worktree if needed); after
// that only the worktree's private config file is written, here, without
// a git process: the worktree's git directory is brand new and nobody
// else writes it, and concurrent creations do not fight over the shared
// config's lock. The index is still empty, so no file is checked out or
// removed here.
func enableSparse(ctx context.Context, wt gitcmd.Runner, gitDir string, worktreeConfig bool, excludes string) error {
	file := filepath.Join(gitDir, "config.worktree")
	if worktreeConfig {
		f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
		if err == nil {
			text := "[core]\n\tsparseCheckout = true\n\tsparseCheckoutCone = false\n"
			if excludes != "" {
				text += "\texcludesFile = " + quoteConfigValue(excludes) + "\n"
			}
			_, err = f.WriteString(text)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			return err
		}
		if !errors.Is(err, fs.ErrExist) {
			return err
		}
		// Not a new file after all: let git edit it.
		for _, kv := range [][2]string{{"core.sparseCheckout", "true"}, {"core.sparseCheckoutCone", "false"}} {
			if _, err := wt.Run(ctx, "config", "--file", file, kv[0], kv[1]); err != nil {
				return err
			}
		}
	} else if _, err := wt.Run(ctx, "sparse-checkout", "set", "--no-cone"); err != nil {
		return err
	}
	if excludes != "" {
		// --file, not --worktree: the latter enumerates every worktree and
		// fails when another is being created at the same moment.
		if _, err := wt.Run(ctx, "config", "--file", file, "core.excludesFile", excludes); err != nil {
			return err
		}
	}
	return nil
}

// quoteConfigValue writes v as a double-quoted git configuration value.
func quoteConfigValue(v string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(v); i++ {
		switch c := v[i]; c {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\n':
			b.WriteString(`\n`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// rollback undoes a partly created worktree: the worktree (if git
// registered it) and the branch (which did not exist before Create).
func rollback(ctx context.Context, git gitcmd.Runner, commonDir, path, branch string, created bool) error {
	var errs []string
	lock, err := lockRepo(ctx, commonDir)
	if err != nil {
		return err
	}
	defer lock.unlock()
	if created {
		if err := MakeWritable(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err.Error())
		}
		if _, err := git.Run(ctx, "worktree", "remove", "--force", "--force", path); err != nil {
			errs = append(errs, err.Error())
		}
	}
	// worktree add may fail after creating the branch or the directory.
	if _, err := os.Lstat(path); err == nil {
		_ = MakeWritable(path)
		if err := os.RemoveAll(path); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if _, err := git.Run(ctx, "worktree", "prune"); err != nil {
		errs = append(errs, err.Error())
	}
	if branchExists(ctx, git, branch) {
		if _, err := git.Run(ctx, "branch", "-D", "--", branch); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}
