package gitstore

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// A write is acknowledged only once the objects its refs point at are
// sure to stay. git's own race: `git gc --prune=now` lists what the refs
// reach, then deletes every loose object outside that list ("now" means
// every such object, however new: git reads it as the end of time). An
// object written before the listing and pointed at by a ref only after it
// is deleted although the ref now names it: the write "succeeded" and the
// ref points at nothing. Plain git loses writes this way (docs/dependencies.md has the
// numbers, from `just prune-race`).
//
// The store closes the race for the objects it writes itself:
//
//   - it remembers each object it wrote, content included, until a ref
//     transaction points at it (written);
//   - after `update-ref` commits, when a `git gc` that may prune fresh
//     objects is running (its gc.pid names a live process, mayPruneFresh),
//     it waits for that gc to end: a gc that began
//     before the transaction may still delete what the refs now reach, one
//     that begins after it sees the refs. Then every object of the
//     transaction's new tips that this process wrote is checked for, and
//     written again from the content kept when it is gone;
//   - a transaction git refuses because its new value is missing (pruned
//     between the write and the ref update) has its objects written again,
//     once the gc ended, and is retried;
//   - creating a loose object retries when a prune removed the fan-out
//     directory or the temporary file under it (writeLoose).
//
// Only then does Transact return. An object it cannot bring back (its
// content is no longer kept) is an error naming the missing object, never
// a silent success. A `git prune` or `git repack -a -d` run on its own,
// outside `git gc`, leaves no gc.pid to wait for: its deletions are caught
// only when they happened before the check.

// keptWrittenLimit bounds the content kept of objects not yet pointed at
// by a ref (those of writes that never got their transaction pile up in a
// long-lived process); past it the memory is cleared, and the objects
// written before are no longer looked after.
const keptWrittenLimit = 64 << 20

// secureRounds bounds the rounds of "wait for gc, write back what is
// missing" after a transaction.
const secureRounds = 10

// writtenObject is an object this process wrote: its type and content.
type writtenObject struct {
	typ  string
	data []byte
}

// written holds the objects this process wrote that no transaction has
// secured yet.
type written struct {
	mu   sync.Mutex
	objs map[string]writtenObject
	size int
}

// remember keeps the object id (type typ, content data) until a
// transaction secures it.
func (w *written) remember(id, typ string, data []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.objs[id]; ok {
		return
	}
	if w.objs == nil || w.size+len(data) > keptWrittenLimit {
		w.objs, w.size = map[string]writtenObject{}, 0
	}
	w.objs[id] = writtenObject{typ: typ, data: bytes.Clone(data)}
	w.size += len(data)
}

// lookup returns the object id if this process wrote it and it is still
// kept.
func (w *written) lookup(id string) (writtenObject, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	o, ok := w.objs[id]
	return o, ok
}

// forget drops the objects ids, secured.
func (w *written) forget(ids []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, id := range ids {
		if o, ok := w.objs[id]; ok {
			w.size -= len(o.data)
			delete(w.objs, id)
		}
	}
}

// newTips returns the new values of the refs ops create or update.
func newTips(ops []RefOp) []string {
	var tips []string
	for _, op := range ops {
		if (op.Verb == "create" || op.Verb == "update") && op.New != "" {
			tips = append(tips, op.New)
		}
	}
	return tips
}

// ownObjects returns the objects reachable from tips, through objects
// this process wrote and still keeps, that it wrote: what a prune may
// have removed from under the transaction and what the store can put back.
func (s *Store) ownObjects(tips []string) (own []string) {
	seen := map[string]bool{}
	var walk func(id string)
	walk = func(id string) {
		if seen[id] {
			return
		}
		seen[id] = true
		o, ok := s.written.lookup(id)
		if !ok {
			return
		}
		own = append(own, id)
		for _, c := range s.children(o) {
			walk(c)
		}
	}
	for _, t := range tips {
		walk(t)
	}
	return own
}

// children returns the objects a commit (its tree and parents) or a tree
// (its entries, submodules aside) names.
func (s *Store) children(o writtenObject) []string {
	var ids []string
	switch o.typ {
	case "commit":
		for _, l := range strings.Split(string(o.data), "\n") {
			if l == "" {
				break
			}
			if id, ok := strings.CutPrefix(l, "tree "); ok {
				ids = append(ids, id)
			} else if id, ok := strings.CutPrefix(l, "parent "); ok {
				ids = append(ids, id)
			}
		}
	case "tree":
		n := s.hashLen()
		data := o.data
		for len(data) > 0 {
			sp := bytes.IndexByte(data, ' ')
			nul := bytes.IndexByte(data, 0)
			if sp < 0 || nul < sp || len(data) < nul+1+n {
				break
			}
			if string(data[:sp]) != "160000" {
				ids = append(ids, hex.EncodeToString(data[nul+1:nul+1+n]))
			}
			data = data[nul+1+n:]
		}
	}
	return ids
}

// secure makes sure that the objects the new tips of ops reach, among
// those this process wrote, are in the object directory once any gc that
// was running has ended (see the comment at the top). A tip it did not
// write git checked when it moved the ref; there is nothing to write back.
func (s *Store) secure(ctx context.Context, ops []RefOp) error {
	own := s.ownObjects(newTips(ops))
	if len(own) == 0 {
		return nil
	}
	if err := s.writeBack(ctx, own, true); err != nil {
		return err
	}
	s.written.forget(own)
	return nil
}

// writeBack waits for a running gc to end, then writes again any of ids
// (objects this process wrote) that is gone. With verify (a ref reaches
// them now, so no gc that begins later removes them) it checks again,
// and again, until none is gone; without (before the transaction, which
// is retried with them) it writes back once.
func (s *Store) writeBack(ctx context.Context, ids []string, verify bool) error {
	for round := 0; ; round++ {
		if err := s.waitForGC(ctx); err != nil {
			return err
		}
		var gone []string
		for _, id := range ids {
			if !s.present(id) {
				gone = append(gone, id)
			}
		}
		if len(gone) == 0 {
			return nil
		}
		if round == secureRounds {
			return fmt.Errorf("updating refs: object %s keeps being removed by a concurrent prune", gone[0])
		}
		for _, id := range gone {
			o, ok := s.written.lookup(id)
			if !ok {
				return fmt.Errorf("updating refs: object %s was removed by a concurrent prune and its content is no longer known", id)
			}
			if err := s.storeLoose(ctx, id, o); err != nil {
				return fmt.Errorf("updating refs: writing back object %s: %w", id, err)
			}
		}
		if !verify {
			return nil
		}
		ids = gone
	}
}

// gcWaitLimit bounds how long a write waits for a running gc to end;
// git itself takes a gc.pid older than 12 hours for a stale one.
const gcWaitLimit = 30 * time.Minute

// waitForGC returns once no `git gc` that was running when it was called
// runs any longer: its gc.pid (in the common git dir, "<pid> <host>",
// removed when it ends) is gone or names another process, or that process
// ended. A gc.pid of another host, or older than 12 hours (as git judges
// it), is not waited for. A context that ends stops the wait.
func (s *Store) waitForGC(ctx context.Context) error {
	path := filepath.Join(s.loc.CommonDir, "gc.pid")
	first, pid, ok := runningGC(path)
	if !ok || !s.mayPruneFresh(pid) {
		return nil
	}
	deadline := time.Now().Add(gcWaitLimit)
	for delay := time.Millisecond; time.Now().Before(deadline); delay = min(2*delay, 50*time.Millisecond) {
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("updating refs: waiting for git gc (pid %d) to end before checking the objects written: %w", pid, ctx.Err())
		case <-t.C:
		}
		if now, _, ok := runningGC(path); !ok || now != first {
			return nil
		}
	}
	return nil
}

// mayPruneFresh reports whether the gc with process id pid may delete an
// object written moments ago. Only a gc known to prune with git's default
// expiry (two weeks: fresh objects stay, and its repack keeps unreachable
// ones) or not at all is not waited for, as `git gc --auto` started in the
// background by an ordinary git command usually is; whatever cannot be
// told (its command line unreadable, another expiry) is.
func (s *Store) mayPruneFresh(pid int) bool {
	raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	if err != nil {
		return true
	}
	args := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
	expiry := ""
	for _, a := range args[1:] {
		switch {
		case a == "--no-prune":
			return false
		case a == "--prune":
			expiry = "" // the configured or default expiry
		case strings.HasPrefix(a, "--prune="):
			expiry = strings.TrimPrefix(a, "--prune=")
		}
	}
	if expiry == "" {
		expiry, _ = s.Config("gc.pruneexpire")
	}
	switch expiry {
	case "", "2.weeks.ago", "never", "false":
		return false
	}
	return true
}

// runningGC reads gc.pid at path: its content, and the pid it names when
// that process runs on this host and the file is recent.
func runningGC(path string) (content string, pid int, running bool) {
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > 1024 || time.Since(fi.ModTime()) > 12*time.Hour {
		return "", 0, false
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", 0, false
	}
	f := strings.Fields(string(data))
	if len(f) != 2 {
		return "", 0, false
	}
	pid, err = strconv.Atoi(f[0])
	if err != nil || pid <= 0 {
		return "", 0, false
	}
	if host, err := os.Hostname(); err != nil || host != f[1] {
		return "", 0, false
	}
	if err := unix.Kill(pid, 0); err != nil && !errors.Is(err, unix.EPERM) {
		return "", 0, false
	}
	return string(data), pid, true
}

// storeLoose writes the object id again as a loose object.
func (s *Store) storeLoose(ctx context.Context, id string, o writtenObject) error {
	if s.sharedRepository() {
		// git knows the permissions the setting asks for.
		_, err := s.git.RunInput(ctx, bytes.NewReader(o.data), "hash-object", "-w", "-t", o.typ, "--stdin")
		return err
	}
	return writeLoose(&s.deflaters, s.objDir, id, objectHeader(o.typ, o.data), o.data)
}

// present reports whether the object id is in the repository's own
// object directory, loose or in a pack.
func (s *Store) present(id string) bool {
	if _, err := os.Stat(filepath.Join(s.objDir, id[:2], id[2:])); err == nil {
		return true
	}
	db := s.objects()
	return db != nil && db.haveHex(id)
}

// isMissingObjectRefusal recognises update-ref refusing a new value whose
// object does not exist.
func isMissingObjectRefusal(err error) bool {
	return err != nil && strings.Contains(err.Error(), "nonexistent object")
}
