package board

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/internal/gittest"
	"github.com/git-agentmine/git-agentmine/sessions"
	"github.com/git-agentmine/git-agentmine/status"
	"github.com/git-agentmine/git-agentmine/tasks"
)

// TestLoadTaskMatchesLoad: for a task with blockers, a parent, sessions
// that failed, passed and reached the base, and a neighbour whose id shares
// its first digits, LoadTask answers what the whole board answers: the
// task's and its blockers' statuses (including what it waits on), the
// short ids of every id task show prints, and the task's sessions, before
// and after the board changes (an outcome recorded, a blocker's work
// merged), whatever state the caches are in.
func TestLoadTaskMatchesLoad(t *testing.T) {
	ctx := context.Background()
	dir := gittest.NewRepo(t)
	st, err := gitstore.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	add := func(n tasks.New) tasks.Task {
		t.Helper()
		x, err := tasks.Add(ctx, st, n)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	parent := add(tasks.New{Title: "parent"})
	blocker := add(tasks.New{Title: "blocker"})
	other := add(tasks.New{Title: "other blocker"})
	task := add(tasks.New{Title: "the task", Parent: parent.ID, BlockedBy: []string{blocker.ID, other.ID}})
	add(tasks.New{Title: "unrelated"})
	// A neighbour sharing the task's first six digits: its short id must
	// grow to seven, on the whole board and on LoadTask's.
	near := task.ID[:6] + strings.Repeat("0", gitstore.IDLen-6)
	if near == task.ID {
		near = task.ID[:6] + strings.Repeat("1", gitstore.IDLen-6)
	}
	gittest.Git(t, dir, "update-ref", tasks.Kind.Ref(near), gittest.Git(t, dir, "rev-parse", tasks.Kind.Ref(parent.ID)))

	base := strings.TrimSpace(gittest.Git(t, dir, "rev-parse", "main"))
	n := 0
	session := func(taskID string, exit int, commit bool) sessions.Record {
		t.Helper()
		n++
		s := sessions.Session{ID: gitstore.NewID(), Task: taskID, Agent: "coder", Client: "custom", Mode: sessions.ModeDetach,
			Host: "elsewhere", Timeout: 60, Started: time.Date(2026, 1, 2, 3, 4, n, 0, time.UTC),
			BaseRef: "main", BaseCommit: base}
		s.Branch = sessions.Branch(taskID, s.ID)
		tip := ""
		if commit {
			gittest.Git(t, dir, "branch", s.Branch, base)
			tree := strings.TrimSpace(gittest.Git(t, dir, "rev-parse", base+"^{tree}"))
			tip = strings.TrimSpace(gittest.Git(t, dir, "commit-tree", "-p", base, "-m", "work "+s.ID, tree))
			gittest.Git(t, dir, "update-ref", "refs/heads/"+s.Branch, tip)
		}
		s, root, err := sessions.Create(ctx, st, s)
		if err != nil {
			t.Fatal(err)
		}
		r := sessions.Record{Session: s, Root: root}
		valid := true
		o := sessions.Outcome{ExitCode: exit, Finished: s.Started.Add(time.Minute), By: "t", Tip: tip, ScopeValid: &valid,
			DoDStatus: "passed", Scope: json.RawMessage(`{"valid":true,"violations":[],"changed":[]}`),
			DoD: json.RawMessage(`{"status":"passed"}`), Commits: 1}
		if err := sessions.RecordOutcome(ctx, st, r, &o); err != nil {
			t.Fatal(err)
		}
		return r
	}
	check := func(what string) {
		t.Helper()
		whole, err := Load(ctx, st, "")
		if err != nil {
			t.Fatal(err)
		}
		for _, prefix := range []string{task.ID, whole.Tasks.ShortID(task.ID), blocker.ID[:gitstore.MinPrefix+2]} {
			one, id, err := LoadTask(ctx, st, "", prefix)
			if err != nil {
				t.Fatalf("%s: LoadTask %s: %v", what, prefix, err)
			}
			wantID, err := whole.Tasks.Resolve(prefix)
			if err != nil || id != wantID {
				t.Fatalf("%s: %s resolved to %s, the whole board says %s (%v)", what, prefix, id, wantID, err)
			}
			judged := append([]string{id}, whole.Tasks.Tasks[id].Task.BlockedBy...)
			for _, j := range judged {
				if !reflect.DeepEqual(one.Status[j], whole.Status[j]) {
					t.Fatalf("%s: status of %s:\n got %+v\nwant %+v", what, j, one.Status[j], whole.Status[j])
				}
			}
			shown := append([]string{}, judged...)
			if p := whole.Tasks.Tasks[id].Task.Parent; p != "" {
				shown = append(shown, p)
			}
			shown = append(shown, one.Status[id].Waiting...)
			for _, s := range shown {
				if got, want := one.Tasks.ShortID(s), whole.Tasks.ShortID(s); got != want {
					t.Fatalf("%s: short id of %s: got %s want %s", what, s, got, want)
				}
			}
			var got, want []string
			for _, r := range one.SessionsOf(id) {
				got = append(got, r.Session.ID)
			}
			for _, r := range whole.SessionsOf(id) {
				want = append(want, r.Session.ID)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s: sessions of %s: got %v want %v", what, id, got, want)
			}
		}
	}
	check("no sessions")
	session(task.ID, 1, false)
	check("one failed session")
	check("again, caches warm")
	session(task.ID, 0, true)
	b := session(blocker.ID, 0, true)
	check("a session in review, the blocker's not merged")
	gittest.Git(t, dir, "update-ref", "refs/heads/main", gittest.Git(t, dir, "rev-parse", "refs/heads/"+b.Session.Branch))
	check("the blocker's work merged")
	session(other.ID, 2, false)
	if err := st.DropCaches(tasks.Kind, sessions.Kind); err != nil {
		t.Fatal(err)
	}
	check("after the caches were dropped")
	if _, _, err := LoadTask(ctx, st, "", "zz"); err == nil {
		t.Fatal("a malformed prefix was accepted")
	}
	if _, _, err := LoadTask(ctx, st, "", strings.Repeat("f", gitstore.IDLen)); err == nil {
		t.Fatal("an unknown id was accepted")
	}
}

// TestLoadTaskGitCalls: once the store is open, a task with no blockers,
// parent or sessions costs no git process at all, whatever the board around
// it holds: its refs and objects are read in-process. With reads sent to git
// (AGENTMINE_GIT_READS=1) it costs three: one for-each-ref listing the task
// refs near it, the session refs and the notes ref together, one cat-file
// reading its document, and one for-each-ref listing every task (whose
// documents come from the cache) to find its children.
func TestLoadTaskGitCalls(t *testing.T) {
	for _, gitReads := range []bool{false, true} {
		t.Run(fmt.Sprintf("git-reads=%v", gitReads), func(t *testing.T) {
			loadTaskGitCalls(t, gitReads)
		})
	}
}

func loadTaskGitCalls(t *testing.T, gitReads bool) {
	ctx := context.Background()
	dir := gittest.NewRepo(t)
	if gitReads {
		t.Setenv("AGENTMINE_GIT_READS", "1")
	}
	counter := gittest.NewGitCounter(t)
	t.Setenv("PATH", counter.Dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	st, err := gitstore.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	var task tasks.Task
	for i := 0; i < 5; i++ {
		if task, err = tasks.Add(ctx, st, tasks.New{Title: "task"}); err != nil {
			t.Fatal(err)
		}
	}
	other, err := tasks.Add(ctx, st, tasks.New{Title: "with a session"})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := sessions.Create(ctx, st, sessions.Session{ID: gitstore.NewID(), Task: other.ID, Agent: "coder", Host: "elsewhere", Timeout: 60}); err != nil {
		t.Fatal(err)
	}
	// The first read learns the other session's task (the task index).
	if _, _, err := LoadTask(ctx, st, "main", task.ID[:8]); err != nil {
		t.Fatal(err)
	}
	counter.Reset()
	b, id, err := LoadTask(ctx, st, "main", task.ID[:8])
	if err != nil {
		t.Fatal(err)
	}
	if id != task.ID || b.Tasks.Tasks[id].Task.Title != "task" || len(b.Sessions) != 0 {
		t.Fatalf("LoadTask read %s, %+v, %d sessions", id, b.Tasks.Tasks[id], len(b.Sessions))
	}
	calls := counter.Calls(t)
	want := ""
	if gitReads {
		want = "for-each-ref --format=%(objectname) %(refname) " + tasks.Kind.RefPrefix() + task.ID[:gitstore.MinPrefix] + "* " +
			sessions.Kind.RefPrefix() + " " + gitstore.NotesRef + "\ncat-file --batch\n" +
			"for-each-ref --format=%(objectname) %(refname) " + tasks.Kind.RefPrefix() + "\n"
	}
	if calls != want {
		t.Fatalf("LoadTask ran\n%s\nwant\n%s", calls, want)
	}
}

// TestLoadTaskRollsUp: LoadTask on a goal, and on a task blocked by it,
// answers what Load answers: the goal in progress with 1/2 children done
// while a grandchild is not done, done once it is, and the blocked task
// ready only then.
func TestLoadTaskRollsUp(t *testing.T) {
	ctx := context.Background()
	dir := gittest.NewRepo(t)
	st, err := gitstore.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	add := func(n tasks.New) tasks.Task {
		t.Helper()
		x, err := tasks.Add(ctx, st, n)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	goal := add(tasks.New{Title: "goal"})
	child := add(tasks.New{Title: "child", Parent: goal.ID})
	sub := add(tasks.New{Title: "sub-goal", Parent: goal.ID})
	grand := add(tasks.New{Title: "grandchild", Parent: sub.ID})
	after := add(tasks.New{Title: "after", BlockedBy: []string{goal.ID}})
	add(tasks.New{Title: "unrelated"})
	if _, _, err := tasks.Cancel(ctx, st, child.ID, "not needed"); err != nil {
		t.Fatal(err)
	}
	check := func(wantGoal status.Status, wantDone int) {
		t.Helper()
		whole, err := Load(ctx, st, "")
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{goal.ID, after.ID} {
			one, _, err := LoadTask(ctx, st, "", id[:8])
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := one.Status[id]; !ok {
				t.Fatalf("LoadTask(%s) resolved no status for it", id[:8])
			}
			for j, r := range one.Status {
				if !reflect.DeepEqual(r, whole.Status[j]) {
					t.Errorf("LoadTask(%s) says %s is %+v, Load %+v", id[:8], j[:8], r, whole.Status[j])
				}
			}
		}
		g := whole.Status[goal.ID]
		if g.Status != wantGoal || g.Children == nil || g.Children.Done != wantDone || g.Children.Total != 1 || g.Ready {
			t.Fatalf("goal %+v %+v, want %s with %d/1 done", g, g.Children, wantGoal, wantDone)
		}
		if whole.Status[after.ID].Ready != (wantGoal == status.Done) {
			t.Fatalf("blocked task %+v with the goal %s", whole.Status[after.ID], wantGoal)
		}
	}
	check(status.InProgress, 0)
	// The grandchild's work reaches the base: the sub-goal, then the goal,
	// are done.
	base := strings.TrimSpace(gittest.Git(t, dir, "rev-parse", "main"))
	s := sessions.Session{ID: gitstore.NewID(), Task: grand.ID, Agent: "coder", Client: "custom", Mode: sessions.ModeDetach,
		Host: "elsewhere", Timeout: 60, Started: time.Now().UTC(), BaseRef: "main", BaseCommit: base}
	s.Branch = sessions.Branch(grand.ID, s.ID)
	tree := strings.TrimSpace(gittest.Git(t, dir, "rev-parse", base+"^{tree}"))
	tip := strings.TrimSpace(gittest.Git(t, dir, "commit-tree", "-p", base, "-m", "work", tree))
	gittest.Git(t, dir, "update-ref", "refs/heads/"+s.Branch, tip)
	s, root, err := sessions.Create(ctx, st, s)
	if err != nil {
		t.Fatal(err)
	}
	valid := true
	o := sessions.Outcome{ExitCode: 0, Finished: s.Started.Add(time.Minute), By: "t", Tip: tip, ScopeValid: &valid,
		DoDStatus: "passed", Scope: json.RawMessage(`{"valid":true,"violations":[],"changed":[]}`),
		DoD: json.RawMessage(`{"status":"passed"}`), Commits: 1}
	if err := sessions.RecordOutcome(ctx, st, sessions.Record{Session: s, Root: root}, &o); err != nil {
		t.Fatal(err)
	}
	gittest.Git(t, dir, "update-ref", "refs/heads/main", tip)
	check(status.Done, 1)
}

// TestLoadTaskChildIndex: LoadTask on a goal finds its descendants through
// the child index once one was made, without listing every task (the list
// cache, removed, is not written again), and answers as Load does as the
// tasks change: a child re-parented away and one added are seen at once
// (the index is keyed by the task refs), and an index naming a task that
// is not a child (planted) is not believed.
func TestLoadTaskChildIndex(t *testing.T) {
	ctx := context.Background()
	dir := gittest.NewRepo(t)
	st, err := gitstore.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	add := func(n tasks.New) tasks.Task {
		t.Helper()
		x, err := tasks.Add(ctx, st, n)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	goal := add(tasks.New{Title: "goal"})
	child := add(tasks.New{Title: "child", Parent: goal.ID})
	sub := add(tasks.New{Title: "sub-goal", Parent: goal.ID})
	add(tasks.New{Title: "grandchild", Parent: sub.ID})
	other := add(tasks.New{Title: "other goal"})
	listCache := filepath.Join(strings.TrimSpace(gittest.Git(t, dir, "rev-parse", "--git-common-dir")), "agentmine", "cache", tasks.Kind.Dir)
	if !filepath.IsAbs(listCache) {
		listCache = filepath.Join(dir, listCache)
	}
	check := func(what string, wantTotal int, indexed bool) {
		t.Helper()
		os.Remove(listCache)
		one, _, err := LoadTask(ctx, st, "", goal.ID[:8])
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(listCache); (err == nil) == indexed {
			t.Fatalf("%s: the task list was read: %v, want %v", what, err == nil, !indexed)
		}
		whole, err := Load(ctx, st, "")
		if err != nil {
			t.Fatal(err)
		}
		g := one.Status[goal.ID]
		if !reflect.DeepEqual(g, whole.Status[goal.ID]) || g.Children == nil || g.Children.Total != wantTotal {
			t.Fatalf("%s: LoadTask says the goal is %+v %+v, Load %+v, want %d children", what, g, g.Children, whole.Status[goal.ID], wantTotal)
		}
		for _, id := range whole.Tasks.IDs {
			if _, ok := one.Tasks.Tasks[id]; ok && one.Tasks.ShortID(id) != whole.Tasks.ShortID(id) {
				t.Fatalf("%s: short id of %s is %s, on the board %s", what, id, one.Tasks.ShortID(id), whole.Tasks.ShortID(id))
			}
		}
	}
	check("first read", 2, false)
	check("indexed", 2, true)
	moved := other.ID
	if _, _, err := tasks.Update(ctx, st, child.ID, tasks.Patch{Parent: &moved}); err != nil {
		t.Fatal(err)
	}
	check("child moved away", 1, false)
	check("indexed after the move", 1, true)
	add(tasks.New{Title: "new child", Parent: goal.ID})
	check("child added", 2, false)
	check("indexed after the add", 2, true)
	// A planted index under the current stamp names the other goal as the
	// goal's child: the other goal's document says otherwise.
	stamp, _ := tasks.ChildStamp(st)
	var recs []string
	for _, id := range []string{child.ID, other.ID, sub.ID} {
		recs = append(recs, goal.ID+" "+id+"\n")
	}
	sort.Strings(recs)
	st.WriteSortedIndex(tasks.Kind, "parent-keyed", stamp, recs, st.DropToken())
	check("planted index", 2, false)
}
