package worker

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/git-agentmine/git-agentmine/gitcmd"
	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/internal/gittest"
	"github.com/git-agentmine/git-agentmine/sessions"
	"github.com/git-agentmine/git-agentmine/verify"
)

// mainRepo is a main checkout: README.md and an agent definition tracked,
// .env and a build directory ignored, notes.txt untracked, and a worktree
// root (ignored through info/exclude) that the snapshots leave out.
func mainRepo(t *testing.T) (string, gitcmd.Runner) {
	t.Helper()
	dir := gittest.Init(t)
	gittest.CommitFiles(t, dir, "fixture", map[string]string{
		"README.md": "readme\n", ".gitignore": ".env\nbuild/\n", ".agentmine/agents/w.toml": "client = \"custom\"\n",
		"src/a.txt": "a\n",
	})
	gittest.WriteFiles(t, dir, map[string]string{".env": "SECRET=1\n", "build/out/x.o": "obj", "notes.txt": "mine\n",
		".agentmine/worktrees/task-1/src/a.txt": "theirs\n"})
	if err := os.WriteFile(filepath.Join(dir, ".git", "info", "exclude"), []byte("/.agentmine/worktrees/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, gitcmd.Runner{Dir: dir, Env: []string{"GIT_OPTIONAL_LOCKS=0"}}
}

// snap takes a snapshot without the racy-file hashing, so that only the
// file's own metadata can tell a change, as for a file last changed long
// before the run.
func snap(t *testing.T, g gitcmd.Runner) *mainSnapshot {
	t.Helper()
	return snapAfter(t, g, nil)
}

// snapAfter is snap for the snapshot after the run: it reads the index
// entries only when the index file changed since prev.
func snapAfter(t *testing.T, g gitcmd.Runner, prev *mainSnapshot) *mainSnapshot {
	t.Helper()
	s, err := snapshotMain(context.Background(), g, nil, ".agentmine/worktrees", 0, prev)
	if err != nil {
		t.Fatal(err)
	}
	// The same snapshot read in-process where it can be: HEAD, the index's
	// path and its flagged entries are git's answers.
	st, err := gitstore.Open(context.Background(), g.Dir)
	if err != nil {
		t.Fatal(err)
	}
	local := (&Env{St: st, Top: g.Dir}).mainLocalFor(g.Dir)
	if local == nil {
		t.Fatal("the main checkout is not read in-process")
	}
	ls, err := snapshotMain(context.Background(), g, local, ".agentmine/worktrees", 0, prev)
	if err != nil {
		t.Fatal(err)
	}
	if ls.head != s.head || ls.headRef != s.headRef || !reflect.DeepEqual(ls.flags, s.flags) || ls.index.ino != s.index.ino {
		t.Fatalf("read in-process: HEAD %s %s, flags %v, index %+v\nread by git: HEAD %s %s, flags %v, index %+v",
			ls.headRef, ls.head, ls.flags, ls.index, s.headRef, s.head, s.flags, s.index)
	}
	return s
}

// byPath indexes findings by path ("" for the path-less ones, joined).
func byPath(found []verify.Violation) map[string]string {
	m := map[string]string{}
	for _, f := range found {
		if f.Type != MainCheckoutChanged {
			m["wrong type "+f.Type] = f.Reason
		}
		if m[f.Path] != "" {
			m[f.Path] += " | "
		}
		m[f.Path] += f.Reason
	}
	return m
}

// tick lets the kernel's clock move on, so that a change made next gets a
// change time of its own (time stamps are taken from a coarse clock).
func tick() { time.Sleep(20 * time.Millisecond) }

// TestSnapshotSeesEveryKindOfChange: each change a worker can make in the
// main checkout is found, with what it was; the worktrees and files left
// alone are not.
func TestSnapshotSeesEveryKindOfChange(t *testing.T) {
	dir, g := mainRepo(t)
	before := snap(t, g)
	if _, ok := before.paths[".env"]; !ok {
		t.Fatalf("the ignored .env is not in the snapshot: %v", before.paths)
	}
	if _, ok := before.paths["build/out/x.o"]; !ok {
		t.Fatalf("ignored directories are not listed file by file: %v", before.paths)
	}
	for p := range before.paths {
		if strings.HasPrefix(p, ".agentmine/worktrees") {
			t.Fatalf("the worktrees are in the snapshot: %s", p)
		}
	}
	if got := byPath(compareMain(before, snapAfter(t, g, before))); len(got) != 0 {
		t.Fatalf("nothing changed, found %v", got)
	}
	tick()
	envInfo, _ := os.Stat(filepath.Join(dir, ".env"))
	gittest.WriteFiles(t, dir, map[string]string{
		"new.txt":                               "left behind\n",
		"README.md":                             "edited\n",
		".agentmine/agents/w.toml":              "client = \"custom\"\n[scope]\nwrite = [\"**\"]\n",
		"build/out/x.o":                         "OBJ", // same size, other content, ignored
		".agentmine/worktrees/task-1/src/a.txt": "a session's own business\n",
	})
	// The same number of bytes through a hard link, the modification time
	// put back and the link removed: only the change time tells.
	link := filepath.Join(t.TempDir(), "l")
	if err := os.Link(filepath.Join(dir, ".env"), link); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(link, []byte("SECRET=2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(link, envInfo.ModTime(), envInfo.ModTime()); err != nil {
		t.Fatal(err)
	}
	os.Remove(link)
	os.Remove(filepath.Join(dir, "notes.txt"))
	os.Remove(filepath.Join(dir, "src/a.txt"))
	gittest.Git(t, dir, "update-index", "--skip-worktree", "--", "src/a.txt")
	got := byPath(compareMain(before, snapAfter(t, g, before)))
	want := map[string]string{
		"new.txt":                  "a new file in the main checkout",
		"README.md":                "changed in the main checkout during the run (modified)",
		".agentmine/agents/w.toml": "it is an agent definition, read by the next run",
		".env":                     "its change time moved, although its modification time did not",
		"build/out/x.o":            "written in the main checkout during the run",
		"notes.txt":                "removed in the main checkout during the run",
		"src/a.txt":                "marked skip-worktree in the main checkout's index",
	}
	for p, w := range want {
		if !strings.Contains(got[p], w) {
			t.Errorf("%s: found %q, want %q", p, got[p], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("found %d paths, want %d: %v", len(got), len(want), got)
	}
}

// TestHashCatchesSameSizeEdit: a listed changed file edited to the same
// size with its modification time put back differs by its hash.
func TestHashCatchesSameSizeEdit(t *testing.T) {
	dir, g := mainRepo(t)
	gittest.WriteFiles(t, dir, map[string]string{"README.md": "edit 1\n"})
	before := snap(t, g)
	fi, _ := os.Stat(filepath.Join(dir, "README.md"))
	gittest.WriteFiles(t, dir, map[string]string{"README.md": "edit 2\n"})
	os.Chtimes(filepath.Join(dir, "README.md"), fi.ModTime(), fi.ModTime())
	if got := byPath(compareMain(before, snap(t, g))); !strings.Contains(got["README.md"], "its content changed") {
		t.Fatalf("found %v", got)
	}
}

// TestHeadMoves: a commit in the main checkout is found by the paths it
// changed; a move by gated merges (agentmine's own) is not; the findings
// are violations when the worker could write the main checkout and
// warnings otherwise; an unreadable main checkout after the run is a
// violation, before it a warning.
func TestHeadMoves(t *testing.T) {
	dir, g := mainRepo(t)
	st, err := gitstore.Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	e := &Env{St: st, Top: dir}
	ctx := context.Background()
	m := &mainCheckout{env: e, g: g, top: dir, writable: true, before: snap(t, g)}
	gittest.CommitFiles(t, dir, "sneaky", map[string]string{"src/sneaky.txt": "x\n"})
	m.after = snap(t, g)
	vs, ws := m.findings(ctx, t.TempDir(), nil)
	if got := byPath(vs); len(ws) != 0 || !strings.Contains(got["src/sneaky.txt"], "changed by a commit, reset or checkout: the main checkout's HEAD moved") {
		t.Fatalf("violations %v, warnings %v", got, ws)
	}
	m.writable = false
	if vs, ws := m.findings(ctx, t.TempDir(), nil); len(vs) != 0 || len(ws) != 1 {
		t.Fatalf("where the worker cannot write: violations %v, warnings %v", vs, ws)
	}
	m.writable = true

	// A gated merge: a merge commit with merge's trailers on top.
	m.before = snap(t, g)
	merged := gatedMerge(t, dir, "Agentmine-Task: 7a5c\nAgentmine-Session: 5e55\n")
	gittest.Git(t, dir, "reset", "-q", "--hard", merged)
	m.after = snap(t, g)
	if vs, _ := m.findings(ctx, t.TempDir(), nil); len(vs) != 0 {
		t.Fatalf("a gated merge was held against the worker: %v", vs)
	}
	// Without the trailers it is anyone's merge.
	m.before = snap(t, g)
	gittest.Git(t, dir, "reset", "-q", "--hard", gatedMerge(t, dir, ""))
	m.after = snap(t, g)
	if vs, _ := m.findings(ctx, t.TempDir(), nil); len(vs) == 0 {
		t.Fatal("a merge without agentmine's trailers was excused")
	}
	if e.ownMove(ctx, g, merged, m.before.head) {
		t.Error("ownMove excused a move whose path does not start at old")
	}

	m.after, m.afterErr = nil, errors.New("index file corrupt")
	if vs, _ := m.findings(ctx, t.TempDir(), nil); len(vs) != 1 || !strings.Contains(vs[0].Reason, "could not be read after the run") {
		t.Fatalf("unreadable after the run: %v", vs)
	}
	m.before, m.beforeErr = nil, errors.New("no main checkout")
	if vs, ws := m.findings(ctx, t.TempDir(), nil); len(vs) != 0 || len(ws) != 1 {
		t.Fatalf("unreadable before the run: violations %v, warnings %v", vs, ws)
	}
	var none *mainCheckout
	if vs, ws := none.findings(ctx, t.TempDir(), nil); vs != nil || ws != nil {
		t.Fatalf("a manual session has findings: %v %v", vs, ws)
	}
}

// gatedMerge writes a merge commit of HEAD and a side commit with the
// given trailers (as merge writes them) and returns it.
func gatedMerge(t *testing.T, dir, trailers string) string {
	t.Helper()
	head := gittest.Git(t, dir, "rev-parse", "HEAD")
	tree := gittest.Git(t, dir, "rev-parse", "HEAD^{tree}")
	side := gittest.Git(t, dir, "commit-tree", tree, "-p", head, "-m", "side "+trailers)
	return gittest.Git(t, dir, "commit-tree", tree, "-p", head, "-p", side, "-m", "Merge task\n\n"+trailers)
}

// TestHardLinkIntoWorktree: a changed file of the worktree that is the same
// file as one of the main checkout (tracked or ignored) names both.
func TestHardLinkIntoWorktree(t *testing.T) {
	dir, g := mainRepo(t)
	wt := t.TempDir()
	gittest.WriteFiles(t, wt, map[string]string{"src/own.txt": "own\n"})
	for rel, target := range map[string]string{"src/env": ".env", "README.md": "README.md"} {
		os.MkdirAll(filepath.Dir(filepath.Join(wt, rel)), 0o755)
		if err := os.Link(filepath.Join(dir, target), filepath.Join(wt, rel)); err != nil {
			t.Fatal(err)
		}
	}
	changed := []verify.Change{{Path: "src/env", Status: "A", Untracked: true}, {Path: "README.md", Status: "M"}, {Path: "src/own.txt", Status: "A"}, {Path: "gone", Status: "D"}}
	got := byPath(hardLinks(wt, changed, snap(t, g)))
	if !strings.Contains(got[".env"], "hard-linked into the worker's worktree as src/env") || !strings.Contains(got["README.md"], "as README.md") || len(got) != 2 {
		t.Fatalf("found %v", got)
	}
}

// TestStatusWords: git status's letters in words.
func TestStatusWords(t *testing.T) {
	for xy, want := range map[string]string{"??": "untracked", "!!": "ignored", " M": "modified", "M ": "with a modification staged",
		"MM": "modified, with a modification staged", " D": "deleted", "D ": "with a deletion staged", "UU": "unmerged", "A ": "with an addition staged"} {
		if got := statusWords(xy); got != want {
			t.Errorf("%q: %q, want %q", xy, got, want)
		}
	}
}

// TestMainChangesAreThePersonsWhereTheWorkerCannotWrite: at landlock, bwrap
// and clone a change of the main checkout during the run is a warning that
// says it was not the worker's; at none (or with no level recorded) it
// stays a violation.
func TestMainChangesAreThePersonsWhereTheWorkerCannotWrite(t *testing.T) {
	dir, g := mainRepo(t)
	before := snap(t, g)
	tick()
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("the person's edit\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "TODO.local"), []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	after := snapAfter(t, g, before)
	for _, level := range []string{"", "none", "landlock", "bwrap", "clone"} {
		s := sessions.Session{}
		if level != "" {
			s.Isolation = &sessions.Isolation{Requested: level, Level: level}
		}
		m := &mainCheckout{g: g, top: dir, skip: ".agentmine/worktrees", writable: mainCheckoutWritable(s), level: level,
			before: before, after: after}
		v, w := m.findings(context.Background(), dir, nil)
		if level == "" || level == "none" {
			if len(v) != 2 || len(w) != 0 {
				t.Fatalf("level %q: want 2 violations, got %v and warnings %v", level, v, w)
			}
			continue
		}
		if len(v) != 0 || len(w) != 2 {
			t.Fatalf("level %q: want 2 warnings, got violations %v and warnings %v", level, v, w)
		}
		got := byPath(w)
		for _, p := range []string{"README.md", "TODO.local"} {
			if !strings.Contains(got[p], "not by the worker: it cannot write the main checkout at isolation level "+level) {
				t.Errorf("level %q: %s: %q", level, p, got[p])
			}
		}
	}
}
