package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
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

// waitPidFile waits (bounded) for a pid file and returns the pid in it.
func waitPidFile(t *testing.T, path string) int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		data, err := os.ReadFile(path)
		if pid, perr := strconv.Atoi(strings.TrimSpace(string(data))); err == nil && perr == nil && pid > 0 {
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never written", path)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// procGone reports whether pid no longer runs (gone, or a zombie).
func procGone(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) == 0 || f[0] == "Z" || f[0] == "X"
}

// markerHolders lists the live processes whose environment holds the
// session's marker (readable for every process when the test runs as root).
func markerHolders(t *testing.T, session string) []string {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	want := []byte("AGENTMINE_SESSION=" + session)
	var out []string
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		data, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil {
			continue
		}
		for _, kv := range bytes.Split(data, []byte{0}) {
			if bytes.Equal(kv, want) {
				cmd, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
				out = append(out, e.Name()+" "+string(bytes.ReplaceAll(cmd, []byte{0}, []byte{' '})))
			}
		}
	}
	return out
}

// TestEscapesAsNormalUser: as a normal user, a worker's setsid and
// double-forked children are ended before worker run returns (a child
// subreaper needs no privilege), and after kill -9 of a detached
// supervisor, worker done ends what its worker left running and removes
// the worktree.
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
		if pid := waitPidFile(t, filepath.Join(pids, f)); !procGone(pid) {
			t.Errorf("%s (pid %d) still runs after worker run returned", f, pid)
		}
	}
	session := runAsUser(t, u, dir, "session", "list", "-t", task, "-q")
	if live := markerHolders(t, session); len(live) > 0 {
		t.Errorf("processes of session %s still alive: %v", session, live)
	}
	if show := runAsUser(t, u, dir, "task", "show", task); !strings.Contains(show, "leftover-processes: ") {
		t.Errorf("task show does not name the leftovers:\n%s", show)
	}

	task2 := runAsUser(t, u, dir, "task", "add", "Linger", "-q")
	session2 := runAsUser(t, u, dir, "worker", "run", task2, "--agent", "linger", "--exec", "--detach", "-q")
	leader := waitPidFile(t, filepath.Join(pids, "leader.pid"))
	marked := waitPidFile(t, filepath.Join(pids, "marked.pid"))
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
	if procGone(leader) || procGone(marked) {
		t.Fatal("the worker ended with its supervisor: nothing left to test")
	}
	cmd = u.Command(dir, "git", "agentmine", "worker", "done", task2)
	out, err = cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "ended 2 processes") {
		t.Fatalf("worker done as %s: %v\n%s", u.Name, err, out)
	}
	for name, pid := range map[string]int{"leader": leader, "marked": marked} {
		if !procGone(pid) {
			t.Errorf("%s (pid %d) still runs after worker done", name, pid)
		}
	}
	if live := markerHolders(t, session2); len(live) > 0 {
		t.Errorf("processes of session %s still alive: %v", session2, live)
	}
	if _, err := os.Lstat(filepath.Join(dir, ".agentmine", "worktrees", "task-"+task2[:8])); !os.IsNotExist(err) {
		t.Errorf("worktree still there after worker done: %v", err)
	}
}
