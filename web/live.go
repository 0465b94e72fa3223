package web

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
)

// How open pages learn that the repository changed. Every ref write of
// agentmine and of git itself replaces a file under the common git dir's
// refs/ (through a .lock file renamed into place) or rewrites packed-refs;
// notes are refs too (refs/notes/agentmine), and a merge moves a branch
// under refs/heads. So an inotify watch on every directory under refs/ and
// on the common dir itself (packed-refs) sees every change that can move a
// task's status, at no cost while nothing happens. Events are coalesced
// for debounce and then one change is broadcast to every open page, which
// fetches itself again.
//
// One thing moves a status without writing a ref: a supervisor that dies
// without recording an outcome (its session becomes lost). While a page
// shows running work, a tick every tickEvery refreshes it, which also
// keeps elapsed times current.
const (
	debounce  = 50 * time.Millisecond
	tickEvery = 5 * time.Second
	// pollEvery is how often the fallback fingerprint is taken when
	// inotify is not available.
	pollEvery = 500 * time.Millisecond
)

// live watches the repository and fans changes out to subscribers.
type live struct {
	common string
	log    io.Writer
	mu     sync.Mutex
	seq    uint64
	// ticks counts the changes sent by the tick, not by the refs.
	ticks uint64
	subs  map[chan uint64]struct{}
	// running is how many running sessions the last page showed.
	running atomic.Int64
	stop    chan struct{}
	once    sync.Once
	// wg counts the watching goroutines; close waits for them.
	wg sync.WaitGroup
	// Watching says how changes are seen: "inotify" or "polling".
	watching string
}

func newLive(common string, log io.Writer) *live { return newLiveWith(common, log, false) }

// newLiveWith is newLive; poll forces the polling fallback.
func newLiveWith(common string, log io.Writer, poll bool) *live {
	l := &live{common: common, log: log, subs: map[chan uint64]struct{}{}, stop: make(chan struct{})}
	var w *fsnotify.Watcher
	err := errors.New("polling was asked for")
	if !poll {
		w, err = fsnotify.NewWatcher()
	}
	if err == nil {
		err = l.watchTree(w, filepath.Join(common, "refs"))
		if err == nil {
			err = w.Add(common)
		}
		if err != nil {
			w.Close()
		}
	}
	if err != nil {
		fmt.Fprintf(log, "warning: watching the refs for changes failed (%v); polling them every %s instead\n", err, pollEvery)
		l.watching = "polling"
		l.run(l.poll)
	} else {
		l.watching = "inotify"
		l.run(func() { l.watch(w) })
	}
	l.run(l.tick)
	return l
}

// close stops the watching goroutines and waits for them to end.
func (l *live) close() {
	l.once.Do(func() { close(l.stop) })
	l.wg.Wait()
}

// run starts f as a watching goroutine.
func (l *live) run(f func()) {
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		f()
	}()
}

// seen records how many running sessions a page just showed.
func (l *live) seen(running int) { l.running.Store(int64(running)) }

// watchTree adds a watch for dir and every directory beneath it.
func (l *live) watchTree(w *fsnotify.Watcher, dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == dir {
				return err
			}
			return nil // vanished meanwhile
		}
		if d.IsDir() {
			return w.Add(p)
		}
		return nil
	})
}

// relevant reports whether an event in the common dir can change what the
// board shows: anything under refs/, packed-refs, and HEAD; not the index,
// logs, objects or agentmine's own local files.
func (l *live) relevant(name string) bool {
	rel, err := filepath.Rel(l.common, name)
	if err != nil {
		return false
	}
	rel = strings.TrimSuffix(rel, ".lock")
	return rel == "packed-refs" || rel == "HEAD" || rel == "refs" || strings.HasPrefix(rel, "refs"+string(filepath.Separator))
}

func (l *live) watch(w *fsnotify.Watcher) {
	defer w.Close()
	var fire <-chan time.Time
	for {
		select {
		case <-l.stop:
			return
		case ev, ok := <-w.Events:
			if !ok {
				return
			}
			if !l.relevant(ev.Name) {
				continue
			}
			if ev.Has(fsnotify.Create) {
				if fi, err := os.Lstat(ev.Name); err == nil && fi.IsDir() {
					l.watchTree(w, ev.Name)
				}
			}
			if fire == nil {
				fire = time.After(debounce)
			}
		case err, ok := <-w.Errors:
			if !ok {
				return
			}
			// An overflowed queue lost events: tell the pages anyway.
			fmt.Fprintf(l.log, "warning: watching the refs: %v\n", err)
			l.broadcast()
		case <-fire:
			fire = nil
			l.broadcast()
		}
	}
}

// poll is the fallback without inotify: a fingerprint of the modification
// times and sizes of packed-refs and of every directory under refs/ (a
// ref written by rename changes its directory's time). Each look stats the
// directories found by the last walk; the tree is walked again (to find
// new directories) only after something changed, because reading a
// directory of 10,000 loose refs on every look is what costs.
func (l *live) poll() {
	dirs := l.walkDirs()
	last := l.fingerprint(dirs)
	t := time.NewTicker(pollEvery)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
			if f := l.fingerprint(dirs); f != last {
				dirs = l.walkDirs()
				last = l.fingerprint(dirs)
				l.broadcast()
			}
		}
	}
}

// walkDirs lists the directories under refs/.
func (l *live) walkDirs() []string {
	var dirs []string
	filepath.WalkDir(filepath.Join(l.common, "refs"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	return dirs
}

func (l *live) fingerprint(dirs []string) string {
	var b strings.Builder
	for _, p := range append([]string{filepath.Join(l.common, "packed-refs")}, dirs...) {
		if fi, err := os.Stat(p); err == nil {
			fmt.Fprintf(&b, "%s %d %d\n", p, fi.ModTime().UnixNano(), fi.Size())
		} else {
			fmt.Fprintf(&b, "%s gone\n", p)
		}
	}
	return b.String()
}

func (l *live) tick() {
	t := time.NewTicker(tickEvery)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
			if l.running.Load() > 0 {
				l.send(true)
			}
		}
	}
}

func (l *live) broadcast() { l.send(false) }

// send tells every page of a change; tick says it is the tick's, not a
// change of the refs.
func (l *live) send(tick bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seq++
	if tick {
		l.ticks++
	}
	for c := range l.subs {
		select {
		case c <- l.seq:
		default: // a slow page gets the latest change when it catches up
		}
	}
}

func (l *live) subscribe() (chan uint64, func()) {
	c := make(chan uint64, 1)
	l.mu.Lock()
	l.subs[c] = struct{}{}
	l.mu.Unlock()
	return c, func() {
		l.mu.Lock()
		delete(l.subs, c)
		l.mu.Unlock()
	}
}

// events is the page's change stream: one "change" event per coalesced
// change of the refs, and a comment line every 15 s so proxies and the
// browser keep the connection.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	sseHeaders(w)
	w.WriteHeader(http.StatusOK)
	fmt.Fprintf(w, "retry: 500\n: watching by %s\n\n", s.live.watching)
	if rc.Flush() != nil {
		return
	}
	c, done := s.live.subscribe()
	defer done()
	ping := time.NewTicker(15 * time.Second)
	defer ping.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-s.live.stop:
			return
		case seq := <-c:
			fmt.Fprintf(w, "event: change\ndata: %d\n\n", seq)
		case <-ping.C:
			fmt.Fprint(w, ": ping\n\n")
		}
		if rc.Flush() != nil {
			return
		}
	}
}

func sseHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	h.Set("X-Content-Type-Options", "nosniff")
}
