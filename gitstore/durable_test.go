package gitstore

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

var durableKind = Kind{Dir: "things", File: "thing.json", Noun: "thing", Version: 1}

// docObjects returns the blob, tree and commit of the document the ref
// holds, as git reads them.
func docObjects(t *testing.T, repo, commit string) (blob, tree string) {
	t.Helper()
	return gittest.Git(t, repo, "rev-parse", commit+":"+durableKind.File), gittest.Git(t, repo, "rev-parse", commit+"^{tree}")
}

// TestTransactWritesBackPruned: objects a prune removed between their
// write and the ref transaction are written back before Transact returns,
// whether the new tip itself went (update-ref refuses it: written back and
// retried) or only what it reaches (tree and blob); the repository is then
// whole (fsck) and the document reads.
func TestTransactWritesBackPruned(t *testing.T) {
	for _, what := range []string{"tree and blob", "commit, tree and blob"} {
		t.Run(what, func(t *testing.T) {
			repo := objRepo(t)
			st := objOpen(t, repo)
			ctx := context.Background()
			c, err := st.CommitDoc(ctx, durableKind, []byte(`{"v":1,"title":"`+what+`"}`), nil, "add")
			if err != nil {
				t.Fatal(err)
			}
			blob, tree := docObjects(t, repo, c)
			gone := []string{blob, tree}
			if strings.HasPrefix(what, "commit") {
				gone = append(gone, c)
			}
			for _, id := range gone {
				if err := os.Remove(objPath(t, repo, id)); err != nil {
					t.Fatal(err)
				}
			}
			if err := st.Transact(ctx, []RefOp{{Verb: "create", Ref: durableKind.Ref("a1"), New: c}}); err != nil {
				t.Fatalf("transaction after a prune: %v", err)
			}
			for _, id := range gone {
				if _, err := os.Stat(objPath(t, repo, id)); err != nil {
					t.Errorf("object %s not written back: %v", id, err)
				}
			}
			gittest.Git(t, repo, "fsck", "--strict")
			doc, err := objOpen(t, repo).Get(ctx, durableKind, "a1")
			if err != nil || !strings.Contains(string(doc.Data), what) {
				t.Fatalf("reading the document back: %v %q", err, doc.Data)
			}
		})
	}
}

// TestTransactWaitsForRunningGC: a gc that was running when the
// transaction committed (its gc.pid names a live process: here a real
// process standing in for it) may have listed the refs before and delete
// the new objects after the ref moved, as `git gc --prune=now` does.
// Transact waits for it to end and writes back what it deleted.
func TestTransactWaitsForRunningGC(t *testing.T) {
	repo := objRepo(t)
	st := objOpen(t, repo)
	ctx := context.Background()
	c, err := st.CommitDoc(ctx, durableKind, []byte(`{"v":1,"title":"kept"}`), nil, "add")
	if err != nil {
		t.Fatal(err)
	}
	blob, tree := docObjects(t, repo, c)
	gc, ended := standInGC(t, repo, "--prune=now")
	// The "gc" deletes the objects once the ref points at them, then ends.
	pruned := make(chan error, 1)
	go func() {
		ref := filepath.Join(repo, ".git", durableKind.Ref("a1"))
		for i := 0; i < 1000; i++ {
			if _, err := os.Stat(ref); err == nil {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		for _, id := range []string{c, tree, blob} {
			if err := os.Remove(objPath(t, repo, id)); err != nil {
				pruned <- err
				return
			}
		}
		gc.Process.Kill()
		<-ended
		pruned <- nil
	}()
	err = st.Transact(ctx, []RefOp{{Verb: "create", Ref: durableKind.Ref("a1"), New: c}})
	if perr := <-pruned; perr != nil {
		t.Fatalf("the stand-in gc: %v", perr)
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{c, tree, blob} {
		if _, err := os.Stat(objPath(t, repo, id)); err != nil {
			t.Errorf("object %s deleted by the running gc and not written back: %v", id, err)
		}
	}
	gittest.Git(t, repo, "fsck", "--strict")
}

// standInGC starts a process whose command line is that of a `git gc`
// with args (a shell that sleeps, named git-gc) and records it in gc.pid
// as git gc does.
// ended is closed once the process ended.
func standInGC(t *testing.T, repo string, args ...string) (gc *exec.Cmd, ended <-chan struct{}) {
	t.Helper()
	gc = exec.Command("sh", append([]string{"-c", "sleep 60; true", "git-gc"}, args...)...)
	if err := gc.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { gc.Wait(); close(done) }()
	t.Cleanup(func() { gc.Process.Kill(); <-done })
	host, _ := os.Hostname()
	if err := os.WriteFile(filepath.Join(repo, ".git", "gc.pid"), []byte(strconv.Itoa(gc.Process.Pid)+" "+host), 0o644); err != nil {
		t.Fatal(err)
	}
	return gc, done
}

// TestTransactLeavesDefaultGCAlone: a gc that prunes with git's default
// expiry (as `git gc --auto`, started in the background by ordinary git
// commands, does) cannot delete a fresh object: a transaction does not
// wait for it to end.
func TestTransactLeavesDefaultGCAlone(t *testing.T) {
	repo := objRepo(t)
	st := objOpen(t, repo)
	ctx := context.Background()
	_, ended := standInGC(t, repo, "--auto")
	c, err := st.CommitDoc(ctx, durableKind, []byte(`{"v":1}`), nil, "add")
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Transact(ctx, []RefOp{{Verb: "create", Ref: durableKind.Ref("a1"), New: c}}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ended:
		t.Fatal("the transaction returned only once the gc had ended")
	default:
	}
}

// TestMissingObjectsReported: a ref whose objects are gone is reported as
// exactly that, naming the missing object, by listing and by reading one
// entity; and a transaction pointing a ref at an object nobody can write
// back is refused.
func TestMissingObjectsReported(t *testing.T) {
	repo := objRepo(t)
	ctx := context.Background()
	writer := objOpen(t, repo)
	ids := map[string]string{}
	for _, id := range []string{"a1", "b2", "c3"} {
		d, err := writer.Create(ctx, durableKind, id, Change{Data: []byte(`{"v":1,"id":"` + id + `"}`), Message: "add"})
		if err != nil {
			t.Fatal(err)
		}
		ids[id] = d.Commit
	}
	blob, _ := docObjects(t, repo, ids["a1"])
	_, tree := docObjects(t, repo, ids["b2"])
	for _, id := range []string{blob, tree, ids["c3"]} {
		if err := os.Remove(objPath(t, repo, id)); err != nil {
			t.Fatal(err)
		}
	}
	st := objOpen(t, repo)
	docs, problems, err := st.List(ctx, durableKind)
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != 0 || len(problems) != 3 {
		t.Fatalf("listed %d documents, %d problems (%v); want 0 and 3", len(docs), len(problems), problems)
	}
	got := ""
	for _, p := range problems {
		got += p.Error() + "\n"
	}
	for _, want := range []string{
		durableKind.Ref("a1") + ": commit " + ids["a1"][:12] + ": its thing.json (blob " + blob + ") is missing from the object store",
		durableKind.Ref("b2") + ": commit " + ids["b2"][:12] + ": its tree " + tree + " is missing from the object store",
		durableKind.Ref("c3") + ": points at commit " + ids["c3"] + ", which is missing from the object store",
	} {
		if !strings.Contains(got, want+"\n") {
			t.Errorf("problems lack %q:\n%s", want, got)
		}
	}
	if _, err := st.Get(ctx, durableKind, "a1"); err == nil || !strings.Contains(err.Error(), "(blob "+blob+") is missing from the object store") {
		t.Errorf("reading a1: %v", err)
	}
	// The commit c3 was written by another store: this one cannot write
	// it back, and git refuses the ref.
	err = st.Transact(ctx, []RefOp{{Verb: "create", Ref: durableKind.Ref("d4"), New: ids["c3"]}})
	if err == nil || errors.Is(err, ErrConflict) {
		t.Fatalf("a ref to a missing object: %v, want a refusal", err)
	}
	if _, err := os.Stat(filepath.Join(repo, ".git", durableKind.Ref("d4"))); err == nil {
		t.Error("the ref to a missing object was written")
	}
}
