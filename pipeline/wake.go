package pipeline

import (
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// waker wakes the loop when a watched process exits. The loop is driven
// by its workers' ends, not by a clock: every detached supervisor this run
// started (or found running on this host) is watched through a pidfd, and
// its exit wakes the loop at once. The poll (Options.Poll) is only the
// fallback for what no watched process signals.
type waker struct {
	ch      chan struct{}
	mu      sync.Mutex
	watched map[int]bool
	// quit is the read end of a pipe whose write end close closes: it
	// ends the watches when the loop ends (-1: no pipe).
	quit, quitW int
	closed      bool
	// exited is set when a watched process exits, until takeExited.
	exited bool
}

func newWaker() *waker {
	w := &waker{ch: make(chan struct{}, 1), watched: map[int]bool{}, quit: -1, quitW: -1}
	var p [2]int
	if err := unix.Pipe(p[:]); err == nil {
		unix.CloseOnExec(p[0])
		unix.CloseOnExec(p[1])
		w.quit, w.quitW = p[0], p[1]
	}
	return w
}

// close ends the watches still waiting; the waker is not used after it.
func (w *waker) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	if w.quitW >= 0 {
		unix.Close(w.quitW)
		w.quitW = -1
	}
	if len(w.watched) == 0 && w.quit >= 0 {
		unix.Close(w.quit)
		w.quit = -1
	}
}

// poke wakes the loop; a poke while the loop is busy is kept for its next
// sleep, so no exit is missed.
func (w *waker) poke() {
	select {
	case w.ch <- struct{}{}:
	default:
	}
}

// watch wakes the loop when process pid (started at start, see
// launch.StartTime; 0 when unknown) exits. A process already gone wakes
// it at once. Where pidfds are not available, nothing is watched and the
// poll stands in.
func (w *waker) watch(pid int, start uint64) {
	if pid <= 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.watched[pid] {
		return
	}
	if w.closed {
		return
	}
	w.watched[pid] = true
	quit := w.quit
	go func() {
		exited := waitPid(pid, start, quit)
		w.mu.Lock()
		delete(w.watched, pid)
		if exited {
			w.exited = true
		}
		if w.closed && len(w.watched) == 0 && w.quit >= 0 {
			unix.Close(w.quit) // the last watch after close
			w.quit = -1
		}
		w.mu.Unlock()
		if exited {
			w.poke()
		}
	}()
}

// takeExited reports whether a watched process exited since the last
// call.
func (w *waker) takeExited() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	e := w.exited
	w.exited = false
	return e
}

// sleep returns after d, when a watched process exits (or was poked), or
// when done is closed (nil: never). It reports whether it was woken by a
// poke (an exit included), not by d passing or done.
func (w *waker) sleep(d time.Duration, done <-chan struct{}) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-w.ch:
		return true
	case <-t.C:
	case <-done:
	}
	return false
}

// nextWake is how long the loop sleeps after a look: until the earliest
// backoff ends (next; zero: none), at most the poll.
func nextWake(next time.Time, poll time.Duration) time.Duration {
	if next.IsZero() {
		return poll
	}
	return min(poll, max(time.Until(next), 10*time.Millisecond))
}
