package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

// A fleet is many clones, each its own repository and its own processes,
// sharing one board through one remote (design §8): each runs `run
// --parallel 2` of no-op workers over the same tasks, racing for them with
// remote claims. fleetRun builds one, runs it and checks what sharing
// promises: every task claimed and done exactly once, no edit lost, every
// clone converged.

// fleetTransport is a way to serve the remote.
type fleetTransport struct {
	name  string
	serve func(tb testing.TB, root string, env ...string) string
}

// fleetTransports serves the remote over smart HTTP and over git daemon.
var fleetTransports = []fleetTransport{{"http", httpRemote}, {"daemon", daemonRemote}}

// fleetStats is what a fleet run measured.
type fleetStats struct {
	clones, tasks int
	// wall is how long the runs took, from the first start to the last end.
	wall time.Duration
	// syncs counts the syncs the fleet's processes ran during the runs,
	// rounds their rounds (more than one when the remote moved).
	syncs, rounds int
	// claimReads counts looks at a claim on the remote, claimPushes the
	// pushes that tried to take one (won: the claims on the remote).
	claimReads, claimPushes, won int
	// claimLists counts the listings of every claim on the remote (one per
	// look of a run that has tasks to start).
	claimLists int
	// unclaimed counts the starts that could not reach the remote to claim
	// and ran locally without a claim (from the runs' logs).
	unclaimed int
	// gitProcs counts the git processes the fleet started during the runs.
	gitProcs int
	// server is, per program the remote ran (upload-pack, receive-pack,
	// http-backend), how many processes and their seconds in all.
	server map[string]*serverCost
	// refs counts the remote's refs at the end.
	refs int
	// load is the load average when the runs ended.
	load string
}

// serverCost is what the remote spent on one program.
type serverCost struct {
	procs   int
	seconds float64
}

// fleetGitWrapper writes a git wrapper into a new directory that logs each
// call, with the pid and start time of the process that made it, before
// running the real git: put first on PATH, it tells which git processes
// the fleet's processes started and which of them one process started.
func fleetGitWrapper(tb testing.TB) (dir, log string) {
	tb.Helper()
	real, err := exec.LookPath("git")
	if err != nil {
		tb.Fatal(err)
	}
	dir = tb.TempDir()
	log = filepath.Join(dir, "calls")
	script := fmt.Sprintf(`#!/bin/sh
read -r stat < /proc/$PPID/stat
started() { since=${22}; }
started $stat
echo "$PPID.$since $*" >> '%s'
exec '%s' "$@"
`, log, real)
	if err := os.WriteFile(filepath.Join(dir, "git"), []byte(script), 0o755); err != nil {
		tb.Fatal(err)
	}
	return dir, log
}

// fleetCmd runs name args in dir with env added, failing tb with its
// stderr, and returns its trimmed stdout.
func fleetCmd(tb testing.TB, dir string, env []string, name string, args ...string) string {
	tb.Helper()
	out, err := fleetTry(dir, env, name, args...)
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// fleetTry runs name args in dir with env added and returns its trimmed
// stdout; the error carries its stderr.
func fleetTry(dir string, env []string, name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); ok {
		err = fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, ee.Stderr)
	}
	return strings.TrimSpace(string(out)), err
}

// fleetSync syncs dir until a sync succeeds: with many clones pushing, one
// may find the remote moved in every round and say so.
func fleetSync(dir string) error {
	var err error
	for i := 0; i < 30; i++ {
		if _, err = fleetTry(dir, nil, "git", "agentmine", "sync", "-q"); err == nil {
			return nil
		}
		time.Sleep(time.Duration(50+i*50) * time.Millisecond)
	}
	return err
}

// each runs f for every clone at once, at most par at a time, and fails tb
// with the first error.
func each(tb testing.TB, dirs []string, par int, f func(c int, dir string) error) {
	tb.Helper()
	var wg sync.WaitGroup
	sem := make(chan struct{}, par)
	errs := make([]error, len(dirs))
	for c, d := range dirs {
		wg.Add(1)
		go func(c int, d string) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			errs[c] = f(c, d)
		}(c, d)
	}
	wg.Wait()
	for c, err := range errs {
		if err != nil {
			tb.Fatalf("clone %d: %v", c, err)
		}
	}
}

// fleetRun serves a remote over tr, makes a board of tasks no-op tasks in
// one clone, clones it clones times in all (each clone synced, so each
// holds the board), then starts `run --parallel 2` in every clone at once
// and waits for all of them. Then every clone labels the first task and
// syncs, all at once, and two passes of sync, one clone after the other,
// bring every clone to the same state, which is checked: each task has
// exactly one claim on the remote and exactly one session, ended with an
// outcome, every label arrived and every clone lists the same board and
// the same sessions.
func fleetRun(tb testing.TB, tr fleetTransport, clones, tasks int) fleetStats {
	tb.Helper()
	root := newServedRemote(tb)
	traces := tb.TempDir()
	url := tr.serve(tb, root, "GIT_TRACE2_EVENT="+traces) + "/remote.git"
	first := filepath.Join(tb.TempDir(), "clone")
	fleetCmd(tb, "", nil, "git", "clone", "-q", url, first)
	fleetCmd(tb, first, nil, "git", "agentmine", "init", "--remote", "origin")
	gittest.WriteFiles(tb, first, map[string]string{".agentmine/agents/coder.toml": "client = \"custom\"\ncommand = [\"true\"]\n[scope]\nwrite = [\"**\"]\n"})
	fleetCmd(tb, first, nil, "git", "add", "-A")
	fleetCmd(tb, first, nil, "git", "commit", "-qm", "a no-op agent")
	fleetCmd(tb, first, nil, "git", "push", "-q", "origin", "HEAD:main")
	ids := make([]string, tasks)
	for i := range ids {
		ids[i] = fleetCmd(tb, first, nil, "git", "agentmine", "task", "add", fmt.Sprintf("fleet task %d", i), "-q")
	}
	fleetCmd(tb, first, nil, "git", "agentmine", "sync", "-q")
	dirs := make([]string, clones)
	dirs[0] = first
	for c := 1; c < clones; c++ {
		dirs[c] = filepath.Join(tb.TempDir(), "clone")
	}
	each(tb, dirs[1:], 4, func(_ int, d string) error {
		for _, args := range [][]string{{"clone", "-q", url, d}, {"-C", d, "agentmine", "init", "--remote", "origin"}, {"-C", d, "agentmine", "sync", "-q"}} {
			if _, err := fleetTry("", nil, "git", args...); err != nil {
				return err
			}
		}
		return nil
	})

	// The race: every clone runs every task it can claim.
	wrapper, calls := fleetGitWrapper(tb)
	env := []string{"PATH=" + wrapper + string(os.PathListSeparator) + os.Getenv("PATH")}
	clearDir(tb, traces)
	start := time.Now()
	each(tb, dirs, clones, func(c int, d string) error {
		// git-agentmine itself, not `git agentmine`: git puts its own
		// exec-path, which holds a git, first on the PATH of what it runs.
		out, err := fleetTry(d, env, "git-agentmine", "run", "--parallel", "2", "--json")
		if !strings.Contains(out, `"event":"finished"`) {
			return fmt.Errorf("run did not finish: %v\n%s", err, out)
		}
		return nil
	})
	st := fleetStats{clones: clones, tasks: tasks, wall: time.Since(start), load: loadAverage()}
	st.server = serverCosts(tb, traces)
	countCalls(tb, calls, &st)
	st.unclaimed = countUnclaimed(tb, dirs)

	// Edits from everywhere at once, then two passes one after the other.
	each(tb, dirs, clones, func(c int, d string) error {
		if _, err := fleetTry(d, nil, "git", "agentmine", "task", "update", ids[0], "--add-label", fmt.Sprintf("clone-%d", c)); err != nil {
			return err
		}
		return fleetSync(d)
	})
	for pass := 0; pass < 2; pass++ {
		each(tb, dirs, 1, func(_ int, d string) error { return fleetSync(d) })
	}
	remote := filepath.Join(root, "remote.git")
	st.refs = len(strings.Fields(gittest.Git(tb, remote, "for-each-ref", "--format=%(refname)")))
	st.won = len(strings.Fields(gittest.Git(tb, remote, "for-each-ref", "--format=%(refname)", "refs/agentmine-claims/")))
	// The numbers first: a check that fails still shows them.
	logFleet(tb, tr.name, st)
	checkFleet(tb, root, dirs, ids)
	return st
}

// checkFleet checks that the clones converged on one board in which each
// task was claimed and run exactly once and every clone's label arrived,
// and returns the number of claims on the remote.
func checkFleet(tb testing.TB, root string, dirs []string, ids []string) int {
	tb.Helper()
	claims := map[string]int{}
	for _, ref := range strings.Fields(gittest.Git(tb, filepath.Join(root, "remote.git"), "for-each-ref", "--format=%(refname)", "refs/agentmine-claims/")) {
		claims[strings.TrimPrefix(ref, "refs/agentmine-claims/")]++
	}
	for _, id := range ids {
		if claims[id] != 1 {
			tb.Fatalf("task %s has %d claims on the remote, want 1", id, claims[id])
		}
	}
	if len(claims) != len(ids) {
		tb.Fatalf("%d claims on the remote for %d tasks", len(claims), len(ids))
	}
	var boards, runs []string
	for c, d := range dirs {
		var list []struct {
			ID     string   `json:"id"`
			Labels []string `json:"labels"`
		}
		board := fleetCmd(tb, d, nil, "git", "agentmine", "task", "list", "--all", "--json")
		if err := json.Unmarshal([]byte(board), &list); err != nil {
			tb.Fatal(err)
		}
		if len(list) != len(ids) {
			tb.Fatalf("clone %d lists %d tasks, want %d", c, len(list), len(ids))
		}
		for _, task := range list {
			if task.ID != ids[0] {
				continue
			}
			got := map[string]bool{}
			for _, l := range task.Labels {
				got[l] = true
			}
			for k := range dirs {
				if !got[fmt.Sprintf("clone-%d", k)] {
					tb.Fatalf("clone %d: the label of clone %d was lost: %v", c, k, task.Labels)
				}
			}
		}
		var sessions []struct {
			ID      string          `json:"id"`
			Task    string          `json:"task"`
			Host    string          `json:"host"`
			State   string          `json:"state"`
			Role    string          `json:"role"`
			Outcome json.RawMessage `json:"outcome"`
		}
		if err := json.Unmarshal([]byte(fleetCmd(tb, d, nil, "git", "agentmine", "session", "list", "--json")), &sessions); err != nil {
			tb.Fatal(err)
		}
		per := map[string]int{}
		var lines []string
		for _, s := range sessions {
			if s.Role != "" {
				continue
			}
			per[s.Task]++
			if s.State != "ended" || len(s.Outcome) == 0 || string(s.Outcome) == "null" {
				tb.Fatalf("clone %d: session %s of task %s is %s with outcome %s, want ended with an outcome", c, s.ID, s.Task, s.State, s.Outcome)
			}
			lines = append(lines, s.ID+" "+s.Task+" "+string(s.Outcome))
		}
		for _, id := range ids {
			if per[id] != 1 {
				tb.Fatalf("clone %d: task %s ran %d times, want once", c, id, per[id])
			}
		}
		sort.Strings(lines)
		boards = append(boards, board)
		runs = append(runs, strings.Join(lines, "\n"))
	}
	for c := 1; c < len(dirs); c++ {
		if boards[c] != boards[0] || runs[c] != runs[0] {
			tb.Fatalf("clone %d did not converge with clone 0:\n%s\n%s\n%s\n%s", c, boards[c], boards[0], runs[c], runs[0])
		}
	}
	return len(claims)
}

// countUnclaimed counts, in the run logs of the clones, the starts that
// could not reach the remote to claim and ran without a claim, and logs
// the first few (they say what git answered).
func countUnclaimed(tb testing.TB, dirs []string) int {
	n := 0
	for _, d := range dirs {
		logs, _ := filepath.Glob(filepath.Join(d, ".git", "agentmine", "logs", "run-*.log"))
		for _, l := range logs {
			data, _ := os.ReadFile(l)
			for _, line := range strings.Split(string(data), "\n") {
				if strings.Contains(line, "running locally without a claim") {
					if n++; n <= 3 {
						tb.Logf("ran without a claim: %s", line)
					}
				}
			}
		}
	}
	return n
}

// countCalls reads the git wrapper's log into st: the syncs (one process's
// listings of the remote's whole state, `ls-remote --refs origin`, each the
// start of a round), the claim reads and the claim pushes.
func countCalls(tb testing.TB, log string, st *fleetStats) {
	tb.Helper()
	f, err := os.Open(log)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	syncing := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		proc, args, _ := strings.Cut(sc.Text(), " ")
		st.gitProcs++
		f := strings.Fields(args)
		switch {
		case len(f) == 3 && f[0] == "ls-remote" && f[1] == "--refs":
			st.rounds++
			syncing[proc] = true
		case len(f) == 4 && f[0] == "ls-remote" && f[3] == "refs/agentmine-claims/*":
			st.claimLists++
		case len(f) == 4 && f[0] == "ls-remote" && strings.HasPrefix(f[3], "refs/agentmine-claims/"):
			st.claimReads++
		case len(f) > 0 && f[0] == "push" && strings.Contains(args, "--force-with-lease=refs/agentmine-claims/") && strings.Contains(args, "--atomic"):
			st.claimPushes++
		}
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	// A process syncs once (a worker shares its outcome); the rounds past
	// the first are the retries after the remote moved.
	st.syncs = len(syncing)
}

// serverCosts sums, per program, the processes the remote ran and their
// seconds, from the trace2 event files git wrote into dir.
func serverCosts(tb testing.TB, dir string) map[string]*serverCost {
	tb.Helper()
	out := map[string]*serverCost{}
	files, err := os.ReadDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	for _, fi := range files {
		f, err := os.Open(filepath.Join(dir, fi.Name()))
		if err != nil {
			tb.Fatal(err)
		}
		prog := ""
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
		for sc.Scan() {
			var ev struct {
				Event string   `json:"event"`
				Argv  []string `json:"argv"`
				TAbs  float64  `json:"t_abs"`
			}
			if json.Unmarshal(sc.Bytes(), &ev) != nil {
				continue
			}
			switch ev.Event {
			case "start":
				prog = serverProgram(ev.Argv)
			case "exit":
				if prog == "" {
					continue
				}
				if out[prog] == nil {
					out[prog] = &serverCost{}
				}
				out[prog].procs++
				out[prog].seconds += ev.TAbs
			}
		}
		f.Close()
	}
	return out
}

// serverProgram names the git program of a server process's argv:
// upload-pack, receive-pack, http-backend, or "" for the rest.
func serverProgram(argv []string) string {
	for _, a := range argv {
		a = strings.TrimPrefix(filepath.Base(a), "git-")
		switch a {
		case "upload-pack", "receive-pack", "http-backend":
			return a
		}
	}
	return ""
}

// clearDir removes what dir holds.
func clearDir(tb testing.TB, dir string) {
	tb.Helper()
	files, err := os.ReadDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	for _, f := range files {
		os.RemoveAll(filepath.Join(dir, f.Name()))
	}
}

// loadAverage is the first three fields of /proc/loadavg.
func loadAverage() string {
	data, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// logFleet prints a fleet's numbers.
func logFleet(tb testing.TB, tr string, st fleetStats) {
	tb.Helper()
	srv := func(p string) serverCost {
		if c := st.server[p]; c != nil {
			return *c
		}
		return serverCost{}
	}
	rp, up := srv("receive-pack"), srv("upload-pack")
	tb.Logf("%s: %d clones, %d tasks: %.1f s, %.2f s/task across the fleet (load %s)", tr, st.clones, st.tasks, st.wall.Seconds(), st.wall.Seconds()/float64(st.tasks), st.load)
	tb.Logf("%s: %d claims won of %d claim pushes after %d listings of all claims and %d reads of one; %d syncs in %d rounds (%.2f rounds/claim, %d retries when the remote moved); %d git processes (%.0f/task)",
		tr, st.won, st.claimPushes, st.claimLists, st.claimReads, st.syncs, st.rounds, float64(st.rounds)/float64(max(st.won, 1)), st.rounds-st.syncs, st.gitProcs, float64(st.gitProcs)/float64(st.tasks))
	tb.Logf("%s: %d starts ran without a claim (the remote did not answer the claim's push)", tr, st.unclaimed)
	tb.Logf("%s: remote: receive-pack %d processes, %.1f s (%.0f%% of the wall time); upload-pack %d processes, %.1f s; %d refs at the end",
		tr, rp.procs, rp.seconds, 100*rp.seconds/st.wall.Seconds(), up.procs, up.seconds, st.refs)
}

// TestFleetOverTransports: 4 clones race through one remote over smart
// HTTP, and over git daemon, each running `run --parallel 2` over a
// shared board of 20 no-op tasks: every task claimed and run exactly once,
// no edit lost, every clone converged (fleetRun). BenchmarkFleet runs 32
// clones and 200 tasks.
func TestFleetOverTransports(t *testing.T) {
	gittest.SkipShort(t, "four clones running and syncing over two network transports")
	for _, tr := range fleetTransports {
		t.Run(tr.name, func(t *testing.T) {
			fleetRun(t, tr, 4, 20)
		})
	}
}

// BenchmarkFleet: AGENTMINE_BENCH_FLEET_CLONES clones (default 32), each
// its own repository and processes, race through one remote served over
// smart HTTP and over git daemon, each running `run --parallel 2` of no-op
// workers over a shared board of AGENTMINE_BENCH_FLEET_TASKS tasks
// (default 200), checked as TestFleetOverTransports checks. It reports the
// seconds per task across the fleet, the sync rounds per claim, the
// retries when the remote moved, the git processes per task, and the
// remote's side: the processes and seconds of receive-pack and
// upload-pack and the refs it ends with. The git processes are counted
// through a wrapper on PATH, whose fork is in the times. Gated by
// AGENTMINE_BENCH_FLEET (just bench-fleet): on two cores one pass takes
// many minutes.
func BenchmarkFleet(b *testing.B) {
	if os.Getenv("AGENTMINE_BENCH_FLEET") == "" {
		b.Skip("32 clones racing for 200 tasks: run with AGENTMINE_BENCH_FLEET=1 (just bench-fleet)")
	}
	useBuiltBinary(b)
	clones := envInt("AGENTMINE_BENCH_FLEET_CLONES", 32)
	tasks := envInt("AGENTMINE_BENCH_FLEET_TASKS", 200)
	for _, tr := range fleetTransports {
		if pick := os.Getenv("AGENTMINE_BENCH_FLEET_TRANSPORT"); pick != "" && pick != tr.name {
			continue
		}
		b.Run(tr.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				st := fleetRun(b, tr, clones, tasks)
				b.ReportMetric(st.wall.Seconds()/float64(tasks), "s/task")
				b.ReportMetric(float64(st.rounds)/float64(max(st.won, 1)), "rounds/claim")
				b.ReportMetric(float64(st.rounds-st.syncs), "retries")
				b.ReportMetric(float64(st.claimLists), "claim-lists")
				b.ReportMetric(float64(st.claimReads), "claim-reads")
				b.ReportMetric(float64(st.gitProcs)/float64(tasks), "git-procs/task")
				if c := st.server["receive-pack"]; c != nil {
					b.ReportMetric(c.seconds, "receive-pack-s")
				}
				if c := st.server["upload-pack"]; c != nil {
					b.ReportMetric(c.seconds, "upload-pack-s")
				}
				b.ReportMetric(float64(st.refs), "remote-refs")
			}
		})
	}
}
