package launch

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

// readPids reads the pid files a worker wrote (one pid each) and returns
// each with its start time, waiting (bounded) for each file to appear.
func readPids(t *testing.T, dir string, names ...string) map[string]Proc {
	t.Helper()
	out := map[string]Proc{}
	for _, n := range names {
		pid := gittest.WaitPidFile(t, filepath.Join(dir, n))
		st, err := StartTime(pid)
		if err != nil {
			t.Fatalf("%s: pid %d already gone: %v", n, pid, err)
		}
		out[n] = Proc{Pid: pid, Start: st}
	}
	return out
}

// waitGone waits (bounded) until none of ps runs any more.
func waitGone(t *testing.T, ps map[string]Proc) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for n, p := range ps {
		for Alive(p.Pid, p.Start) {
			if time.Now().After(deadline) {
				t.Fatalf("%s (pid %d) still runs", n, p.Pid)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// checkLeftovers checks that each pid file names one of the leftovers and
// that none of those runs any more.
func checkLeftovers(t *testing.T, res Result, dir string, files ...string) {
	t.Helper()
	byPid := map[int]Proc{}
	for _, l := range res.Leftovers {
		byPid[l.Pid] = l
		if l.Command == "" || l.Start == 0 {
			t.Errorf("leftover %+v lacks its command or start time", l)
		}
		if Alive(l.Pid, l.Start) {
			t.Errorf("leftover %s still runs after Wait returned", l)
		}
	}
	for _, f := range files {
		pid := gittest.WaitPidFile(t, filepath.Join(dir, f))
		if _, ok := byPid[pid]; !ok {
			t.Errorf("%s (pid %d) is not among the leftovers %v", f, pid, res.Leftovers)
		}
	}
	if len(res.Leftovers) != len(files) {
		t.Errorf("leftovers %v, want %d", res.Leftovers, len(files))
	}
	if len(res.Survivors) > 0 {
		t.Errorf("survivors: %v", res.Survivors)
	}
}

// The worker's escapes, each in its own way out of the worker's process
// group: a setsid child, a double fork (its parent exits, so it is
// orphaned), a setsid child that clears its environment (no marker), and
// one that ignores SIGTERM. Every one of them is ended before Wait returns,
// and they are reported as leftovers; a process of this process's own
// session started meanwhile (as the supervisor's git commands are) is not
// touched.
func TestEscapedProcessesEndWithTheWorker(t *testing.T) {
	scrubEnv(t)
	dir := t.TempDir()
	script := `cd ` + dir + `
setsid sh -c 'echo $$ > setsid.pid; sleep 60; echo late > late-setsid' &
( sh -c 'echo $$ > double.pid; sleep 60; echo late > late-double' & )
env -i /usr/bin/setsid /bin/sh -c 'echo $$ > bare.pid; sleep 60; echo late > late-bare' &
setsid sh -c 'trap "" TERM; echo $$ > stubborn.pid; sleep 60; echo late > late-stubborn' &
while ! [ -s setsid.pid ] || ! [ -s double.pid ] || ! [ -s bare.pid ] || ! [ -s stubborn.pid ]; do sleep 0.01; done
echo spawned
exit 0`
	own := exec.Command("sleep", "60")
	if err := own.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { own.Process.Kill(); own.Wait() }()
	p, log := startSh(t, context.Background(), script, Spec{Timeout: time.Minute, Grace: 300 * time.Millisecond})
	res := p.Wait()
	if res.ExitCode != 0 || res.TimedOut || res.Signal != "" {
		t.Fatalf("the worker itself exited 0: %+v", res)
	}
	// Each escape is a sh with a sleep child (the sleep dies with its
	// parent's session or is found as its descendant): count the sh's.
	byPid := map[int]bool{}
	for _, l := range res.Leftovers {
		byPid[l.Pid] = true
	}
	for _, f := range []string{"setsid.pid", "double.pid", "bare.pid", "stubborn.pid"} {
		if pid := gittest.WaitPidFile(t, filepath.Join(dir, f)); !byPid[pid] {
			t.Errorf("%s (pid %d) is not among the leftovers %v", f, pid, res.Leftovers)
		}
	}
	for _, l := range res.Leftovers {
		if Alive(l.Pid, l.Start) || l.Command == "" {
			t.Errorf("leftover %+v still runs, or has no command", l)
		}
	}
	if len(res.Survivors) > 0 {
		t.Errorf("survivors: %v", res.Survivors)
	}
	if ost, err := readProcStat(own.Process.Pid); err != nil || ost.dead() {
		t.Fatalf("a process of the supervisor's own session was ended: %v", err)
	}
	text := readLog(t, log)
	if !strings.Contains(text, "worker left") || !strings.Contains(text, "sending SIGKILL") {
		t.Errorf("log does not tell of the leftovers and the SIGKILL:\n%s", text)
	}
	for _, late := range []string{"late-setsid", "late-double", "late-bare", "late-stubborn"} {
		if _, err := os.Stat(filepath.Join(dir, late)); err == nil {
			t.Errorf("%s was written", late)
		}
	}
}

// A timeout ends the escaped processes too.
func TestTimeoutEndsEscapedProcesses(t *testing.T) {
	scrubEnv(t)
	dir := t.TempDir()
	script := `cd ` + dir + `
setsid sh -c 'echo $$ > setsid.pid; exec sleep 60' &
while ! [ -s setsid.pid ]; do sleep 0.01; done
echo ready
sleep 60`
	p, log := startSh(t, context.Background(), script, Spec{Timeout: time.Second, Grace: 300 * time.Millisecond})
	res := p.Wait()
	if !res.TimedOut || res.ExitCode != 124 {
		t.Fatalf("result %+v", res)
	}
	checkLeftovers(t, res, dir, "setsid.pid")
	assertGroupGone(t, p.Pid())
	if !strings.Contains(readLog(t, log), "timed out") {
		t.Error("log does not record the timeout")
	}
}

// Two runs of one Reaper at once: the one that ends first leaves the
// other's worker and its setsid child alone.
func TestRunsOfOneReaperStayApart(t *testing.T) {
	scrubEnv(t)
	r := NewReaper()
	dir := t.TempDir()
	long, _ := startSh(t, context.Background(), `cd `+dir+`
setsid sh -c 'echo $$ > long-child.pid; exec sleep 60' &
echo $$ > long.pid
sleep 60`, Spec{Timeout: time.Minute, Grace: 300 * time.Millisecond, Reaper: r})
	if err := r.Err(); err != nil {
		t.Skipf("no child subreaper here: %v", err)
	}
	pids := readPids(t, dir, "long.pid", "long-child.pid")
	short, _ := startSh(t, context.Background(), `cd `+dir+`
setsid sh -c 'echo $$ > short-child.pid; exec sleep 60' &
while ! [ -s short-child.pid ]; do sleep 0.01; done`, Spec{Timeout: time.Minute, Grace: 300 * time.Millisecond, Reaper: r})
	checkLeftovers(t, short.Wait(), dir, "short-child.pid")
	for n, x := range pids {
		if !Alive(x.Pid, x.Start) {
			t.Fatalf("ending the short run ended %s of the long one", n)
		}
	}
	long.Stop()
	lres := long.Wait()
	waitGone(t, pids)
	checkLeftovers(t, lres, dir, "long-child.pid")
}

// startTree starts, outside any supervision of this test's, what a worker
// whose supervisor was killed leaves behind: the worker (leader of its own
// session, with the marker), a child in its session that cleared its
// environment, a setsid child that kept the marker and a grandchild of it
// without the marker. It returns the worker's pid and the pid files' dir.
func startTree(t *testing.T, marker string) (int, string) {
	t.Helper()
	dir := t.TempDir()
	script := writeScript(t, dir, "tree.sh", `cd `+dir+`
env -i /bin/sh -c 'echo $$ > bare.pid; exec sleep 60' &
setsid sh -c 'echo $$ > marked.pid; env -i /bin/sh -c "echo \$\$ > grandchild.pid; exec sleep 60" & exec sleep 60' &
echo $$ > leader.pid
exec sleep 60`)
	cmd := exec.Command(script)
	cmd.Env = append(os.Environ(), marker)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd.Process.Pid, dir
}

func TestFindAndEndRun(t *testing.T) {
	scrubEnv(t)
	marker := newMarker()
	leader, dir := startTree(t, marker)
	pids := readPids(t, dir, "leader.pid", "bare.pid", "marked.pid", "grandchild.pid")
	if pids["leader.pid"].Pid != leader {
		t.Fatalf("leader.pid %d, started %d", pids["leader.pid"].Pid, leader)
	}
	// An unrelated process started after the worker: never the run's.
	other := exec.Command("sleep", "60")
	other.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { other.Process.Kill(); other.Wait() }()

	ls := pids["leader.pid"].Start
	find := func(id Identity) map[int]bool {
		t.Helper()
		ps, err := FindRun(id)
		if err != nil {
			t.Fatal(err)
		}
		m := map[int]bool{}
		for _, p := range ps {
			m[p.Pid] = true
		}
		if m[other.Process.Pid] || m[os.Getpid()] {
			t.Fatalf("FindRun(%+v) lists an unrelated process: %v", id, ps)
		}
		return m
	}
	all := find(Identity{Leader: leader, LeaderStart: ls, Marker: marker})
	for n, x := range pids {
		if !all[x.Pid] {
			t.Errorf("%s (pid %d) not found by leader and marker", n, x.Pid)
		}
	}
	// A recorded start time that does not match (a recycled pid): the
	// session's members are no proof, the marker and descent still are.
	// The bare child descends from the leader, which keeps the marker.
	wrong := find(Identity{Leader: leader, LeaderStart: ls - 1, Marker: marker})
	if !wrong[pids["marked.pid"].Pid] || !wrong[pids["grandchild.pid"].Pid] || !wrong[pids["bare.pid"].Pid] {
		t.Errorf("marker and descent should still find the tree: %v", wrong)
	}
	// Without the marker and with a wrong start time, nothing is proof.
	if none := find(Identity{Leader: leader, LeaderStart: ls + 1}); len(none) != 0 {
		t.Errorf("found %v with no valid proof", none)
	}
	// A record naming a process that lacks the marker (the record was
	// forged, or the worker dropped its marker): its session is no proof,
	// and the other marker is found nowhere.
	if none := find(Identity{Leader: leader, LeaderStart: ls, Marker: newMarker()}); len(none) != 0 {
		t.Errorf("found %v through a leader without the marker", none)
	}

	ended, err := EndRun(Identity{Leader: leader, LeaderStart: ls, Marker: marker}, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if len(ended) != len(pids) {
		t.Errorf("ended %v, want the %d processes of the tree", ended, len(pids))
	}
	waitGone(t, pids)
	if ost, err := readProcStat(other.Process.Pid); err != nil || ost.dead() {
		t.Fatal("EndRun ended an unrelated process")
	}
}

func TestUsersOf(t *testing.T) {
	scrubEnv(t)
	dir := t.TempDir()
	wt := filepath.Join(dir, "wt")
	if err := os.MkdirAll(filepath.Join(wt, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(wt, "data"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	start := func(dir string, args ...string) *exec.Cmd {
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Dir = dir
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd
	}
	inCwd := start(filepath.Join(wt, "sub"), "sleep", "60")
	withFd := start(dir, "sh", "-c", "exec 3<wt/data; echo > "+filepath.Join(dir, "fd-ready")+"; exec sleep 60")
	elsewhere := start(dir, "sleep", "60")
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(dir, "fd-ready")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the fd holder never got ready")
		}
		time.Sleep(10 * time.Millisecond)
	}
	users, err := UsersOf(wt)
	if err != nil {
		t.Fatal(err)
	}
	got := map[int]string{}
	for _, u := range users {
		got[u.Pid] = u.Command
	}
	if !strings.Contains(got[inCwd.Process.Pid], "sleep") {
		t.Errorf("process in the worktree not listed: %v", users)
	}
	if _, ok := got[withFd.Process.Pid]; !ok {
		t.Errorf("process holding a file of the worktree not listed: %v", users)
	}
	if _, ok := got[elsewhere.Process.Pid]; ok {
		t.Errorf("unrelated process listed: %v", users)
	}
	if _, ok := got[os.Getpid()]; ok {
		t.Error("the caller itself is listed")
	}
	if u, err := UsersOf(filepath.Join(dir, "nobody-uses-this")); err != nil || len(u) != 0 {
		t.Errorf("an unused directory: %v, %v", u, err)
	}
}

func TestCommandOfIsOneSafeLine(t *testing.T) {
	scrubEnv(t)
	// A shell that stays (its last command is not exec'd) with an
	// argument holding a newline and an escape sequence.
	cmd := exec.Command("/bin/sh", "-c", "sleep 60; :", "x\n\x1b[31m"+strings.Repeat("y", 200))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	// Start returns while the kernel may still be setting up the new
	// program's arguments: wait until they can be read.
	deadline := time.Now().Add(10 * time.Second)
	for {
		if data, _ := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/cmdline"); len(data) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the command line never became readable")
		}
		time.Sleep(5 * time.Millisecond)
	}
	c := commandOf(cmd.Process.Pid)
	if strings.ContainsAny(c, "\n\x1b") || len([]rune(c)) > maxCommand || !strings.HasPrefix(c, "/bin/sh -c sleep 60; : x??[31myyy") || !strings.HasSuffix(c, "…") {
		t.Fatalf("commandOf = %q", c)
	}
}

// Contain ends what the commands it ran left outside this process's
// process group, and nothing that was there before.
func TestContain(t *testing.T) {
	scrubEnv(t)
	dir := t.TempDir()
	before := exec.Command("sleep", "60")
	before.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := before.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { before.Process.Kill(); before.Wait() }()
	r := NewReaper()
	ended := r.Contain(300*time.Millisecond, func() {
		cmd := exec.Command("sh", "-c", `setsid sh -c 'trap "" TERM; echo $$ > escaped.pid; exec sleep 60' </dev/null >/dev/null 2>&1 &
set -m
sh -c 'echo $$ > job.pid; exec sleep 60' </dev/null >/dev/null 2>&1 &
while ! [ -s escaped.pid ] || ! [ -s job.pid ]; do sleep 0.01; done`)
		cmd.Dir = dir
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
	})
	want := map[int]bool{gittest.WaitPidFile(t, filepath.Join(dir, "escaped.pid")): true, gittest.WaitPidFile(t, filepath.Join(dir, "job.pid")): true}
	if len(ended) != len(want) {
		t.Fatalf("ended %v, want the setsid daemon and the job %v", ended, want)
	}
	for _, e := range ended {
		if !want[e.Pid] || Alive(e.Pid, e.Start) {
			t.Fatalf("ended %v, want the setsid daemon and the job %v, none alive", ended, want)
		}
	}
	// What this process runs in its own group is its own.
	own := exec.Command("sleep", "60")
	r.Contain(0, func() {
		if err := own.Start(); err != nil {
			t.Fatal(err)
		}
	})
	defer func() { own.Process.Kill(); own.Wait() }()
	if st, err := readProcStat(own.Process.Pid); err != nil || st.dead() {
		t.Fatal("a command in this process's own group was ended")
	}
	if st, err := readProcStat(before.Process.Pid); err != nil || st.dead() {
		t.Fatal("a process that was there before was ended")
	}
}

// TestFindRunAfterItsLeaderDied: once the worker's own process is gone
// (killed with its supervisor), a member of its session without the
// marker is still found, if it started within the run's span; with no
// span nothing proves it is the run's.
func TestFindRunAfterItsLeaderDied(t *testing.T) {
	out := filepath.Join(t.TempDir(), "pids")
	// The leader starts a member of its session (no marker anywhere) and
	// ends; the member is then an orphan whose session leader is gone.
	cmd := exec.Command("/bin/sh", "-c", `sleep 60 </dev/null >/dev/null 2>&1 & echo "$$ $!" > "$1"`, "sh", out)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	leader := cmd.Process.Pid
	start, err := StartTime(leader)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	b, _ := os.ReadFile(out)
	f := strings.Fields(string(b))
	if len(f) != 2 {
		t.Fatalf("pids %q", b)
	}
	member, _ := strconv.Atoi(f[1])
	defer syscall.Kill(member, syscall.SIGKILL)
	found := func(span time.Duration) bool {
		ps, err := FindRun(Identity{Leader: leader, LeaderStart: start, Since: start, Marker: "AGENTMINE_RUN=none", Span: span})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ps {
			if p.Pid == member {
				return true
			}
		}
		return false
	}
	if !found(time.Hour) {
		t.Errorf("the member of a dead leader's session was not found within the span")
	}
	if found(0) {
		t.Errorf("with no span, a member of a dead leader's session was found")
	}
	ended, err := EndRuns([]Identity{{Leader: leader, LeaderStart: start, Since: start, Span: time.Hour}}, time.Second)
	if err != nil || len(ended) != 1 || ended[0].Pid != member {
		t.Fatalf("EndRuns: %v %v", ended, err)
	}
}
