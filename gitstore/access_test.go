package gitstore

import (
	"context"
	"os/exec"
	"strings"
	"testing"
)

// accessRepo makes a repository with pinned identities and dates.
func accessRepo(t *testing.T) (string, func(args ...string) string) {
	t.Helper()
	home := t.TempDir()
	for k, v := range map[string]string{
		"HOME": home, "XDG_CONFIG_HOME": home, "GIT_CONFIG_NOSYSTEM": "1",
		"GIT_AUTHOR_NAME": "Tester", "GIT_AUTHOR_EMAIL": "tester@example.com",
		"GIT_COMMITTER_NAME": "Tester", "GIT_COMMITTER_EMAIL": "tester@example.com",
		"GIT_AUTHOR_DATE": "1700000000 +0000", "GIT_COMMITTER_DATE": "1700000000 +0000",
	} {
		t.Setenv(k, v)
	}
	dir := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q", "-b", "main")
	return dir, git
}

// commitFile commits content to name on the current branch.
func commitFile(t *testing.T, git func(...string) string, dir, name, content string) string {
	t.Helper()
	cmd := exec.Command("sh", "-c", "printf '%s' \"$1\" > \"$2\"", "sh", content, name)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("writing %s: %v %s", name, err, out)
	}
	git("add", name)
	git("commit", "-q", "-m", "edit "+name)
	return git("rev-parse", "HEAD")
}

func TestCommitTreeMatchesGit(t *testing.T) {
	dir, git := accessRepo(t)
	base := commitFile(t, git, dir, "a.txt", "one\n")
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
	base := commitFile(t, git, dir, "a.txt", "one\n")
	git("checkout", "-q", "-b", "side")
	side := commitFile(t, git, dir, "b.txt", "side\n")
	git("checkout", "-q", "main")
	main := commitFile(t, git, dir, "c.txt", "main\n")
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
	clash := commitFile(t, git, dir, "a.txt", "two\n")
	git("checkout", "-q", "main")
	commitFile(t, git, dir, "a.txt", "three\n")
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
	commitFile(t, git, dir, "a.txt", "one\n")
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
