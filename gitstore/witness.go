package gitstore

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
	"golang.org/x/sys/unix"
)

// The journal file records; it cannot prove: any process of the user can
// append a line to it, naming any pid and no session. So a supervisor does
// not take the file's word for what agentmine wrote during its run. It
// registers (RegisterSupervisor's file) and listens on an abstract UNIX
// socket named after the repository, its pid and its start time: its
// witness. Every agentmine process that journals a write first hands its
// lines to the witness of every registered supervisor and waits for the
// answer. The witness asks the kernel who is on the other end
// (SO_PEERCRED: a pid the sender cannot choose), reads that live process's
// start time while it waits, and believes a line only if it names that
// pid and start time. A sender that descends from the supervisor (its
// worker, a double-forked orphan the supervisor adopted as subreaper, the
// DoD) writes for the worker, whatever its line says. Only lines the
// witness believed as agentmine's own excuse a ref change (Witnessed).
//
// A writer reads the registrations and finishes its ref transaction under
// a shared lock, and a supervisor registers and takes its first snapshot
// of the refs under the exclusive lock: a write is either over before the
// snapshot or seen by the witness.

// witnessLockFile serialises registrations against writers.
const witnessLockFile = "supervisors.lock"

// witnessLockWait bounds how long either side waits for the lock: a
// process that holds it forever (a worker at level none can) slows every
// write down by this much, and the write goes on unwitnessed (then the
// supervisors running at that moment hold it against their workers).
const witnessLockWait = 5 * time.Second

// witnessTimeout bounds a writer's exchange with one witness.
const witnessTimeout = 10 * time.Second

// witnessMaxBytes bounds what a witness reads from one sender.
const witnessMaxBytes = 16 << 20

// witnessAddr is the abstract socket name of the witness of the supervisor
// pid (started at start) of the repository whose common dir is common.
func witnessAddr(common string, pid int, start uint64) string {
	sum := sha256.Sum256([]byte(common))
	return fmt.Sprintf("@agentmine-witness-%s-%d-%d", hex.EncodeToString(sum[:8]), pid, start)
}

// lockWitness takes the witness lock (how: unix.LOCK_SH or LOCK_EX),
// waiting at most witnessLockWait. The returned function releases it; when
// the lock could not be had it does nothing.
func (s *Store) lockWitness(how int) func() {
	dir := filepath.Join(s.loc.CommonDir, "agentmine")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return func() {}
	}
	f, err := os.OpenFile(filepath.Join(dir, witnessLockFile), os.O_CREATE|os.O_RDONLY, 0o644)
	if err != nil {
		return func() {}
	}
	deadline := time.Now().Add(witnessLockWait)
	for pause := time.Millisecond; ; pause = min(2*pause, 50*time.Millisecond) {
		err := unix.Flock(int(f.Fd()), how|unix.LOCK_NB)
		if err == nil {
			return func() { unix.Flock(int(f.Fd()), unix.LOCK_UN); f.Close() }
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) || time.Now().After(deadline) {
			f.Close()
			return func() {}
		}
		time.Sleep(pause)
	}
}

// tellWitnesses hands the journal lines b to the witness of every
// registered supervisor but those in skip, and waits for each answer. It
// returns the witnesses (by address) that answered. Failures are silent:
// a witness that did not hear a write holds it against its worker.
func (s *Store) tellWitnesses(b []byte, skip map[string]bool) map[string]bool {
	told := map[string]bool{}
	ents, err := os.ReadDir(s.supervisorsDir())
	if err != nil {
		return told
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join(s.supervisorsDir(), e.Name()))
		if err != nil {
			continue
		}
		var start uint64
		if _, err := fmt.Sscan(string(data), &start); err != nil {
			continue
		}
		addr := witnessAddr(s.loc.CommonDir, pid, start)
		if !skip[addr] && tell(addr, b) {
			told[addr] = true
		}
	}
	return told
}

// tell hands b to the witness at addr and reports whether it answered.
func tell(addr string, b []byte) bool {
	c, err := net.DialTimeout("unix", addr, witnessTimeout)
	if err != nil {
		return false
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(witnessTimeout))
	if _, err := c.Write(b); err != nil {
		return false
	}
	c.(*net.UnixConn).CloseWrite()
	got, _ := io.ReadAll(io.LimitReader(c, 64))
	return len(got) > 0
}

// Registration is a supervisor's registration (Supervise): its file under
// <common dir>/agentmine/supervisors/, its witness, and the watch on the
// file.
type Registration struct {
	ln      *net.UnixListener
	session string
	path    string
	content string
	self    int
	release sync.Once

	mu        sync.Mutex
	witnessed []JournalEntry
	tampered  string
	watcher   *fsnotify.Watcher
	file      os.FileInfo
}

// Supervise registers this process as the supervisor of session
// (RegisterSupervisor) and starts its witness and the watch on the
// registration, all under the witness lock; hold the lock until the first
// snapshot is taken by calling the returned unlock. Release ends it all.
func (s *Store) Supervise(ctx context.Context, session string) (reg *Registration, unlock func(), err error) {
	if err := ctx.Err(); err != nil {
		return nil, func() {}, fmt.Errorf("registering the supervisor: %w", err)
	}
	unlock = s.lockWitness(unix.LOCK_EX)
	me, err := readProc(os.Getpid())
	if err != nil {
		unlock()
		return nil, func() {}, fmt.Errorf("registering the supervisor: %w", err)
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Net: "unix", Name: witnessAddr(s.loc.CommonDir, os.Getpid(), me.start)})
	if err != nil {
		unlock()
		return nil, func() {}, fmt.Errorf("registering the supervisor: listening for agentmine's writes: %w", err)
	}
	reg = &Registration{ln: ln, self: os.Getpid(), session: session}
	if _, err := s.RegisterSupervisor(session); err != nil {
		ln.Close()
		unlock()
		return nil, func() {}, err
	}
	reg.path = filepath.Join(s.supervisorsDir(), strconv.Itoa(reg.self))
	b, _ := os.ReadFile(reg.path)
	reg.content = string(b)
	reg.file, _ = os.Stat(reg.path)
	if w, err := fsnotify.NewWatcher(); err == nil {
		if w.Add(s.supervisorsDir()) == nil {
			reg.watcher = w
			go reg.watch()
		} else {
			w.Close()
		}
	}
	go reg.serve()
	return reg, unlock, nil
}

// watch notes any change to the registration file.
func (r *Registration) watch() {
	for {
		select {
		case ev, ok := <-r.watcher.Events:
			if !ok {
				return
			}
			if filepath.Clean(ev.Name) == r.path {
				r.setTampered(fmt.Sprintf("the supervisor's registration %s was changed during the run (%s)", filepath.Base(filepath.Dir(r.path))+"/"+filepath.Base(r.path), strings.ToLower(ev.Op.String())))
			}
		case _, ok := <-r.watcher.Errors:
			if !ok {
				return
			}
			r.setTampered("the watch on the supervisor's registration failed")
		}
	}
}

func (r *Registration) setTampered(why string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.tampered == "" {
		r.tampered = why
	}
}

// Tampered returns why the registration cannot be trusted to have been in
// place for the whole run (removed, rewritten, replaced, or not watched),
// "" when it was. It also compares the file with what was written, in
// case a change escaped the watch.
func (r *Registration) Tampered() string {
	if r.watcher == nil {
		r.setTampered("the supervisor's registration could not be watched")
	}
	if b, err := os.ReadFile(r.path); err != nil || string(b) != r.content {
		r.setTampered("the supervisor's registration " + filepath.Base(r.path) + " was removed or rewritten during the run")
	} else if fi, err := os.Stat(r.path); err != nil || r.file == nil || !os.SameFile(fi, r.file) {
		r.setTampered("the supervisor's registration " + filepath.Base(r.path) + " was replaced during the run")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.tampered
}

// Witnessed returns the journal lines the witness heard and believed, in
// the order heard: a line from a process that descends from the
// supervisor carries the session mark "(worker)" if it named none.
func (r *Registration) Witnessed() []JournalEntry {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]JournalEntry(nil), r.witnessed...)
}

// Release stops the witness and the watch and removes the registration
// (if it is still this process's).
func (r *Registration) Release() {
	r.release.Do(func() {
		r.ln.Close()
		if r.watcher != nil {
			r.watcher.Close()
		}
		if b, err := os.ReadFile(r.path); err == nil && string(b) == r.content {
			os.Remove(r.path)
		}
	})
}

// WorkerMark is the session of a witnessed line that a process of the
// supervisor's own worker sent under no session.
const WorkerMark = "(worker)"

func (r *Registration) serve() {
	for {
		c, err := r.ln.AcceptUnix()
		if err != nil {
			return
		}
		go r.hear(c)
	}
}

// hear reads one sender's lines, checks the sender and keeps the lines it
// believes.
func (r *Registration) hear(c *net.UnixConn) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(witnessTimeout))
	raw, err := c.SyscallConn()
	if err != nil {
		return
	}
	pid, err := peerPid(raw)
	if err != nil {
		return
	}
	data, err := io.ReadAll(io.LimitReader(c, witnessMaxBytes))
	if err != nil {
		return
	}
	// The sender waits for the answer: it is alive, and its start time
	// tells it from any later process with its pid.
	p, err := readProc(pid)
	if err != nil {
		return
	}
	worker := pid != r.self && descendsFrom(pid, r.self)
	var heard []JournalEntry
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		var e JournalEntry
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.Op == "" || e.Pid != pid || e.Start != p.start {
			continue
		}
		if worker && e.Session == "" {
			e.Session = WorkerMark
		}
		heard = append(heard, e)
	}
	r.mu.Lock()
	r.witnessed = append(r.witnessed, heard...)
	r.mu.Unlock()
	// The answer names the session, for a process below this supervisor
	// that asks whom it works for (witnessSession).
	c.Write([]byte("ok " + r.session + "\n"))
}

// witnessSession asks the witness of the supervisor pid (started at start),
// if it listens, which session it supervises: "" when there is none. A
// registration file can be deleted by the worker; the live supervisor's
// socket cannot.
func (s *Store) witnessSession(pid int, start uint64) string {
	c, err := dialWitness(witnessAddr(s.loc.CommonDir, pid, start))
	if err != nil {
		return ""
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(witnessTimeout))
	c.(*net.UnixConn).CloseWrite()
	b, _ := io.ReadAll(io.LimitReader(c, 256))
	if sess, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "ok "); ok {
		return sess
	}
	return ""
}

// descendsFrom reports whether pid's chain of parents reaches ancestor.
func descendsFrom(pid, ancestor int) bool {
	for hops := 0; pid > 1 && hops < 4096; hops++ {
		p, err := readProc(pid)
		if err != nil {
			return false
		}
		if p.ppid == ancestor {
			return true
		}
		pid = p.ppid
	}
	return false
}
