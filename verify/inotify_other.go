//go:build !linux

package verify

import (
	"time"

	"github.com/fsnotify/fsnotify"
)

// treeWatcher watches the worktree's directories. Here it is fsnotify,
// which does not say whether an entry was a directory (Dir is never set).
type treeWatcher struct {
	Events chan treeEvent
	Errors chan error
	w      *fsnotify.Watcher
	done   chan struct{}
}

// treeEvent is one change in a watched directory; Dir says the entry was
// reported as a directory (never, here).
type treeEvent struct {
	fsnotify.Event
	Dir bool
}

func newTreeWatcher(buffer int, _ func(dir string) bool) (*treeWatcher, error) {
	w, err := fsnotify.NewBufferedWatcher(uint(buffer))
	if err != nil {
		return nil, err
	}
	t := &treeWatcher{Events: make(chan treeEvent, buffer), Errors: w.Errors, w: w, done: make(chan struct{})}
	go func() {
		defer close(t.done)
		defer close(t.Events)
		for ev := range w.Events {
			t.Events <- treeEvent{Event: ev}
		}
	}()
	return t, nil
}

// Add watches the directory dir (not recursively).
func (t *treeWatcher) Add(dir string) error { return t.w.Add(dir) }

// Close ends the watch.
func (t *treeWatcher) Close() error {
	err := t.w.Close()
	<-t.done
	return err
}

// changedSinceBirth would report whether dir, born at or after since, was
// modified after it was created; without a birth time here it cannot tell.
func changedSinceBirth(string, time.Time) bool { return false }
