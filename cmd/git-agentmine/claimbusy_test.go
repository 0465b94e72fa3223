package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

// claimBusyHook is the remote's pre-receive hook: for the first
// $BUSY_TIMES pushes that take a claim it kills its receive-pack before
// anything is written (the pusher hears no answer) and leaves a mark that
// makes the next listing of the remote fail too: a remote that answered a
// listing a moment ago and is now too busy to answer.
const claimBusyHook = `#!/bin/sh
grep ' refs/agentmine-claims/' | grep -qv ' 0000000000000000000000000000000000000000 ' || exit 0
n=$(cat "$BUSY_COUNT" 2>/dev/null || echo 0)
[ "$n" -lt "$BUSY_TIMES" ] || exit 0
echo $((n + 1)) > "$BUSY_COUNT"
: > "$BUSY_READ"
kill -9 $PPID
`

// claimBusyUploadPack serves listings and fetches, except the one right
// after a claim push the hook cut off.
const claimBusyUploadPack = `#!/bin/sh
if [ -e "$BUSY_READ" ]; then rm -f "$BUSY_READ"; exit 1; fi
exec git-upload-pack "$@"
`

// busyRemote gives repo an origin whose first times claim pushes go
// unanswered, each with the listing after it (claimBusyHook,
// claimBusyUploadPack), pushes main there, and returns the remote and the
// file counting the pushes cut off.
func busyRemote(t *testing.T, repo string, times int) (remote, count string) {
	t.Helper()
	remote = filepath.Join(t.TempDir(), "remote.git")
	gittest.Git(t, repo, "init", "-q", "--bare", remote)
	dir := t.TempDir()
	count = filepath.Join(dir, "busy-count")
	t.Setenv("BUSY_COUNT", count)
	t.Setenv("BUSY_TIMES", strconv.Itoa(times))
	t.Setenv("BUSY_READ", filepath.Join(dir, "busy-read"))
	if err := os.WriteFile(filepath.Join(remote, "hooks", "pre-receive"), []byte(claimBusyHook), 0o755); err != nil {
		t.Fatal(err)
	}
	upload := filepath.Join(dir, "upload-pack")
	if err := os.WriteFile(upload, []byte(claimBusyUploadPack), 0o755); err != nil {
		t.Fatal(err)
	}
	gittest.Git(t, repo, "remote", "add", "origin", remote)
	gittest.Git(t, repo, "config", "remote.origin.uploadpack", upload)
	gittest.Git(t, repo, "push", "-q", "origin", "main")
	return remote, count
}

// TestRunClaimBusyWaits: a run whose listing of the claims answered, and
// whose claim push then got no answer (nor its read-back), does not run
// the task without a claim, which another clone could run too: it looks
// again later, and runs the task once, with its claim, once the remote
// answers. Before, the first cut-off claim ran the worker "locally without
// a claim" (a task ran twice in the 32-clone fleet over git daemon).
func TestRunClaimBusyWaits(t *testing.T) {
	gittest.SkipShort(t, "a run of a real worker against a remote that drops its first claims")
	f := newRunFixture(t)
	remote, count := busyRemote(t, f.repo, 2)
	run(t, f.repo, "git", "agentmine", "init", "--remote", "origin")
	id := f.add(t, "claimed once", "done")

	out, errOut, code := agentmine(t, f.repo, "run", id, "--json")
	if n, _ := os.ReadFile(count); strings.TrimSpace(string(n)) != "2" {
		t.Fatalf("the remote cut off %q claim pushes, want 2 (the hook did not run as meant)\n%s", n, errOut)
	}
	log := runLog(f.repo)
	if code != 0 || strings.Contains(errOut+log, "without a claim") {
		t.Fatalf("run exit %d; a start without a claim or a failure:\n%s\n%s\n%s", code, out, errOut, log)
	}
	claim := strings.Fields(gittest.Git(t, remote, "for-each-ref", "--format=%(objectname)", "refs/agentmine-claims/"+id))
	remoteSessions := strings.Fields(gittest.Git(t, remote, "for-each-ref", "--format=%(refname)", "refs/agentmine/sessions/"))
	localSessions := strings.Fields(gittest.Git(t, f.repo, "for-each-ref", "--format=%(refname)", "refs/agentmine/sessions/"))
	if len(claim) != 1 || len(remoteSessions) != 1 || len(localSessions) != 1 {
		t.Fatalf("remote claims %v, remote sessions %v, local sessions %v: want the task claimed and run once", claim, remoteSessions, localSessions)
	}
	if show := run(t, f.repo, "git", "agentmine", "task", "show", id, "--json"); !strings.Contains(show, `"status": "review"`) && !strings.Contains(show, `"status":"review"`) {
		t.Errorf("the task after the run is not in review:\n%s", show)
	}
}

// runLog returns the text of the run logs of repo.
func runLog(repo string) string {
	logs, _ := filepath.Glob(filepath.Join(repo, ".git", "agentmine", "logs", "run-*.log"))
	var log string
	for _, l := range logs {
		data, _ := os.ReadFile(l)
		log += string(data)
	}
	return log
}

// TestRunOfflineRemoteRunsUnclaimed: a run whose claim remote is not there
// runs the task locally without a claim at once, with the warning a worker
// run gives; one that keeps going quiet on every claim (as a busy remote
// does) is waited for 6 times, with a doubling backoff, then taken for
// offline the same way: an unreachable remote never stops the work.
func TestRunOfflineRemoteRunsUnclaimed(t *testing.T) {
	gittest.SkipShort(t, "a run waits about a minute for a remote that never answers a claim")
	for _, tc := range []struct {
		name  string
		waits int
	}{{"gone", 0}, {"always busy", 6}} {
		t.Run(tc.name, func(t *testing.T) {
			f := newRunFixture(t)
			if tc.waits == 0 {
				gittest.Git(t, f.repo, "remote", "add", "origin", filepath.Join(t.TempDir(), "gone.git"))
			} else {
				busyRemote(t, f.repo, 1000)
			}
			run(t, f.repo, "git", "agentmine", "init", "--remote", "origin")
			id := f.add(t, "offline", "done")
			out, errOut, code := agentmine(t, f.repo, "run", id, "--json")
			log := runLog(f.repo)
			if code != 0 || !strings.Contains(errOut+log, "running locally without a claim") {
				t.Fatalf("run exit %d, want 0 and a run without a claim:\n%s\n%s\n%s", code, out, errOut, log)
			}
			if n := strings.Count(log, "did not answer the claim"); n != tc.waits {
				t.Errorf("the run waited for %d unanswered claims, want %d:\n%s", n, tc.waits, log)
			}
			if show := run(t, f.repo, "git", "agentmine", "task", "show", id, "--json"); !strings.Contains(show, `"status": "review"`) && !strings.Contains(show, `"status":"review"`) {
				t.Errorf("the task after the run is not in review:\n%s", show)
			}
		})
	}
}
