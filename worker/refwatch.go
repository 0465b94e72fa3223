package worker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/sessions"
	"github.com/git-agentmine/git-agentmine/tasks"
	"github.com/git-agentmine/git-agentmine/verify"
)

// Refs are watched like files. Before the worker starts, the supervisor
// records every ref a verdict or a status depends on (gitstore.WatchedRefs:
// branches, tags, refs/agentmine/*, notes, replace refs) and registers itself, so that
// agentmine commands run anywhere below it journal their writes as the
// worker's. After the worker's processes ended and the DoD ran (the DoD runs
// the worker's code too), it records them again. A ref that was created,
// deleted or moved in between is a violation unless
//
//   - it is the worker's own branch;
//   - it is the branch of another session that had not finished when this
//     run started (its own supervisor judges it); or
//   - the journal explains it: a chain of writes agentmine made on its own
//     behalf (not for any worker) leads from the value before to the value
//     after — a gated merge moving the base, another session's records and
//     outcome, a task added, a sync. Only the writes the supervisor's
//     witness heard from the live writing process count
//     (gitstore.Registration), never a line merely in the journal file.
//
// The worker's own session ref is not excused: nothing but agentmine writes
// it during a run, and those writes are journaled.
const (
	// ViolationRefChanged: a watched ref changed during the run and nothing
	// agentmine did on its own behalf explains it.
	ViolationRefChanged = "ref-changed"
	// ViolationBaseMoved: during the run, the base (the session's, or the
	// task's base as changed during the run) came to hold some of the
	// session's commits, and no gated merge made that move.
	ViolationBaseMoved = "base-moved-during-run"
	// ViolationRegistration: the supervisor's registration under
	// agentmine/supervisors/ was removed, rewritten or replaced during the
	// run, which only hides the worker's agentmine commands from the
	// supervisor.
	ViolationRegistration = "supervisor-registration-changed"
)

// journalSlack is how long before the first snapshot a journal entry may be
// stamped and still count: each process stamps with its own clock reading.
const journalSlack = 2 * time.Second

// refWatch is the supervisor's record of the refs before the run.
type refWatch struct {
	start   time.Time
	before  map[string]string
	err     error
	release func()
	// reg is the supervisor's registration with its witness: nil where
	// it could not be made (then the journal file's word is taken).
	reg *gitstore.Registration
	// logs is where each ref's reflog ended before the run, to find a ref
	// moved and moved back in between.
	logs map[string]reflogMark
}

// watchRefs registers this process as the session's supervisor and records
// the watched refs. Call it before the worker starts.
func (e *Env) watchRefs(ctx context.Context, rec sessions.Record, say func(string, ...any)) *refWatch {
	w := &refWatch{start: time.Now()}
	reg, unlock, err := e.St.Supervise(ctx, rec.Session.ID)
	if err == nil {
		w.reg, w.release = reg, reg.Release
	} else {
		// No witness here: the registration alone, and the journal file.
		release, rerr := e.St.RegisterSupervisor(rec.Session.ID)
		if rerr != nil {
			say("warning: %v (agentmine commands the worker runs may be taken for agentmine's own)", rerr)
		} else {
			say("warning: %v (agentmine's own writes are taken from the journal file)", err)
		}
		w.release = release
	}
	w.logs = reflogMarks(e.St.Location().CommonDir)
	w.before, w.err = e.St.WatchedRefs(ctx)
	unlock()
	return w
}

// checkRefs records the watched refs again, adds a violation to the outcome's
// scope verdict for every change nothing explains, and ends the
// registration. Call it after the judging (DoD included) and before the
// outcome is recorded.
func (e *Env) checkRefs(ctx context.Context, rec sessions.Record, w *refWatch, out *sessions.Outcome) {
	defer w.release()
	after, err := e.St.WatchedRefs(ctx)
	if w.err != nil {
		err = w.err
	}
	var vs []verify.Violation
	if err != nil {
		vs = []verify.Violation{{Type: ViolationRefChanged,
			Reason: "the refs could not be compared before and after the run: " + firstLine(err.Error())}}
	} else {
		vs = e.refViolations(ctx, rec, w, after, out)
	}
	if w.reg != nil {
		if why := w.reg.Tampered(); why != "" {
			vs = append(vs, verify.Violation{Type: ViolationRegistration, Reason: why})
		}
	}
	if len(vs) > 0 {
		addViolations(out, vs)
	}
}

// refChange is one watched ref that differs between the two snapshots;
// "" is a ref that does not exist.
type refChange struct {
	ref, old, new string
	// worker lists the journal's writes of the ref made for a worker.
	worker []gitstore.JournalEntry
	// via is set for a ref whose value is unchanged but whose reflog shows
	// it moved during the run: the first value it was moved to.
	via string
}

func diffRefs(before, after map[string]string) []refChange {
	var cs []refChange
	for ref, a := range after {
		if before[ref] != a {
			cs = append(cs, refChange{ref: ref, old: before[ref], new: a})
		}
	}
	for ref, b := range before {
		if _, ok := after[ref]; !ok {
			cs = append(cs, refChange{ref: ref, old: b})
		}
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i].ref < cs[j].ref })
	return cs
}

// explained reports whether agentmine's own journaled writes of one ref lead
// from old to new: a path in the graph whose edges are those writes. Writes
// made for a worker are no edges of it.
func explained(entries []gitstore.JournalEntry, old, new string) bool {
	if old == new {
		return true
	}
	next := map[string][]string{}
	for _, e := range entries {
		if e.Own() {
			next[e.Old] = append(next[e.Old], e.New)
		}
	}
	seen := map[string]bool{old: true}
	queue := []string{old}
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		for _, n := range next[v] {
			if n == new {
				return true
			}
			if !seen[n] {
				seen[n] = true
				queue = append(queue, n)
			}
		}
	}
	return false
}

// refViolations compares the snapshots and returns the violations.
// workerWrites are the journal's writes of a ref made for a worker.
func workerWrites(entries []gitstore.JournalEntry) []gitstore.JournalEntry {
	var out []gitstore.JournalEntry
	for _, je := range entries {
		if !je.Own() {
			out = append(out, je)
		}
	}
	return out
}

// explainedMove reports whether agentmine journaled the move from m[0] to
// m[1] as its own.
func explainedMove(entries []gitstore.JournalEntry, m [2]string) bool {
	for _, je := range entries {
		if je.Own() && je.Old == m[0] && je.New == m[1] {
			return true
		}
	}
	return false
}

func (e *Env) refViolations(ctx context.Context, rec sessions.Record, w *refWatch, after map[string]string, out *sessions.Outcome) []verify.Violation {
	s := rec.Session
	var changes []refChange
	for _, c := range diffRefs(w.before, after) {
		if c.ref != "refs/heads/"+s.Branch {
			changes = append(changes, c)
		}
	}
	moved := reflogMoves(e.St.Location().CommonDir, w.logs)
	delete(moved, "refs/heads/"+s.Branch)
	if len(changes) == 0 && len(moved) == 0 {
		return nil
	}
	journal, jerr := w.journal(e.St)
	byRef := map[string][]gitstore.JournalEntry{}
	for _, je := range journal {
		if je.Ref != "" {
			byRef[je.Ref] = append(byRef[je.Ref], je)
		}
	}
	// Who did it, for the reason only: the witness's lines first, then
	// the journal file's word for writes made for a worker.
	blame := map[string][]gitstore.JournalEntry{}
	if w.reg != nil {
		file, _ := e.St.ReadJournal(w.start.Add(-journalSlack))
		for _, je := range file {
			if je.Ref != "" && !je.Own() {
				blame[je.Ref] = append(blame[je.Ref], je)
			}
		}
	}
	workerOf := func(ref string) []gitstore.JournalEntry {
		return append(workerWrites(byRef[ref]), blame[ref]...)
	}
	var left []refChange
	for _, c := range changes {
		if explained(byRef[c.ref], c.old, c.new) {
			continue
		}
		c.worker = workerOf(c.ref)
		left = append(left, c)
	}
	// Refs that look unchanged but moved and moved back: every move their
	// reflog shows must be one agentmine journaled as its own.
	var refs []string
	for ref := range moved {
		refs = append(refs, ref)
	}
	sort.Strings(refs)
	for _, ref := range refs {
		moves := moved[ref]
		if w.before[ref] != after[ref] || w.before[ref] == "" {
			continue
		}
		for _, m := range moves {
			if !explainedMove(byRef[ref], m) {
				left = append(left, refChange{ref: ref, old: w.before[ref], new: after[ref], via: m[1], worker: workerOf(ref)})
				break
			}
		}
	}
	left = e.otherSessionsBranches(ctx, s, w, left)
	var vs []verify.Violation
	for _, c := range left {
		reason := describeChange(c, s.ID)
		if jerr != nil {
			reason += " (the journal of agentmine's own writes could not be read: " + firstLine(jerr.Error()) + ")"
		}
		vs = append(vs, verify.Violation{Type: ViolationRefChanged, Path: c.ref, Reason: reason})
	}
	return append(vs, e.baseReached(ctx, s, left, after, out)...)
}

// journal is what agentmine wrote during the run: the lines the witness
// heard from live agentmine processes, checked by pid and start time (a
// line in the journal file proves nothing: any process can append one);
// the journal file only where no witness could be started.
func (w *refWatch) journal(st *gitstore.Store) ([]gitstore.JournalEntry, error) {
	if w.reg != nil {
		return w.reg.Witnessed(), nil
	}
	return st.ReadJournal(w.start.Add(-journalSlack))
}

// otherSessionsBranches drops the changes of branches that belong to another
// session that had not finished when this run started: a live session's
// worker commits to its branch, a session started meanwhile creates one, and
// each is judged by its own supervisor. The sessions are read only when
// such a branch changed.
func (e *Env) otherSessionsBranches(ctx context.Context, s sessions.Session, w *refWatch, cs []refChange) []refChange {
	any := false
	for _, c := range cs {
		if strings.HasPrefix(c.ref, "refs/heads/task-") {
			any = true
		}
	}
	if !any {
		return cs
	}
	recs, _, err := sessions.LoadAll(ctx, e.St)
	if err != nil {
		return cs
	}
	since := w.start.Add(-journalSlack)
	running := map[string]bool{}
	for _, r := range recs {
		if r.Session.ID == s.ID {
			continue
		}
		if r.Outcome == nil || !r.Outcome.Finished.Before(since) || !r.Session.Started.Before(since) {
			running["refs/heads/"+r.Session.Branch] = true
		}
	}
	var keep []refChange
	for _, c := range cs {
		if !running[c.ref] {
			keep = append(keep, c)
		}
	}
	return keep
}

// describeChange says what happened to the ref and who did it, as far as the
// journal knows.
func describeChange(c refChange, session string) string {
	var what string
	switch {
	case c.via != "":
		what = "moved to " + shortID(c.via) + " and back to " + shortID(c.new) + " during the run (its reflog shows it)"
	case c.old == "":
		what = "created at " + shortID(c.new) + " during the run"
	case c.new == "":
		what = "deleted during the run (it was at " + shortID(c.old) + ")"
	default:
		what = "moved from " + shortID(c.old) + " to " + shortID(c.new) + " during the run"
	}
	for _, je := range c.worker {
		if je.Session == session || je.Session == gitstore.WorkerMark {
			return what + ", by `" + je.Cmd + "` run by this worker"
		}
	}
	if len(c.worker) > 0 {
		je := c.worker[0]
		return what + ", by `" + je.Cmd + "` run by the worker of session " + shortID(je.Session)
	}
	return what + ", not by agentmine (by the worker, or by someone else working in this repository)"
}

// baseReached checks, for the base refs that changed without explanation
// (the session's base, and the task's base when the task itself changed),
// whether they now hold commits of the session: then the session's work
// reached the base without a verdict.
func (e *Env) baseReached(ctx context.Context, s sessions.Session, left []refChange, after map[string]string, out *sessions.Outcome) []verify.Violation {
	if out.Tip == "" || out.Tip == s.BaseCommit {
		return nil
	}
	changed := map[string]bool{}
	for _, c := range left {
		changed[c.ref] = true
	}
	type candidate struct{ ref, how string }
	var cands []candidate
	if full := fullRef(s.BaseRef, after); changed[full] {
		cands = append(cands, candidate{full, full + " was moved during the run, not by a gated merge"})
	}
	if changed[tasks.Kind.Ref(s.Task)] {
		if doc, err := e.St.Get(ctx, tasks.Kind, s.Task); err == nil {
			if t, err := tasks.Decode(doc.Data); err == nil && t.Base != "" {
				if full := fullRef(t.Base, after); full != fullRef(s.BaseRef, after) || len(cands) == 0 {
					cands = append(cands, candidate{full, "the task's base was changed during the run to " + t.Base})
				}
			}
		}
	}
	var vs []verify.Violation
	g := e.St.Git().In(e.Top)
	for _, c := range cands {
		n, err := g.Output(ctx, "rev-list", "--count", out.Tip, "^"+s.BaseCommit, "^"+c.ref, "--")
		if err != nil {
			continue // the base is gone: ref-changed says so
		}
		var outside int
		fmt.Sscan(n, &outside)
		if in := out.Commits - outside; in > 0 {
			reason := fmt.Sprintf("%s; it now holds %d of the session's %d commit(s), which no verdict allowed", c.how, in, out.Commits)
			for _, l := range left {
				if l.ref == c.ref && l.via == "" {
					reason += e.putBack(ctx, l, out.Tip)
				}
			}
			vs = append(vs, verify.Violation{Type: ViolationBaseMoved, Path: c.ref, Reason: reason})
		}
	}
	return vs
}

// putBack moves a branch that was moved during the run from c.old to
// c.new back to c.old, when only the session's commits (those tip holds)
// explain the move: every commit c.new has and c.old has not is one of
// them, so putting it back loses nobody's work. It is a compare-and-swap:
// the branch moves only if it still holds c.new. It returns what it did,
// as the end of the violation's reason ("" when it did not try).
func (e *Env) putBack(ctx context.Context, c refChange, tip string) string {
	if !strings.HasPrefix(c.ref, "refs/heads/") || c.old == "" || c.new == "" || tip == "" {
		return ""
	}
	others, err := e.St.Git().Output(ctx, "rev-list", "--max-count=1", c.new, "^"+c.old, "^"+tip, "--")
	if err != nil || others != "" {
		return "" // commits of someone else's too, or unreadable: left to the user
	}
	err = e.St.Transact(ctx, []gitstore.RefOp{{Verb: "update", Ref: c.ref, New: c.old, Old: c.new}})
	switch {
	case err == nil:
		return fmt.Sprintf("; agentmine put it back to %s (it held only the worker's commits on top of it)", shortID(c.old))
	case errors.Is(err, gitstore.ErrConflict):
		return fmt.Sprintf("; not put back to %s: it moved again since the run ended", shortID(c.old))
	}
	return fmt.Sprintf("; putting it back to %s failed: %s", shortID(c.old), firstLine(err.Error()))
}

// fullRef names a base the way the snapshot does: a local branch, else a
// tag, else the name as given (git resolves it).
func fullRef(name string, refs map[string]string) string {
	if strings.HasPrefix(name, "refs/") {
		return name
	}
	for _, p := range []string{"refs/heads/", "refs/tags/"} {
		if _, ok := refs[p+name]; ok {
			return p + name
		}
	}
	return name
}

// addViolations adds violations to the outcome's scope verdict, which makes
// it invalid, and names the first in the reason when the reason was the
// verdict's own explanation.
func addViolations(out *sessions.Outcome, vs []verify.Violation) {
	v := verify.ParseVerdicts(out)
	prev := v.Explain()
	if !v.HasScope {
		v.HasScope = true
		v.Scope.Tip = out.Tip
		v.Scope.Changed = []verify.Change{}
	}
	v.Scope.Violations = append(v.Scope.Violations, vs...)
	v.Scope.Valid = false
	v.Record(out)
	if out.Reason == "" || out.Reason == prev {
		out.Reason = v.Explain()
	}
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// excuseJournaledWorktrees extends the watch of the directory holding the
// worktrees: besides the worktrees git has registered when the watch stops,
// it skips the ones agentmine itself created or removed during the run
// (another session started and finished, or removed by worker done), as
// journal (what the supervisor's witness heard) records them. A removal
// holds the witness lock until the worktree is gone
// (gitstore.BeginWorktree), so a supervisor registered while it ran heard
// of it; one registered after it never saw it.
func excuseJournaledWorktrees(extras []verify.Extra, journal func() []gitstore.JournalEntry) []verify.Extra {
	for i, x := range extras {
		if x.Kind != verify.KindOutside || x.Skip == nil {
			continue
		}
		parent, skip := realDir(x.Path), x.Skip
		var mu sync.Mutex
		ours := map[string]bool{}
		extras[i].Skip = func(name string) bool {
			if skip(name) {
				return true
			}
			mu.Lock()
			defer mu.Unlock()
			if ours[name] {
				return true
			}
			// agentmine journals a worktree before it makes or removes it,
			// so a name not heard of yet may be one made since the last
			// read (a reviewer's, another task's): read the journal again.
			for _, je := range journal() {
				if je.Own() && (je.Op == gitstore.JournalWorktreeAdd || je.Op == gitstore.JournalWorktreeRemove) &&
					realDir(filepath.Dir(je.Checkout)) == parent {
					ours[filepath.Base(je.Checkout)] = true
				}
			}
			return ours[name]
		}
	}
	return extras
}

// realDir resolves symbolic links in an existing directory's path, so that
// paths git prints and paths from the configuration compare equal.
func realDir(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return filepath.Clean(p)
}

// reflogMark is where a reflog file ended: its identity and size.
type reflogMark struct {
	size int64
	file os.FileInfo
}

// reflogDirs are the reflogs git keeps for the watched refs by default
// (core.logAllRefUpdates): branches and notes; tags only where configured.
var reflogDirs = []string{"refs/heads", "refs/tags", "refs/notes"}

// reflogMarks records where every reflog of the watched refs ends. git
// appends to an existing reflog on every update of its ref, whatever
// core.logAllRefUpdates says, so what is appended during the run lists every
// move, including one undone before the end.
func reflogMarks(commonDir string) map[string]reflogMark {
	marks := map[string]reflogMark{}
	for _, d := range reflogDirs {
		root := filepath.Join(commonDir, "logs", d)
		filepath.WalkDir(root, func(p string, de os.DirEntry, err error) error {
			if err != nil || de.IsDir() {
				return nil
			}
			fi, err := de.Info()
			if err != nil {
				return nil
			}
			rel, _ := filepath.Rel(filepath.Join(commonDir, "logs"), p)
			marks[filepath.ToSlash(rel)] = reflogMark{size: fi.Size(), file: fi}
			return nil
		})
	}
	return marks
}

// reflogMoves returns, per ref, the moves (old, new; "" for none) appended
// to its reflog since the marks were taken. A reflog that is new, was
// replaced or shrank (the ref deleted and made again, an expiry) tells
// nothing reliable and is left out: the snapshots judge that ref.
func reflogMoves(commonDir string, before map[string]reflogMark) map[string][][2]string {
	out := map[string][][2]string{}
	for ref, m := range before {
		p := filepath.Join(commonDir, "logs", filepath.FromSlash(ref))
		fi, err := os.Stat(p)
		if err != nil || !os.SameFile(fi, m.file) || fi.Size() <= m.size {
			continue
		}
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		buf := make([]byte, fi.Size()-m.size)
		n, _ := f.ReadAt(buf, m.size)
		f.Close()
		for _, line := range strings.Split(string(buf[:n]), "\n") {
			fields := strings.SplitN(line, " ", 3)
			if len(fields) < 3 {
				continue
			}
			out[ref] = append(out[ref], [2]string{zeroToEmpty(fields[0]), zeroToEmpty(fields[1])})
		}
	}
	return out
}

func zeroToEmpty(id string) string {
	if strings.Trim(id, "0") == "" {
		return ""
	}
	return id
}
