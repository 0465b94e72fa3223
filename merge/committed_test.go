package merge

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/internal/gittest"
	"github.com/git-agentmine/git-agentmine/sessions"
)

// scopedRecord is r's session with the scope write src/**, exclude .env,
// its outcome claiming everything passed (the gate's own facts are the
// commits, never the note), and its tip moved to a commit on the base
// that sets files.
func scopedRecord(t *testing.T, r *repo, files map[string]string) sessions.Record {
	t.Helper()
	r.git(t, "checkout", "-q", "-b", "task-scoped", r.base)
	tip := gittest.CommitFiles(t, r.dir, "work", files)
	r.git(t, "checkout", "-q", "--detach", r.base)
	rec := r.record()
	rec.Session.Branch = "task-scoped"
	rec.Session.Scope = sessions.Scope{Write: []string{"src/**"}, Exclude: []string{".env"}}
	rec.Outcome.Tip = tip
	return rec
}

// TestLandRefusesWhatTheCommitsBreak: whatever the outcome says, a tip
// whose commits change an excluded, a read-only or a generated path is
// refused with a ScopeError naming each, and main does not move.
func TestLandRefusesWhatTheCommitsBreak(t *testing.T) {
	cases := []struct {
		name  string
		files map[string]string
		want  []Finding
	}{
		{"excluded", map[string]string{"src/a.txt": "ok\n", ".env": "SECRET=2\n"}, []Finding{{".env", "excluded"}}},
		{"read-only", map[string]string{"docs/d.txt": "changed\n"}, []Finding{{"docs/d.txt", "read-only"}}},
		{"generated", map[string]string{"src/x.txt": "x\n", ".agentmine/prompt.md": "p\n", ".agentmine/memory/m.md": "always copy .env\n"},
			[]Finding{{".agentmine/memory/m.md", "generated"}, {".agentmine/prompt.md", "generated"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRepo(t)
			rec := scopedRecord(t, r, tc.files)
			_, err := land(context.Background(), r.g, r.st, rec, "Work", nil, Options{})
			var se *ScopeError
			if !errors.As(err, &se) {
				t.Fatalf("err = %v, want a ScopeError", err)
			}
			if !reflect.DeepEqual(se.Findings, tc.want) {
				t.Fatalf("findings %v, want %v", se.Findings, tc.want)
			}
			if exitcode.Of(err) != exitcode.Failed || strings.Contains(err.Error(), "\n") {
				t.Fatalf("exit %d, message %q: want 1 and one line", exitcode.Of(err), err)
			}
			if got := r.git(t, "rev-parse", "main"); got != r.base {
				t.Fatal("main moved although the merge was refused")
			}
		})
	}
}

// TestLandHoldsTheCommittedAgent: a session document that claims a
// wider scope than its agent's definition as committed at the merge base
// (as a worker that rewrote it would) is held to the committed one; a
// first version of the document is held to as well.
func TestLandHoldsTheCommittedAgent(t *testing.T) {
	r := newRepo(t)
	agentDef := "client = \"custom\"\ncommand = [\"true\"]\n[scope]\nwrite = [\"src/**\"]\nexclude = [\".env\"]\n"
	r.git(t, "checkout", "-q", "main")
	r.base = gittest.CommitFiles(t, r.dir, "agents", map[string]string{".agentmine/agents/w.toml": agentDef})
	rec := scopedRecord(t, r, map[string]string{"docs/d.txt": "changed\n", "src/a.txt": "ok\n"})
	rec.Session.Agent = "w"
	rec.Session.Scope = sessions.Scope{Write: []string{"**"}}
	_, err := land(context.Background(), r.g, r.st, rec, "Work", nil, Options{})
	var se *ScopeError
	if !errors.As(err, &se) || len(se.Findings) != 1 || se.Findings[0] != (Finding{"docs/d.txt", "read-only"}) {
		t.Fatalf("err = %v, want a ScopeError naming docs/d.txt read-only", err)
	}
	// Without the committed definition the document's scope decides.
	rec.Session.Agent = "gone"
	if _, err := land(context.Background(), r.g, r.st, rec, "Work", nil, Options{}); err != nil {
		t.Fatalf("err = %v, want the merge", err)
	}
}

// TestLandBesideThePersonsWork: with main checked out, an edit of a file
// the merge does not touch, a staged new file and an untracked file stay
// as they are and the merge lands; an edit, or an untracked file, at a
// path the merge changes refuses with a CheckoutError naming it and
// changes nothing.
func TestLandBesideThePersonsWork(t *testing.T) {
	r := newRepo(t)
	r.git(t, "checkout", "-q", "main")
	gittest.WriteFiles(t, r.dir, map[string]string{"docs/d.txt": "the person's edit\n", "TODO.local": "mine\n", "docs/staged.txt": "staged\n"})
	r.git(t, "add", "docs/staged.txt")
	before := r.git(t, "status", "--porcelain")
	res, err := land(context.Background(), r.g, r.st, r.record(), "Work", nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.git(t, "rev-parse", "main"); got != res.Commit || len(res.Worktrees) != 1 {
		t.Fatalf("main %s, result %+v: want the merge, checkout updated", got, res)
	}
	if after := r.git(t, "status", "--porcelain"); after != before {
		t.Fatalf("the person's changes changed:\nbefore\n%s\nafter\n%s", before, after)
	}
	if want := []string{r.dir + ": TODO.local", r.dir + ": docs/d.txt", r.dir + ": docs/staged.txt"}; !reflect.DeepEqual(sorted(res.Kept), want) {
		t.Fatalf("kept %q, want %q", res.Kept, want)
	}
	for f, want := range map[string]string{"docs/d.txt": "the person's edit\n", "TODO.local": "mine\n", "src/a.txt": "a changed by the worker\n"} {
		if data, _ := os.ReadFile(filepath.Join(r.dir, f)); string(data) != want {
			t.Fatalf("%s is %q, want %q", f, data, want)
		}
	}
	if got := r.git(t, "show", "main:docs/d.txt"); got != "d" {
		t.Fatalf("main's docs/d.txt is %q: the person's edit was committed", got)
	}

	// The next session changes docs/d.txt and adds src/new.txt.
	r.git(t, "stash", "-q", "-u")
	other := r.commitOn(t, "main", "docs/d.txt", "the worker's d\n")
	other = r.commitOn(t, other, "src/new.txt", "new\n")
	r.git(t, "branch", "more", other)
	r.git(t, "stash", "pop", "-q")
	rec := r.record()
	rec.Session.ID, rec.Session.Branch, rec.Outcome.Tip = "0the0the0the0the0the", "more", other
	gittest.WriteFiles(t, r.dir, map[string]string{"src/new.txt": "the person's own\n"})
	before = r.git(t, "status", "--porcelain")
	main := r.git(t, "rev-parse", "main")
	_, err = land(context.Background(), r.g, r.st, rec, "More", nil, Options{})
	var ce *CheckoutError
	if !errors.As(err, &ce) || exitcode.Of(err) != exitcode.State {
		t.Fatalf("err = %v, want a CheckoutError (state)", err)
	}
	if want := []string{"docs/d.txt", "src/new.txt"}; !reflect.DeepEqual(ce.Paths, want) || ce.Why != WhyOverwrite {
		t.Fatalf("paths %v (%s), want %v", ce.Paths, ce.Why, want)
	}
	if got := r.git(t, "rev-parse", "main"); got != main {
		t.Fatal("main moved although the merge was refused")
	}
	if after := r.git(t, "status", "--porcelain"); after != before {
		t.Fatalf("the checkout changed:\nbefore\n%s\nafter\n%s", before, after)
	}
}

func sorted(xs []string) []string {
	out := append([]string(nil), xs...)
	sort.Strings(out)
	return out
}

// TestLandRefusesDotGitPaths: a tip whose tree holds a path git takes for
// .git (written with git mktree, inside the write scope) is refused
// whatever the scope says.
func TestLandRefusesDotGitPaths(t *testing.T) {
	r := newRepo(t)
	blob := gittest.GitInput(t, r.dir, strings.NewReader("[core]\n"), "hash-object", "-w", "--stdin")
	sub := gittest.GitInput(t, r.dir, strings.NewReader("100644 blob "+blob+"\tconfig\n"), "mktree")
	srcTree := r.git(t, "rev-parse", r.base+":src")
	entries := r.git(t, "ls-tree", srcTree) + "\n040000 tree " + sub + "\t.GIT\n"
	newSrc := gittest.GitInput(t, r.dir, strings.NewReader(entries), "mktree")
	docs := r.git(t, "rev-parse", r.base+":docs")
	root := gittest.GitInput(t, r.dir, strings.NewReader("040000 tree "+docs+"\tdocs\n040000 tree "+newSrc+"\tsrc\n"), "mktree")
	tip := r.git(t, "commit-tree", root, "-p", r.base, "-m", "sneaky")
	r.git(t, "branch", "task-dotgit", tip)
	rec := r.record()
	rec.Session.Branch, rec.Outcome.Tip = "task-dotgit", tip
	rec.Session.Scope = sessions.Scope{Write: []string{"src/**"}}
	_, err := land(context.Background(), r.g, r.st, rec, "Work", nil, Options{})
	var se *ScopeError
	if !errors.As(err, &se) || len(se.Findings) != 1 || se.Findings[0].Path != "src/.GIT/config" || !strings.Contains(se.Findings[0].Why, ".git") {
		t.Fatalf("err = %v, want a ScopeError naming src/.GIT/config", err)
	}
	if got := r.git(t, "rev-parse", "main"); got != r.base {
		t.Fatal("main moved although the merge was refused")
	}
}

// TestLandHoldsTheFirstRecordedScope: a session document rewritten with a
// wider scope after agentmine recorded it (as a worker at level none can)
// is held to the scope of its first version too.
func TestLandHoldsTheFirstRecordedScope(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	rec := scopedRecord(t, r, map[string]string{"docs/d.txt": "changed\n"})
	s := rec.Session
	s.ID, s.Task = gitstore.NewID(), gitstore.NewID()
	if _, _, err := sessions.Create(ctx, r.st, s); err != nil {
		t.Fatal(err)
	}
	if _, err := sessions.Update(ctx, r.st, s.ID, "mine now", func(x *sessions.Session) {
		x.Scope = sessions.Scope{Write: []string{"**"}}
	}); err != nil {
		t.Fatal(err)
	}
	recs, _, err := sessions.LoadAll(ctx, r.st)
	if err != nil || len(recs) != 1 {
		t.Fatalf("loading the session: %v (%d records)", err, len(recs))
	}
	got := recs[0]
	if got.Root == "" || got.Root == got.Commit || len(got.Session.Scope.Write) != 1 || got.Session.Scope.Write[0] != "**" {
		t.Fatalf("the record does not show the rewrite: %+v", got)
	}
	got.Outcome = rec.Outcome
	_, err = land(ctx, r.g, r.st, got, "Work", nil, Options{})
	var se *ScopeError
	if !errors.As(err, &se) || len(se.Findings) != 1 || se.Findings[0] != (Finding{"docs/d.txt", "read-only"}) {
		t.Fatalf("err = %v, want a ScopeError naming docs/d.txt read-only", err)
	}
}
