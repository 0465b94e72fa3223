package gitstore

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

// accessRepo makes an empty repository in the scrubbed environment and
// returns it with a git runner for it.
func accessRepo(t *testing.T) (string, func(args ...string) string) {
	t.Helper()
	dir := gittest.Init(t)
	return dir, func(args ...string) string {
		t.Helper()
		return gittest.Git(t, dir, args...)
	}
}

// commitFile commits content to name on the current branch.
func commitFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	return gittest.CommitFiles(t, dir, "edit "+name, map[string]string{name: content})
}

func TestCommitTreeMatchesGit(t *testing.T) {
	dir, git := accessRepo(t)
	base := commitFile(t, dir, "a.txt", "one\n")
	st, err := Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	tree := git("rev-parse", base+"^{tree}")
	msg := "Merge task x\n\nAgentmine-Task: x\n"
	got, err := st.CommitTree(context.Background(), tree, []string{base}, msg)
	if err != nil {
		t.Fatal(err)
	}
	if want := git("commit-tree", tree, "-p", base, "-m", strings.TrimSuffix(msg, "\n")); got != want {
		t.Fatalf("CommitTree wrote %s, git commit-tree %s:\n%s", got, want, git("cat-file", "-p", got))
	}
}

func TestMergeTreesAndConflicts(t *testing.T) {
	dir, git := accessRepo(t)
	base := commitFile(t, dir, "a.txt", "one\n")
	git("checkout", "-q", "-b", "side")
	side := commitFile(t, dir, "b.txt", "side\n")
	git("checkout", "-q", "main")
	main := commitFile(t, dir, "c.txt", "main\n")
	st, err := Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tree, conflicts, err := st.MergeTrees(ctx, main, side)
	if err != nil || tree == "" || len(conflicts) != 0 {
		t.Fatalf("clean merge: %q %v %v", tree, conflicts, err)
	}
	if ls := git("ls-tree", "--name-only", tree); ls != "a.txt\nb.txt\nc.txt" {
		t.Fatalf("merged tree holds %q", ls)
	}
	git("checkout", "-q", "side")
	clash := commitFile(t, dir, "a.txt", "two\n")
	git("checkout", "-q", "main")
	commitFile(t, dir, "a.txt", "three\n")
	tree, conflicts, err = st.MergeTrees(ctx, git("rev-parse", "main"), clash)
	if err != nil || tree != "" || strings.Join(conflicts, ",") != "a.txt" {
		t.Fatalf("conflicting merge: %q %v %v", tree, conflicts, err)
	}
	if _, _, err := st.MergeTrees(ctx, base, "no-such-commit"); err == nil || !strings.HasPrefix(err.Error(), "computing the merge: ") {
		t.Fatalf("bad commit: %v", err)
	}
}

func TestDeleteRef(t *testing.T) {
	dir, git := accessRepo(t)
	commitFile(t, dir, "a.txt", "one\n")
	git("branch", "gone")
	st, err := Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := st.DeleteRef(ctx, "refs/heads/gone"); err != nil {
		t.Fatal(err)
	}
	if out := git("for-each-ref", "refs/heads/gone"); out != "" {
		t.Fatalf("not deleted: %s", out)
	}
	if err := st.DeleteRef(ctx, "refs/heads/gone"); err != nil {
		t.Fatalf("deleting an absent ref: %v", err)
	}
	if out := git("for-each-ref", "--format=%(refname)", "refs/heads/"); out != "refs/heads/main" {
		t.Fatalf("other refs changed: %s", out)
	}
}

// TestLockCheckout: one holder at a time per checkout, whatever path names
// it (a symlink to it names the same lock); a second taker waits at most
// its wait and then goes on without it; another checkout's lock is
// independent; release frees it.
func TestLockCheckout(t *testing.T) {
	dir := gittest.Init(t)
	st, err := Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	release, ok := st.LockCheckout(ctx, dir, 0)
	if !ok {
		t.Fatal("a free lock was not taken")
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	r2, ok2 := st.LockCheckout(ctx, link, 50*time.Millisecond)
	r2()
	if ok2 {
		t.Fatal("the lock was taken twice through a symlink")
	}
	other := t.TempDir()
	r3, ok3 := st.LockCheckout(ctx, other, 0)
	r3()
	if !ok3 {
		t.Error("another checkout's lock was not free")
	}
	done := make(chan bool)
	go func() {
		r, ok := st.LockCheckout(ctx, dir, 10*time.Second)
		r()
		done <- ok
	}()
	time.Sleep(20 * time.Millisecond)
	release()
	if !<-done {
		t.Error("a waiting taker did not get the lock once it was released")
	}
}

// TestIdentityIsOpens: the identities are read when first needed, but are
// those of the environment the store was opened in: a date or name set
// after Open does not change them.
func TestIdentityIsOpens(t *testing.T) {
	dir := gittest.Init(t)
	t.Setenv("GIT_COMMITTER_DATE", "1700000000 +0000")
	t.Setenv("GIT_AUTHOR_NAME", "At Open")
	st, err := Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("GIT_COMMITTER_DATE", "1800000000 +0000")
	t.Setenv("GIT_AUTHOR_NAME", "Later")
	if got := st.Now().Unix(); got != 1700000000 {
		t.Errorf("Now() = %d, want the date set at Open", got)
	}
	if got := st.Author().Name; got != "At Open" {
		t.Errorf("Author() = %q, want the name set at Open", got)
	}
}

// TestReadOwn: ReadOwn answers from the repository's own object directory
// without starting git, present objects with their type and content and
// absent ones Missing (and HaveOwn, without reading them, the same); an object only an alternate holds is Missing to it
// and found by ReadMany, which asks git. With every read sent to git
// (AGENTMINE_GIT_READS=1) it asks git as ReadMany does.
func TestReadOwn(t *testing.T) {
	ctx := context.Background()
	src, _ := accessRepo(t)
	borrowed := commitFile(t, src, "a.txt", "one\n")
	clone := filepath.Join(t.TempDir(), "clone")
	gittest.Git(t, "", "clone", "-q", "--shared", src, clone)
	own := commitFile(t, clone, "b.txt", "two\n")
	absent := strings.Repeat("1", len(own))
	counter := gittest.NewGitCounter(t)
	t.Setenv("PATH", counter.Dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	for _, gitReads := range []bool{false, true} {
		if gitReads {
			t.Setenv("AGENTMINE_GIT_READS", "1")
		}
		st, err := Open(ctx, clone)
		if err != nil {
			t.Fatal(err)
		}
		b, err := st.OpenBatch(ctx)
		if err != nil {
			t.Fatal(err)
		}
		counter.Reset()
		got, err := b.ReadOwn([]string{own, borrowed, absent})
		if err != nil {
			t.Fatal(err)
		}
		if o := got[0]; o.Missing || o.Type != "commit" || !strings.HasPrefix(string(o.Data), "tree ") {
			t.Errorf("git reads %v: own commit read as %+v", gitReads, o)
		}
		if got[1].Missing == gitReads {
			t.Errorf("git reads %v: the alternate's commit read as missing=%v", gitReads, got[1].Missing)
		}
		if !got[2].Missing {
			t.Errorf("git reads %v: an absent object read as %+v", gitReads, got[2])
		}
		have, err := b.HaveOwn([]string{own, borrowed, absent})
		if err != nil || !have[0] || have[1] != gitReads || have[2] {
			t.Errorf("git reads %v: HaveOwn of own, borrowed, absent = %v %v", gitReads, have, err)
		}
		if n := counter.Count(t); (n == 0) == gitReads {
			t.Errorf("git reads %v: ReadOwn and HaveOwn started %d git processes:\n%s", gitReads, n, counter.Calls(t))
		}
		all, err := b.ReadMany([]string{borrowed})
		if err != nil || all[0].Missing || all[0].Type != "commit" {
			t.Errorf("git reads %v: ReadMany of the alternate's commit: %+v %v", gitReads, all, err)
		}
		b.Close()
	}
}

// TestNetworkKeepsSSHCommandFromVars: the repository's core.sshCommand,
// as the store's `git var -l` read it, is the ssh command a network git
// process runs (with batch mode added), and no `git config` is started to
// read it again.
func TestNetworkKeepsSSHCommandFromVars(t *testing.T) {
	ctx := context.Background()
	dir, git := accessRepo(t)
	bin := filepath.Join(t.TempDir(), "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(t.TempDir(), "ssh.log")
	ssh := filepath.Join(bin, "ssh")
	if err := os.WriteFile(ssh, []byte("#!/bin/sh\necho \"$@\" >> '"+log+"'\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	git("config", "core.sshCommand", ssh+" -o User=configured")
	counter := gittest.NewGitCounter(t)
	t.Setenv("PATH", counter.Dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	st, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := st.Config("core.sshcommand"); !ok {
		t.Fatal("the store did not read core.sshCommand")
	}
	counter.Reset()
	if _, err := st.Git().Run(ctx, "ls-remote", "ssh://example.invalid/repo.git"); err == nil {
		t.Fatal("ls-remote through a failing ssh succeeded")
	}
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatalf("the configured ssh command did not run: %v", err)
	}
	if s := string(data); !strings.Contains(s, "User=configured") || !strings.Contains(s, "BatchMode=yes") {
		t.Fatalf("ssh ran with %q, want the configured options and batch mode", s)
	}
	if calls := counter.Calls(t); strings.Contains(calls, "config") {
		t.Fatalf("the network command read the configuration again:\n%s", calls)
	}
}

// TestReadOwnAfterNewPack: once a pack arrives (a fetch, here fast-import),
// every one of many objects read at once from it is found in-process: the
// readers that miss together all look again, not only the one that saw the
// pack directory change first.
func TestReadOwnAfterNewPack(t *testing.T) {
	ctx := context.Background()
	dir, _ := accessRepo(t)
	blobs := func(from, n int) []string {
		t.Helper()
		var in strings.Builder
		for i := from; i < from+n; i++ {
			fmt.Fprintf(&in, "blob\nmark :%d\ndata %d\n%d\n", i+1, len(strconv.Itoa(i))+1, i)
		}
		marks := filepath.Join(t.TempDir(), "marks")
		gittest.GitInput(t, dir, strings.NewReader(in.String()), "fast-import", "--quiet", "--export-marks="+marks)
		data, err := os.ReadFile(marks)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			_, id, _ := strings.Cut(l, " ")
			ids = append(ids, id)
		}
		return ids
	}
	first := blobs(0, 1)
	st, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := st.OpenBatch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if got, err := b.ReadOwn(first); err != nil || got[0].Missing {
		t.Fatalf("the first pack's blob: %+v %v", got, err)
	}
	for round := 0; round < 5; round++ {
		ids := blobs(1+round*2000, 2000)
		got, err := b.ReadOwn(ids)
		if err != nil {
			t.Fatal(err)
		}
		missing := 0
		for _, o := range got {
			if o.Missing {
				missing++
			}
		}
		if missing > 0 {
			t.Fatalf("round %d: %d of %d objects of the new pack not found in-process", round, missing, len(ids))
		}
	}
}
