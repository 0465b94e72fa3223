package worker

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/internal/gittest"
	"github.com/git-agentmine/git-agentmine/sessions"
	"github.com/git-agentmine/git-agentmine/tasks"
	"github.com/git-agentmine/git-agentmine/verify"
)

func TestExplainedFollowsOwnWritesOnly(t *testing.T) {
	own := func(old, new string) gitstore.JournalEntry {
		return gitstore.JournalEntry{Op: "update", Old: old, New: new}
	}
	worker := func(old, new string) gitstore.JournalEntry {
		return gitstore.JournalEntry{Op: "update", Old: old, New: new, Session: "s1"}
	}
	cases := []struct {
		name     string
		entries  []gitstore.JournalEntry
		old, new string
		want     bool
	}{
		{"unchanged", nil, "a", "a", true},
		{"nothing journaled", nil, "a", "b", false},
		{"one own write", []gitstore.JournalEntry{own("a", "b")}, "a", "b", true},
		{"a chain of own writes, out of order", []gitstore.JournalEntry{own("b", "c"), own("a", "b")}, "a", "c", true},
		{"created and deleted", []gitstore.JournalEntry{own("", "a"), own("a", "")}, "", "", true},
		{"created", []gitstore.JournalEntry{own("", "a")}, "", "a", true},
		{"a worker's write is no explanation", []gitstore.JournalEntry{worker("a", "b")}, "a", "b", false},
		{"a chain broken by a worker's write", []gitstore.JournalEntry{own("a", "b"), worker("b", "c")}, "a", "c", false},
		{"own writes from elsewhere", []gitstore.JournalEntry{own("x", "b")}, "a", "b", false},
		{"a cycle does not loop", []gitstore.JournalEntry{own("a", "b"), own("b", "a")}, "a", "c", false},
	}
	for _, c := range cases {
		if got := explained(c.entries, c.old, c.new); got != c.want {
			t.Errorf("%s: explained = %v, want %v", c.name, got, c.want)
		}
	}
}

// refFixture is a repository with a task, a session of it whose branch
// holds one commit beyond its base, and the session's supervisor watching.
type refFixture struct {
	t    *testing.T
	dir  string
	env  *Env
	rec  sessions.Record
	base string // base commit
	tip  string // the session's tip
}

func newRefFixture(t *testing.T) *refFixture {
	t.Helper()
	dir := gittest.NewRepo(t)
	ctx := context.Background()
	st, err := gitstore.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	task, err := tasks.Add(ctx, st, tasks.New{Title: "Refs"})
	if err != nil {
		t.Fatal(err)
	}
	base := gittest.Git(t, dir, "rev-parse", "HEAD")
	sid := gitstore.NewID()
	branch := sessions.Branch(task.ID, sid)
	gittest.Git(t, dir, "checkout", "-q", "-b", branch)
	tip := gittest.CommitFiles(t, dir, "work", map[string]string{"src/a.txt": "a\n"})
	gittest.Git(t, dir, "checkout", "-q", "main")
	s, root, err := sessions.Create(ctx, st, sessions.Session{ID: sid, Task: task.ID, Agent: "a", Branch: branch,
		BaseRef: "main", BaseCommit: base, Started: time.Now().UTC(), Mode: sessions.ModeExec})
	if err != nil {
		t.Fatal(err)
	}
	return &refFixture{t: t, dir: dir, env: &Env{St: st, Top: dir}, rec: sessions.Record{Session: s, Root: root}, base: base, tip: tip}
}

// judge runs fn between the two snapshots and returns the outcome with the
// violations found.
func (f *refFixture) judge(fn func()) sessions.Outcome {
	f.t.Helper()
	ctx := context.Background()
	w := f.env.watchRefs(ctx, f.rec, func(format string, a ...any) { f.t.Logf(format, a...) })
	fn()
	out := sessions.Outcome{Tip: f.tip, Commits: 1}
	verify.Verdicts{Scope: verify.Verdict{Valid: true, Tip: f.tip, Violations: []verify.Violation{}}, HasScope: true,
		DoD: verify.DoDResult{Status: "passed"}}.Record(&out)
	f.env.checkRefs(ctx, f.rec, w, &out)
	return out
}

func (f *refFixture) git(args ...string) string {
	f.t.Helper()
	return gittest.Git(f.t, f.dir, args...)
}

// violations lists "type path: reason" of the outcome's scope verdict.
func violations(t *testing.T, out sessions.Outcome) []string {
	t.Helper()
	v := verify.ParseVerdicts(&out)
	var s []string
	for _, x := range v.Scope.Violations {
		s = append(s, x.Type+" "+x.Path+": "+x.Reason)
	}
	summary := out.ScopeValid != nil && *out.ScopeValid
	if (len(s) == 0) != v.Scope.Valid || v.Scope.Valid != summary {
		t.Errorf("verdict valid %v (summary %v) with %d violations", v.Scope.Valid, summary, len(s))
	}
	return s
}

func TestCheckRefsHonestRun(t *testing.T) {
	f := newRefFixture(t)
	out := f.judge(func() {
		// The worker commits on its own branch.
		f.git("checkout", "-q", f.rec.Session.Branch)
		f.tip = gittest.CommitFiles(t, f.dir, "more", map[string]string{"src/b.txt": "b\n"})
		f.git("checkout", "-q", "main")
	})
	if vs := violations(t, out); len(vs) != 0 {
		t.Fatalf("an honest run: %v", vs)
	}
	if out.Reason != "" {
		t.Errorf("reason %q", out.Reason)
	}
}

func TestCheckRefsAgentmineOwnWritesAreExcused(t *testing.T) {
	f := newRefFixture(t)
	ctx := context.Background()
	st := f.env.St
	out := f.judge(func() {
		// Another task added, the base moved by a (journaled) merge, a
		// note written, another live session started with its branch.
		if _, err := tasks.Add(ctx, st, tasks.New{Title: "Meanwhile"}); err != nil {
			t.Fatal(err)
		}
		head := f.git("rev-parse", "main")
		f.git("checkout", "-q", "-b", "side")
		moved := gittest.CommitFiles(t, f.dir, "side", map[string]string{"docs/d.txt": "d\n"})
		f.git("checkout", "-q", "main")
		f.git("branch", "-q", "-D", "side")
		if err := st.Transact(ctx, []gitstore.RefOp{{Verb: "update", Ref: "refs/heads/main", New: moved, Old: head}}); err != nil {
			t.Fatal(err)
		}
		if err := st.AppendNote(ctx, f.rec.Root, []byte(`{"v":1}`)); err != nil {
			t.Fatal(err)
		}
		other := gitstore.NewID()
		ob := sessions.Branch(f.rec.Session.Task, other)
		if _, _, err := sessions.Create(ctx, st, sessions.Session{ID: other, Task: f.rec.Session.Task, Branch: ob, Started: time.Now().UTC()}); err != nil {
			t.Fatal(err)
		}
		f.git("branch", ob, moved)
	})
	if vs := violations(t, out); len(vs) != 0 {
		t.Fatalf("agentmine's own writes were held against the worker: %v", vs)
	}
}

// TestCheckRefsWorkerMovesTheBase is attack 2 at the unit level: the base is
// moved to the worker's tip by plain git.
func TestCheckRefsWorkerMovesTheBase(t *testing.T) {
	f := newRefFixture(t)
	out := f.judge(func() { f.git("update-ref", "refs/heads/main", f.tip) })
	vs := violations(t, out)
	if len(vs) != 2 ||
		!strings.HasPrefix(vs[0], "ref-changed refs/heads/main: moved from "+f.base[:12]+" to "+f.tip[:12]+" during the run, not by agentmine") ||
		!strings.HasPrefix(vs[1], "base-moved-during-run refs/heads/main: refs/heads/main was moved during the run, not by a gated merge; it now holds 1 of the session's 1 commit(s)") {
		t.Fatalf("violations %q", vs)
	}
	if out.Reason != "ref-changed refs/heads/main (+1 more)" {
		t.Errorf("reason %q", out.Reason)
	}
}

// TestCheckRefsMovedAndMovedBack: a base moved to the worker's tip and back
// before the end looks unchanged in the snapshots; its reflog shows it.
// agentmine's own journaled moves there and back are excused.
func TestCheckRefsMovedAndMovedBack(t *testing.T) {
	f := newRefFixture(t)
	out := f.judge(func() {
		f.git("update-ref", "refs/heads/main", f.tip)
		f.git("update-ref", "refs/heads/main", f.base)
	})
	vs := violations(t, out)
	if len(vs) != 1 || vs[0] != "ref-changed refs/heads/main: moved to "+f.tip[:12]+" and back to "+f.base[:12]+
		" during the run (its reflog shows it), not by agentmine (by the worker, or by someone else working in this repository)" {
		t.Fatalf("violations %q", vs)
	}

	f = newRefFixture(t)
	ctx := context.Background()
	out = f.judge(func() {
		for _, m := range [][2]string{{f.base, f.tip}, {f.tip, f.base}} {
			if err := f.env.St.Transact(ctx, []gitstore.RefOp{{Verb: "update", Ref: "refs/heads/main", Old: m[0], New: m[1]}}); err != nil {
				t.Fatal(err)
			}
		}
	})
	if vs := violations(t, out); len(vs) != 0 {
		t.Fatalf("agentmine's own moves: %q", vs)
	}
}

// TestCheckRefsWorkerWritesThroughAgentmine is attack 3 at the unit level:
// the task's base is re-pointed at the worker's branch by an agentmine
// process the journal credits to the worker.
func TestCheckRefsWorkerWritesThroughAgentmine(t *testing.T) {
	f := newRefFixture(t)
	ctx := context.Background()
	out := f.judge(func() {
		t.Setenv(gitstore.SessionEnv, f.rec.Session.ID) // as the worker's environment has it
		wst, err := gitstore.Open(ctx, f.dir)
		if err != nil {
			t.Fatal(err)
		}
		base := f.rec.Session.Branch
		if _, _, err := tasks.Update(ctx, wst, f.rec.Session.Task, tasks.Patch{Base: &base}); err != nil {
			t.Fatal(err)
		}
		os.Unsetenv(gitstore.SessionEnv)
	})
	vs := violations(t, out)
	if len(vs) != 2 ||
		!strings.HasPrefix(vs[0], "ref-changed refs/agentmine/tasks/"+f.rec.Session.Task+": moved from ") ||
		!strings.Contains(vs[0], "run by this worker") ||
		!strings.HasPrefix(vs[1], "base-moved-during-run refs/heads/"+f.rec.Session.Branch+": the task's base was changed during the run to "+f.rec.Session.Branch) {
		t.Fatalf("violations %q", vs)
	}
}

func TestCheckRefsOtherSessionsBranches(t *testing.T) {
	f := newRefFixture(t)
	ctx := context.Background()
	st := f.env.St
	mk := func(finished time.Time) (string, string) {
		id := gitstore.NewID()
		br := sessions.Branch(f.rec.Session.Task, id)
		s, root, err := sessions.Create(ctx, st, sessions.Session{ID: id, Task: f.rec.Session.Task, Branch: br, Started: finished.Add(-time.Minute)})
		if err != nil {
			t.Fatal(err)
		}
		if !finished.IsZero() {
			if err := sessions.RecordOutcome(ctx, st, sessions.Record{Session: s, Root: root}, &sessions.Outcome{Finished: finished}); err != nil {
				t.Fatal(err)
			}
		}
		f.git("branch", br, f.base)
		return id, br
	}
	_, live := mk(time.Time{})
	_, old := mk(time.Now().Add(-time.Hour))
	_, deleted := mk(time.Now().Add(-time.Hour))
	out := f.judge(func() {
		f.git("update-ref", "refs/heads/"+live, f.tip) // its worker commits: its supervisor judges it
		f.git("update-ref", "refs/heads/"+old, f.tip)  // a finished session's branch must not move
		// worker done deletes a finished session's branch through the
		// store: journaled, excused.
		if err := st.DeleteRef(ctx, "refs/heads/"+deleted); err != nil {
			t.Fatal(err)
		}
	})
	vs := violations(t, out)
	if len(vs) != 1 || !strings.HasPrefix(vs[0], "ref-changed refs/heads/"+old+": moved from ") {
		t.Fatalf("violations %q", vs)
	}
}

// TestCheckRefsAnotherWorkersWrite: a write the journal
// credits to another session's worker is not agentmine's own either.
func TestCheckRefsAnotherWorkersWrite(t *testing.T) {
	f := newRefFixture(t)
	st := f.env.St
	out := f.judge(func() {
		f.git("update-ref", "refs/tags/v1", f.base)
		line, _ := json.Marshal(gitstore.JournalEntry{Time: time.Now().UTC(), Pid: 1, Op: "create", Ref: "refs/tags/v1",
			New: f.base, Session: "0123456789abcdef0123", Cmd: "git-agentmine tag"})
		jf, err := os.OpenFile(filepath.Join(st.Location().CommonDir, "agentmine", gitstore.JournalFile), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		jf.Write(append(line, '\n'))
		jf.Close()
	})
	vs := violations(t, out)
	if len(vs) != 1 || !strings.HasSuffix(vs[0], "created at "+f.base[:12]+" during the run, by `git-agentmine tag` run by the worker of session 0123456789ab") {
		t.Fatalf("violations %q", vs)
	}
}

func TestCheckRefsKeepsEarlierViolationsAndReason(t *testing.T) {
	f := newRefFixture(t)
	ctx := context.Background()
	w := f.env.watchRefs(ctx, f.rec, t.Logf)
	f.git("tag", "v2")
	out := sessions.Outcome{Tip: f.tip, Commits: 1, Reason: "the client said so"}
	verify.Verdicts{Scope: verify.Verdict{Valid: false, Tip: f.tip, Violations: []verify.Violation{{Type: verify.ViolationExcluded, Path: ".env", Reason: "committed"}}},
		HasScope: true, DoD: verify.DoDResult{Status: "passed"}}.Record(&out)
	f.env.checkRefs(ctx, f.rec, w, &out)
	vs := violations(t, out)
	if len(vs) != 2 || !strings.HasPrefix(vs[0], "excluded .env") || !strings.HasPrefix(vs[1], "ref-changed refs/tags/v2: created at") {
		t.Fatalf("violations %q", vs)
	}
	if out.Reason != "the client said so" {
		t.Errorf("a reason of its own was replaced: %q", out.Reason)
	}
	// The registration ended with the check.
	if got := f.env.St.OnBehalf(); got != "" {
		t.Errorf("this process writes for %q", got)
	}
	if ents, _ := os.ReadDir(filepath.Join(f.env.St.Location().CommonDir, "agentmine", "supervisors")); len(ents) != 0 {
		t.Errorf("registrations left behind: %v", ents)
	}
}
