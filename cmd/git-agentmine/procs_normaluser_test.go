package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

// runAsUser runs git agentmine with args in dir as the user and returns
// its standard output and standard error together, failing the test when
// it fails.
func runAsUser(t *testing.T, u *gittest.User, dir string, args ...string) string {
	t.Helper()
	out, err := u.Try(dir, "git", append([]string{"agentmine"}, args...)...)
	if err != nil {
		t.Fatalf("git agentmine %s: %v", strings.Join(args, " "), err)
	}
	return out
}

// TestEscapesAsNormalUser: as a normal user, a worker's setsid and
// double-forked children are ended before worker run returns (a child
// subreaper needs no privilege), and after kill -9 of a detached
// supervisor nothing of its worker runs on once the session reads lost;
// worker done removes the worktree.
func TestEscapesAsNormalUser(t *testing.T) {
	pids := t.TempDir()
	escape := `setsid sh -c 'echo $$ > P/setsid.pid; sleep 60; echo late > .env' </dev/null >/dev/null 2>&1 & ` +
		`( sh -c 'echo $$ > P/double.pid; sleep 60; echo late > ../bg-outside.txt' </dev/null >/dev/null 2>&1 & ); ` +
		`while ! [ -s P/setsid.pid ] || ! [ -s P/double.pid ]; do sleep 0.05; done; echo b >> src/a.txt && git commit -qam work`
	linger := `setsid sh -c 'echo $$ > P/marked.pid; exec sleep 60' </dev/null >/dev/null 2>&1 & echo $$ > P/leader.pid; exec sleep 60`
	u, dir := normalUserRepo(t, map[string]string{"src/a.txt": "a\n"}, map[string]string{
		"escape": "client = \"custom\"\ncommand = [\"sh\", \"-c\", " + tomlString(strings.ReplaceAll(escape, "P/", pids+"/")) + "]\ndod = [\"test -s src/a.txt\"]\n[scope]\nwrite = [\"src/**\"]\n",
		"linger": "client = \"custom\"\ncommand = [\"sh\", \"-c\", " + tomlString(strings.ReplaceAll(linger, "P/", pids+"/")) + "]\n[scope]\nwrite = [\"src/**\"]\n",
	})
	u.Give(t, pids)
	u.Run(t, dir, "git", "config", "agentmine.grace", "1")

	task := runAsUser(t, u, dir, "task", "add", "Escape", "-q")
	cmd := u.Command(dir, "git", "agentmine", "worker", "run", task, "--agent", "escape", "--exec")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "the worker left running") || !strings.Contains(string(out), ": review — ") {
		t.Fatalf("worker run as %s: %v\n%s", u.Name, err, out)
	}
	for _, f := range []string{"setsid.pid", "double.pid"} {
		if pid := gittest.WaitPidFile(t, filepath.Join(pids, f)); !gittest.Gone(pid) {
			t.Errorf("%s (pid %d) still runs after worker run returned", f, pid)
		}
	}
	session := runAsUser(t, u, dir, "session", "list", "-t", task, "-q")
	if live := gittest.EnvHolders(t, "AGENTMINE_SESSION="+session); len(live) > 0 {
		t.Errorf("processes of session %s still alive: %v", session, live)
	}
	if show := runAsUser(t, u, dir, "task", "show", task); !strings.Contains(show, "leftover-processes: ") {
		t.Errorf("task show does not name the leftovers:\n%s", show)
	}

	task2 := runAsUser(t, u, dir, "task", "add", "Linger", "-q")
	session2 := runAsUser(t, u, dir, "worker", "run", task2, "--agent", "linger", "--exec", "--detach", "-q")
	leader := gittest.WaitPidFile(t, filepath.Join(pids, "leader.pid"))
	marked := gittest.WaitPidFile(t, filepath.Join(pids, "marked.pid"))
	var s struct {
		Pid       int    `json:"pid"`
		WorkerPid int    `json:"worker_pid"`
		State     string `json:"state"`
	}
	read := func() {
		t.Helper()
		if err := json.Unmarshal([]byte(runAsUser(t, u, dir, "session", "show", session2, "--json")), &s); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for read(); s.WorkerPid == 0; read() {
		if time.Now().After(deadline) {
			t.Fatal("the supervisor never recorded its worker's pid")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := syscall.Kill(s.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for read(); s.State != "lost"; read() {
		if time.Now().After(deadline) {
			t.Fatalf("session never lost: %+v", s)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Nothing of a worker outlives its supervisor: the kernel ends the
	// worker's first process with it (parent-death signal), and the read
	// that found the session lost ended the rest.
	for _, pid := range map[string]int{"leader": leader, "marked": marked} {
		for !gittest.Gone(pid) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
	}
	cmd = u.Command(dir, "git", "agentmine", "worker", "done", task2)
	out, err = cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("worker done as %s: %v\n%s", u.Name, err, out)
	}
	for name, pid := range map[string]int{"leader": leader, "marked": marked} {
		if !gittest.Gone(pid) {
			t.Errorf("%s (pid %d) outlived its supervisor", name, pid)
		}
	}
	if live := gittest.EnvHolders(t, "AGENTMINE_SESSION="+session2); len(live) > 0 {
		t.Errorf("processes of session %s still alive: %v", session2, live)
	}
	if _, err := os.Lstat(filepath.Join(dir, ".agentmine", "worktrees", "task-"+task2[:8])); !os.IsNotExist(err) {
		t.Errorf("worktree still there after worker done: %v", err)
	}
}
