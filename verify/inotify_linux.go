package verify

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/fsnotify/fsnotify"
	"golang.org/x/sys/unix"
)

// treeWatcher watches the worktree's directories with an inotify instance
// of its own, like fsnotify does, but keeps what fsnotify drops: whether
// the entry an event names is a directory (IN_ISDIR). A directory created
// and removed before the watcher could look at it is then known to have
// been a directory, whose files the record cannot vouch for.
type treeWatcher struct {
	Events chan treeEvent
	Errors chan error

	fd   int
	file *os.File
	mu   sync.Mutex
	path map[int]string // watch descriptor -> directory
	wd   map[string]int // directory -> watch descriptor
	// closing is closed by Close, so that the reader stops sending to a
	// loop that no longer reads; done when the reader has stopped.
	closing chan struct{}
	done    chan struct{}
	once    sync.Once
	// early, when set, names the new directories to watch as soon as
	// their creation is read, before the event is passed on: the window
	// in which files can come and go inside a new directory unseen is
	// then one system call, not a trip through the watcher's loop.
	early func(dir string) bool
}

// treeEvent is one change in a watched directory; Dir says the kernel
// reported the entry as a directory.
type treeEvent struct {
	fsnotify.Event
	Dir bool
}

// treeMask is what each directory is watched for (what fsnotify asks).
const treeMask = unix.IN_MOVED_TO | unix.IN_MOVED_FROM | unix.IN_CREATE | unix.IN_ATTRIB | unix.IN_MODIFY |
	unix.IN_MOVE_SELF | unix.IN_DELETE | unix.IN_DELETE_SELF

func newTreeWatcher(buffer int, early func(dir string) bool) (*treeWatcher, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, os.NewSyscallError("inotify_init1", err)
	}
	t := &treeWatcher{
		Events:  make(chan treeEvent, buffer),
		Errors:  make(chan error, 1),
		fd:      fd,
		file:    os.NewFile(uintptr(fd), "inotify"),
		path:    map[int]string{},
		wd:      map[string]int{},
		closing: make(chan struct{}),
		done:    make(chan struct{}),
	}
	go t.read()
	return t, nil
}

// Add watches the directory dir (not recursively).
func (t *treeWatcher) Add(dir string) error {
	dir = filepath.Clean(dir)
	t.mu.Lock()
	defer t.mu.Unlock()
	wd, err := unix.InotifyAddWatch(t.fd, dir, treeMask|unix.IN_ONLYDIR)
	if err != nil {
		return &os.PathError{Op: "inotify_add_watch", Path: dir, Err: err}
	}
	// A directory renamed and watched again keeps its descriptor.
	if old, ok := t.path[wd]; ok && old != dir {
		delete(t.wd, old)
	}
	t.path[wd], t.wd[dir] = dir, wd
	return nil
}

// Close ends the watch; Events and Errors are closed once the reader has
// stopped.
func (t *treeWatcher) Close() error {
	var err error
	t.once.Do(func() {
		close(t.closing)
		err = t.file.Close()
	})
	<-t.done
	return err
}

// send passes one event or error on, unless the watcher is closing.
func (t *treeWatcher) send(ev *treeEvent, err error) bool {
	if ev != nil {
		select {
		case t.Events <- *ev:
			return true
		case <-t.closing:
			return false
		}
	}
	select {
	case t.Errors <- err:
		return true
	case <-t.closing:
		return false
	}
}

func (t *treeWatcher) read() {
	defer close(t.done)
	defer close(t.Events)
	defer close(t.Errors)
	var buf [65536]byte
	for {
		n, err := t.file.Read(buf[:])
		if err != nil {
			if !errors.Is(err, os.ErrClosed) {
				t.send(nil, err)
			}
			return
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			raw := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			name := strings.TrimRight(string(buf[off+unix.SizeofInotifyEvent:off+unix.SizeofInotifyEvent+int(raw.Len)]), "\x00")
			off += unix.SizeofInotifyEvent + int(raw.Len)
			if raw.Mask&unix.IN_Q_OVERFLOW != 0 {
				if !t.send(nil, fsnotify.ErrEventOverflow) {
					return
				}
				continue
			}
			if ev, ok := t.event(int(raw.Wd), raw.Mask, name); ok && !t.send(&ev, nil) {
				return
			}
		}
	}
}

// event translates one inotify event as fsnotify would, keeping IN_ISDIR.
func (t *treeWatcher) event(wd int, mask uint32, name string) (treeEvent, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	dir, ok := t.path[wd]
	if !ok {
		return treeEvent{}, false
	}
	if mask&unix.IN_IGNORED != 0 {
		delete(t.path, wd)
		if t.wd[dir] == wd {
			delete(t.wd, dir)
		}
		return treeEvent{}, false
	}
	if mask&(unix.IN_DELETE_SELF|unix.IN_MOVE_SELF) != 0 {
		// The parent's own event says it, when the parent is watched.
		if _, ok := t.wd[filepath.Dir(dir)]; ok {
			return treeEvent{}, false
		}
	}
	p := dir
	if name != "" {
		p = filepath.Join(dir, name)
	}
	ev := treeEvent{Event: fsnotify.Event{Name: p}, Dir: mask&unix.IN_ISDIR != 0}
	if ev.Dir && mask&(unix.IN_CREATE|unix.IN_MOVED_TO) != 0 && t.early != nil && t.early(p) {
		if wd, err := unix.InotifyAddWatch(t.fd, p, treeMask|unix.IN_ONLYDIR); err == nil {
			if old, ok := t.path[wd]; ok && old != p {
				delete(t.wd, old)
			}
			t.path[wd], t.wd[p] = p, wd
		}
	}
	if mask&(unix.IN_CREATE|unix.IN_MOVED_TO) != 0 {
		ev.Op |= fsnotify.Create
	}
	if mask&(unix.IN_DELETE|unix.IN_DELETE_SELF) != 0 {
		ev.Op |= fsnotify.Remove
	}
	if mask&unix.IN_MODIFY != 0 {
		ev.Op |= fsnotify.Write
	}
	if mask&(unix.IN_MOVE_SELF|unix.IN_MOVED_FROM) != 0 {
		ev.Op |= fsnotify.Rename
	}
	if mask&unix.IN_ATTRIB != 0 {
		ev.Op |= fsnotify.Chmod
	}
	return ev, ev.Op != 0
}

// changedSinceBirth reports whether the directory dir, born at or after
// since, was modified (an entry added, removed or renamed) after it was
// created, as far as its timestamps can tell: its modification time is
// later than its birth time. Timestamps tick coarsely, so a change within
// the same tick as the creation goes unseen; false when the file system
// keeps no birth time.
func changedSinceBirth(dir string, since time.Time) bool {
	var st unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, dir, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_BTIME|unix.STATX_MTIME, &st); err != nil {
		return false
	}
	if st.Mask&unix.STATX_BTIME == 0 {
		return false
	}
	b, m := st.Btime, st.Mtime
	if time.Unix(b.Sec, int64(b.Nsec)).Before(since.Truncate(time.Second)) {
		return false
	}
	return m.Sec > b.Sec || m.Sec == b.Sec && m.Nsec > b.Nsec
}
