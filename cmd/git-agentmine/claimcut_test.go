package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

// claimCutHook is a reference-transaction hook for the remote that kills
// its receive-pack right after the first claim it commits, before the
// pusher hears the answer: a connection cut, or a remote too busy to
// answer in time, with the claim taken all the same.
const claimCutHook = `#!/bin/sh
[ "$1" = committed ] || exit 0
grep -q ' refs/agentmine-claims/' || exit 0
[ -e "$CUT_MARK" ] && exit 0
: > "$CUT_MARK"
kill -9 $PPID
`

// TestClaimPushWithoutAnswerIsReadBack: a claim push whose answer never
// came (the remote took the claim, then the connection died) is read back
// before the worker gives up on the remote: the claim is this session's,
// so the worker runs with it, with no "running locally without a claim"
// warning, and the remote's claim is its session's.
func TestClaimPushWithoutAnswerIsReadBack(t *testing.T) {
	repo := testRepo(t)
	remote := filepath.Join(t.TempDir(), "remote.git")
	gittest.Git(t, "", "init", "-q", "--bare", "-b", "main", remote)
	mark := filepath.Join(t.TempDir(), "cut")
	t.Setenv("CUT_MARK", mark)
	if err := os.WriteFile(filepath.Join(remote, "hooks", "reference-transaction"), []byte(claimCutHook), 0o755); err != nil {
		t.Fatal(err)
	}
	gittest.Git(t, repo, "remote", "add", "origin", remote)
	gittest.Git(t, repo, "push", "-q", "origin", "main")
	run(t, repo, "git", "agentmine", "init", "--remote", "origin")
	gittest.WriteFiles(t, repo, map[string]string{".agentmine/agents/noop.toml": "client = \"custom\"\ncommand = [\"true\"]\n[scope]\nwrite = [\"**\"]\n"})
	gittest.Git(t, repo, "add", "-A")
	gittest.Git(t, repo, "commit", "-qm", "a no-op agent")
	id := run(t, repo, "git", "agentmine", "task", "add", "cut", "-q", "--assignee", "noop")

	_, errOut, code := agentmine(t, repo, "worker", "run", id, "--exec")
	if _, err := os.Stat(mark); err != nil {
		t.Fatalf("the remote never cut a claim push off: %v", err)
	}
	if code != 0 || strings.Contains(errOut, "without a claim") {
		t.Fatalf("worker run exit %d, want 0 with its claim:\n%s", code, errOut)
	}
	claim := strings.Fields(gittest.Git(t, remote, "for-each-ref", "--format=%(objectname)", "refs/agentmine-claims/"+id))
	sessions := strings.Fields(gittest.Git(t, remote, "for-each-ref", "--format=%(refname)", "refs/agentmine/sessions/"))
	if len(claim) != 1 || len(sessions) != 1 {
		t.Fatalf("remote holds claims %v and sessions %v, want one of each", claim, sessions)
	}
}
