package worker

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/git-agentmine/git-agentmine/gitcmd"
	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/parallel"
	"github.com/git-agentmine/git-agentmine/sessions"
	"github.com/git-agentmine/git-agentmine/verify"
)

// MainCheckoutChanged is the finding type for a change in the main checkout
// during a supervised run: a new, edited, deleted or re-linked file there
// (agent definitions and configuration under .agentmine/ included), a file
// of the worktree hard-linked to one there, a change of the main index's
// view of a file, or the main checkout's HEAD moving. Worktrees live inside
// the main checkout and the worker runs as the same user as the person who
// owns it, so the worker can write there (through ../../.., an absolute
// path or a hard link) and nothing can tell its writes from the person's.
// Where the worker could write the main checkout (mainCheckoutWritable) a
// change is a violation: the run is not valid and merge refuses until a
// person accepts the changes as theirs. Where it could not, it is a warning.
const MainCheckoutChanged = verify.MainCheckoutChanged

// mainCheckoutWritable says whether the worker of session s could write the
// main checkout. At level none (and in sessions that recorded no level) the
// worker is a process of the same user with the same view of the file
// system, so it can. Landlock grants it writes to its worktree and its own
// git data only; bwrap and clone hide the main checkout from it altogether:
// there a change in the main checkout is the person's, a warning.
func mainCheckoutWritable(s sessions.Session) bool {
	return s.Isolation == nil || s.Isolation.Level == "" || s.Isolation.Level == "none"
}

// notByWorker is added to the reason of each main-checkout change found
// where the worker could not write the main checkout.
func notByWorker(level string) string {
	return "; not by the worker: it cannot write the main checkout at isolation level " + level
}

// What a snapshot of the main checkout records, and what it costs:
//
//   - `git status` with untracked and ignored files listed one by one (git
//     already compares every tracked file's content, so a tracked file
//     edited in place is listed), run without optional locks so that it
//     never rewrites the person's index. The directory holding the
//     worktrees is left out: the sessions' own business.
//   - for every listed path, lstat: mode, size, modification and change
//     time, inode and link count. The change time (ctime) is set by the
//     kernel on every write, link, chmod and rename and cannot be set back
//     by the writer, so an edit that restores the modification time, or a
//     hard link made and removed again, still shows.
//   - the content hash of the listed changed and untracked files of up to
//     hashLimit bytes, and of any listed file changed within racyWindow
//     before the snapshot (a file system with coarse time stamps could give
//     a later edit the same times).
//   - the index entries marked assume-unchanged or skip-worktree (git
//     status does not compare those), and HEAD.
//
// What it cannot see: a file changed and changed back between the two
// snapshots (the watcher covers only the worktree); a tracked file whose
// edit was restored to the same content; empty directories; the inside of
// nested repositories; anything outside the main checkout (the home
// directory, other clones). Ignored directories are listed file by file,
// so a large node_modules costs one lstat per file per snapshot.
const (
	// hashLimit is the largest listed changed or untracked file hashed.
	hashLimit = 1 << 20
	// racyWindow is how recent a change must be for the file to be hashed
	// whatever its kind.
	racyWindow = 2 * time.Second
	// maxHeadPaths bounds the findings of a moved HEAD (a checkout of
	// another branch changes every path).
	maxHeadPaths = 50
)

// pathState is what a snapshot knows of one path of the main checkout.
type pathState struct {
	// xy is git's two-letter status ("??" untracked, "!!" ignored).
	xy      string
	present bool
	mode    fs.FileMode
	size    int64
	mtime   int64
	ctime   int64
	dev     uint64
	ino     uint64
	nlink   uint64
	// sum is the content hash, nil when not hashed.
	sum []byte
}

// mainSnapshot is the state of the main checkout at one moment.
type mainSnapshot struct {
	top string
	// head is the commit HEAD points at ("" unborn), headRef the branch it
	// names ("HEAD" when detached).
	head, headRef string
	paths         map[string]pathState
	// flags maps index entries marked assume-unchanged or skip-worktree to
	// their ls-files -v tag.
	flags map[string]string
	// index is the index file's own state.
	index pathState
}

// mainCheckout watches the main checkout of one run: startMainCheckout
// before the worker starts, end once it has ended, then findings.
type mainCheckout struct {
	env *Env
	// g runs git in the main checkout (Env.mainGit); local reads what it
	// can of it in-process (nil: git reads all).
	g     gitcmd.Runner
	local *mainLocal
	top   string
	// skip is the worktree root relative to top ("" when it lies outside).
	skip     string
	writable bool
	// level is the session's isolation level ("" when none was recorded).
	level  string
	before *mainSnapshot
	// beforeErr says why there is no before snapshot.
	beforeErr error
	after     *mainSnapshot
	afterErr  error
}

// startMainCheckout takes the main checkout's snapshot before a run.
func (e *Env) startMainCheckout(ctx context.Context, s sessions.Session) *mainCheckout {
	m := &mainCheckout{env: e, g: e.mainGit(), local: e.mainLocalFor(e.Top), top: e.Top, writable: mainCheckoutWritable(s)}
	if s.Isolation != nil {
		m.level = s.Isolation.Level
	}
	if rel, err := filepath.Rel(e.Top, e.Cfg.WorktreeDir(e.Top)); err == nil && rel != "." && !strings.HasPrefix(rel, "..") {
		m.skip = filepath.ToSlash(rel)
	}
	release, _ := e.St.LockCheckout(ctx, e.Top, gitstore.CheckoutLockWait)
	m.before, m.beforeErr = snapshotMain(ctx, m.g, m.local, m.skip, racyWindow, nil)
	release()
	return m
}

// end takes the snapshot after the run (before the DoD runs).
func (m *mainCheckout) end(ctx context.Context) {
	if m.before == nil {
		return
	}
	release, _ := m.env.St.LockCheckout(ctx, m.top, gitstore.CheckoutLockWait)
	m.after, m.afterErr = snapshotMain(ctx, m.g, m.local, m.skip, racyWindow, m.before)
	release()
}

// mainGit runs git in the main checkout without optional locks: a status
// that refreshed the person's index could fail their own git command.
func (e *Env) mainGit() gitcmd.Runner {
	g := e.St.Git().In(e.Top)
	g.Env = append(append([]string{}, g.Env...), "GIT_OPTIONAL_LOCKS=0")
	return g
}

// snapshotMain records the main checkout at top (g's directory), leaving
// out the directory skip; files changed within racy before it are hashed
// whatever their kind. prev, the snapshot before the run, spares reading
// the index entries again when the index file is the same file, untouched
// (marking an entry rewrites it). git status and the index are read at the
// same time, and the listed paths are examined in parallel. local, when
// not nil, reads HEAD and the index's flags in-process where it can.
func snapshotMain(ctx context.Context, g gitcmd.Runner, local *mainLocal, skip string, racy time.Duration, prev *mainSnapshot) (*mainSnapshot, error) {
	taken := time.Now()
	snap := &mainSnapshot{top: g.Dir, paths: map[string]pathState{}}
	index, ok := "", false
	if local != nil {
		index, ok = local.headAndIndex(snap)
	}
	if !ok {
		var err error
		if index, err = headAndIndex(ctx, g, snap); err != nil {
			return nil, fmt.Errorf("reading the main checkout's git directory: %w", err)
		}
	}
	if !filepath.IsAbs(index) {
		index = filepath.Join(g.Dir, index)
	}
	snap.index = statPath(filepath.Dir(index), filepath.Base(index), "!!", taken, 0)

	var ls []byte
	var lsErr error
	var wg sync.WaitGroup
	if prev != nil && snap.index.present && prev.index.sameFile(snap.index) {
		snap.flags = prev.flags
	} else if flags, ok := local.flagsOf(index); ok {
		snap.flags = flags
	} else {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ls, lsErr = g.Run(ctx, "ls-files", "-v", "-z")
		}()
	}
	args := []string{"status", "--porcelain=v1", "-z", "--untracked-files=all", "--ignored=traditional", "--no-renames", "--"}
	if skip != "" {
		args = append(args, ".", ":(exclude,literal)"+skip)
	}
	out, err := g.Run(ctx, args...)
	wg.Wait()
	if err != nil {
		return nil, fmt.Errorf("reading the main checkout's status: %w", err)
	}
	if lsErr != nil {
		return nil, fmt.Errorf("reading the main checkout's index: %w", lsErr)
	}
	var recs []string
	for _, rec := range strings.Split(string(out), "\x00") {
		if len(rec) < 4 {
			continue
		}
		p := strings.TrimSuffix(rec[3:], "/")
		if skip != "" && (p == skip || strings.HasPrefix(p, skip+"/")) {
			continue
		}
		recs = append(recs, rec)
	}
	states := make([]pathState, len(recs))
	parallel.For(len(recs), func(i int) {
		states[i] = statPath(g.Dir, strings.TrimSuffix(recs[i][3:], "/"), recs[i][:2], taken, racy)
	})
	for i, rec := range recs {
		snap.paths[strings.TrimSuffix(rec[3:], "/")] = states[i]
	}
	if snap.flags == nil {
		snap.flags = map[string]string{}
		for _, rec := range strings.Split(string(ls), "\x00") {
			if len(rec) < 3 {
				continue
			}
			// Lower case: assume-unchanged; S: skip-worktree.
			if tag := rec[:1]; tag == "S" || tag >= "a" && tag <= "z" {
				snap.flags[rec[2:]] = tag
			}
		}
	}
	return snap, nil
}

// headAndIndex fills in snap's HEAD (commit and full ref name) and returns
// the path of the index, with one git process while HEAD names a commit
// (the three answers of one rev-parse), three otherwise (an unborn branch,
// a file named HEAD making the name ambiguous, ...).
func headAndIndex(ctx context.Context, g gitcmd.Runner, snap *mainSnapshot) (string, error) {
	if l, err := g.Lines(ctx, "rev-parse", "--git-path", "index", "HEAD", "--symbolic-full-name", "HEAD"); err == nil && len(l) == 3 && l[0] != "" && l[1] != "" {
		snap.head, snap.headRef = l[1], l[2]
		return l[0], nil
	}
	snap.head, _ = g.Output(ctx, "rev-parse", "-q", "--verify", "HEAD")
	snap.headRef, _ = g.Output(ctx, "rev-parse", "--symbolic-full-name", "HEAD")
	return g.Output(ctx, "rev-parse", "--git-path", "index")
}

// sameFile reports whether a and b are the same file, untouched between
// them: same inode, size, mode, link count and both times.
func (a pathState) sameFile(b pathState) bool {
	return a.present == b.present && a.mode == b.mode && a.size == b.size && a.mtime == b.mtime &&
		a.ctime == b.ctime && a.dev == b.dev && a.ino == b.ino && a.nlink == b.nlink
}

// statPath records one listed path.
func statPath(top, rel, xy string, taken time.Time, racy time.Duration) pathState {
	ps := pathState{xy: xy}
	full := filepath.Join(top, filepath.FromSlash(rel))
	fi, err := os.Lstat(full)
	if err != nil {
		return ps
	}
	ps.present, ps.mode, ps.size = true, fi.Mode(), fi.Size()
	ps.mtime = fi.ModTime().UnixNano()
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		ps.ctime = ctimeNano(st)
		ps.dev, ps.ino, ps.nlink = uint64(st.Dev), st.Ino, uint64(st.Nlink)
	}
	if !fi.Mode().IsRegular() {
		return ps
	}
	recent := taken.UnixNano()-max(ps.mtime, ps.ctime) < int64(racy)
	if (xy != "!!" && ps.size <= hashLimit) || recent {
		ps.sum = hashFile(full)
	}
	return ps
}

// hashFile returns the SHA-256 of the file's content, nil when unreadable.
func hashFile(path string) []byte {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return nil
	}
	return h.Sum(nil)
}

// findings compares the two snapshots and the worktree's changed files,
// and returns the main-checkout findings of the run: violations when the
// worker could have made the changes, else warnings. A nil m (a manual
// session, which agentmine did not supervise: there is no snapshot from
// before it) finds nothing.
func (m *mainCheckout) findings(ctx context.Context, worktree string, changed []verify.Change) (violations, warnings []verify.Violation) {
	if m == nil {
		return nil, nil
	}
	var found []verify.Violation
	switch {
	case m.before == nil:
		warnings = append(warnings, verify.Violation{Type: MainCheckoutChanged,
			Reason: "the main checkout could not be read before the run, so it was not compared: " + firstLine(errText(m.beforeErr))})
		return nil, warnings
	case m.after == nil:
		// The worker may have broken what the comparison reads.
		found = append(found, verify.Violation{Type: MainCheckoutChanged,
			Reason: "the main checkout could not be read after the run, so its changes are unknown: " + firstLine(errText(m.afterErr))})
	default:
		found = append(found, compareMain(m.before, m.after)...)
		found = append(found, m.headFindings(ctx)...)
		found = append(found, hardLinks(worktree, changed, m.after)...)
	}
	found = mergeFindings(found)
	if m.writable {
		return found, nil
	}
	for i := range found {
		found[i].Reason += notByWorker(m.level)
	}
	return nil, found
}

func errText(err error) string {
	if err == nil {
		return "unknown error"
	}
	return err.Error()
}

// compareMain returns a finding for every listed path whose state changed.
func compareMain(before, after *mainSnapshot) []verify.Violation {
	var found []verify.Violation
	add := func(p, reason string) {
		found = append(found, verify.Violation{Type: MainCheckoutChanged, Path: p, Reason: reason + whatItIs(p)})
	}
	for p, a := range after.paths {
		b, ok := before.paths[p]
		switch {
		case !ok:
			add(p, appeared(a))
		case b.xy != a.xy:
			add(p, "changed in the main checkout during the run: it was "+statusWords(b.xy)+", it is "+statusWords(a.xy))
		default:
			r := stateChange(b, a)
			if a.nlink > b.nlink && b.present && a.present && !strings.HasPrefix(r, "hard-linked") {
				r = strings.TrimPrefix(r+"; ", "; ") + fmt.Sprintf("hard-linked during the run (link count %d became %d): a write through the link writes this file", b.nlink, a.nlink)
			}
			if r != "" {
				add(p, r)
			}
		}
	}
	for p, b := range before.paths {
		if _, ok := after.paths[p]; !ok {
			what := "restored or removed"
			switch b.xy {
			case "??", "!!":
				what = "removed"
			}
			add(p, what+" in the main checkout during the run")
		}
	}
	for p, tag := range after.flags {
		if before.flags[p] != tag {
			add(p, "marked "+flagWord(tag)+" in the main checkout's index during the run, so git status no longer compares it")
		}
	}
	for p, tag := range before.flags {
		if _, ok := after.flags[p]; !ok {
			add(p, "no longer marked "+flagWord(tag)+" in the main checkout's index")
		}
	}
	return found
}

// appeared describes a path listed only after the run.
func appeared(a pathState) string {
	switch a.xy {
	case "??":
		return "a new file in the main checkout, created during the run"
	case "!!":
		return "a new ignored file in the main checkout, created during the run"
	}
	return "changed in the main checkout during the run (" + statusWords(a.xy) + ")"
}

// statusWords says what git status's two letters mean: the index against
// HEAD (staged) and the file against the index.
func statusWords(xy string) string {
	switch xy {
	case "??":
		return "untracked"
	case "!!":
		return "ignored"
	}
	if len(xy) != 2 {
		return "status " + xy
	}
	if xy[0] == 'U' || xy[1] == 'U' || xy == "AA" || xy == "DD" {
		return "unmerged"
	}
	file := map[byte]string{'M': "modified", 'D': "deleted", 'T': "type changed", 'A': "added with intent to add"}
	staged := map[byte]string{'M': "a modification", 'A': "an addition", 'D': "a deletion", 'R': "a rename", 'C': "a copy", 'T': "a type change"}
	var parts []string
	if w, ok := file[xy[1]]; ok {
		parts = append(parts, w)
	}
	if w, ok := staged[xy[0]]; ok {
		parts = append(parts, "with "+w+" staged")
	}
	if len(parts) == 0 {
		return "status " + xy
	}
	return strings.Join(parts, ", ")
}

// stateChange says how a path listed before and after the run changed, ""
// when it did not.
func stateChange(b, a pathState) string {
	switch {
	case b.present != a.present:
		if a.present {
			return "created again in the main checkout during the run"
		}
		return "removed from the main checkout during the run"
	case !a.present:
		return ""
	case b.mode != a.mode && b.mode.Type() != a.mode.Type():
		return "replaced in the main checkout during the run (" + b.mode.String() + " became " + a.mode.String() + ")"
	case b.ino != a.ino:
		return "replaced by another file in the main checkout during the run"
	case b.sum != nil && a.sum != nil && !bytes.Equal(b.sum, a.sum), b.size != a.size:
		return "its content changed in the main checkout during the run"
	case a.nlink > b.nlink:
		return fmt.Sprintf("hard-linked during the run (link count %d became %d): a write through the link writes this file", b.nlink, a.nlink)
	case b.mtime != a.mtime:
		return "written in the main checkout during the run (its modification time changed)"
	case b.mode != a.mode:
		return "its mode changed in the main checkout during the run (" + b.mode.String() + " became " + a.mode.String() + ")"
	case b.ctime != a.ctime:
		return "written, linked or re-moded in the main checkout during the run (its change time moved, although its modification time did not)"
	case b.nlink != a.nlink:
		return fmt.Sprintf("its link count changed during the run (%d became %d)", b.nlink, a.nlink)
	}
	return ""
}

func flagWord(tag string) string {
	if tag == "S" {
		return "skip-worktree"
	}
	return "assume-unchanged"
}

// whatItIs names what a changed path means beyond a file, "" for ordinary
// files.
func whatItIs(p string) string {
	switch {
	case strings.HasPrefix(p, ".agentmine/agents/"):
		return "; it is an agent definition, read by the next run"
	case p == ".agentmine/config.toml":
		return "; it is the project configuration, read by the next run"
	case strings.HasPrefix(p, ".agentmine/prompts/"):
		return "; it is an agent's prompt, read by the next run"
	}
	return ""
}

// headFindings reports a move of the main checkout's HEAD that agentmine
// did not make: a commit, reset or checkout there changes files without
// leaving them in git status.
func (m *mainCheckout) headFindings(ctx context.Context) []verify.Violation {
	b, a := m.before, m.after
	if b.head == a.head && b.headRef == a.headRef {
		return nil
	}
	if b.headRef == a.headRef && b.head != "" && a.head != "" && m.env.ownMove(ctx, m.g, b.head, a.head) {
		return nil
	}
	how := fmt.Sprintf("the main checkout's HEAD moved during the run (%s at %s became %s at %s)",
		b.headRef, shortHash(b.head), a.headRef, shortHash(a.head))
	var paths []string
	if b.head != "" && a.head != "" {
		out, err := m.g.Run(ctx, "diff", "--name-only", "-z", "--no-renames", b.head, a.head, "--")
		if err == nil {
			for _, p := range strings.Split(string(out), "\x00") {
				if p != "" {
					paths = append(paths, p)
				}
			}
		}
	}
	if len(paths) == 0 {
		return []verify.Violation{{Type: MainCheckoutChanged, Reason: how}}
	}
	sort.Strings(paths)
	var found []verify.Violation
	for i, p := range paths {
		if i == maxHeadPaths {
			found = append(found, verify.Violation{Type: MainCheckoutChanged,
				Reason: fmt.Sprintf("%s, changing %d more paths", how, len(paths)-maxHeadPaths)})
			break
		}
		found = append(found, verify.Violation{Type: MainCheckoutChanged, Path: p, Reason: "changed by a commit, reset or checkout: " + how + whatItIs(p)})
	}
	return found
}

func shortHash(h string) string {
	if h == "" {
		return "(no commit)"
	}
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// hardLinks finds the worktree's changed files that are hard links to files
// of the main checkout: a write to either writes both. Only files git lists
// as changed in the worktree are looked at, and they are matched against the
// main checkout's listed files and the file at the same path there; the
// main file's own link count and change time show the link too, even when
// it was removed before the end.
func hardLinks(worktree string, changed []verify.Change, after *mainSnapshot) []verify.Violation {
	type key struct{ dev, ino uint64 }
	byInode := map[key]string{}
	for p, st := range after.paths {
		if st.present && st.mode.IsRegular() && st.nlink > 1 {
			byInode[key{st.dev, st.ino}] = p
		}
	}
	var found []verify.Violation
	seen := map[string]bool{}
	for _, c := range changed {
		if c.Status == "D" || seen[c.Path] {
			continue
		}
		seen[c.Path] = true
		fi, err := os.Lstat(filepath.Join(worktree, filepath.FromSlash(c.Path)))
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok || st.Nlink < 2 {
			continue
		}
		k := key{uint64(st.Dev), st.Ino}
		main, ok := byInode[k]
		if !ok {
			// A tracked file of the main checkout git does not list.
			if mfi, err := os.Lstat(filepath.Join(after.top, filepath.FromSlash(c.Path))); err == nil {
				if mst, ok := mfi.Sys().(*syscall.Stat_t); ok && uint64(mst.Dev) == k.dev && mst.Ino == k.ino {
					main = c.Path
				}
			}
		}
		if main == "" {
			continue
		}
		found = append(found, verify.Violation{Type: MainCheckoutChanged, Path: main,
			Reason: "hard-linked into the worker's worktree as " + c.Path + ": a write to either writes both" + whatItIs(main)})
	}
	return found
}

// mergeFindings keeps one finding per path, joining the reasons, in path
// order (findings without a path last).
func mergeFindings(found []verify.Violation) []verify.Violation {
	var out []verify.Violation
	at := map[string]int{}
	for _, f := range found {
		if f.Path == "" {
			out = append(out, f)
			continue
		}
		if i, ok := at[f.Path]; ok {
			if !strings.Contains(out[i].Reason, f.Reason) {
				out[i].Reason += "; " + f.Reason
			}
			continue
		}
		at[f.Path] = len(out)
		out = append(out, f)
	}
	sort.SliceStable(out, func(i, k int) bool {
		pi, pk := out[i].Path, out[k].Path
		if (pi == "") != (pk == "") {
			return pk == ""
		}
		return pi < pk
	})
	return out
}

// ownMove says whether the main checkout's HEAD moved from old to new by
// agentmine's own gated merges alone: every commit on the first-parent path
// from new back to old is a merge commit with the trailers merge writes
// (Agentmine-Task and Agentmine-Session). The merge updates the checked-out
// files with the base (read-tree), so without this a merge landing during
// the run would be held against the worker.
//
// A worker could write such a commit itself and move the base to it; the
// files of the main checkout then differ from the new HEAD and are listed
// by git status, and the base moving is the ref checks' business. The ref
// journal of agentmine's own writes, when there is one, is the record to
// ask instead: this is the one place to wire it.
func (e *Env) ownMove(ctx context.Context, g gitcmd.Runner, old, new string) bool {
	out, err := g.Run(ctx, "log", "--first-parent", "--format=%H %P%x1f%(trailers:key=Agentmine-Task,valueonly,separator=%x2C)%x1f%(trailers:key=Agentmine-Session,valueonly,separator=%x2C)%x1e", old+".."+new, "--")
	if err != nil {
		return false
	}
	var oldest []string
	for _, rec := range strings.Split(string(out), "\x1e") {
		rec = strings.TrimSpace(rec)
		if rec == "" {
			continue
		}
		f := strings.Split(rec, "\x1f")
		if len(f) != 3 {
			return false
		}
		ids := strings.Fields(f[0]) // the commit and its two parents
		if len(ids) != 3 || strings.TrimSpace(f[1]) == "" || strings.TrimSpace(f[2]) == "" {
			return false
		}
		oldest = ids
	}
	// The oldest merge of the path must sit right on old.
	return oldest != nil && oldest[1] == old
}
