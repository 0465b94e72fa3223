package verify

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

func TestRunCommandsPassAndFail(t *testing.T) {
	gittest.Scrub(t)
	dir := t.TempDir()
	res, err := RunCommands(ctxT(t), dir, []string{"echo hello", "echo oops >&2; exit 3", "pwd"}, DoDOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != DoDFailed || len(res.Commands) != 3 {
		t.Fatalf("want failed with 3 results, got %+v", res)
	}
	c0, c1, c2 := res.Commands[0], res.Commands[1], res.Commands[2]
	if c0.ExitCode != 0 || c0.OutputTail != "hello\n" {
		t.Errorf("first command: %+v", c0)
	}
	if c1.ExitCode != 3 || !strings.Contains(c1.OutputTail, "oops") {
		t.Errorf("second command: %+v", c1)
	}
	// A failure does not stop the later commands, which run in dir.
	if c2.ExitCode != 0 || strings.TrimSpace(c2.OutputTail) != dir || c2.Skipped {
		t.Errorf("third command: %+v", c2)
	}
	all, err := RunCommands(ctxT(t), dir, []string{"true", "exit 0"}, DoDOptions{})
	if err != nil || all.Status != DoDPassed {
		t.Fatalf("want passed, got %+v, %v", all, err)
	}
	if s := Skipped("--skip-dod"); s.Status != DoDSkipped || s.Reason != "--skip-dod" {
		t.Errorf("Skipped: %+v", s)
	}
	if none, _ := RunCommands(ctxT(t), dir, nil, DoDOptions{}); none.Status != DoDSkipped {
		t.Errorf("no commands should be skipped, got %+v", none)
	}
}

func TestRunCommandsMissingCommand(t *testing.T) {
	gittest.Scrub(t)
	res, err := RunCommands(ctxT(t), t.TempDir(), []string{"no-such-command-agentmine-test --flag"}, DoDOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := res.Commands[0]
	if res.Status != DoDFailed || c.ExitCode != 127 || !strings.Contains(c.OutputTail, "not found") {
		t.Fatalf("want failed with exit 127 and 'not found', got %+v", res)
	}
	// A shell that cannot start is recorded too, not a panic or a hang.
	res, err = RunCommands(ctxT(t), t.TempDir(), []string{"true"}, DoDOptions{Shell: "/no/such/shell"})
	if err != nil || res.Status != DoDFailed || res.Commands[0].Error == "" {
		t.Fatalf("missing shell: %+v, %v", res, err)
	}
}

func waitGone(t *testing.T, pid int) {
	t.Helper()
	// Reaping of orphans by init is asynchronous; poll until it is done.
	for i := 0; i < 200 && !gittest.Gone(pid); i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if !gittest.Gone(pid) {
		t.Errorf("process %d of the DoD group is still running", pid)
	}
}

func TestRunCommandsTimeoutKillsGroup(t *testing.T) {
	gittest.Scrub(t)
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	res, err := RunCommands(ctxT(t), dir, []string{
		"sleep 1000 & echo $! > pid; echo started; wait",
		"echo never",
	}, DoDOptions{Timeout: 300 * time.Millisecond, Grace: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != DoDTimeout {
		t.Fatalf("status %s, want timeout: %+v", res.Status, res)
	}
	c := res.Commands[0]
	if !c.TimedOut || c.Signal != "SIGTERM" || c.ExitCode != -1 || !strings.Contains(c.OutputTail, "started") {
		t.Errorf("hung command: %+v", c)
	}
	if !res.Commands[1].Skipped || res.Commands[1].ExitCode != -1 {
		t.Errorf("command after a timeout must be skipped: %+v", res.Commands[1])
	}
	waitGone(t, gittest.WaitPidFile(t, pidFile))
}

func TestRunCommandsTimeoutIgnoringTerm(t *testing.T) {
	gittest.Scrub(t)
	dir := t.TempDir()
	res, err := RunCommands(ctxT(t), dir, []string{
		"trap '' TERM; sleep 1000 & echo $! > pid; wait; wait; wait",
	}, DoDOptions{Timeout: 200 * time.Millisecond, Grace: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	c := res.Commands[0]
	if res.Status != DoDTimeout || !c.TimedOut || c.Signal != "SIGKILL" {
		t.Fatalf("want a timeout ended by SIGKILL, got %+v", c)
	}
	waitGone(t, gittest.WaitPidFile(t, filepath.Join(dir, "pid")))
}

func TestRunCommandsHugeOutputIsBounded(t *testing.T) {
	gittest.Scrub(t)
	const size = 8 << 20
	res, err := RunCommands(ctxT(t), t.TempDir(), []string{
		"head -c " + strconv.Itoa(size) + " /dev/zero | tr '\\0' x; echo; echo 'héllo END'",
	}, DoDOptions{TailBytes: 1000})
	if err != nil {
		t.Fatal(err)
	}
	c := res.Commands[0]
	if res.Status != DoDPassed {
		t.Fatalf("status %s: %+v", res.Status, c.Error)
	}
	if len(c.OutputTail) > 1000 || !strings.HasSuffix(c.OutputTail, "héllo END\n") {
		t.Errorf("tail of %d bytes, ends %q", len(c.OutputTail), c.OutputTail[max(0, len(c.OutputTail)-20):])
	}
	if want := int64(size + 1 + len("héllo END\n")); c.OutputBytes != want {
		t.Errorf("output bytes %d, want %d", c.OutputBytes, want)
	}
}

func TestTailBufferKeepsValidUTF8(t *testing.T) {
	tb := &tailBuffer{max: 3}
	tb.Write([]byte("éé")) // 4 bytes: the last 3 start inside the first é
	if got, n := tb.result(); got != "é" || n != 4 {
		t.Errorf("tail %q (%d bytes total), want \"é\" (4)", got, n)
	}
	tb = &tailBuffer{max: 4}
	for i := 0; i < 100; i++ {
		tb.Write([]byte("abc"))
	}
	if got, n := tb.result(); got != "cabc" || n != 300 {
		t.Errorf("tail %q (%d bytes total), want \"cabc\" (300)", got, n)
	}
}

func TestRunCommandsCancelled(t *testing.T) {
	gittest.Scrub(t)
	ctx, cancel := context.WithCancel(ctxT(t))
	cancel()
	res, err := RunCommands(ctx, t.TempDir(), []string{"true"}, DoDOptions{})
	if err == nil || exitcode.Of(err) != exitcode.Interrupted {
		t.Fatalf("want an interrupted error, got %v", err)
	}
	if !res.Commands[0].Skipped {
		t.Errorf("nothing should run after cancellation: %+v", res)
	}
}

func TestRunDoDJudgesCommittedTip(t *testing.T) {
	f := newFixture(t)
	dod := []string{"test -f src/feature.go", "test ! -e secrets/key.txt", "test -f docs/readme.md"}
	// An uncommitted file cannot make the DoD pass.
	gittest.WriteFiles(t, f.wt, map[string]string{"src/feature.go": "package src\n"})
	res, err := RunDoD(ctxT(t), f.wt, "task-1", f.sparse, dod, DoDOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != DoDFailed || res.Commands[0].ExitCode == 0 {
		t.Fatalf("uncommitted leftover made the DoD pass: %+v", res)
	}
	if res.Commands[1].ExitCode != 0 || res.Commands[2].ExitCode != 0 {
		t.Errorf("checkout did not follow the sparse patterns: %+v", res.Commands)
	}
	if _, err := os.Stat(filepath.Join(f.wt, "src", "feature.go")); err != nil {
		t.Fatalf("the worker's leftover was lost: %v", err)
	}
	gittest.Git(t, f.wt, "add", "src/feature.go")
	gittest.Git(t, f.wt, "commit", "-q", "-m", "feature")
	res, err = RunDoD(ctxT(t), f.wt, "task-1", f.sparse, dod, DoDOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != DoDPassed || res.Tip != gittest.Git(t, f.wt, "rev-parse", "task-1") {
		t.Fatalf("want passed on the tip, got %+v", res)
	}
	// The temporary checkouts are gone and unregistered.
	if list := gittest.Git(t, f.repo, "worktree", "list", "--porcelain"); strings.Contains(list, "dod") {
		t.Errorf("temporary DoD worktree left registered:\n%s", list)
	}
	entries, _ := os.ReadDir(filepath.Join(f.repo, ".git", "agentmine", "dod"))
	if len(entries) != 0 {
		t.Errorf("temporary DoD checkout left on disk: %v", entries)
	}
}

func TestRunDoDReadOnlyLeftoversAreCleaned(t *testing.T) {
	f := newFixture(t)
	res, err := RunDoD(ctxT(t), f.wt, f.base, nil, []string{"mkdir -p cache/d && touch cache/d/f && chmod -R a-w cache"}, DoDOptions{})
	if err != nil || res.Status != DoDPassed {
		t.Fatalf("%+v, %v", res, err)
	}
	entries, _ := os.ReadDir(filepath.Join(f.repo, ".git", "agentmine", "dod"))
	if len(entries) != 0 {
		t.Errorf("checkout with read-only leftovers not removed: %v", entries)
	}
}

func TestRunDoDBadTip(t *testing.T) {
	f := newFixture(t)
	_, err := RunDoD(ctxT(t), f.wt, "no-such-branch", nil, []string{"true"}, DoDOptions{})
	if err == nil || exitcode.Of(err) != exitcode.NotFound || !strings.Contains(err.Error(), "no-such-branch") {
		t.Fatalf("want a not-found error naming the tip, got %v", err)
	}
	if list := gittest.Git(t, f.repo, "worktree", "list", "--porcelain"); strings.Count(list, "worktree ") != 2 {
		t.Errorf("a failed DoD changed the worktree list:\n%s", list)
	}
	res, err := RunDoD(ctxT(t), f.wt, "no-such-branch", nil, nil, DoDOptions{})
	if err != nil || res.Status != DoDSkipped {
		t.Errorf("no commands: %+v, %v", res, err)
	}
}
