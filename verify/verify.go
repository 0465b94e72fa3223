package verify

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/gitcmd"
	"github.com/git-agentmine/git-agentmine/scope"
)

// Violation and warning types, as recorded in the outcome note.
const (
	// ViolationExcluded: a path the scope excludes was changed, created,
	// committed or is present in the worktree.
	ViolationExcluded = "excluded"
	// ViolationReadOnly: a path outside the write scope was changed.
	ViolationReadOnly = "read-only"
	// ViolationOutside: a file outside the worktree was touched during the run.
	ViolationOutside = "outside-worktree"
	// ViolationGitInternals: the repository's git internals (hooks, config,
	// the worktree's .git file) were touched during the run.
	ViolationGitInternals = "git-internals"
	// ViolationSparseDisabled: sparse checkout was turned off in the worktree.
	ViolationSparseDisabled = "sparse-disabled"
	// ViolationSparseAltered: the sparse-checkout patterns were changed.
	ViolationSparseAltered = "sparse-altered"
	// ViolationPermissionRestored: a file or directory that was made
	// read-only is writable again.
	ViolationPermissionRestored = "permission-restored"
	// ViolationSymlinkEscape: a committed symbolic link leads out of the
	// repository, into .git, or to a path outside the write scope.
	ViolationSymlinkEscape = "symlink-escape"
	// ViolationBadPath: a committed path is one git refuses to check out
	// (a .git component in any spelling a file system takes for it, "." or
	// "..", an empty component, a path beyond a symbolic link).
	ViolationBadPath = "bad-path"
	// ViolationWatchOverflow: the watcher's kernel queue overflowed, and
	// nothing proves that a change made and undone meanwhile was allowed.
	ViolationWatchOverflow = "watch-overflow"
	// ViolationWatchIncomplete: the watcher missed part of the run for
	// another reason (it could not start, a watch limit, a location it
	// could not watch), with the same lack of proof.
	ViolationWatchIncomplete = "watch-incomplete"
	// ViolationGeneratedModified: a path under one agentmine generates was
	// committed or changed, is not byte-identical to what agentmine wrote,
	// and the scope does not let the worker write it.
	ViolationGeneratedModified = "generated-modified"

	// WarningUncommitted: a change inside the write scope was left
	// uncommitted. It is flagged but does not invalidate the verdict: only
	// the committed tip is merged and judged by the DoD, so a leftover
	// cannot reach the base branch.
	WarningUncommitted = "uncommitted"
	// WarningGeneratedCommitted: the worker committed a file agentmine
	// generated (prompt, context file, memory snapshot), byte-identical to
	// what agentmine wrote.
	WarningGeneratedCommitted = "generated-committed"
	// WarningHeadMoved: the worktree's HEAD is not the branch tip judged.
	WarningHeadMoved = "head-moved"
	// WarningLeftoverProcesses: processes of the worker were still running
	// when its own process ended; they were ended before verification, so
	// whatever they changed is judged like the rest.
	WarningLeftoverProcesses = "leftover-processes"
)

// Violation is one finding of the verification.
type Violation struct {
	// Type is one of the Violation* or Warning* constants.
	Type string `json:"type"`
	// Path is repository-relative, or absolute outside the worktree.
	Path string `json:"path,omitempty"`
	// Reason says what was seen, and where (committed, uncommitted, live).
	Reason string `json:"reason"`
}

// Change is one changed path, committed or not.
type Change struct {
	// Path is repository-relative (slash-separated).
	Path string `json:"path"`
	// OldPath is the source of a rename.
	OldPath string `json:"old_path,omitempty"`
	// Status is A (added), M (modified), D (deleted), R (renamed) or T (type
	// changed, e.g. file to symlink).
	Status string `json:"status"`
	// OldMode and NewMode are git's octal modes when they differ.
	OldMode string `json:"old_mode,omitempty"`
	NewMode string `json:"new_mode,omitempty"`
	// Committed is set for changes between the base commit and the tip,
	// unset for staged, unstaged and untracked changes in the worktree.
	Committed bool `json:"committed"`
	// Untracked is set for new files git does not track yet.
	Untracked bool `json:"untracked,omitempty"`
}

// Input is what Check needs to judge one run.
type Input struct {
	// Worktree is the worker's worktree.
	Worktree string
	// Base is the commit the session started from.
	Base string
	// Tip is the branch tip to judge ("" for the worktree's HEAD).
	Tip string
	// Scope is the worker's scope.
	Scope scope.Spec
	// Generated lists repository-relative paths agentmine wrote into the
	// worktree (a trailing "/" or a directory path covers everything
	// beneath). The watcher does not watch them; what is in them at the
	// end is judged against GeneratedBlobs.
	Generated []string
	// GeneratedBlobs holds the git blob id of every file agentmine wrote
	// under Generated, by path, as it wrote it. A file there that still has
	// that content is never blamed on the worker (committing it is only a
	// warning); anything else beneath a generated path (other content, a
	// new file, a link, a committed change to a file of the base) is judged
	// by the scope and is a generated-modified violation where the scope
	// does not allow it.
	GeneratedBlobs map[string]string
	// Prepared lists paths the worktree held before the worker started
	// that are not the worker's: files brought in from the main checkout
	// and what setup commands left (a trailing "/" covers everything
	// beneath). Left uncommitted or ignored they are not judged; committed,
	// they are judged like any other change.
	Prepared []string
	// Sparse holds the sparse-checkout patterns as applied; nil skips the
	// sparse-checkout checks.
	Sparse []string
	// Permissions says read-only modes were applied to the worktree, so
	// every read-only file and directory must still be read-only.
	Permissions bool
	// Live is the watcher's record of the run, if there was one.
	Live *Record
	// Reader, when not nil, lists the base tree in-process; whatever it
	// cannot answer, git does.
	Reader Reader
}

// Reader reads trees in-process, as gitstore's Store does.
type Reader interface {
	// ListTree returns what `git ls-tree -r -z --full-tree commit`
	// prints, for a full commit id; ok is false when git must answer.
	ListTree(commit string) ([]byte, bool)
}

// Verdict is the result of Check, recorded in the session's outcome note.
type Verdict struct {
	// Valid is true when there are no violations (warnings do not count).
	Valid bool `json:"valid"`
	// Tip is the commit judged.
	Tip string `json:"tip"`
	// Violations invalidate the run; Warnings are flagged only.
	Violations []Violation `json:"violations"`
	Warnings   []Violation `json:"warnings,omitempty"`
	// Changed lists every changed path (the artifacts), committed first.
	Changed []Change `json:"changed"`
	// Uncommitted lists the paths of leftovers: staged, unstaged, untracked.
	Uncommitted []string `json:"uncommitted,omitempty"`
	// LiveEvents counts the events the watcher saw (0 without a watcher).
	LiveEvents int `json:"live_events"`
	// LiveIncomplete says the live record may miss changes; LiveReason why.
	LiveIncomplete bool   `json:"live_incomplete,omitempty"`
	LiveReason     string `json:"live_reason,omitempty"`
	// LiveGap says how an incomplete live record was judged: LiveGapProved,
	// LiveGapUnproved or LiveGapUnsupervised; "" when it was complete.
	LiveGap string `json:"live_gap,omitempty"`
}

// How an incomplete live record was judged (Verdict.LiveGap).
const (
	// LiveGapProved: only the worktree's own files may have been missed,
	// and the scope lets the worker write every one of them (write "**",
	// nothing excluded), so nothing missed can have been a violation. The
	// gap is a warning.
	LiveGapProved = "proved"
	// LiveGapUnproved: something the worker may not touch could have been
	// changed and undone unseen; the gap is a violation (watch-overflow or
	// watch-incomplete).
	LiveGapUnproved = "unproved"
	// LiveGapUnsupervised: no watcher ran, by design (a worker run outside
	// agentmine); the verdict rests on post-run verification alone.
	LiveGapUnsupervised = "unsupervised"
)

// Check verifies everything a worker changed against its scope: the diff
// from the base commit to the tip (so committing cannot hide a change) plus
// staged, unstaged, untracked and ignored files in the worktree, tracked
// paths that must be absent but are present, modes of read-only files, the
// sparse-checkout state, and the live record. It runs a fixed handful of git
// processes, whatever the number of files.
func Check(ctx context.Context, in Input) (Verdict, error) {
	wt, err := checkInput(in)
	if err != nil {
		return Verdict{}, err
	}
	g := gitcmd.Runner{Dir: wt}
	r, err := resolveRevs(ctx, g, in, wt)
	if err != nil {
		return Verdict{}, err
	}
	c := &checker{in: in, wt: wt, found: map[string]int{}}
	c.gen = newGenerated(in.Generated)
	// The files of the base commit are checked on disk while git works.
	bc := &checker{in: in, wt: wt, gen: c.gen, found: map[string]int{}}
	rd, err := read(ctx, g, in, r, bc)
	if err != nil {
		return Verdict{}, err
	}

	v := Verdict{Tip: r.tip, Violations: []Violation{}, Changed: []Change{}}
	committed := parseRawDiff(rd.diff)
	uncommitted, ignored := parseStatus(rd.status)
	uncommitted, ignored = dropPrepared(uncommitted, ignored, in.Prepared)
	c.classifyAll(pathsOfInterest(committed, uncommitted, ignored))

	c.judgeCommitted(&v, committed)
	if err := c.checkTree(ctx, g, newTipTree(rd.baseFiles, committed)); err != nil {
		return Verdict{}, fmt.Errorf("verify: %w", err)
	}
	c.judgeGeneratedFiles(&v, rd.genFiles)
	c.judgeUncommitted(&v, uncommitted)
	c.judgeIgnored(ignored)

	// Tracked paths that must be absent must not exist; read-only ones must
	// still be read-only.
	for _, bv := range bc.violations {
		c.violate(bv.Type, bv.Path, bv.Reason)
	}

	if in.Sparse != nil {
		c.checkSparse(rd.sparse, rd.sparseErr)
	}
	if r.head != r.tip {
		c.warn(WarningHeadMoved, "", fmt.Sprintf("the worktree's HEAD is %s, not the judged tip %s", short(r.head), short(r.tip)))
	}
	if in.Live != nil {
		c.checkLive(*in.Live)
		v.LiveEvents = in.Live.Total
		v.LiveIncomplete = in.Live.Incomplete
		v.LiveReason = in.Live.Reason
		v.LiveGap = c.checkLiveGap(*in.Live)
	}
	v.Violations = append(v.Violations, c.violations...)
	v.Warnings = c.warnings
	v.Valid = len(v.Violations) == 0
	sort.Strings(v.Uncommitted)
	return v, nil
}

// checkInput refuses a scope, revisions or worktree that cannot be
// checked, and returns the worktree's absolute path.
func checkInput(in Input) (string, error) {
	if err := in.Scope.Validate(); err != nil {
		return "", fmt.Errorf("verify: %w", err)
	}
	for _, r := range []string{in.Base, in.Tip} {
		if strings.HasPrefix(r, "-") {
			return "", exitcode.New(exitcode.Usage, fmt.Errorf("verify: invalid revision %q", r), "")
		}
	}
	if in.Base == "" {
		return "", exitcode.New(exitcode.Usage, errors.New("verify: no base commit given"), "")
	}
	wt, err := filepath.Abs(in.Worktree)
	if err != nil {
		return "", fmt.Errorf("verify: %w", err)
	}
	if fi, err := os.Stat(wt); err != nil || !fi.IsDir() {
		return "", exitcode.New(exitcode.NotFound, fmt.Errorf("verify: worktree %s does not exist", in.Worktree), "")
	}
	return wt, nil
}

// revs is what a check compares: the commits it resolved and the
// repository's object format.
type revs struct {
	objectFormat, base, tip, head string
}

// resolveRevs resolves the base, the tip (HEAD when none is given) and
// HEAD in one rev-parse, and checks that wt is the top of a worktree.
func resolveRevs(ctx context.Context, g gitcmd.Runner, in Input, wt string) (revs, error) {
	tipRev := in.Tip
	if tipRev == "" {
		tipRev = "HEAD"
	}
	out, err := g.Lines(ctx, "rev-parse", "--show-object-format", "--show-toplevel", in.Base+"^{commit}", tipRev+"^{commit}", "HEAD^{commit}")
	if err != nil {
		var ge *gitcmd.Error
		if errors.As(err, &ge) && strings.Contains(ge.Stderr, "not a git repository") {
			return revs{}, exitcode.New(exitcode.State, fmt.Errorf("verify: %s is not a git worktree", in.Worktree), "")
		}
		return revs{}, exitcode.New(exitcode.NotFound, fmt.Errorf("verify: resolve base %q and tip %q: %w", in.Base, tipRev, err), "")
	}
	if len(out) != 5 {
		return revs{}, fmt.Errorf("verify: unexpected rev-parse output %q", out)
	}
	if top := out[1]; filepath.Clean(top) != filepath.Clean(wt) {
		if real, err := filepath.EvalSymlinks(wt); err != nil || filepath.Clean(real) != filepath.Clean(top) {
			return revs{}, exitcode.New(exitcode.State, fmt.Errorf("verify: %s is not the top of a worktree (top is %s)", in.Worktree, top), "")
		}
	}
	return revs{objectFormat: out[0], base: out[2], tip: out[3], head: out[4]}, nil
}

// reads is what a check reads from git and the disk.
type reads struct {
	diff, status, sparse []byte
	sparseErr            error
	baseFiles            []treeFile
	genFiles             []generatedFile
}

// read runs the independent reads side by side: the committed diff (none
// when the tip is the base), the worktree's status, the base tree (listed
// in-process when in.Reader can) (whose files bc checks on disk while
// git works), the generated files and, with a sparse checkout, its list.
func read(ctx context.Context, g gitcmd.Runner, in Input, r revs, bc *checker) (reads, error) {
	var (
		wg                             sync.WaitGroup
		rd                             reads
		diffErr, statusErr, lsErr, gen error
	)
	wg.Add(3)
	if r.base != r.tip {
		// A commit judged against itself has no committed change.
		wg.Add(1)
		go func() {
			defer wg.Done()
			rd.diff, diffErr = g.Run(ctx, "diff", "--raw", "-z", "-M", "--no-abbrev", "--no-ext-diff", "--no-textconv", r.base, r.tip, "--")
		}()
	}
	go func() {
		defer wg.Done()
		rd.status, statusErr = g.Run(ctx, "status", "--porcelain=v2", "-z", "--untracked-files=all", "--ignored=matching", "--no-ahead-behind")
	}()
	go func() {
		defer wg.Done()
		lsTree, ok := []byte(nil), false
		if in.Reader != nil {
			lsTree, ok = in.Reader.ListTree(r.base)
		}
		if !ok {
			lsTree, lsErr = g.Run(ctx, "ls-tree", "-r", "-z", "--full-tree", r.base)
		}
		if lsErr == nil {
			rd.baseFiles = parseLsTree(lsTree)
			paths := make([]string, len(rd.baseFiles))
			for i, f := range rd.baseFiles {
				paths[i] = f.path
			}
			bc.classifyAll(paths)
			bc.checkBaseFiles(rd.baseFiles)
		}
	}()
	// So are the generated files: what is under a generated path now.
	go func() {
		defer wg.Done()
		rd.genFiles, gen = readGenerated(bc.wt, in.Generated, r.objectFormat)
	}()
	if in.Sparse != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rd.sparse, rd.sparseErr = g.Run(ctx, "sparse-checkout", "list")
		}()
	}
	wg.Wait()
	for _, e := range []struct {
		what string
		err  error
	}{{"diff base..tip", diffErr}, {"status", statusErr}, {"list base tree", lsErr}, {"read generated files", gen}} {
		if e.err != nil {
			return reads{}, fmt.Errorf("verify: %s: %w", e.what, e.err)
		}
	}
	return rd, nil
}

// pathsOfInterest lists every path a check classifies, so that it is
// classified in one batch.
func pathsOfInterest(committed []diffEntry, uncommitted []Change, ignored []string) []string {
	var paths []string
	for _, e := range committed {
		paths = append(paths, e.Path, e.OldPath)
	}
	for _, ch := range uncommitted {
		paths = append(paths, ch.Path, ch.OldPath)
	}
	for _, p := range ignored {
		paths = append(paths, strings.TrimSuffix(p, "/"))
	}
	return paths
}

// judgeCommitted judges the committed changes; a generated file committed
// as agentmine wrote it is only a warning.
func (c *checker) judgeCommitted(v *Verdict, committed []diffEntry) {
	for _, e := range committed {
		ch := e.Change
		if c.gen.match(ch.Path) || ch.OldPath != "" && c.gen.match(ch.OldPath) {
			if c.generatedAsWritten(e) {
				c.warn(WarningGeneratedCommitted, ch.Path, "committed a file agentmine generated, unchanged")
				continue
			}
			v.Changed = append(v.Changed, ch)
			c.judgeGeneratedChange(e)
			continue
		}
		v.Changed = append(v.Changed, ch)
		c.judgeChange(ch, "committed")
	}
}

// judgeGeneratedFiles judges what is under the generated paths in the
// worktree by its content, not by git status: generated files are ignored
// or marked assume-unchanged, so git would not show a change to them.
func (c *checker) judgeGeneratedFiles(v *Verdict, genFiles []generatedFile) {
	for _, f := range genFiles {
		if c.in.GeneratedBlobs[f.path] == f.blob && f.blob != "" {
			continue
		}
		ch := Change{Path: f.path, Status: "M"}
		if _, recorded := c.in.GeneratedBlobs[f.path]; !recorded {
			ch.Status, ch.Untracked = "A", true
		}
		v.Changed = append(v.Changed, ch)
		v.Uncommitted = append(v.Uncommitted, f.path)
		if c.judgeGenerated(f.path, "uncommitted: "+f.why(c.in.GeneratedBlobs)) {
			c.warn(WarningUncommitted, f.path, "left uncommitted: "+f.why(c.in.GeneratedBlobs))
		}
	}
}

// judgeUncommitted judges the changes left in the worktree.
func (c *checker) judgeUncommitted(v *Verdict, uncommitted []Change) {
	for _, ch := range uncommitted {
		if c.gen.match(ch.Path) && (ch.OldPath == "" || c.gen.match(ch.OldPath)) {
			// Judged by content in judgeGeneratedFiles.
			continue
		}
		v.Changed = append(v.Changed, ch)
		v.Uncommitted = append(v.Uncommitted, ch.Path)
		if c.judgeChange(ch, "uncommitted") {
			word := statusWord(ch.Status)
			if ch.Untracked {
				word = "untracked"
			}
			c.warn(WarningUncommitted, ch.Path, "left uncommitted: "+word)
		}
	}
}

// judgeIgnored judges the ignored files and directories present.
func (c *checker) judgeIgnored(ignored []string) {
	for _, p := range ignored {
		clean := strings.TrimSuffix(p, "/")
		if c.gen.match(clean) {
			continue
		}
		if strings.HasSuffix(p, "/") {
			c.judgeDir(clean, "ignored directory present")
		} else {
			c.judgePath(clean, "ignored file present")
		}
	}
}

// checker accumulates findings for one Check.
type checker struct {
	in         Input
	wt         string
	gen        generated
	access     map[string]scope.Access
	excluded   map[string]bool
	violations []Violation
	warnings   []Violation
	found      map[string]int // type+path -> index in violations
}

func (c *checker) classifyAll(paths []string) {
	seen := make(map[string]bool, len(paths))
	uniq := paths[:0:0]
	for _, p := range paths {
		if p != "" && !seen[p] {
			seen[p] = true
			uniq = append(uniq, p)
		}
	}
	acc := c.in.Scope.ClassifyAll(uniq)
	// The same classifier, with the exclude list as the write list, tells
	// "excluded" from merely "not readable".
	excl := scope.Spec{Write: c.in.Scope.Exclude}.ClassifyAll(uniq)
	c.access = make(map[string]scope.Access, len(uniq))
	c.excluded = map[string]bool{}
	for i, p := range uniq {
		c.access[p] = acc[i]
		if excl[i] == scope.Writable {
			c.excluded[p] = true
		}
	}
}

func (c *checker) accessOf(p string) (scope.Access, bool) {
	a, ok := c.access[p]
	if !ok {
		a = c.in.Scope.Classify(p)
		c.access[p] = a
		if len(c.in.Scope.Exclude) > 0 && (scope.Spec{Write: c.in.Scope.Exclude}).Classify(p) == scope.Writable {
			c.excluded[p] = true
		}
	}
	return a, c.excluded[p]
}

// judgePath records a violation if the file at p may not be changed.
// It reports whether p is writable.
func (c *checker) judgePath(p, what string) bool {
	a, excl := c.accessOf(p)
	switch {
	case a == scope.Writable:
		return true
	case excl:
		c.violate(ViolationExcluded, p, what)
	case a == scope.Absent:
		c.violate(ViolationReadOnly, p, what+" (outside the read and write scope)")
	default:
		c.violate(ViolationReadOnly, p, what)
	}
	return false
}

// judgeDir records a violation if the directory at p may not be changed.
func (c *checker) judgeDir(p, what string) {
	if c.in.Scope.DirWritable(p) {
		return
	}
	_, excl := c.accessOf(p)
	if !excl {
		_, excl = c.accessOf(p + "/.")
	}
	if excl {
		c.violate(ViolationExcluded, p, what)
	} else {
		c.violate(ViolationReadOnly, p, what)
	}
}

// judgeChange judges both sides of a change; it reports whether all of it
// was inside the write scope.
func (c *checker) judgeChange(ch Change, where string) bool {
	word := statusWord(ch.Status)
	if ch.Untracked {
		word = "untracked"
	}
	ok := c.judgePath(ch.Path, where+": "+word)
	if ch.OldPath != "" && !c.gen.match(ch.OldPath) {
		ok = c.judgePath(ch.OldPath, where+": renamed to "+ch.Path) && ok
	}
	return ok
}

func statusWord(s string) string {
	switch s {
	case "A":
		return "added"
	case "D":
		return "deleted"
	case "R":
		return "renamed"
	case "T":
		return "type changed"
	case "U":
		return "unmerged"
	}
	return "modified"
}

func (c *checker) violate(typ, p, reason string) {
	key := typ + "\x00" + p
	if i, ok := c.found[key]; ok {
		if !strings.Contains(c.violations[i].Reason, reason) {
			c.violations[i].Reason += "; " + reason
		}
		return
	}
	c.found[key] = len(c.violations)
	c.violations = append(c.violations, Violation{Type: typ, Path: p, Reason: reason})
}

func (c *checker) warn(typ, p, reason string) {
	c.warnings = append(c.warnings, Violation{Type: typ, Path: p, Reason: reason})
}

type treeFile struct {
	mode string
	obj  string
	path string
}

func parseLsTree(out []byte) []treeFile {
	var files []treeFile
	for _, rec := range bytes.Split(out, []byte{0}) {
		// "<mode> SP <type> SP <object> TAB <path>"
		tab := bytes.IndexByte(rec, '\t')
		if tab < 0 {
			continue
		}
		meta := rec[:tab]
		f := bytes.Fields(meta)
		if len(f) != 3 || !bytes.Equal(f[1], []byte("blob")) {
			continue // submodules (commit) are not files in the worktree
		}
		files = append(files, treeFile{mode: string(f[0]), obj: string(f[2]), path: string(rec[tab+1:])})
	}
	return files
}

// checkBaseFiles looks at every file of the base commit on disk: absent
// ones must not exist, read-only ones (and their read-only directories)
// must have no write bit when permissions were applied.
func (c *checker) checkBaseFiles(files []treeFile) {
	dirs := map[string]bool{}
	for _, f := range files {
		if c.gen.match(f.path) {
			continue
		}
		a, excl := c.accessOf(f.path)
		switch a {
		case scope.Absent:
			if _, err := os.Lstat(filepath.Join(c.wt, filepath.FromSlash(f.path))); err == nil {
				typ := ViolationReadOnly
				if excl {
					typ = ViolationExcluded
				}
				c.violate(typ, f.path, "present in the worktree, though the scope leaves it out")
			}
		case scope.ReadOnly:
			if !c.in.Permissions || f.mode == "120000" {
				continue
			}
			fi, err := os.Lstat(filepath.Join(c.wt, filepath.FromSlash(f.path)))
			if err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o222 != 0 {
				c.violate(ViolationPermissionRestored, f.path, fmt.Sprintf("read-only file is writable again (mode %04o)", fi.Mode().Perm()))
			}
			for d := path.Dir(f.path); d != "." && !dirs[d]; d = path.Dir(d) {
				dirs[d] = true
			}
		}
	}
	if !c.in.Permissions {
		return
	}
	sorted := make([]string, 0, len(dirs))
	for d := range dirs {
		sorted = append(sorted, d)
	}
	sort.Strings(sorted)
	for _, d := range sorted {
		if c.gen.match(d) || c.in.Scope.DirWritable(d) {
			continue
		}
		fi, err := os.Lstat(filepath.Join(c.wt, filepath.FromSlash(d)))
		if err == nil && fi.IsDir() && fi.Mode().Perm()&0o222 != 0 {
			c.violate(ViolationPermissionRestored, d, fmt.Sprintf("read-only directory is writable again (mode %04o)", fi.Mode().Perm()))
		}
	}
}

// checkSparse compares the worktree's sparse-checkout state with the
// patterns that were applied.
func (c *checker) checkSparse(out []byte, err error) {
	if err != nil {
		var ge *gitcmd.Error
		if errors.As(err, &ge) && strings.Contains(ge.Stderr, "not sparse") {
			c.violate(ViolationSparseDisabled, "", "sparse checkout was disabled in the worktree")
			return
		}
		c.violate(ViolationSparseAltered, "", fmt.Sprintf("cannot read the sparse-checkout patterns: %v", err))
		return
	}
	want := normPatterns(c.in.Sparse)
	got := normPatterns(strings.Split(string(out), "\n"))
	if len(want) != len(got) {
		c.violate(ViolationSparseAltered, "", fmt.Sprintf("sparse-checkout patterns changed: %d applied, %d now", len(want), len(got)))
		return
	}
	for i := range want {
		if want[i] != got[i] {
			c.violate(ViolationSparseAltered, "", fmt.Sprintf("sparse-checkout pattern %d changed from %q to %q", i+1, want[i], got[i]))
			return
		}
	}
}

func normPatterns(lines []string) []string {
	var out []string
	for _, l := range lines {
		l = strings.TrimRight(l, "\r")
		if strings.TrimSpace(l) == "" || strings.HasPrefix(l, "#") {
			continue
		}
		out = append(out, l)
	}
	return out
}

// checkLive judges what the watcher saw during the run.
func (c *checker) checkLive(rec Record) {
	for _, t := range rec.Touched {
		what := "seen during the run: " + strings.Join(t.Ops, ", ")
		switch t.Kind {
		case KindWorktree:
			if c.gen.match(t.Path) {
				continue
			}
			if t.Path == ".git" {
				c.violate(ViolationGitInternals, t.Path, "the worktree's .git file was changed ("+strings.Join(t.Ops, ", ")+")")
				continue
			}
			if t.Dir {
				c.judgeDir(t.Path, what)
			} else {
				c.judgePath(t.Path, what)
			}
		case KindOutside:
			c.violate(ViolationOutside, t.Path, what)
		default:
			c.violate(ViolationGitInternals, t.Path, what)
		}
	}
}

// dropPrepared leaves out of uncommitted and ignored what lies under the
// worktree setup's paths: brought in or made before the worker started,
// not the worker's while left uncommitted.
func dropPrepared(uncommitted []Change, ignored []string, paths []string) ([]Change, []string) {
	if len(paths) == 0 {
		return uncommitted, ignored
	}
	prepared := newGenerated(paths)
	uncommitted = slices.DeleteFunc(uncommitted, func(ch Change) bool {
		return prepared.match(ch.Path) && (ch.OldPath == "" || prepared.match(ch.OldPath))
	})
	ignored = slices.DeleteFunc(ignored, func(p string) bool { return prepared.match(strings.TrimSuffix(p, "/")) })
	return uncommitted, ignored
}

// generated matches the paths agentmine wrote into a worktree.
type generated struct {
	exact map[string]bool
}

func newGenerated(paths []string) generated {
	g := generated{exact: map[string]bool{}}
	for _, p := range paths {
		p = strings.Trim(filepath.ToSlash(p), "/")
		if p != "" {
			g.exact[p] = true
		}
	}
	return g
}

// match reports whether p is a generated path or lies beneath one.
func (g generated) match(p string) bool {
	if len(g.exact) == 0 {
		return false
	}
	for {
		if g.exact[p] {
			return true
		}
		i := strings.LastIndexByte(p, '/')
		if i < 0 {
			return false
		}
		p = p[:i]
	}
}

// parseRawDiff parses `git diff --raw -z` output.
func parseRawDiff(out []byte) []diffEntry {
	var changes []diffEntry
	fields := bytes.Split(out, []byte{0})
	for i := 0; i < len(fields); i++ {
		meta := string(fields[i])
		if !strings.HasPrefix(meta, ":") {
			continue
		}
		// ":<old mode> <new mode> <old sha> <new sha> <status>[score]"
		parts := strings.Fields(meta[1:])
		if len(parts) < 5 || i+1 >= len(fields) {
			continue
		}
		st := parts[4][:1]
		ch := diffEntry{Change: Change{Status: st, Committed: true}, mode: parts[1], blob: parts[3]}
		if parts[0] != parts[1] && parts[0] != "000000" && parts[1] != "000000" {
			ch.OldMode, ch.NewMode = parts[0], parts[1]
		}
		if st == "R" || st == "C" {
			if i+2 >= len(fields) {
				break
			}
			ch.OldPath = string(fields[i+1])
			ch.Path = string(fields[i+2])
			i += 2
			if st == "C" {
				ch.Status, ch.OldPath = "A", ""
			}
		} else {
			ch.Path = string(fields[i+1])
			i++
		}
		changes = append(changes, ch)
	}
	return changes
}

// parseStatus parses `git status --porcelain=v2 -z` output into the
// uncommitted changes and the ignored paths (directories end in "/").
func parseStatus(out []byte) (changes []Change, ignored []string) {
	fields := bytes.Split(out, []byte{0})
	for i := 0; i < len(fields); i++ {
		f := string(fields[i])
		if len(f) < 2 {
			continue
		}
		switch f[0] {
		case '?':
			changes = append(changes, Change{Path: f[2:], Status: "A", Untracked: true})
		case '!':
			ignored = append(ignored, f[2:])
		case '1', '2', 'u':
			n := map[byte]int{'1': 9, '2': 10, 'u': 11}[f[0]]
			parts := strings.SplitN(f, " ", n)
			if len(parts) < n {
				continue
			}
			xy := parts[1]
			ch := Change{Path: parts[n-1], Status: xyStatus(xy)}
			if f[0] == 'u' {
				ch.Status = "M"
			} else {
				mH, mW := parts[3], parts[5]
				if mW == "000000" {
					mW = parts[4] // deleted from the worktree: compare the index
				}
				if mH != mW && mH != "000000" && mW != "000000" {
					ch.OldMode, ch.NewMode = mH, mW
				}
			}
			if f[0] == '2' && i+1 < len(fields) {
				ch.OldPath = string(fields[i+1])
				i++
				if ch.Status != "D" {
					ch.Status = "R"
				}
			}
			changes = append(changes, ch)
		}
	}
	return changes, ignored
}

func xyStatus(xy string) string {
	switch {
	case strings.ContainsRune(xy, 'D'):
		return "D"
	case strings.ContainsRune(xy, 'A'):
		return "A"
	case strings.ContainsRune(xy, 'R'):
		return "R"
	case strings.ContainsRune(xy, 'T'):
		return "T"
	}
	return "M"
}
