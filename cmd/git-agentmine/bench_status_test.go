package main

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

// buildStatusFixture writes tasks tasks with perTask sessions each, every
// session with a branch, a session ref and an outcome note, in one
// fast-import stream. A third of the sessions reached main (their tips are
// on main's first-parent history); the rest sit on side branches. Sessions
// belong to another host and ended long ago, as on a shared board.
func buildStatusFixture(tb testing.TB, repo string, tasks, perTask int) {
	buildStatusFixtureWith(tb, repo, tasks, perTask, false)
}

// buildStatusFixtureWith is buildStatusFixture; with sealed, every session
// is sealed and its line carries its supervisor's proof, and one session in
// 50 also has a forged line (a later success without the proof), as after
// this release.
func buildStatusFixtureWith(tb testing.TB, repo string, tasks, perTask int, sealed bool) {
	tb.Helper()
	var in bytes.Buffer
	const who = "Ada Author <ada@example.com> 1767323045 +0000"
	mark := 1
	// main: a root commit, then one commit per merged session.
	fmt.Fprintf(&in, "commit refs/heads/main\nmark :%d\ncommitter %s\ndata 4\nroot\nM 100644 inline README\ndata 5\nroot\n", mark, who)
	baseMark := mark
	mark++
	type sess struct {
		id, task, branch  string
		tipMark, rootMark int
		merged            bool
	}
	var all []sess
	prevMain := baseMark
	n := 0
	for t := 0; t < tasks; t++ {
		tid := benchID(uint64(t + 1))
		doc := fmt.Sprintf(`{"v":1,"id":%q,"title":"task %d","type":"task","priority":"medium","blocked_by":[],"labels":[],"created":{"time":"2026-01-02T03:04:05Z","author":"Ada"},"updated":{"time":"2026-01-02T03:04:05Z","author":"Ada"}}`+"\n", tid, t)
		fmt.Fprintf(&in, "commit refs/agentmine/tasks/%s\ncommitter %s\ndata 8\ntask add\nM 100644 inline task.json\ndata %d\n%s\n", tid, who, len(doc), doc)
		for s := 0; s < perTask; s++ {
			sid := benchID(uint64(n+1) * 0xC2B2AE3D27D4EB4F)
			n++
			x := sess{id: sid, task: tid, branch: "task-" + tid[:8] + "-s" + sid[:8], merged: n%3 == 0}
			if x.merged {
				fmt.Fprintf(&in, "commit refs/heads/main\nmark :%d\ncommitter %s\ndata 5\nwork\nfrom :%d\nM 100644 inline f%d\ndata 2\nx\n", mark, who, prevMain, n)
				prevMain = mark
			} else {
				fmt.Fprintf(&in, "commit refs/heads/%s\nmark :%d\ncommitter %s\ndata 5\nwork\nfrom :%d\nM 100644 inline f%d\ndata 2\nx\n", x.branch, mark, who, baseMark, n)
			}
			x.tipMark = mark
			mark++
			all = append(all, x)
		}
	}
	// Branches of merged sessions point at their tips on main.
	for _, x := range all {
		if x.merged {
			fmt.Fprintf(&in, "reset refs/heads/%s\nfrom :%d\n\n", x.branch, x.tipMark)
		}
	}
	marksFile := filepath.Join(repo, ".git", "bench-marks")
	fastImport(tb, repo, &in, "--export-marks="+marksFile)
	marks := readMarks(tb, marksFile)
	in.Reset()
	base := marks[baseMark]
	for i, x := range all {
		seal := ""
		if sealed {
			sum := sha256.Sum256([]byte(benchNonce(i)))
			seal = fmt.Sprintf(`,"seal":{"sha256":"%x","host":"elsewhere","pid":1,"pid_start":7}`, sum)
		}
		doc := fmt.Sprintf(`{"v":1,"id":%q,"task":%q,"agent":"coder","client":"custom","mode":"detach","branch":%q,"base_ref":"main","base_commit":%q,"worktree":"/nowhere/task-%s","host":"elsewhere","pid":1,"timeout":300,"grace":10,"started":"2026-01-02T03:04:05Z","scope":{"read":null,"write":["src/**"],"exclude":null}%s}`+"\n",
			x.id, x.task, x.branch, base, x.task[:8], seal)
		fmt.Fprintf(&in, "commit refs/agentmine/sessions/%s\nmark :%d\ncommitter %s\ndata 13\nsession start\nM 100644 inline session.json\ndata %d\n%s\n", x.id, mark, who, len(doc), doc)
		all[i].rootMark = mark
		mark++
	}
	fmt.Fprintf(&in, "commit refs/notes/agentmine\ncommitter %s\ndata 5\nnotes\n", who)
	for i, x := range all {
		exit := 0
		if i%7 == 1 {
			exit = 1
		}
		proof := ""
		if sealed {
			proof = fmt.Sprintf(`,"supervisor":{"host":"elsewhere","pid":1,"pid_start":7,"nonce":"%x"}`, benchNonce(i))
		}
		line := fmt.Sprintf(`{"v":1,"session":%q,"exit_code":%d,"timed_out":false,"finished":"2026-01-02T04:04:05Z","tip":%q,"artifacts":["f"],"recorded_by":"bench","scope_valid":true,"dod_status":"passed","scope":{"valid":true,"tip":"","violations":[],"changed":[],"live_events":0},"dod":{"status":"passed"},"commits":1%s}`+"\n", x.id, exit, marks[x.tipMark], proof)
		if sealed && i%50 == 0 {
			line += fmt.Sprintf(`{"v":1,"session":%q,"exit_code":0,"timed_out":false,"finished":"2099-01-01T00:00:00Z","tip":%q,"artifacts":[],"recorded_by":"agentmine detach","scope_valid":true,"dod_status":"passed","scope":{"valid":true,"violations":[]},"dod":{"status":"passed"},"commits":1}`+"\n", x.id, marks[x.tipMark])
		}
		fmt.Fprintf(&in, "N inline :%d\ndata %d\n%s\n", x.rootMark, len(line), line)
	}
	fastImport(tb, repo, &in)
	gittest.Git(tb, repo, "pack-refs", "--all")
	gittest.Git(tb, repo, "checkout", "-q", "main")
}

// BenchmarkStatus10kTasks30kSessions reports `git agentmine status --json`
// (every task's status from every session's outcome and whether its tip
// reached main) against raw git, as the ratio agentmine/raw: "warm" with
// agentmine's local caches in place, against one `git for-each-ref --merged
// main` over the same branches (rawStatus: what the caches leave to git);
// "cold" with them removed before each run, against raw git reading
// everything the caches are built from (rawStatusCold).
func BenchmarkStatus10kTasks30kSessions(b *testing.B) {
	useBuiltBinary(b)
	repo := gittest.Init(b)
	buildStatusFixture(b, repo, 10000, 3)
	checkRawStatusCold(b, repo, 10000, 30000)
	cache := filepath.Join(repo, ".git", "agentmine", "cache")
	for _, mode := range []string{"warm", "cold"} {
		b.Run(mode, func(b *testing.B) {
			var prepare func()
			raw := rawStatus
			if mode == "cold" {
				raw = rawStatusCold
				prepare = func() {
					if err := os.RemoveAll(cache); err != nil {
						b.Fatal(err)
					}
				}
			}
			compareCommands(b, repo, []string{"git", "agentmine", "status", "--json"}, raw, prepare)
		})
	}
}

// rawStatusCold is what a shell script of raw git runs to read what a cold
// `status` reads: which session branches reached main, then every task
// document, every session document and every outcome note (the blobs of
// the notes tree) through one cat-file --batch, as the caches are built
// from.
const rawStatusCold = "git for-each-ref --merged main refs/heads/ >/dev/null && " +
	"{ git for-each-ref --format='%(objectname):task.json' refs/agentmine/tasks; " +
	"git for-each-ref --format='%(objectname):session.json' refs/agentmine/sessions; " +
	"git ls-tree -r --format='%(objectname)' refs/notes/agentmine; } | git cat-file --batch"

// checkRawStatusCold fails the benchmark unless rawStatusCold really reads
// every task and session document and one note per session in repo, none
// missing: a baseline that answers "missing" would be cheap.
func checkRawStatusCold(b *testing.B, repo string, tasks, sessions int) {
	b.Helper()
	check := exec.Command("sh", "-c", rawStatusCold)
	check.Dir = repo
	out, err := check.Output()
	if err != nil {
		b.Fatal(err)
	}
	if got, want := bytes.Count(out, []byte(" blob ")), tasks+2*sessions; got != want || bytes.Contains(out, []byte(" missing\n")) {
		b.Fatalf("raw baseline read %d blobs, want %d (every task and session document and note)", got, want)
	}
}

// BenchmarkTaskShow10kTasks30kSessions reports `git agentmine task show
// <id> --json` of a task with three sessions on a board of 10,000 tasks and
// 30,000 sessions against raw git reading that one task (one rev-parse of
// its ref and one cat-file of its document): what one task costs when the
// board around it is large.
func BenchmarkTaskShow10kTasks30kSessions(b *testing.B) {
	useBuiltBinary(b)
	repo := gittest.Init(b)
	buildStatusFixture(b, repo, 10000, 3)
	id := benchID(5000)
	raw := fmt.Sprintf("git rev-parse refs/agentmine/tasks/%s && git cat-file -p refs/agentmine/tasks/%s:task.json", id, id)
	settleRefs()
	compareCommands(b, repo, []string{"git", "agentmine", "task", "show", id, "--json"}, raw, nil)
}

// rawStatus is the raw git the board's status is measured against: which
// session branches reached main.
const rawStatus = "git for-each-ref --merged main refs/heads/"

// BenchmarkStatus10kTasks30kSealedSessions is the same with every session
// sealed, its line carrying the proof, and one in 50 with a forged line:
// what judging the seals costs.
func BenchmarkStatus10kTasks30kSealedSessions(b *testing.B) {
	useBuiltBinary(b)
	repo := gittest.Init(b)
	buildStatusFixtureWith(b, repo, 10000, 3, true)
	compareCommands(b, repo, []string{"git", "agentmine", "status", "--json"}, rawStatus, nil)
}

// benchNonce is the fixture's nonce of session i: 32 bytes.
func benchNonce(i int) string {
	return fmt.Sprintf("%032d", i)
}

// fastImport feeds in to `git fast-import --quiet` with args in repo.
func fastImport(tb testing.TB, repo string, in *bytes.Buffer, args ...string) {
	tb.Helper()
	gittest.GitInput(tb, repo, in, append([]string{"fast-import", "--quiet"}, args...)...)
}

func readMarks(tb testing.TB, path string) map[int]string {
	tb.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	m := map[int]string{}
	for _, l := range strings.Split(string(data), "\n") {
		var n int
		var sha string
		if _, err := fmt.Sscanf(l, ":%d %s", &n, &sha); err == nil {
			m[n] = sha
		}
	}
	return m
}
