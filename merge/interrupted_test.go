package merge

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/gitcmd"
	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/internal/gittest"
	"time"
)

// landEnv makes the test binary a process that lands one session: with it
// set to a repository, TestMain lands the session whose base and tip are
// in MERGE_TEST_BASE and MERGE_TEST_TIP there, and exits.
const landEnv = "MERGE_TEST_LAND"

// TestMain runs the landing process when asked, the tests otherwise.
func TestMain(m *testing.M) {
	if dir := os.Getenv(landEnv); dir != "" {
		os.Exit(landChild(dir))
	}
	os.Exit(m.Run())
}

func landChild(dir string) int {
	ctx := context.Background()
	st, err := gitstore.Open(ctx, dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	r := &repo{dir: dir, base: os.Getenv("MERGE_TEST_BASE"), tip: os.Getenv("MERGE_TEST_TIP")}
	if _, err := land(ctx, gitcmd.Runner{Dir: dir}, st, r.record(), "Work", nil, Options{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// blockingGit is a git in front of the real one that, asked to read-tree,
// writes its pid to $GIT_SHIM_PID and sleeps instead: the landing process
// is then between moving the base and updating the checkout.
const blockingGit = `#!/bin/sh
for a in "$@"; do
  if [ "$a" = read-tree ]; then echo $$ > "$GIT_SHIM_PID.tmp"; mv "$GIT_SHIM_PID.tmp" "$GIT_SHIM_PID"; exec sleep 60; fi
done
exec %q "$@"
`

// interrupt lands r's session in a real process that is killed (SIGKILL)
// after the base moved and before the main checkout followed, and returns
// the merge commit the base was left at.
func interrupt(t *testing.T, r *repo) string {
	t.Helper()
	real, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	shim := t.TempDir()
	if err := os.WriteFile(filepath.Join(shim, "git"), []byte(fmt.Sprintf(blockingGit, real)), 0o755); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(t.TempDir(), "shim.pid")
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), landEnv+"="+r.dir, "MERGE_TEST_BASE="+r.base, "MERGE_TEST_TIP="+r.tip,
		"GIT_SHIM_PID="+pidFile, "PATH="+shim+string(os.PathListSeparator)+os.Getenv("PATH"))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sleeper := gittest.WaitPidFile(t, pidFile)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	syscall.Kill(sleeper, syscall.SIGKILL)
	merged := r.git(t, "rev-parse", "main")
	if merged == r.base {
		t.Fatal("the killed merge did not move main")
	}
	if st := r.git(t, "status", "--porcelain", "--untracked-files=no"); st == "" {
		t.Fatal("the checkout followed although the merge was killed before it could")
	}
	return merged
}

// TestLandFinishesInterruptedCheckout: a merge killed between moving main
// and updating the checkout of main leaves the checkout looking like staged
// changes that undo the merge. Landing again (the same session, already in
// main) finishes the update instead of leaving it, and says so; the files
// are the merge's and nothing is left staged.
func TestLandFinishesInterruptedCheckout(t *testing.T) {
	r := newRepo(t)
	r.git(t, "checkout", "-q", "main")
	merged := interrupt(t, r)
	landFinishes(t, r, merged)
	data, _ := os.ReadFile(filepath.Join(r.dir, "src/a.txt"))
	if string(data) != "a changed by the worker\n" {
		t.Fatalf("src/a.txt is %q, want the worker's", data)
	}
	// The journal records the finish too, so that a supervisor watching
	// the checkout excuses it.
	es, err := r.st.ReadJournal(time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range es {
		if e.Op == gitstore.JournalCheckout && e.New == merged {
			n++
		}
	}
	if n != 2 {
		t.Errorf("%d checkout entries to %s in the journal, want 2 (the killed merge and the finish)", n, merged[:12])
	}
}

// TestLandLeavesWorkInAnInterruptedCheckout: when anything besides the
// interrupted update is in the checkout — an edit of a file, something
// staged, a revert in progress — landing finishes nothing and refuses as
// for any uncommitted change, and the checkout keeps what was there.
func TestLandLeavesWorkInAnInterruptedCheckout(t *testing.T) {
	cases := map[string]func(t *testing.T, r *repo){
		"edited": func(t *testing.T, r *repo) {
			gittest.WriteFiles(t, r.dir, map[string]string{"docs/d.txt": "the user's edit\n"})
		},
		"staged": func(t *testing.T, r *repo) {
			gittest.WriteFiles(t, r.dir, map[string]string{"docs/new.txt": "staged\n"})
			r.git(t, "add", "docs/new.txt")
		},
		"revert in progress": func(t *testing.T, r *repo) {
			// What `git revert --no-commit` leaves, besides the index
			// that interrupt already left.
			head := r.git(t, "rev-parse", "HEAD")
			gitDir := r.git(t, "rev-parse", "--absolute-git-dir")
			if err := os.WriteFile(filepath.Join(gitDir, "REVERT_HEAD"), []byte(head+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		},
	}
	for name, mess := range cases {
		t.Run(name, func(t *testing.T) {
			r := newRepo(t)
			r.git(t, "checkout", "-q", "main")
			merged := interrupt(t, r)
			mess(t, r)
			refusesAsUncommitted(t, r, merged)
		})
	}
}

// halfRepo is newRepo with a session whose work changes more than one
// file: it edits src/a.txt, adds src/b.txt and an executable
// tools/run.sh, and deletes old.txt; docs/d.txt it leaves alone.
func halfRepo(t *testing.T) *repo {
	t.Helper()
	dir := gittest.Init(t)
	r := &repo{dir: dir, g: gitcmd.Runner{Dir: dir}}
	r.base = gittest.CommitFiles(t, dir, "base", map[string]string{"src/a.txt": "a\n", "docs/d.txt": "d\n", "old.txt": "old\n"})
	r.git(t, "checkout", "-q", "-b", "task-work")
	r.git(t, "rm", "-q", "old.txt")
	gittest.WriteFiles(t, dir, map[string]string{"tools/run.sh": "#!/bin/sh\necho run\n"})
	if err := os.Chmod(filepath.Join(dir, "tools/run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	r.git(t, "add", "tools/run.sh")
	r.tip = gittest.CommitFiles(t, dir, "work", map[string]string{"src/a.txt": "a changed by the worker\n", "src/b.txt": "b\n"})
	if got := r.git(t, "diff-tree", "-r", "--name-only", "--no-commit-id", r.base, r.tip); got != "old.txt\nsrc/a.txt\nsrc/b.txt\ntools/run.sh" {
		t.Fatalf("the session's work changes\n%s", got)
	}
	r.git(t, "checkout", "-q", "main")
	st, err := gitstore.Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	r.st = st
	return r
}

// halfDone leaves r's checkout as an update from the base to the merge,
// stopped partway, leaves it: the index and HEAD as interrupt leaves them,
// src/a.txt and src/b.txt already the worker's, old.txt not yet deleted,
// tools/run.sh not yet written.
func halfDone(t *testing.T, r *repo) {
	t.Helper()
	gittest.WriteFiles(t, r.dir, map[string]string{"src/a.txt": "a changed by the worker\n", "src/b.txt": "b\n"})
}

// TestLandFinishesHalfDoneCheckout: a merge stopped while it was writing
// the files of the checkout (some already the merge's, the index still
// the old one) is finished too: every file ends as the merge has it and
// nothing is left staged, modified or untracked.
func TestLandFinishesHalfDoneCheckout(t *testing.T) {
	r := halfRepo(t)
	merged := interrupt(t, r)
	halfDone(t, r)
	landFinishes(t, r, merged)
	if _, err := os.Lstat(filepath.Join(r.dir, "old.txt")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("old.txt is still there (%v)", err)
	}
	fi, err := os.Stat(filepath.Join(r.dir, "tools/run.sh"))
	if err != nil || fi.Mode()&0o111 == 0 {
		t.Errorf("tools/run.sh is not there executable: %v %v", fi, err)
	}
}

// TestLandLeavesHalfDoneCheckoutWithWork: a half-done checkout that also
// holds anything the update would not have written — an edit to a file the
// merge does not touch, a changed file with content of neither side, a new
// file with other content, the right content with the wrong mode — is
// refused as uncommitted work, and left exactly as it was.
func TestLandLeavesHalfDoneCheckoutWithWork(t *testing.T) {
	cases := map[string]func(t *testing.T, r *repo){
		"untouched file edited": func(t *testing.T, r *repo) {
			gittest.WriteFiles(t, r.dir, map[string]string{"docs/d.txt": "the user's edit\n"})
		},
		"changed file holds other content": func(t *testing.T, r *repo) {
			gittest.WriteFiles(t, r.dir, map[string]string{"src/a.txt": "neither side\n"})
		},
		"new file holds other content": func(t *testing.T, r *repo) {
			gittest.WriteFiles(t, r.dir, map[string]string{"src/b.txt": "the user's b\n"})
		},
		"new file without its mode": func(t *testing.T, r *repo) {
			gittest.WriteFiles(t, r.dir, map[string]string{"tools/run.sh": "#!/bin/sh\necho run\n"})
			if err := os.Chmod(filepath.Join(r.dir, "tools/run.sh"), 0o644); err != nil {
				t.Fatal(err)
			}
		},
	}
	for name, mess := range cases {
		t.Run(name, func(t *testing.T) {
			r := halfRepo(t)
			merged := interrupt(t, r)
			halfDone(t, r)
			mess(t, r)
			refusesAsUncommitted(t, r, merged)
		})
	}
}

// landFinishes lands r's session again into main, left at merged by an
// interrupted merge, and checks that it reports the session already in
// with the checkout of main finished, and that the checkout is clean.
func landFinishes(t *testing.T, r *repo, merged string) {
	t.Helper()
	res, err := land(context.Background(), r.g, r.st, r.record(), "Work", nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Already || res.Commit != merged || len(res.Finished) != 1 || res.Finished[0] != r.dir {
		t.Fatalf("res %+v, want already merged at %s with the checkout finished", res, merged)
	}
	if st := r.git(t, "status", "--porcelain"); st != "" {
		t.Fatalf("checkout is not clean after finishing:\n%s", st)
	}
}

// refusesAsUncommitted lands another session into main, left at merged
// with r's checkout in a state that is someone's work, and checks that the
// merge is refused as uncommitted changes (exit 6) and that main, the
// checkout's status and every file stay as they were.
func refusesAsUncommitted(t *testing.T, r *repo, merged string) {
	t.Helper()
	before := r.git(t, "status", "--porcelain")
	files := snapshot(t, r.dir)
	// Another session to land, so that the refusal is the checkout's,
	// not "already merged".
	other := r.commitOn(t, r.base, "other.txt", "other\n")
	r.git(t, "branch", "more", other)
	rec := r.record()
	rec.Session.ID, rec.Session.Branch, rec.Outcome.Tip = "0the0the0the0the0the", "more", other
	_, err := land(context.Background(), r.g, r.st, rec, "More", nil, Options{})
	if exitcode.Of(err) != exitcode.State || !strings.Contains(err.Error(), "uncommitted changes") {
		t.Fatalf("err = %v, want a state error about uncommitted changes", err)
	}
	if got := r.git(t, "rev-parse", "main"); got != merged {
		t.Error("main moved although the merge was refused")
	}
	if after := r.git(t, "status", "--porcelain"); after != before {
		t.Errorf("the checkout changed:\nbefore\n%s\nafter\n%s", before, after)
	}
	if after := snapshot(t, r.dir); after != files {
		t.Errorf("the files changed:\nbefore %v\nafter  %v", files, after)
	}
}

// snapshot is every file in the working tree at dir with its mode and
// content, one line each.
func snapshot(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	for _, f := range gittest.Files(t, dir) {
		fi, err := os.Lstat(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s %v %q\n", f, fi.Mode(), data)
	}
	return b.String()
}
