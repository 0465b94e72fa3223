package gitstore

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/git-agentmine/git-agentmine/safefile"
)

// The journal is agentmine's record of its own writes, so that a supervisor
// comparing the refs before and after its worker's run can tell them from
// the worker's. Every ref write agentmine makes goes through Transact, and
// Transact appends one line per written ref to <common dir>/agentmine/journal
// just before it runs `git update-ref --stdin` (before, so that a supervisor
// never sees a new ref value whose line is not there yet; a transaction that
// then fails leaves a line describing a change that did not happen, which can
// only ever excuse that exact change). Each line says on whose behalf the
// write was made: a process that runs inside a supervised worker's process
// tree (see onBehalf) writes for that session — those writes are the
// worker's, never agentmine's own.
//
// The journal is local, disposable data like the logs: when it passes
// JournalMaxBytes it is renamed to journal.1 (replacing the previous one), so
// at most twice that is kept; readers read both. It is a plain file that any
// process of the same user can write, a worker included: it records, it does
// not prove. A supervisor believes only what its witness heard from the live
// writing process (see Registration); docs/trust.md says the rest.

// JournalMaxBytes is the size past which the journal is rotated.
const JournalMaxBytes = 8 << 20

// JournalFile is the journal's name under <common dir>/agentmine/.
const JournalFile = "journal"

// Journal operations besides the ref verbs "create", "update" and "delete".
const (
	// JournalCheckout records that agentmine updated the files of a
	// checkout (the gated merge following the base in a clean checkout).
	JournalCheckout = "checkout"
	// JournalWorktreeAdd and JournalWorktreeRemove record that agentmine
	// created or removed a session's worktree (worker run, worker done),
	// next to the worktrees of running workers.
	JournalWorktreeAdd    = "worktree-add"
	JournalWorktreeRemove = "worktree-remove"
)

// JournalEntry is one line of the journal.
type JournalEntry struct {
	// Time is when the write was about to be made (this machine's clock).
	Time time.Time `json:"time"`
	// Pid is the writing process, and Start its start time (clock ticks
	// since boot, /proc/<pid>/stat), which tells it from a later process
	// with the same pid. A supervisor's witness believes a line only from
	// that live process (see Registration).
	Pid   int    `json:"pid"`
	Start uint64 `json:"start,omitempty"`
	// Op is "create", "update" or "delete" for a ref, or JournalCheckout.
	Op string `json:"op"`
	// Ref is the full ref name written (ref operations).
	Ref string `json:"ref,omitempty"`
	// Checkout is the directory whose files were updated (JournalCheckout),
	// or the worktree created or removed (JournalWorktreeAdd, …Remove).
	Checkout string `json:"checkout,omitempty"`
	// Old and New are the object ids before and after ("" when the ref did
	// not or does not exist); for a checkout, the commits it went from and
	// to.
	Old string `json:"old,omitempty"`
	New string `json:"new,omitempty"`
	// Session, when set, is the session whose supervised worker the writing
	// process ran for: the write is that worker's, not agentmine's own.
	Session string `json:"session,omitempty"`
	// Cmd is the writing process's command line, shortened.
	Cmd string `json:"cmd,omitempty"`
}

// Own reports whether agentmine made the write on its own behalf (not for a
// supervised worker).
func (e JournalEntry) Own() bool { return e.Session == "" }

// journalPath is where the journal lives.
func (s *Store) journalPath() string {
	return filepath.Join(s.loc.CommonDir, "agentmine", JournalFile)
}

// journalRefs records the ref writes of a transaction about to run. A
// failure is reported as a warning and never stops the write.
func (s *Store) journalRefs(ops []RefOp) {
	zero := s.zeroID()
	norm := func(id string) string {
		if id == zero {
			return ""
		}
		return id
	}
	s.appendJournal(func(yield func(JournalEntry) bool) {
		for _, op := range ops {
			e := JournalEntry{Op: op.Verb, Ref: op.Ref}
			switch op.Verb {
			case "create":
				e.New = norm(op.New)
			case "update":
				e.Old, e.New = norm(op.Old), norm(op.New)
			case "delete":
				e.Old = norm(op.Old)
			default:
				continue // verify writes nothing
			}
			if !yield(e) {
				return
			}
		}
	})
}

// RecordCheckout records that agentmine updated the files of the checkout in
// dir from commit from to commit to (a gated merge whose base is checked out
// there), so that whoever compares that checkout before and after a run can
// excuse the paths that differ between the two commits.
func (s *Store) RecordCheckout(dir, from, to string) {
	s.appendJournal(slices.Values([]JournalEntry{{Op: JournalCheckout, Checkout: dir, Old: from, New: to}}))
}

// RecordWorktree records that agentmine is about to create (op
// JournalWorktreeAdd) or remove (JournalWorktreeRemove) the worktree at dir,
// so that the supervisors of workers running next to it can excuse what
// their watchers see of it.
//
// A supervisor that registers after the line was told to the witnesses
// and starts watching before the worktree is made or gone sees the change
// without having heard of it: use BeginWorktree where the change follows
// at once.
func (s *Store) RecordWorktree(op, dir string) {
	s.appendJournal(slices.Values([]JournalEntry{{Op: op, Checkout: dir}}))
}

// BeginWorktree records, as RecordWorktree does, that agentmine is about
// to create or remove the worktree at dir, and holds the witness lock
// shared until the returned function is called, once the worktree is made
// or gone: a supervisor registering meanwhile waits for it (as it waits
// for a ref transaction), so either its witness heard the line or its
// watcher starts after the change.
//
// The wait is bounded (witnessLockWait), so end also tells the line to
// the witnesses of the supervisors that registered since (a supervisor
// registers before it watches: every one that may have seen the change is
// among them). Only a supervisor that registered past the bound and
// stopped its watch between the change and end may still hold the change
// against its worker.
func (s *Store) BeginWorktree(op, dir string) (end func()) {
	unlock := s.lockWitness(unix.LOCK_SH)
	lines, told := s.appendJournal(slices.Values([]JournalEntry{{Op: op, Checkout: dir}}))
	return func() {
		if lines != nil {
			s.tellWitnesses(lines, told)
		}
		unlock()
	}
}

// appendJournal stamps the entries and appends them to the journal, whole
// lines journalChunk bytes at a time: a transaction of thousands of refs
// never holds all of its lines. O_APPEND makes each write land whole at the
// end of the file; lines of another writer may come between two of them,
// which readers, reading line by line, do not mind. No entry, no file. It
// returns the lines it told the witnesses and the witnesses that heard
// them (nil when it wrote nothing).
func (s *Store) appendJournal(entries iter.Seq[JournalEntry]) (lines []byte, told map[string]bool) {
	var (
		f            *os.File
		b            []byte
		now          time.Time
		pid          int
		start        uint64
		session, cmd string
		failed       bool
		// all is every line, for the witnesses (tellWitnesses).
		all []byte
	)
	flush := func() {
		if len(b) > 0 && !failed {
			if _, err := f.Write(b); err != nil {
				s.journalWarn(err)
				failed = true
			}
		}
		if len(all)+len(b) <= witnessMaxBytes {
			all = append(all, b...)
		}
		b = b[:0]
	}
	for e := range entries {
		if f == nil {
			var err error
			if f, err = openRotating(s.journalPath(), JournalMaxBytes); err != nil {
				s.journalWarn(err)
				return nil, nil
			}
			defer f.Close()
			now, pid, session, cmd = time.Now().UTC(), os.Getpid(), s.onBehalf(), commandLine()
			if me, err := readProc(pid); err == nil {
				start = me.start
			}
		}
		e.Time, e.Pid, e.Start, e.Session, e.Cmd = now, pid, start, session, cmd
		line, err := json.Marshal(e)
		if err != nil {
			s.journalWarn(err)
			return nil, nil
		}
		b = append(b, line...)
		b = append(b, '\n')
		if len(b) >= journalChunk {
			flush()
		}
	}
	if f == nil {
		return nil, nil
	}
	flush()
	return all, s.tellWitnesses(all, nil)
}

// journalChunk is about how many bytes of journal lines go out in one
// write.
const journalChunk = 32 << 10

// journalWarn reports a journal failure once per store: the ref write goes
// on, but a supervisor running at the same time may hold it against its
// worker.
func (s *Store) journalWarn(err error) {
	s.journalWarnOnce.Do(func() {
		fmt.Fprintf(os.Stderr, "warning: recording agentmine's ref writes in the journal: %v\n", err)
	})
}

// openRotating opens the file at path for appending, first renaming it to
// path.1 when it has grown past max bytes. The rename happens under an
// exclusive lock and only if path is still the file that was opened, so
// two writers never rotate twice.
func openRotating(path string, max int64) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	open := func() (*os.File, error) { return os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644) }
	f, err := open()
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err == nil && fi.Size() > max {
		rotate(f, fi, path)
		// Whoever rotated, the file at path is now the fresh one. (A
		// writer that opened the old file before the rename appends to
		// path.1, which readers still read.)
		f.Close()
		return open()
	}
	return f, nil
}

func rotate(f *os.File, opened os.FileInfo, path string) {
	if err := flock(f, unix.LOCK_EX); err != nil {
		return
	}
	defer flock(f, unix.LOCK_UN)
	if cur, err := os.Stat(path); err == nil && os.SameFile(cur, opened) {
		os.Rename(path, path+".1")
	}
}

func flock(f *os.File, how int) error {
	for {
		err := unix.Flock(int(f.Fd()), how)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// ReadJournal returns the journal's entries stamped at or after since,
// oldest file first and in file order within each. Lines that do not parse
// (a torn write, or text no agentmine wrote) are skipped. A missing journal
// is empty.
func (s *Store) ReadJournal(since time.Time) ([]JournalEntry, error) {
	var out []JournalEntry
	for _, p := range []string{s.journalPath() + ".1", s.journalPath()} {
		// Without blocking, a regular file only: a FIFO planted in its
		// place must not hang the supervisor or merge reading it.
		f, _, err := safefile.Open(p, -1)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading the ref journal: %w", err)
		}
		es, err := parseJournal(f, since)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("reading the ref journal %s: %w", p, err)
		}
		out = append(out, es...)
	}
	return out, nil
}

func parseJournal(r io.Reader, since time.Time) ([]JournalEntry, error) {
	var out []JournalEntry
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		var e JournalEntry
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.Op == "" || e.Time.Before(since) {
			continue
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil && !errors.Is(err, bufio.ErrTooLong) {
		return out, err
	}
	return out, nil
}

// commandLine is this process's command line for the journal: the program's
// base name and its arguments, cut to a readable length.
func commandLine() string {
	if len(os.Args) == 0 {
		return ""
	}
	args := append([]string{filepath.Base(os.Args[0])}, os.Args[1:]...)
	c := strings.Join(args, " ")
	if len(c) > 200 {
		c = c[:200] + "…"
	}
	return c
}

// WatchedRefs lists the refs a supervisor watches during a run, by full
// name, with the object each points at: the branches and tags (any of them
// may be a task's base), agentmine's entities under refs/agentmine/, the
// notes refs, except the staging notes (refs/notes/agentmine-remote/…),
// which sync writes only to push from them and deletes again, and the
// replace refs (refs/replace/…), which agentmine's git ignores but a
// person's git log and git show follow. One for-each-ref; no object is
// read. Read in-process when the refs can be (listRefs), as for-each-ref
// lists them.
func (s *Store) WatchedRefs(ctx context.Context) (map[string]string, error) {
	refs, ids, err := s.listRefs(ctx, "refs/heads/", "refs/tags/", RefRoot, "refs/notes/", "refs/replace/")
	if err != nil {
		return nil, fmt.Errorf("listing the refs: %w", err)
	}
	m := make(map[string]string, len(refs))
	for i, ref := range refs {
		if strings.HasPrefix(ref, NotesRef+"-remote/") {
			continue
		}
		m[ref] = ids[i]
	}
	return m, nil
}

// errNotSupervisor is returned for a process that is not a registered
// supervisor.
var errNotSupervisor = errors.New("not a registered supervisor")

// procInfo is what the journal needs of /proc/<pid>/stat.
type procInfo struct {
	ppid  int
	start uint64
}

// supervisorsDir holds one file per running supervisor of this repository.
func (s *Store) supervisorsDir() string {
	return filepath.Join(s.loc.CommonDir, "agentmine", "supervisors")
}

// RegisterSupervisor marks this process as the supervisor of session until
// release is called: agentmine processes started anywhere below it (the
// worker and whatever it starts, the DoD commands) then journal their writes
// as made for that session. The mark is a file named after the pid that
// holds the process's start time, so a recycled pid never matches.
func (s *Store) RegisterSupervisor(session string) (release func(), err error) {
	pid := os.Getpid()
	me, err := readProc(pid)
	if err != nil {
		return func() {}, fmt.Errorf("registering the supervisor: %w", err)
	}
	dir := s.supervisorsDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return func() {}, fmt.Errorf("registering the supervisor: %w", err)
	}
	path := filepath.Join(dir, fmt.Sprint(pid))
	content := fmt.Sprintf("%d %s\n", me.start, session)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		return func() {}, fmt.Errorf("registering the supervisor: %w", err)
	}
	return func() {
		if b, err := os.ReadFile(path); err == nil && string(b) == content {
			os.Remove(path)
		}
	}, nil
}

// supervisorSession returns the session that the process pid (started at
// start) is registered as supervising.
func (s *Store) supervisorSession(pid int, start uint64) (string, error) {
	b, err := os.ReadFile(filepath.Join(s.supervisorsDir(), fmt.Sprint(pid)))
	if err != nil {
		return "", errNotSupervisor
	}
	var st uint64
	var session string
	if _, err := fmt.Sscan(string(b), &st, &session); err != nil || st != start || session == "" {
		return "", errNotSupervisor
	}
	return session, nil
}

// SessionEnv is the environment variable that names the session a worker
// runs for; the supervisor sets it in the worker's environment.
const SessionEnv = "AGENTMINE_SESSION"

// onBehalf returns the session whose supervised worker this process runs
// for, "" when it runs on agentmine's own behalf. It is worked out once per
// store, from cheap reads and local socket connections only (no git
// process): this process's own
// environment names the session (SessionEnv); else, walking up the parent
// chain from the parent (never this process itself, so a supervisor's own
// writes are its own), the first ancestor that is a registered supervisor of
// this repository (RegisterSupervisor), whose witness answers (Supervise:
// the worker may have deleted the registration file, not the live socket),
// or whose initial environment names a session, decides. A worker's processes reparent to their supervisor
// when their own parent exits only where the supervisor is a child
// subreaper; a process that leaves the tree altogether (a service manager,
// another login) is not recognised.
func (s *Store) onBehalf() string {
	s.behalfOnce.Do(func() {
		if v := os.Getenv(SessionEnv); v != "" {
			s.behalf = v
			return
		}
		pid := os.Getppid()
		for hops := 0; pid > 1 && hops < 256; hops++ {
			p, err := readProc(pid)
			if err != nil {
				return
			}
			if sess, err := s.supervisorSession(pid, p.start); err == nil {
				s.behalf = sess
				return
			}
			if sess := s.witnessSession(pid, p.start); sess != "" {
				s.behalf = sess
				return
			}
			if sess := environSession(pid); sess != "" {
				s.behalf = sess
				return
			}
			pid = p.ppid
		}
	})
	return s.behalf
}

// OnBehalf returns the session this process works for when it runs inside
// a supervised worker's process tree (its ref writes are then that worker's),
// or "" when it acts on agentmine's own behalf.
func (s *Store) OnBehalf() string { return s.onBehalf() }
