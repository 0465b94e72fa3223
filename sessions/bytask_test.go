package sessions

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

// ofTask renders what OfTasks answers for one task, as JSON.
func ofTask(t *testing.T, st *gitstore.Store, task string) string {
	t.Helper()
	recs, problems, err := OfTasks(context.Background(), st, []string{task})
	if err != nil || len(problems) > 0 {
		t.Fatal(err, problems)
	}
	b, err := json.Marshal(recs)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// wholeOfTask renders the task's sessions as LoadAll reads them from git
// alone (every cache removed first), for comparison with OfTasks.
func wholeOfTask(t *testing.T, dir, task string) string {
	t.Helper()
	if err := os.RemoveAll(filepath.Join(dir, ".git", "agentmine", "cache")); err != nil {
		t.Fatal(err)
	}
	all, problems, err := LoadAll(context.Background(), open(t, dir))
	if err != nil || len(problems) > 0 {
		t.Fatal(err, problems)
	}
	var out []Record
	for _, r := range all {
		if r.Session.Task == task {
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Session.ID < out[j].Session.ID })
	b, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestOfTasksIndexIsChecked: whatever state the task index is in (missing,
// current, stale after every kind of change, corrupt, truncated, foreign,
// dropped), OfTasks answers exactly the task's sessions as git alone has
// them, whole.
func TestOfTasksIndexIsChecked(t *testing.T) {
	ctx := context.Background()
	dir := gittest.NewRepo(t)
	st := open(t, dir)
	task := fmt.Sprintf("7a5c%016x", 1)
	index := filepath.Join(dir, ".git", "agentmine", "cache", "summary-"+Kind.Dir+"-"+taskIndex)
	check := func(what string) {
		t.Helper()
		// twice: the first read may write the index, the second uses it
		for i := 0; i < 2; i++ {
			got := ofTask(t, st, task)
			if want := wholeOfTask(t, dir, task); got != want {
				t.Fatalf("%s (read %d):\n got %s\nwant %s", what, i+1, got, want)
			}
			// wholeOfTask removed the caches: read once more through them
			ofTask(t, st, task)
		}
	}
	check("no sessions")
	ok := passed("t", tRun, "")
	recs := []Record{addSession(t, st, 1, &ok), addSession(t, st, 2, nil), addSession(t, st, 4, nil), addSession(t, st, 7, nil)}
	check("four sessions, two of the task")
	if _, err := os.Stat(index); err != nil {
		t.Fatalf("no task index written: %v", err)
	}
	bad := Outcome{ExitCode: 3, Finished: tRun, By: "t", Reason: "boom"}
	if err := RecordOutcome(ctx, st, recs[2], &bad); err != nil {
		t.Fatal(err)
	}
	check("after an outcome was recorded")
	if _, err := Update(ctx, st, recs[3].Session.ID, "session pid", func(s *Session) { s.Pid = 4242 }); err != nil {
		t.Fatal(err)
	}
	check("after a session document changed")
	addSession(t, st, 10, nil)
	check("after a session was added")
	if err := Delete(ctx, st, recs[0].Session.ID); err != nil {
		t.Fatal(err)
	}
	check("after a session was deleted")
	if got := ofTask(t, st, task); got == "null" {
		t.Fatal("the task has sessions; OfTasks found none")
	}
	raw, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	damage := map[string][]byte{
		"a flipped byte": func() []byte { b := append([]byte(nil), raw...); b[len(b)/2] ^= 0x20; return b }(),
		"truncated":      raw[:len(raw)/2],
		"empty":          {},
		"another format": []byte("agentmine-summary-cache 9 x\n"),
	}
	for what, b := range damage {
		if err := os.WriteFile(index, b, 0o644); err != nil {
			t.Fatal(err)
		}
		check("index " + what)
	}
	if err := st.DropCaches(Kind); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(index); !os.IsNotExist(err) {
		t.Fatalf("DropCaches left the task index: %v", err)
	}
	check("after DropCaches")
}

// TestOfTasksUnderConcurrentWriter: while a writer records outcomes one
// after another on a task's sessions, readers of that task never see a
// later outcome without the earlier ones, nor another task's session.
func TestOfTasksUnderConcurrentWriter(t *testing.T) {
	gittest.SkipShort(t, "a writer and two readers racing over a dozen notes updates")
	ctx := context.Background()
	dir := gittest.NewRepo(t)
	st := open(t, dir)
	const n = 12
	task := fmt.Sprintf("7a5c%016x", 0)
	var recs []Record
	for i := 0; i < n; i++ {
		r := addSession(t, st, 3*i, nil) // task n%3 == 0
		recs = append(recs, r)
		addSession(t, st, 3*i+1, nil) // another task's
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for r := 0; r < 2; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rst, err := gitstore.Open(ctx, dir)
			if err != nil {
				errs <- err
				return
			}
			for {
				select {
				case <-done:
					return
				default:
				}
				got, problems, err := OfTasks(ctx, rst, []string{task})
				if err != nil || len(problems) > 0 || len(got) != n {
					errs <- fmt.Errorf("read: %v %v, %d sessions", err, problems, len(got))
					return
				}
				byID := map[string]*Outcome{}
				for _, g := range got {
					if g.Session.Task != task {
						errs <- fmt.Errorf("session %s of task %s returned", g.Session.ID, g.Session.Task)
						return
					}
					byID[g.Session.ID] = g.Outcome
				}
				k := 0
				for k < n && byID[recs[k].Session.ID] != nil {
					k++
				}
				for j := k; j < n; j++ {
					if byID[recs[j].Session.ID] != nil {
						errs <- fmt.Errorf("torn read: session %d has an outcome but session %d has none", j, k)
						return
					}
				}
			}
		}()
	}
	for i, r := range recs {
		o := Outcome{ExitCode: i + 1, Finished: tRun, By: "t"}
		if err := RecordOutcome(ctx, st, r, &o); err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// TestOfTasksTaskKeyedIndex: once the session refs are settled (packed-refs
// unchanged for a while), OfTasks writes the task-keyed index and then
// finds a task's sessions through it alone; a new session changes the
// stamp and the index is not used until written again; an index that
// names a session of another task, or is damaged, is not believed. Every
// answer is what git alone has.
func TestOfTasksTaskKeyedIndex(t *testing.T) {
	gittest.SkipShort(t, "waits for packed-refs to settle")
	ctx := context.Background()
	dir := gittest.NewRepo(t)
	st := open(t, dir)
	task := fmt.Sprintf("7a5c%016x", 1)
	for n := 1; n <= 9; n++ {
		addSession(t, st, n, nil)
	}
	gittest.Git(t, dir, "pack-refs", "--all")
	time.Sleep(2100 * time.Millisecond) // packed-refs settles
	index := filepath.Join(dir, ".git", "agentmine", "cache", "summary-"+Kind.Dir+"-"+taskKeyed)
	indexed := func() bool {
		stamp, _ := st.RefsStamp(Kind.RefPrefix())
		_, ok := ofTasksIndexed(ctx, st, []string{task}, stamp)
		return ok
	}
	if indexed() {
		t.Fatal("an index was used before any was written")
	}
	// (wholeOfTask removes every cache: it runs first each time.)
	want := wholeOfTask(t, dir, task)
	if got := ofTask(t, st, task); got != want {
		t.Fatalf("first read:\n got %s\nwant %s", got, want)
	}
	if _, err := os.Stat(index); err != nil {
		t.Fatalf("no task-keyed index written: %v", err)
	}
	if !indexed() {
		t.Fatal("the task-keyed index was not used once written")
	}
	if got := ofTask(t, st, task); got != want {
		t.Fatalf("through the index:\n got %s\nwant %s", got, want)
	}
	addSession(t, st, 10, nil) // a session of the task, loose
	if indexed() {
		t.Fatal("the index was used after a session was added")
	}
	want = wholeOfTask(t, dir, task)
	if got := ofTask(t, st, task); got != want {
		t.Fatalf("after a session was added:\n got %s\nwant %s", got, want)
	}
	if !indexed() {
		t.Fatal("the index was not written again under the new stamp")
	}
	// An index claiming that a session of another task is the task's.
	raw, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	other := fmt.Sprintf("5e55%016x", 2) // of task n%3 == 2
	lines := strings.Split(string(raw), "\n")
	for i, l := range lines {
		if strings.Contains(l, " "+other+" ") {
			lines[i] = task + l[len(task):]
		}
	}
	planted := strings.Join(lines, "\n")
	// keep the records sorted: the planted one moved to the task's run
	for what, b := range map[string]string{"planted": planted, "damaged": strings.Replace(string(raw), task, "zz"+task[2:], 1)} {
		if err := os.WriteFile(index, []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
		if indexed() {
			t.Fatalf("a %s index was believed", what)
		}
		if got := ofTask(t, st, task); got != want {
			t.Fatalf("%s index:\n got %s\nwant %s", what, got, want)
		}
	}
}
