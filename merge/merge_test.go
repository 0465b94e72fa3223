package merge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/gitcmd"
	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/internal/gittest"
	"github.com/git-agentmine/git-agentmine/sessions"
	"github.com/git-agentmine/git-agentmine/verify"
)

// repo is a scratch repository: main with one commit, and a session branch
// with one more commit changing src/a.txt.
type repo struct {
	dir  string
	g    gitcmd.Runner
	st   *gitstore.Store
	base string
	tip  string
}

func newRepo(t *testing.T) *repo {
	t.Helper()
	dir := gittest.Init(t)
	r := &repo{dir: dir, g: gitcmd.Runner{Dir: dir}}
	r.base = gittest.CommitFiles(t, dir, "base", map[string]string{"src/a.txt": "a\n", "docs/d.txt": "d\n"})
	r.git(t, "checkout", "-q", "-b", "task-work")
	r.tip = gittest.CommitFiles(t, dir, "work", map[string]string{"src/a.txt": "a changed by the worker\n"})
	// The user's checkout is on another branch, so main is not checked out.
	r.git(t, "checkout", "-q", "--detach", r.base)
	st, err := gitstore.Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	r.st = st
	return r
}

// git runs git in the scratch repository.
func (r *repo) git(t *testing.T, args ...string) string {
	t.Helper()
	return gittest.Git(t, r.dir, args...)
}

// advanceMain commits a change of rel on top of main without touching the
// checkout (as another process merging meanwhile would), returning it.
func (r *repo) advanceMain(t *testing.T, rel, text string) string {
	t.Helper()
	c := r.commitOn(t, "main", rel, text)
	r.git(t, "update-ref", "refs/heads/main", c)
	return c
}

// commitOn writes a commit on top of parent that sets rel to text, with
// no branch and without touching the checkout, and returns it.
func (r *repo) commitOn(t *testing.T, parent, rel, text string) string {
	t.Helper()
	blob := gittest.GitInput(t, r.dir, strings.NewReader(text), "hash-object", "-w", "--stdin")
	idx := filepath.Join(t.TempDir(), "index")
	g := gitcmd.Runner{Dir: r.dir, Env: []string{"GIT_INDEX_FILE=" + idx}}
	ctx := context.Background()
	for _, args := range [][]string{{"read-tree", parent}, {"update-index", "--add", "--cacheinfo", "100644," + blob + "," + rel}} {
		if _, err := g.Run(ctx, args...); err != nil {
			t.Fatal(err)
		}
	}
	tree, err := g.Output(ctx, "write-tree")
	if err != nil {
		t.Fatal(err)
	}
	return r.git(t, "commit-tree", tree, "-p", parent, "-m", "meanwhile: "+rel)
}

func (r *repo) record() sessions.Record {
	return sessions.Record{
		Session: sessions.Session{ID: "5e55105e55105e55105e", Task: "7a5c7a5c7a5c7a5c7a5c", BaseRef: "main", BaseCommit: r.base, Branch: "task-work",
			Scope: sessions.Scope{Write: []string{"**"}}},
		Outcome: &sessions.Outcome{Tip: r.tip},
	}
}

func parents(t *testing.T, r *repo, c string) []string {
	return strings.Fields(r.git(t, "rev-list", "--parents", "-n1", c))[1:]
}

// TestLandRetriesWhenBaseMoves: the base moves between computing the merge
// and the ref update; the compare-and-swap fails cleanly (nothing is
// overwritten) and the merge is recomputed on the new base.
func TestLandRetriesWhenBaseMoves(t *testing.T) {
	r := newRepo(t)
	moved := ""
	calls := 0
	o := Options{beforeUpdate: func() {
		calls++
		if calls == 1 {
			moved = r.advanceMain(t, "docs/d.txt", "d changed meanwhile\n")
		}
	}}
	res, err := land(context.Background(), r.g, r.st, r.record(), "Work", nil, o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Retries != 1 || calls != 2 {
		t.Fatalf("retries %d, beforeUpdate calls %d; want 1 and 2", res.Retries, calls)
	}
	if got := r.git(t, "rev-parse", "main"); got != res.Commit {
		t.Fatalf("main is %s, want the merge %s", got, res.Commit)
	}
	if p := parents(t, r, res.Commit); len(p) != 2 || p[0] != moved || p[1] != r.tip {
		t.Fatalf("merge parents %v, want [%s %s] (the moved base first)", p, moved, r.tip)
	}
	// Both changes are in the merge: nothing of the move was lost.
	if got := r.git(t, "show", "main:docs/d.txt"); got != "d changed meanwhile" {
		t.Fatalf("docs/d.txt = %q", got)
	}
	if got := r.git(t, "show", "main:src/a.txt"); got != "a changed by the worker" {
		t.Fatalf("src/a.txt = %q", got)
	}
	msg := r.git(t, "log", "-1", "--format=%B", "main")
	for _, want := range []string{"Agentmine-Task: 7a5c7a5c7a5c7a5c7a5c", "Agentmine-Session: 5e55105e55105e55105e"} {
		if !strings.Contains(msg, want) {
			t.Fatalf("merge message lacks %q:\n%s", want, msg)
		}
	}
}

// TestLandGivesUpWhenBaseKeepsMoving: every attempt loses the race; the
// merge gives up with a state error and the base keeps the other writer's
// commit.
func TestLandGivesUpWhenBaseKeepsMoving(t *testing.T) {
	gittest.SkipShort(t, "a base moved on every retry until the merge gives up")
	r := newRepo(t)
	last := ""
	n := 0
	o := Options{Attempts: 3, beforeUpdate: func() {
		n++
		last = r.advanceMain(t, "docs/d.txt", strings.Repeat("x", n)+"\n")
	}}
	_, err := land(context.Background(), r.g, r.st, r.record(), "Work", nil, o)
	if err == nil || exitcode.Of(err) != exitcode.State || !strings.Contains(err.Error(), "kept moving during 3 merge attempts") {
		t.Fatalf("err = %v (code %d), want a state error after 3 attempts", err, exitcode.Of(err))
	}
	if got := r.git(t, "rev-parse", "main"); got != last {
		t.Fatalf("main is %s, want the last concurrent commit %s", got, last)
	}
}

// TestLandConflictAfterMove: the base moves with a conflicting change; the
// retry reports the conflict, lists the path and leaves main alone.
func TestLandConflictAfterMove(t *testing.T) {
	r := newRepo(t)
	moved := ""
	o := Options{beforeUpdate: func() {
		if moved == "" {
			moved = r.advanceMain(t, "src/a.txt", "a changed on main\n")
		}
	}}
	_, err := land(context.Background(), r.g, r.st, r.record(), "Work", nil, o)
	var ce *ConflictError
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v, want a ConflictError", err)
	}
	if len(ce.Paths) != 1 || ce.Paths[0] != "src/a.txt" || exitcode.Of(err) != exitcode.Failed {
		t.Fatalf("conflict paths %v, code %d", ce.Paths, exitcode.Of(err))
	}
	if got := r.git(t, "rev-parse", "main"); got != moved {
		t.Fatalf("main moved to %s, want it left at %s", got, moved)
	}
}

// TestLandAlreadyMerged: a tip already in the base is reported, not merged
// again.
func TestLandAlreadyMerged(t *testing.T) {
	r := newRepo(t)
	r.git(t, "update-ref", "refs/heads/main", r.tip)
	res, err := land(context.Background(), r.g, r.st, r.record(), "Work", nil, Options{})
	if err != nil || !res.Already || res.Commit != r.tip {
		t.Fatalf("res %+v, err %v; want already merged at the tip", res, err)
	}
}

// TestLandUpdatesCleanCheckout: main checked out and clean follows the
// merge; main checked out with uncommitted changes refuses (state) and
// changes nothing.
func TestLandUpdatesCleanCheckout(t *testing.T) {
	r := newRepo(t)
	r.git(t, "checkout", "-q", "main")
	gittest.WriteFiles(t, r.dir, map[string]string{"src/a.txt": "uncommitted\n"})
	_, err := land(context.Background(), r.g, r.st, r.record(), "Work", nil, Options{})
	if exitcode.Of(err) != exitcode.State || !strings.Contains(err.Error(), "uncommitted changes") {
		t.Fatalf("err = %v, want a state error about uncommitted changes", err)
	}
	if got := r.git(t, "rev-parse", "main"); got != r.base {
		t.Fatal("main moved although the merge was refused")
	}
	r.git(t, "checkout", "-q", "--", "src/a.txt")
	res, err := land(context.Background(), r.g, r.st, r.record(), "Work", nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Worktrees) != 1 {
		t.Fatalf("updated worktrees %v, want the main checkout", res.Worktrees)
	}
	data, _ := os.ReadFile(filepath.Join(r.dir, "src/a.txt"))
	if string(data) != "a changed by the worker\n" {
		t.Fatalf("checkout has %q", data)
	}
	if st := r.git(t, "status", "--porcelain"); st != "" {
		t.Fatalf("checkout is not clean after the merge:\n%s", st)
	}
}

// TestGate: the facts that allow or refuse a merge, with their exit codes.
func TestGate(t *testing.T) {
	scopeOK, _ := json.Marshal(verify.Verdict{Valid: true})
	scopeBad, _ := json.Marshal(verify.Verdict{Valid: false, Violations: []verify.Violation{{Type: verify.ViolationExcluded, Path: ".env"}}})
	mainOnly, _ := json.Marshal(verify.Verdict{Valid: false, Violations: []verify.Violation{
		{Type: MainCheckoutChanged, Path: "README.md", Reason: "modified"},
		{Type: MainCheckoutChanged, Reason: "the main checkout's HEAD moved"}}})
	mainAndMore, _ := json.Marshal(verify.Verdict{Valid: false, Violations: []verify.Violation{
		{Type: MainCheckoutChanged, Path: "README.md", Reason: "modified"},
		{Type: verify.ViolationExcluded, Path: ".env"}}})
	dod := func(status string) json.RawMessage {
		b, _ := json.Marshal(verify.DoDResult{Status: status, Reason: "r"})
		return b
	}
	base, tip := strings.Repeat("b", 40), strings.Repeat("c", 40)
	ok := sessions.Outcome{Tip: tip, Scope: scopeOK, DoD: dod("passed")}
	cases := []struct {
		name    string
		out     *sessions.Outcome
		edit    func(o *sessions.Outcome)
		skipped bool
		code    int
		want    string
		accept  bool
	}{
		{"passed", &ok, nil, false, exitcode.OK, "", false},
		{"running", nil, nil, false, exitcode.State, "has not ended", false},
		{"timed out", &ok, func(o *sessions.Outcome) { o.TimedOut, o.ExitCode = true, 124 }, false, exitcode.Failed, "timed out", false},
		{"signal", &ok, func(o *sessions.Outcome) { o.Signal, o.ExitCode = "SIGTERM", 130 }, false, exitcode.Failed, "killed by SIGTERM", false},
		{"exit", &ok, func(o *sessions.Outcome) { o.ExitCode = 3 }, false, exitcode.Failed, "exited 3", false},
		{"no verdict", &ok, func(o *sessions.Outcome) { o.Scope = nil }, false, exitcode.Failed, "no scope verdict", false},
		{"scope", &ok, func(o *sessions.Outcome) { o.Scope = scopeBad }, false, exitcode.Failed, "broke its scope: excluded .env", false},
		{"main checkout", &ok, func(o *sessions.Outcome) { o.Scope = mainOnly }, false, exitcode.Failed, "session 5e55105e: the main checkout changed during its run: README.md (+1 more)", false},
		{"main checkout accepted", &ok, func(o *sessions.Outcome) { o.Scope = mainOnly }, false, exitcode.OK, "", true},
		{"main checkout accepted, excluded not", &ok, func(o *sessions.Outcome) { o.Scope = mainAndMore }, false, exitcode.Failed, "broke its scope: excluded .env", true},
		{"main checkout accepted, DoD failed", &ok, func(o *sessions.Outcome) { o.Scope, o.DoD = mainOnly, dod("failed") }, false, exitcode.Failed, "DoD failed: r", true},
		{"main checkout, DoD failed", &ok, func(o *sessions.Outcome) { o.Scope, o.DoD = mainOnly, dod("failed") }, false, exitcode.Failed, "DoD failed: r", false},
		{"dod failed", &ok, func(o *sessions.Outcome) { o.DoD = dod("failed") }, false, exitcode.Failed, "DoD failed", false},
		{"dod timeout", &ok, func(o *sessions.Outcome) { o.DoD = dod("timeout") }, false, exitcode.Failed, "DoD timeout", false},
		{"dod skipped", &ok, func(o *sessions.Outcome) { o.DoD = dod("skipped") }, false, exitcode.Failed, "skipped its DoD", false},
		{"dod skipped allowed", &ok, func(o *sessions.Outcome) { o.DoD = dod("skipped") }, true, exitcode.OK, "", false},
		{"no commit", &ok, func(o *sessions.Outcome) { o.Tip = base }, false, exitcode.Failed, "made no commit: no commits beyond the base", false},
		{"no commit, DoD failed without commands", &ok, func(o *sessions.Outcome) {
			o.Tip = base
			o.DoD = []byte(`{"status":"failed","reason":"no commits beyond the base"}`)
		}, false, exitcode.Failed, "DoD failed: no commits beyond the base", false},
		// A scope verdict without a DoD result (recorded before a DoD that
		// could not run said why): the outcome's reason, never "DoD : ".
		{"no DoD result", &ok, func(o *sessions.Outcome) { o.DoD = nil }, false, exitcode.Failed, "has no DoD result: the DoD did not run", false},
		{"no DoD result, reason recorded", &ok, func(o *sessions.Outcome) {
			o.DoD, o.Reason = nil, "running the DoD: run dod: check out 1234: invalid path 'src/.git/x'"
		}, false, exitcode.Failed, "has no DoD result: running the DoD: run dod: check out 1234: invalid path", false},
		{"DoD could not run", &ok, func(o *sessions.Outcome) {
			o.DoD, _ = json.Marshal(verify.NotRun(errors.New("run dod: check out 1234: invalid path 'src/.git/x'")))
		}, false, exitcode.Failed, "DoD failed: the DoD could not run: run dod: check out 1234: invalid path", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec := sessions.Record{Session: sessions.Session{ID: "5e55105e55105e55105e", BaseCommit: base}}
			if c.out != nil {
				o := *c.out
				if c.edit != nil {
					c.edit(&o)
				}
				rec.Outcome = &o
			}
			accepted, err := gate(rec, "7a5c", Options{AllowSkipped: c.skipped, AcceptMainChanges: c.accept})
			if c.accept && err == nil && strings.Join(accepted, "|") != "README.md|the main checkout's HEAD moved" {
				t.Errorf("accepted %q", accepted)
			}
			var me *MainCheckoutError
			if errors.As(err, &me) != (c.name == "main checkout") || me != nil && (me.Task != "7a5c" || me.Paths[0] != "README.md") {
				t.Errorf("gate: %v: MainCheckoutError %#v, want one exactly for the unaccepted main-checkout change", err, me)
			}
			if exitcode.Of(err) != c.code || (c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want))) {
				t.Fatalf("gate: %v (code %d), want code %d and %q", err, exitcode.Of(err), c.code, c.want)
			}
			var re *RefusedError
			if refused := errors.As(err, &re); refused != (c.out == nil) || (refused && (!errors.Is(err, ErrNotEnded) || re.Task != "7a5c")) {
				t.Fatalf("gate: %v is refused=%v (%#v); want a RefusedError for ErrNotEnded exactly when the session has not ended", err, refused, re)
			}
			if err != nil {
				if strings.HasSuffix(err.Error(), ": ") {
					t.Errorf("gate: %q ends with an empty reason", err)
				}
				// the CLI gives typed refusals (naming the task) their hint;
				// every other refusal carries one
				var ve *VerdictError
				if errors.As(err, &ve) && ve.Task != "7a5c" {
					t.Errorf("gate: %q names task %q, want 7a5c", err, ve.Task)
				}
				if re == nil && ve == nil && me == nil && exitcode.HintOf(err) == "" {
					t.Errorf("gate: %q gives no next step (hint)", err)
				}
			}
		})
	}
}

// TestLandRecordsAcceptedMainChanges: accepted main-checkout changes are
// trailers of the merge commit, one per path, and in the result.
func TestLandRecordsAcceptedMainChanges(t *testing.T) {
	r := newRepo(t)
	accepted := []string{".env", "README.md", "the main checkout's HEAD moved\nduring the run"}
	res, err := land(context.Background(), r.g, r.st, r.record(), "Work", accepted, Options{AcceptMainChanges: true})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(res.Accepted, "|") != strings.Join(accepted, "|") {
		t.Errorf("result accepted %q", res.Accepted)
	}
	got := r.git(t, "log", "-1", "--format=%(trailers:key=Agentmine-Accepted-Main-Change,valueonly,separator=|)", res.Commit)
	if got != ".env|README.md|the main checkout's HEAD moved during the run" {
		t.Errorf("trailers %q", got)
	}
	if got := r.git(t, "log", "-1", "--format=%(trailers:key=Agentmine-Session,valueonly)", res.Commit); got != r.record().Session.ID {
		t.Errorf("session trailer %q", got)
	}
	many := make([]string, maxAcceptedTrailers+3)
	for i := range many {
		many[i] = fmt.Sprintf("f%02d", i)
	}
	if tr := acceptedTrailers(many); strings.Count(tr, "\n") != maxAcceptedTrailers+1 || !strings.HasSuffix(tr, "Agentmine-Accepted-Main-Change: (3 more)\n") {
		t.Errorf("bounded trailers:\n%s", tr)
	}
}

// TestLandHoldsTheCheckoutLock: from the ref update until the files of the
// checked-out base follow, the merge holds that checkout's lock, so a
// supervisor's snapshot of it cannot fall in between; once it returns, the
// lock is free again.
func TestLandHoldsTheCheckoutLock(t *testing.T) {
	r := newRepo(t)
	r.git(t, "checkout", "-q", "main")
	held := false
	o := Options{beforeUpdate: func() {
		release, ok := r.st.LockCheckout(context.Background(), r.dir, 0)
		release()
		held = !ok
	}}
	res, err := land(context.Background(), r.g, r.st, r.record(), "Work", nil, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Worktrees) != 1 || !held {
		t.Fatalf("updated %v; lock held during the update: %v, want the main checkout updated under its lock", res.Worktrees, held)
	}
	release, ok := r.st.LockCheckout(context.Background(), r.dir, 0)
	release()
	if !ok {
		t.Error("the checkout lock is still held after the merge")
	}
}
