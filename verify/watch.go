package verify

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
	"golang.org/x/sys/unix"
)

// Operations recorded by the watcher, as they appear in Event.Op.
const (
	OpCreate = "create"
	OpWrite  = "write"
	OpRemove = "remove"
	OpRename = "rename"
	OpChmod  = "chmod"
)

// Kinds of watched locations. Events inside the worktree have KindWorktree;
// extra locations carry the kind their Extra was given.
const (
	KindWorktree     = ""
	KindOutside      = "outside-worktree"
	KindGitInternals = "git-internals"
)

// Event is one file-system change seen while a worker ran.
type Event struct {
	// Time is when the watcher received the change.
	Time time.Time `json:"time"`
	// Op is one of create, write, remove, rename, chmod.
	Op string `json:"op"`
	// Path is slash-separated and relative to the worktree for KindWorktree
	// events, absolute for events in extra locations.
	Path string `json:"path"`
	// Kind is KindWorktree ("") or the kind of the extra location.
	Kind string `json:"kind,omitempty"`
	// Dir is set when the path was a directory.
	Dir bool `json:"dir,omitempty"`
	// Scanned is set when the change was found by scanning a directory (a new
	// directory, or a rescan after the event queue overflowed) rather than
	// reported by the kernel.
	Scanned bool `json:"scanned,omitempty"`
}

// Touch summarises every event seen for one path.
type Touch struct {
	Path  string    `json:"path"`
	Kind  string    `json:"kind,omitempty"`
	Ops   []string  `json:"ops"`
	Dir   bool      `json:"dir,omitempty"`
	Count int       `json:"count"`
	First time.Time `json:"first"`
	Last  time.Time `json:"last"`
}

// Record is what the watcher saw during one run.
type Record struct {
	// Events holds the first events in arrival order (bounded by MaxEvents).
	Events []Event `json:"events,omitempty"`
	// Total counts all events, including those not kept in Events.
	Total int `json:"total"`
	// Touched holds one entry per distinct path, sorted by kind and path
	// (bounded by MaxPaths).
	Touched []Touch `json:"touched,omitempty"`
	// Watched is the number of directories that were watched.
	Watched int `json:"watched"`
	// Overflows counts kernel event-queue overflows (each followed by a rescan).
	Overflows int `json:"overflows,omitempty"`
	// Incomplete is set when the record may miss changes; Reason says why.
	Incomplete bool   `json:"incomplete,omitempty"`
	Reason     string `json:"reason,omitempty"`
	// OutsideIncomplete is set when what may be missing includes the extra
	// locations (git internals, the directory beside the worktree) or the
	// worktree's .git file, not only the worktree's own files: the watcher
	// did not run, an extra location could not be watched, or the queue
	// that watches them overflowed.
	OutsideIncomplete bool `json:"outside_incomplete,omitempty"`
	// Unsupervised marks the record of a run nobody watched by design (a
	// worker run outside agentmine, ended with `session end`): the verdict
	// rests on post-run verification alone and says so, without holding
	// the missing record against the run.
	Unsupervised bool `json:"unsupervised,omitempty"`
}

// Unsupervised returns the live record of a run that no watcher saw by
// design, with the reason.
func Unsupervised(reason string) *Record {
	return &Record{Incomplete: true, Unsupervised: true, Reason: reason}
}

// NotWatched returns the live record of a supervised run whose watcher
// could not start: everything may be missing, and Check holds that against
// the run.
func NotWatched(reason string) *Record {
	return &Record{Incomplete: true, OutsideIncomplete: true, Reason: reason}
}

// Extra is a location outside the worktree to watch (not recursively).
type Extra struct {
	// Path is a directory (every entry in it is reported) or a file (its
	// directory is watched and only the file and its ".lock" are reported).
	Path string
	// Kind is attached to every event from this location, e.g. KindOutside or
	// KindGitInternals.
	Kind string
	// Skip, if set, names entries of the directory that are not reported
	// (for example sibling worktrees created by agentmine itself). It is
	// asked when the watch stops, so that entries whose nature is only
	// clear once they are complete (a worktree gets its .git file after its
	// directory) are judged correctly; OnEvent still sees every event.
	Skip func(name string) bool
}

// WatchOptions configures StartWatch.
type WatchOptions struct {
	// Extra locations watched besides the worktree.
	Extra []Extra
	// Ignore reports worktree-relative (slash) paths that are neither watched
	// nor recorded: files agentmine generated, caches. It is called from
	// more than one goroutine.
	Ignore func(rel string) bool
	// OnEvent, if set, is called for every recorded event from the watcher's
	// goroutine, in order. It is the hook for --strict (stop the worker at the
	// first out-of-scope write). It should return quickly.
	OnEvent func(Event)
	// MaxWatches caps the number of directories watched by this run (0: only
	// the kernel's fs.inotify.max_user_watches applies). Directories beyond it
	// are not watched and the record is marked incomplete.
	MaxWatches int
	// MaxEvents bounds Record.Events (default 1000).
	MaxEvents int
	// MaxPaths bounds Record.Touched (default 200000); beyond it the record is
	// marked incomplete.
	MaxPaths int
}

// Watcher records changes under a worktree while a worker runs. fsnotify is
// not recursive: every directory gets its own watch, directories created
// during the run are watched and scanned at once (files written into them
// before their watch existed are reported as scanned creates), and a kernel
// queue overflow triggers a rescan. The worktree's .git is never watched.
//
// Two inotify instances, each with its own kernel queue, keep the two kinds
// of location apart: one watches the worktree's directories, the other the
// extra locations and the worktree's .git file. A worker that floods the
// worktree with changes overflows only the first queue, so the record can
// still vouch for the git internals and the worktree's surroundings
// (Record.OutsideIncomplete stays unset), and a scope that lets the worker
// write every path of the worktree then proves that nothing it may not do
// was missed.
type Watcher struct {
	root  string
	opts  WatchOptions
	start time.Time
	fsw   *treeWatcher      // the worktree's directories
	fsx   *fsnotify.Watcher // the extra locations and the worktree's .git file

	mu       sync.Mutex
	watched  map[string]bool // absolute directories under root
	extraDir map[string][]Extra
	rec      Record
	skips    []func(string) bool // parallel to rec.Events
	pending  []Event             // recorded, not yet passed to OnEvent
	touched  map[string]*touchAcc
	reasons  []string
	// vanishedDirs counts the directories that existed during the run and
	// were gone before they could be watched; firstVanished is the first.
	vanishedDirs  int
	firstVanished string
	vanishedSeen  map[string]bool

	barrierDir string
	barrier    chan struct{} // a barrier event came through fsw
	barrierX   chan struct{} // a barrier event came through fsx
	stopOnce   sync.Once
	done       chan struct{}
	final      Record
}

type touchAcc struct {
	t    Touch
	ops  map[string]bool
	skip func(string) bool
}

// StartWatch starts watching root (a worktree) and the extra locations. It
// returns once the initial watches are in place. A failure to watch (inotify
// instance or watch limits) does not stop the run: the returned Watcher then
// records what it can and its Record says it is incomplete. Only an unusable
// root is an error.
func StartWatch(ctx context.Context, root string, opts WatchOptions) (*Watcher, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("start watcher on %s: %w", root, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("start watcher: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("start watcher: %s is not a directory", root)
	}
	if opts.MaxEvents <= 0 {
		opts.MaxEvents = 1000
	}
	if opts.MaxPaths <= 0 {
		opts.MaxPaths = 200000
	}
	w := &Watcher{
		root:     abs,
		opts:     opts,
		start:    time.Now(),
		watched:  map[string]bool{},
		extraDir: map[string][]Extra{},
		touched:  map[string]*touchAcc{},
		barrier:  make(chan struct{}, 1),
		barrierX: make(chan struct{}, 1),
		done:     make(chan struct{}),
	}
	fsw, err := newTreeWatcher(4096, w.watchEarly)
	if err != nil {
		w.incompleteOutside(fmt.Sprintf("cannot start the file watcher (%v); nothing was recorded live", err))
		close(w.done)
		return w, nil
	}
	w.fsw = fsw
	if fsx, err := fsnotify.NewBufferedWatcher(1024); err != nil {
		w.incompleteOutside(fmt.Sprintf("cannot start the watcher of the git internals and the worktree's surroundings (%v)", err))
	} else {
		w.fsx = fsx
	}
	if dir, err := os.MkdirTemp("", "agentmine-watch-*"); err == nil {
		if err := fsw.Add(dir); err == nil && (w.fsx == nil || w.fsx.Add(dir) == nil) {
			w.barrierDir = dir
		} else {
			os.Remove(dir)
		}
	}
	w.mu.Lock()
	w.addTree(w.root, false)
	if w.fsx != nil {
		for _, e := range opts.Extra {
			w.addExtra(e)
		}
		dotgit := filepath.Join(w.root, ".git")
		if fi, err := os.Lstat(dotgit); err == nil && fi.Mode().IsRegular() {
			if err := w.fsx.Add(dotgit); err != nil {
				w.incompleteOutside(fmt.Sprintf("cannot watch the worktree's .git file: %v", err))
			}
		}
	}
	w.mu.Unlock()
	go w.loop(ctx)
	return w, nil
}

// watchEarly says whether a directory just created at p is one the
// watcher will watch (inside the worktree, not ignored, not a .git), so
// that the kernel watch can be added before the event reaches the loop.
// It runs on the reader's goroutine and reads nothing the loop changes.
func (w *Watcher) watchEarly(p string) bool {
	if !strings.HasPrefix(p, w.root+string(filepath.Separator)) || filepath.Base(p) == ".git" {
		return false
	}
	return w.opts.Ignore == nil || !w.opts.Ignore(w.rel(p))
}

// addExtra watches one extra location. Called with mu held.
func (w *Watcher) addExtra(e Extra) {
	p, err := filepath.Abs(e.Path)
	if err != nil {
		return
	}
	e.Path = p
	dir := p
	if fi, err := os.Stat(p); err != nil || !fi.IsDir() {
		dir = filepath.Dir(p)
	}
	if _, ok := w.extraDir[dir]; !ok {
		if err := w.fsx.Add(dir); err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				w.incompleteOutside(fmt.Sprintf("cannot watch %s: %v", dir, err))
			}
			return
		}
	}
	w.extraDir[dir] = append(w.extraDir[dir], e)
}

// addTree watches dir and every directory beneath it. With scan set, every
// entry found is recorded as a scanned create (a new directory's contents
// may predate its watch). Called with mu held.
func (w *Watcher) addTree(dir string, scan bool) {
	found := 0
	// changed is whether dir's entries had changed since it was made when
	// its watch was in place and before it was listed: read later, a file
	// made after the listing (and seen by the watch) would count too.
	changed := false
	defer func() {
		// A new directory found empty whose entries changed since it was
		// made held something that came and went before the watch.
		if scan && found == 0 && w.watched[dir] && changed {
			w.incomplete(fmt.Sprintf("directory %s was emptied before it could be watched; files made inside it are not in the record", w.rel(dir)))
		}
	}()
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if d == nil || d.IsDir() {
				w.vanished(w.rel(p))
			}
			return nil
		}
		rel := w.rel(p)
		if p != w.root {
			if rel == ".git" && d.IsDir() {
				return fs.SkipDir
			}
			if w.opts.Ignore != nil && w.opts.Ignore(rel) {
				if d.IsDir() {
					return fs.SkipDir
				}
				return nil
			}
		}
		if scan && p != dir {
			found++
			w.recordLocked(Event{Time: time.Now(), Op: OpCreate, Path: rel, Dir: d.IsDir(), Scanned: true})
		}
		if !d.IsDir() {
			return nil
		}
		if w.watched[p] {
			if scan && p == dir {
				changed = changedSinceBirth(dir, w.start)
			}
			return nil
		}
		if w.opts.MaxWatches > 0 && len(w.watched) >= w.opts.MaxWatches {
			w.incomplete(fmt.Sprintf("watch limit of %d directories reached; changes in unwatched directories are seen only after the run", w.opts.MaxWatches))
			return fs.SkipDir
		}
		if err := w.fsw.Add(p); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				w.vanished(rel)
			} else {
				w.incomplete(watchFailure(err, rel))
			}
			return fs.SkipDir
		}
		w.watched[p] = true
		if scan && p == dir {
			changed = changedSinceBirth(dir, w.start)
		}
		if len(w.watched) > w.rec.Watched {
			w.rec.Watched = len(w.watched)
		}
		return nil
	})
}

// vanished marks the record incomplete for a directory of the worktree
// that existed during the run but was gone before it could be watched:
// whatever was made inside it meanwhile is not in the record. Called with
// mu held.
func (w *Watcher) vanished(rel string) {
	if w.vanishedSeen[rel] {
		return
	}
	if w.vanishedSeen == nil {
		w.vanishedSeen = map[string]bool{}
	}
	w.vanishedSeen[rel] = true
	w.vanishedDirs++
	if w.vanishedDirs == 1 {
		w.firstVanished = rel
	}
}

// rescan walks the whole worktree after an overflow: it watches directories
// that were missed and records files changed since the run started.
func (w *Watcher) rescan() {
	_ = filepath.WalkDir(w.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == w.root {
			return nil
		}
		rel := w.rel(p)
		if rel == ".git" && d.IsDir() {
			return fs.SkipDir
		}
		if w.opts.Ignore != nil && w.opts.Ignore(rel) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if info, err := d.Info(); err == nil && !info.ModTime().Before(w.start) {
			w.recordLocked(Event{Time: time.Now(), Op: OpWrite, Path: rel, Dir: d.IsDir(), Scanned: true})
		}
		if d.IsDir() && !w.watched[p] {
			w.addTree(p, false) // the walk goes on into it and checks times
		}
		return nil
	})
}

func (w *Watcher) rel(p string) string {
	r, err := filepath.Rel(w.root, p)
	if err != nil {
		return filepath.ToSlash(p)
	}
	return filepath.ToSlash(r)
}

// incompleteOutside marks the record incomplete for a gap that may cover
// the extra locations too. Called with mu held (or before the loop runs).
func (w *Watcher) incompleteOutside(reason string) {
	w.rec.OutsideIncomplete = true
	w.incomplete(reason)
}

// rescanExtras records the entries of the extra locations changed since the
// run started, after their queue overflowed. Called with mu held.
func (w *Watcher) rescanExtras() {
	for dir, extras := range w.extraDir {
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, d := range entries {
			info, err := d.Info()
			if err != nil || info.ModTime().Before(w.start) {
				continue
			}
			for _, x := range extras {
				if x.Path != dir && d.Name() != filepath.Base(x.Path) && d.Name() != filepath.Base(x.Path)+".lock" {
					continue
				}
				w.record(Event{Time: time.Now(), Op: OpWrite, Path: filepath.ToSlash(filepath.Join(dir, d.Name())), Kind: x.Kind, Dir: d.IsDir(), Scanned: true}, x.Skip)
				break
			}
		}
	}
	if info, err := os.Lstat(filepath.Join(w.root, ".git")); err == nil && !info.ModTime().Before(w.start) {
		w.recordLocked(Event{Time: time.Now(), Op: OpWrite, Path: ".git", Scanned: true})
	}
}

func (w *Watcher) incomplete(reason string) {
	w.rec.Incomplete = true
	for _, r := range w.reasons {
		if r == reason {
			return
		}
	}
	w.reasons = append(w.reasons, reason)
}

func (w *Watcher) loop(ctx context.Context) {
	defer close(w.done)
	events, errs := w.fsw.Events, w.fsw.Errors
	var xEvents chan fsnotify.Event
	var xErrs chan error
	if w.fsx != nil {
		xEvents, xErrs = w.fsx.Events, w.fsx.Errors
	}
	// Both instances are closed together by Stop; the loop ends when the
	// worktree's is.
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-events:
			if !ok {
				return
			}
			w.handle(ev.Event, ev.Dir, false)
		case err, ok := <-errs:
			if !ok {
				return
			}
			w.mu.Lock()
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				w.rec.Overflows++
				w.incomplete("the kernel event queue of the worktree overflowed; changes made and undone during the overflow may be missing")
				w.rescan()
			} else {
				w.incomplete(fmt.Sprintf("watcher error: %v", err))
			}
			w.mu.Unlock()
			w.flush()
		case ev, ok := <-xEvents:
			if !ok {
				xEvents = nil
				continue
			}
			w.handle(ev, false, true)
		case err, ok := <-xErrs:
			if !ok {
				xErrs = nil
				continue
			}
			w.mu.Lock()
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				w.rec.Overflows++
				w.incompleteOutside("the kernel event queue of the git internals and the worktree's surroundings overflowed; changes made and undone there during the overflow may be missing")
				w.rescanExtras()
			} else {
				w.incompleteOutside(fmt.Sprintf("watcher error: %v", err))
			}
			w.mu.Unlock()
			w.flush()
		}
	}
}

// opNames splits an fsnotify operation set into the names Event.Op uses.
func opNames(op fsnotify.Op) []string {
	var names []string
	for _, o := range []struct {
		op   fsnotify.Op
		name string
	}{
		{fsnotify.Create, OpCreate},
		{fsnotify.Write, OpWrite},
		{fsnotify.Remove, OpRemove},
		{fsnotify.Rename, OpRename},
		{fsnotify.Chmod, OpChmod},
	} {
		if op.Has(o.op) {
			names = append(names, o.name)
		}
	}
	return names
}

// handle records one event; dir says the kernel reported the entry as a
// directory.
func (w *Watcher) handle(ev fsnotify.Event, dir, fromExtras bool) {
	now := time.Now()
	parent := filepath.Dir(ev.Name)
	if w.barrierDir != "" && parent == w.barrierDir {
		if ev.Has(fsnotify.Create) {
			ch := w.barrier
			if fromExtras {
				ch = w.barrierX
			}
			select {
			case ch <- struct{}{}:
			default:
			}
		}
		return
	}
	if ev.Name == w.root {
		return
	}
	w.mu.Lock()
	if extras, ok := w.extraDir[parent]; ok {
		base := filepath.Base(ev.Name)
		for _, x := range extras {
			if x.Path != parent && base != filepath.Base(x.Path) && base != filepath.Base(x.Path)+".lock" {
				continue
			}
			for _, op := range opNames(ev.Op) {
				w.record(Event{Time: now, Op: op, Path: filepath.ToSlash(ev.Name), Kind: x.Kind}, x.Skip)
			}
			break
		}
	} else if strings.HasPrefix(ev.Name, w.root+string(filepath.Separator)) {
		w.handleWorktree(ev, dir, now)
	}
	w.mu.Unlock()
	w.flush()
}

// handleWorktree records one event inside the worktree; dir says the
// kernel reported the entry as a directory. A directory it created is
// watched and scanned at once; one already gone marks the record
// incomplete. Called with mu held.
func (w *Watcher) handleWorktree(ev fsnotify.Event, dir bool, now time.Time) {
	rel := w.rel(ev.Name)
	if w.opts.Ignore != nil && w.opts.Ignore(rel) {
		return
	}
	isDir := w.watched[ev.Name] || dir
	gone := false
	if ev.Has(fsnotify.Create) {
		fi, err := os.Lstat(ev.Name)
		switch {
		case err == nil && fi.IsDir():
			isDir = true
		case err != nil && dir:
			w.vanished(rel)
			gone = true
		}
	}
	if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
		delete(w.watched, ev.Name)
	}
	for _, op := range opNames(ev.Op) {
		w.recordLocked(Event{Time: now, Op: op, Path: rel, Dir: isDir})
	}
	if ev.Has(fsnotify.Create) && isDir && !gone && rel != ".git" {
		w.addTree(ev.Name, true)
	}
}

// flush passes recorded events (kernel-reported and scanned alike) to
// OnEvent, in order, outside the lock. Only the loop goroutine calls it.
func (w *Watcher) flush() {
	if w.opts.OnEvent == nil {
		return
	}
	w.mu.Lock()
	events := w.pending
	w.pending = nil
	w.mu.Unlock()
	for _, e := range events {
		w.opts.OnEvent(e)
	}
}

// recordLocked adds one worktree event to the record. Called with mu held.
func (w *Watcher) recordLocked(e Event) { w.record(e, nil) }

// record adds one event, with the Skip function of its extra location.
// Called with mu held.
func (w *Watcher) record(e Event, skip func(string) bool) {
	w.rec.Total++
	if w.opts.OnEvent != nil {
		w.pending = append(w.pending, e)
	}
	if len(w.rec.Events) < w.opts.MaxEvents {
		w.rec.Events = append(w.rec.Events, e)
		w.skips = append(w.skips, skip)
	}
	key := e.Kind + "\x00" + e.Path
	acc := w.touched[key]
	if acc == nil {
		if len(w.touched) >= w.opts.MaxPaths {
			reason := fmt.Sprintf("more than %d distinct paths changed; later ones were not recorded", w.opts.MaxPaths)
			if e.Kind != KindWorktree || e.Path == ".git" {
				w.incompleteOutside(reason)
			} else {
				w.incomplete(reason)
			}
			return
		}
		acc = &touchAcc{t: Touch{Path: e.Path, Kind: e.Kind, First: e.Time}, ops: map[string]bool{}, skip: skip}
		w.touched[key] = acc
	}
	acc.t.Count++
	acc.t.Last = e.Time
	acc.t.Dir = acc.t.Dir || e.Dir
	acc.ops[e.Op] = true
}

// Stop ends the watch and returns the record. Every change made before Stop
// was called is in the record (a marker file in a private directory acts as
// a barrier through the kernel queue). Stop may be called more than once.
func (w *Watcher) Stop() Record {
	w.stopOnce.Do(func() {
		if w.fsw != nil {
			w.drain()
			if w.fsx != nil {
				w.fsx.Close()
			}
			w.fsw.Close()
			<-w.done
		}
		if w.barrierDir != "" {
			os.RemoveAll(w.barrierDir)
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.vanishedDirs > 0 {
			more := ""
			if w.vanishedDirs > 1 {
				more = fmt.Sprintf(" (and %d more)", w.vanishedDirs-1)
			}
			w.incomplete(fmt.Sprintf("directory %s%s was created and removed before it could be watched; files made inside it are not in the record", w.firstVanished, more))
		}
		rec := w.rec
		rec.Events = nil
		skipped := map[string]bool{}
		skip := func(f func(string) bool, p string) bool {
			if f == nil {
				return false
			}
			if v, ok := skipped[p]; ok {
				return v
			}
			v := f(path.Base(p))
			skipped[p] = v
			return v
		}
		for i, e := range w.rec.Events {
			if !skip(w.skips[i], e.Path) {
				rec.Events = append(rec.Events, e)
			}
		}
		for _, acc := range w.touched {
			t := acc.t
			if skip(acc.skip, t.Path) {
				rec.Total -= t.Count
				continue
			}
			for op := range acc.ops {
				t.Ops = append(t.Ops, op)
			}
			sort.Strings(t.Ops)
			rec.Touched = append(rec.Touched, t)
		}
		sort.Slice(rec.Touched, func(i, j int) bool {
			a, b := rec.Touched[i], rec.Touched[j]
			if a.Kind != b.Kind {
				return a.Kind < b.Kind
			}
			return a.Path < b.Path
		})
		rec.Reason = strings.Join(w.reasons, "; ")
		w.final = rec
	})
	return w.final
}

// drain waits until every event queued before now has been handled, in
// both queues: a barrier file created in a directory both instances watch
// must come through each of them.
func (w *Watcher) drain() {
	if w.barrierDir == "" {
		w.mu.Lock()
		w.incompleteOutside("no barrier directory; the last changes before the stop may be missing")
		w.mu.Unlock()
		return
	}
	// A barrier file written while the kernel queue is still full is lost
	// with the overflow, so write new ones until one comes through.
	deadline := time.After(10 * time.Second)
	gotW, gotX := false, w.fsx == nil
	for !gotW || !gotX {
		f, err := os.CreateTemp(w.barrierDir, "barrier-*")
		if err != nil {
			w.mu.Lock()
			w.incompleteOutside(fmt.Sprintf("cannot write a barrier file (%v); the last changes before the stop may be missing", err))
			w.mu.Unlock()
			return
		}
		f.Close()
		tick := time.After(200 * time.Millisecond)
	wait:
		for !gotW || !gotX {
			select {
			case <-w.barrier:
				gotW = true
			case <-w.barrierX:
				gotX = true
			case <-w.done:
				return
			case <-tick:
				break wait
			case <-deadline:
				w.mu.Lock()
				if !gotX {
					w.incompleteOutside("the watcher did not catch up before the stop; the last changes may be missing")
				} else {
					w.incomplete("the watcher did not catch up before the stop; the last changes in the worktree may be missing")
				}
				w.mu.Unlock()
				return
			}
		}
	}
}

// watchFailure says why directory rel could not be watched, for the
// record's incompleteness; "" when it vanished meanwhile (no gap). Linux's
// inotify runs out of watches (ENOSPC); macOS's kqueue holds a descriptor
// for every watched directory and file, so there the watcher runs out of
// descriptors (EMFILE, ENFILE) instead.
func watchFailure(err error, rel string) string {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return ""
	case errors.Is(err, unix.ENOSPC):
		return "inotify watch limit reached (fs.inotify.max_user_watches); changes in unwatched directories are seen only after the run"
	case errors.Is(err, unix.EMFILE) || errors.Is(err, unix.ENFILE):
		return fmt.Sprintf("out of file descriptors watching %s (kqueue needs one per watched file: raise ulimit -n); changes in unwatched directories are seen only after the run", rel)
	}
	return fmt.Sprintf("cannot watch %s: %v", rel, err)
}
