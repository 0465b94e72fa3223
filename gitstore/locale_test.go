package gitstore

import (
	"context"
	"errors"
	"github.com/git-agentmine/git-agentmine/internal/gittest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-agentmine/git-agentmine/exitcode"
)

// TestLostRaceRecognisedUnderAnyLocale runs the store with the parent
// process in a German locale (C.UTF-8 plus LANGUAGE=de translates git
// wherever git's translations are installed): a compare-and-swap lost to
// another writer must still be ErrConflict, which is recognised by git's
// English words, and a directory outside any repository must still be the
// not-a-repository state error.
func TestLostRaceRecognisedUnderAnyLocale(t *testing.T) {
	gittest.Scrub(t)
	for k, v := range map[string]string{
		"LANG": "de_DE.UTF-8", "LC_ALL": "C.UTF-8", "LANGUAGE": "de",
	} {
		t.Setenv(k, v)
	}
	base := t.TempDir()
	t.Setenv("GIT_CEILING_DIRECTORIES", base)
	ctx := context.Background()

	outside := filepath.Join(base, "outside")
	if err := os.Mkdir(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(ctx, outside); exitcode.Of(err) != exitcode.State || !strings.Contains(err.Error(), "not a git repository") {
		t.Fatalf("Open outside a repository = %v (exit %d)", err, exitcode.Of(err))
	}

	repo := filepath.Join(base, "repo")
	for _, args := range [][]string{{"init", "-q", repo}, {"-C", repo, "commit", "-q", "--allow-empty", "-m", "one"}} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	st, err := Open(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	head, err := st.Git().Output(ctx, "rev-parse", "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	ref := RefRoot + "tasks/race"
	if err := st.Transact(ctx, []RefOp{{Verb: "create", Ref: ref, New: head}}); err != nil {
		t.Fatal(err)
	}
	stale := strings.Repeat("1", len(head))
	err = st.Transact(ctx, []RefOp{{Verb: "update", Ref: ref, New: head, Old: stale}})
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("update with a stale old value = %v, want ErrConflict", err)
	}
	err = st.Transact(ctx, []RefOp{{Verb: "create", Ref: ref, New: head}})
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("creating an existing ref = %v, want ErrConflict", err)
	}
}
