package gitstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

// childEnv makes the test binary act as an agentmine process writing refs:
// with it set to a repository, TestMain opens a store there, writes
// childWrites refs through Transact and prints the session it wrote for.
const childEnv = "GITSTORE_TEST_JOURNAL_CHILD"

// TestMain runs the child role when asked, the tests otherwise.
func TestMain(m *testing.M) {
	if dir := os.Getenv(childEnv); dir != "" {
		os.Exit(journalChild(dir))
	}
	os.Exit(m.Run())
}

func journalChild(dir string) int {
	ctx := context.Background()
	st, err := Open(ctx, dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	n, _ := strconv.Atoi(os.Getenv("GITSTORE_TEST_WRITES"))
	head, err := st.Git().Output(ctx, "rev-parse", "HEAD")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for i := 0; i < n; i++ {
		ref := fmt.Sprintf("refs/agentmine/test/%d-%d", os.Getpid(), i)
		if err := st.Transact(ctx, []RefOp{{Verb: "create", Ref: ref, New: head}}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	fmt.Print(st.OnBehalf())
	return 0
}

// runChild runs the child role through /bin/sh (so that the child's parent
// is the shell, not this test), with extra environment for the shell, and
// returns what the child printed: the session it wrote for.
func runChild(dir string, writes int, shellEnv []string, script string) (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", err
	}
	cmd := exec.Command("/bin/sh", "-c", script+"; status=$?; exit $status", "sh", self)
	cmd.Env = append(os.Environ(), childEnv+"="+dir, "GITSTORE_TEST_WRITES="+strconv.Itoa(writes))
	cmd.Env = append(cmd.Env, shellEnv...)
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); ok {
		return "", fmt.Errorf("child: %v\n%s", err, ee.Stderr)
	}
	return string(out), err
}

func journalRepo(t *testing.T) (string, *Store) {
	t.Helper()
	dir := gittest.NewRepo(t)
	st, err := Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	return dir, st
}

func TestJournalRecordsEveryRefTransactWrites(t *testing.T) {
	dir, st := journalRepo(t)
	ctx := context.Background()
	head := gittest.Git(t, dir, "rev-parse", "HEAD")
	next := gittest.CommitFiles(t, dir, "next", map[string]string{"a.txt": "a\n"})
	start := time.Now().Add(-time.Second)
	steps := [][]RefOp{
		{{Verb: "create", Ref: "refs/agentmine/tasks/x", New: head}, {Verb: "verify", Ref: "refs/heads/main", Old: next}},
		{{Verb: "update", Ref: "refs/agentmine/tasks/x", New: next, Old: head}},
		{{Verb: "delete", Ref: "refs/agentmine/tasks/x", Old: next}},
	}
	for _, ops := range steps {
		if err := st.Transact(ctx, ops); err != nil {
			t.Fatal(err)
		}
	}
	// A transaction git refuses was journaled before it ran: its line
	// describes a change that did not happen.
	if err := st.Transact(ctx, []RefOp{{Verb: "update", Ref: "refs/heads/main", New: head, Old: head}}); err == nil {
		t.Fatal("a stale expected value was accepted")
	}
	es, err := st.ReadJournal(start)
	if err != nil {
		t.Fatal(err)
	}
	want := []JournalEntry{
		{Op: "create", Ref: "refs/agentmine/tasks/x", New: head},
		{Op: "update", Ref: "refs/agentmine/tasks/x", Old: head, New: next},
		{Op: "delete", Ref: "refs/agentmine/tasks/x", Old: next},
		{Op: "update", Ref: "refs/heads/main", Old: head, New: head},
	}
	if len(es) != len(want) {
		t.Fatalf("journal has %d entries, want %d: %+v", len(es), len(want), es)
	}
	for i, e := range es {
		w := want[i]
		if e.Op != w.Op || e.Ref != w.Ref || e.Old != w.Old || e.New != w.New {
			t.Errorf("entry %d = %+v, want %+v", i, e, w)
		}
		if e.Pid != os.Getpid() || !e.Own() || e.Time.Before(start) || !strings.Contains(e.Cmd, filepath.Base(os.Args[0])) {
			t.Errorf("entry %d stamped %+v", i, e)
		}
	}
	if later, _ := st.ReadJournal(time.Now().Add(time.Hour)); len(later) != 0 {
		t.Errorf("entries from the future: %+v", later)
	}
}

func TestJournalRecordsCheckouts(t *testing.T) {
	dir, st := journalRepo(t)
	st.RecordCheckout(dir, "aaa", "bbb")
	es, err := st.ReadJournal(time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 1 || es[0].Op != JournalCheckout || es[0].Checkout != dir || es[0].Old != "aaa" || es[0].New != "bbb" || es[0].Ref != "" {
		t.Fatalf("checkout entry: %+v", es)
	}
}

// TestJournalOnBehalf runs real child processes that write refs and checks
// whom the journal credits: agentmine itself, or the session whose
// supervised worker the writer runs under — named by its own environment,
// by an ancestor's environment, or by a registered supervisor among its
// ancestors (a worker that scrubbed its environment).
func TestJournalOnBehalf(t *testing.T) {
	dir, st := journalRepo(t)
	run := func(env []string, script string) string {
		t.Helper()
		got, err := runChild(dir, 1, env, script)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := run(nil, `"$1"`); got != "" {
		t.Errorf("a plain child writes for %q, want agentmine itself", got)
	}
	if got := run([]string{SessionEnv + "=s-own"}, `"$1"`); got != "s-own" {
		t.Errorf("a child with the session in its environment writes for %q", got)
	}
	// The shell carries the session; the child unsets it: the shell's
	// initial environment still names it.
	if got := run([]string{SessionEnv + "=s-shell"}, `env -u `+SessionEnv+` "$1"`); got != "s-shell" {
		t.Errorf("a child below a worker shell writes for %q", got)
	}
	// This test registers as a supervisor: a child two levels below it,
	// with no session in any environment, writes for the session.
	release, err := st.RegisterSupervisor("s-registered")
	if err != nil {
		t.Fatal(err)
	}
	if got := run(nil, `"$1"`); got != "s-registered" {
		t.Errorf("a child below a registered supervisor writes for %q", got)
	}
	release()
	if got := run(nil, `"$1"`); got != "" {
		t.Errorf("after the registration ended, a child writes for %q", got)
	}
	// A registration whose start time is not this process's (a recycled
	// pid) does not count.
	reg := filepath.Join(st.supervisorsDir(), strconv.Itoa(os.Getpid()))
	if err := os.WriteFile(reg, []byte("1 s-stale\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := run(nil, `"$1"`); got != "" {
		t.Errorf("a stale registration credits %q", got)
	}
	os.Remove(reg)
	es, err := st.ReadJournal(time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	var sessions []string
	for _, e := range es {
		sessions = append(sessions, e.Session)
	}
	if got, want := strings.Join(sessions, ","), ",s-own,s-shell,s-registered,,"; got != want {
		t.Errorf("journal sessions %q, want %q", got, want)
	}
}

// TestJournalConcurrentWriters: processes writing at the same time each get
// every line in whole.
func TestJournalConcurrentWriters(t *testing.T) {
	gittest.SkipShort(t, "real parallel writers")
	dir, st := journalRepo(t)
	const procs, writes = 4, 20
	var wg sync.WaitGroup
	errs := make(chan error, procs)
	for i := 0; i < procs; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := runChild(dir, writes, nil, `"$1"`)
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	es, err := st.ReadJournal(time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, e := range es {
		seen[e.Ref] = true
	}
	refs := gittest.Git(t, dir, "for-each-ref", "--format=%(refname)", "refs/agentmine/test/")
	n := 0
	for _, r := range strings.Fields(refs) {
		n++
		if !seen[r] {
			t.Errorf("%s was written but not journaled", r)
		}
	}
	if n != procs*writes || len(es) != procs*writes {
		t.Errorf("%d refs and %d journal entries, want %d of each", n, len(es), procs*writes)
	}
}

func TestJournalRotatesAndReadsBothFiles(t *testing.T) {
	_, st := journalRepo(t)
	path := st.journalPath()
	line := func(ref string) []byte {
		return []byte(fmt.Sprintf(`{"time":%q,"pid":1,"op":"create","ref":%q,"new":"abc"}`+"\n", time.Now().UTC().Format(time.RFC3339Nano), ref))
	}
	for i := 0; i < 10; i++ {
		f, err := openRotating(path, 300)
		if err != nil {
			t.Fatal(err)
		}
		_, err = f.Write(line(fmt.Sprintf("refs/heads/r%d", i)))
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	cur, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	old, err := os.Stat(path + ".1")
	if err != nil {
		t.Fatalf("the journal was not rotated: %v", err)
	}
	if cur.Size() > 300+int64(len(line("refs/heads/r0"))) || old.Size() > 300+int64(len(line("refs/heads/r0"))) {
		t.Errorf("sizes after rotation: %d and %d", cur.Size(), old.Size())
	}
	es, err := st.ReadJournal(time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	// Whatever is kept is in order and ends with the last write.
	if len(es) == 0 || es[len(es)-1].Ref != "refs/heads/r9" {
		t.Fatalf("entries after rotation: %+v", es)
	}
	for i := 1; i < len(es); i++ {
		a, _ := strconv.Atoi(strings.TrimPrefix(es[i-1].Ref, "refs/heads/r"))
		b, _ := strconv.Atoi(strings.TrimPrefix(es[i].Ref, "refs/heads/r"))
		if b != a+1 {
			t.Errorf("entries out of order: %s then %s", es[i-1].Ref, es[i].Ref)
		}
	}
}

func TestReadJournalSkipsWhatItCannotRead(t *testing.T) {
	_, st := journalRepo(t)
	if es, err := st.ReadJournal(time.Time{}); err != nil || len(es) != 0 {
		t.Fatalf("no journal yet: %v %v", es, err)
	}
	now := time.Now().UTC()
	text := strings.Join([]string{
		`not json`,
		`{"time":"` + now.Format(time.RFC3339Nano) + `","pid":1,"op":"update","ref":"refs/heads/a","old":"1","new":"2"}`,
		`{"time":"` + now.Format(time.RFC3339Nano) + `","pid":1,"ref":"refs/heads/no-op"}`,
		`{"time":"` + now.Add(-time.Hour).Format(time.RFC3339Nano) + `","pid":1,"op":"update","ref":"refs/heads/old"}`,
		`{"time":"` + now.Format(time.RFC3339Nano) + `","pid":1,"op":"upd`,
	}, "\n")
	if err := os.MkdirAll(filepath.Dir(st.journalPath()), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(st.journalPath(), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	es, err := st.ReadJournal(now.Add(-time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 1 || es[0].Ref != "refs/heads/a" {
		t.Fatalf("read %+v, want only refs/heads/a", es)
	}
}

func TestJournalFailureDoesNotStopTheWrite(t *testing.T) {
	dir, st := journalRepo(t)
	head := gittest.Git(t, dir, "rev-parse", "HEAD")
	// The journal's place is taken by a directory: appending fails.
	if err := os.MkdirAll(st.journalPath(), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := st.Transact(context.Background(), []RefOp{{Verb: "create", Ref: "refs/agentmine/tasks/y", New: head}}); err != nil {
		t.Fatalf("the write failed with the journal: %v", err)
	}
	if got := gittest.Git(t, dir, "rev-parse", "refs/agentmine/tasks/y"); got != head {
		t.Fatalf("ref at %q", got)
	}
}

func TestWatchedRefs(t *testing.T) {
	dir, st := journalRepo(t)
	head := gittest.Git(t, dir, "rev-parse", "HEAD")
	for _, ref := range []string{"refs/heads/side", "refs/tags/v1", "refs/agentmine/tasks/t", NotesRef, "refs/notes/commits",
		"refs/notes/agentmine-remote/origin/agentmine", "refs/remotes/origin/main", "refs/agentmine-remote/origin/tasks/t", "refs/stash", "refs/replace/" + head} {
		gittest.Git(t, dir, "update-ref", ref, head)
	}
	got, err := st.WatchedRefs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for ref, id := range got {
		if id != head {
			t.Errorf("%s at %s", ref, id)
		}
		names = append(names, ref)
	}
	want := "refs/agentmine/tasks/t refs/heads/main refs/heads/side refs/notes/agentmine refs/notes/commits refs/replace/" + head + " refs/tags/v1"
	sort.Strings(names)
	if s := strings.Join(names, " "); s != want {
		t.Errorf("watched %s\nwant    %s", s, want)
	}
}

// BenchmarkJournal measures what the journal adds to a ref write: the
// append of one line (the session it writes for already worked out), the
// walk up the process tree that works it out (once per store), and a whole
// one-ref Transact next to the same update-ref without the journal.
func BenchmarkJournal(b *testing.B) {
	dir := gittest.NewRepo(b)
	st, err := Open(context.Background(), dir)
	if err != nil {
		b.Fatal(err)
	}
	head := gittest.Git(b, dir, "rev-parse", "HEAD")
	b.Run("append", func(b *testing.B) {
		ops := []RefOp{{Verb: "update", Ref: "refs/agentmine/tasks/x", Old: head, New: head}}
		for i := 0; i < b.N; i++ {
			st.journalRefs(ops)
		}
	})
	b.Run("walk", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			fresh := &Store{loc: st.loc}
			fresh.onBehalf()
		}
	})
	ctx := context.Background()
	n := 0 // ref names stay fresh across the benchmark's repeated runs
	b.Run("transact", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			n++
			if err := st.Transact(ctx, []RefOp{{Verb: "create", Ref: fmt.Sprintf("refs/agentmine/bench/j%d", n), New: head}}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("update-ref-alone", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			n++
			if err := transact(ctx, st.git, st.zeroID(), []RefOp{{Verb: "create", Ref: fmt.Sprintf("refs/agentmine/bench/r%d", n), New: head}}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkWatchedRefs lists 10,000 task refs plus a branch, next to the
// same for-each-ref run by hand: the supervisor does this twice per run.
func BenchmarkWatchedRefs(b *testing.B) {
	dir := gittest.NewRepo(b)
	head := gittest.Git(b, dir, "rev-parse", "HEAD")
	var in strings.Builder
	for i := 0; i < 10000; i++ {
		fmt.Fprintf(&in, "create refs/agentmine/tasks/%020d %s\n", i, head)
	}
	gittest.GitInput(b, dir, strings.NewReader(in.String()), "update-ref", "--stdin")
	gittest.Git(b, dir, "pack-refs", "--all")
	st, err := Open(context.Background(), dir)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("WatchedRefs", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			m, err := st.WatchedRefs(context.Background())
			if err != nil || len(m) != 10001 {
				b.Fatalf("%d refs, %v", len(m), err)
			}
		}
	})
	b.Run("git-for-each-ref", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			gittest.Git(b, dir, "for-each-ref", "--format=%(objectname) %(refname)", "refs/heads/", "refs/tags/", "refs/agentmine/", "refs/notes/")
		}
	})
}

// TestLargeTransactionJournalsEveryRef: a transaction of thousands of refs
// (update-ref's input made as git reads it, the journal written in pieces
// of whole lines) writes every ref, journals each exactly once in order,
// and one bad expectation anywhere still fails all of it.
func TestLargeTransactionJournalsEveryRef(t *testing.T) {
	dir, st := journalRepo(t)
	ctx := context.Background()
	head := gittest.Git(t, dir, "rev-parse", "HEAD")
	start := time.Now().Add(-time.Second)
	const n = 3000 // about 600 KB of journal, 20 pieces
	ops := make([]RefOp, n)
	for i := range ops {
		ops[i] = RefOp{Verb: "create", Ref: fmt.Sprintf("refs/agentmine/tasks/t%05d", i), New: head}
	}
	if err := st.Transact(ctx, ops); err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(gittest.Git(t, dir, "for-each-ref", "refs/agentmine/tasks/"), "\n") + 1; got != n {
		t.Fatalf("%d refs written, want %d", got, n)
	}
	es, err := st.ReadJournal(start)
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != n {
		t.Fatalf("journal has %d entries, want %d", len(es), n)
	}
	for i, e := range es {
		if e.Op != "create" || e.Ref != ops[i].Ref || e.New != head {
			t.Fatalf("entry %d = %+v, want the create of %s", i, e, ops[i].Ref)
		}
	}

	// Deleting them all, but one expected at the wrong value: nothing moves.
	for i := range ops {
		ops[i] = RefOp{Verb: "delete", Ref: ops[i].Ref, Old: head}
	}
	ops[n-1].Old = strings.Repeat("1", len(head))
	if err := st.Transact(ctx, ops); !errors.Is(err, ErrConflict) {
		t.Fatalf("a stale expectation in the last line gave %v, want ErrConflict", err)
	}
	if got := strings.Count(gittest.Git(t, dir, "for-each-ref", "refs/agentmine/tasks/"), "\n") + 1; got != n {
		t.Fatalf("%d refs left after the failed transaction, want %d", got, n)
	}

	// A first line git refuses outright: git stops reading while the rest
	// is still being written; the failure is git's, and nothing moves.
	ops[n-1].Old = head
	ops[0] = RefOp{Verb: "create", Ref: "refs/agentmine/tasks/bad..name", New: head}
	err = st.Transact(ctx, ops)
	if err == nil || errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "bad..name") {
		t.Fatalf("an invalid ref name in the first line gave %v", err)
	}
	if got := strings.Count(gittest.Git(t, dir, "for-each-ref", "refs/agentmine/tasks/"), "\n") + 1; got != n {
		t.Fatalf("%d refs left after the refused transaction, want %d", got, n)
	}
}
