package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

// buildTaskFixture writes n task refs straight into repo with one
// `git fast-import`, in the exact format the store writes, so benchmarks
// start from a realistic repository in seconds.
func buildTaskFixture(tb testing.TB, repo string, n int) {
	tb.Helper()
	buildTaskFixtureIDs(tb, repo, n, func(i int) string { return benchID(uint64(i)) })
}

// buildTaskFixtureIDs is buildTaskFixture with task i's id given by idOf.
func buildTaskFixtureIDs(tb testing.TB, repo string, n int, idOf func(int) string) {
	tb.Helper()
	var in bytes.Buffer
	for i := 0; i < n; i++ {
		id := idOf(i)
		doc := fmt.Sprintf(`{
  "v": 1,
  "id": %q,
  "title": "benchmark task %d",
  "description": "generated for the list benchmark",
  "type": "task",
  "priority": "medium",
  "blocked_by": [],
  "labels": ["bench", "l%d"],
  "created": {"time": "2026-01-02T03:04:05Z", "author": "Ada Author"},
  "updated": {"time": "2026-01-02T03:04:05Z", "author": "Ada Author"}
}
`, id, i, i%10)
		fmt.Fprintf(&in, "commit refs/agentmine/tasks/%s\ncommitter Ada Author <ada@example.com> 1767323045 +0000\ndata 14\ntask add: gen\nM 100644 inline task.json\ndata %d\n%s\n", id, len(doc), doc)
	}
	gittest.GitInput(tb, repo, &in, "fast-import", "--quiet")
	gittest.Git(tb, repo, "pack-refs", "--all")
}

// benchID is the fixture id of entity n: 20 hex digits spread over the
// whole range from the first digit on, as random ids are, so that prefixes
// and short ids behave as in a real repository (a fixture whose ids all
// began 0000 made every prefix lookup see every task).
func benchID(n uint64) string {
	return fmt.Sprintf("%016x%04x", n*0x9E3779B97F4A7C15, n%0x10000)
}

func timeCmd(b *testing.B, dir string, name string, args ...string) time.Duration {
	b.Helper()
	wall, _ := runTimed(b, dir, name, args...)
	return wall
}

// runTimed runs name args in dir and returns its wall-clock time and the CPU
// time (user + system) of the process and of the children it waited for,
// such as its git processes. On a machine shared with other work the CPU
// time is the steadier of the two.
func runTimed(b *testing.B, dir string, name string, args ...string) (wall, cpu time.Duration) {
	b.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stdout = nil // discarded
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		b.Fatalf("%s %v: %v: %s", name, args, err, stderr.String())
	}
	wall = time.Since(start)
	return wall, cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
}

// benchRepo makes a repository with one commit and n generated tasks, in a
// scrubbed environment.
func benchRepo(b *testing.B, n int) string {
	b.Helper()
	repo := gittest.NewRepo(b)
	buildTaskFixture(b, repo, n)
	return repo
}

// fixtureDirVar names a directory in which the list benchmarks keep their
// task fixtures between runs (one repository per size), so that profiling
// at 100,000 tasks does not rebuild the fixture each time. Unset, each run
// builds its own in a temporary directory.
const fixtureDirVar = "AGENTMINE_BENCH_FIXTURE_DIR"

// keptTaskRepo is benchRepo for benchmarks that only read the tasks: with
// fixtureDirVar set it reuses the repository of n tasks built there by an
// earlier run, or builds it there for the next one.
func keptTaskRepo(b *testing.B, n int) string {
	b.Helper()
	dir := os.Getenv(fixtureDirVar) // read before Scrub unsets AGENTMINE_*
	if dir == "" {
		return benchRepo(b, n)
	}
	gittest.Scrub(b)
	repo := filepath.Join(dir, fmt.Sprintf("tasks-%d", n))
	done := filepath.Join(dir, fmt.Sprintf("tasks-%d.done", n))
	if _, err := os.Stat(done); err == nil {
		return repo
	}
	if err := os.RemoveAll(repo); err != nil {
		b.Fatal(err)
	}
	gittest.Git(b, "", "init", "-q", "-b", "main", repo)
	gittest.Git(b, repo, "commit", "-q", "--allow-empty", "-m", "initial")
	buildTaskFixture(b, repo, n)
	if err := os.WriteFile(done, nil, 0o644); err != nil {
		b.Fatal(err)
	}
	return repo
}

// countGit runs name args in dir with c's wrapper first on PATH and
// returns the number of git processes it started through PATH.
func countGit(b *testing.B, c gittest.GitCounter, dir, name string, args ...string) int {
	b.Helper()
	c.Reset()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+c.Dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("%s %v: %v: %s", name, args, err, out)
	}
	return c.Count(b)
}

// rawTaskList is what raw git does to read every task document: one
// for-each-ref naming each task commit's task.json, piped into one cat-file
// --batch, which reads the commit, its tree and the blob: the same objects
// agentmine reads when its list cache is cold.
const rawTaskList = "git for-each-ref --format='%(objectname):task.json' refs/agentmine/tasks | git cat-file --batch"

// BenchmarkTaskList10k reports `git agentmine task list --json` over 10,000
// tasks against raw git reading the same documents (rawTaskList) in the same
// run, as the ratio agentmine/raw. "warm" is the usual case, agentmine's
// local list cache matching the refs; "cold" removes that cache before each
// run, so agentmine reads every document from git as raw git does.
func BenchmarkTaskList10k(b *testing.B) { benchTaskList(b, 10000) }

// BenchmarkTaskList100k is BenchmarkTaskList10k at 100,000 tasks.
func BenchmarkTaskList100k(b *testing.B) {
	scaleOnly(b)
	benchTaskList(b, 100000)
}

func benchTaskList(b *testing.B, n int) {
	useBuiltBinary(b)
	repo := keptTaskRepo(b, n)
	// The baseline must really read every document, not answer "missing".
	check := exec.Command("sh", "-c", rawTaskList)
	check.Dir = repo
	out, err := check.Output()
	if err != nil {
		b.Fatal(err)
	}
	if got := bytes.Count(out, []byte(" blob ")); got != n || bytes.Contains(out, []byte(" missing\n")) {
		b.Fatalf("raw baseline read %d task documents, want %d", got, n)
	}
	cache := filepath.Join(repo, ".git", "agentmine", "cache")
	dropCache := func() {
		if err := os.RemoveAll(cache); err != nil {
			b.Fatal(err)
		}
	}
	for _, cmd := range []string{"list", "ready"} {
		for _, mode := range []string{"warm", "cold"} {
			b.Run(cmd+"-"+mode, func(b *testing.B) {
				var prepare func()
				if mode == "cold" {
					prepare = dropCache
				}
				compareCommands(b, repo, []string{"git", "agentmine", "task", cmd, "--json"}, rawTaskList, prepare)
			})
		}
	}
}

// BenchmarkTaskShow10k reports `git agentmine task show <id> --json` in a
// repository of 10,000 tasks against raw git reading that one task: one
// rev-parse of its ref and one cat-file of its document.
func BenchmarkTaskShow10k(b *testing.B) { benchTaskShow(b, 10000) }

// BenchmarkTaskShow100k is BenchmarkTaskShow10k at 100,000 tasks.
func BenchmarkTaskShow100k(b *testing.B) {
	scaleOnly(b)
	benchTaskShow(b, 100000)
}

func benchTaskShow(b *testing.B, n int) {
	useBuiltBinary(b)
	repo := benchRepo(b, n)
	id := strings.TrimPrefix(gittest.Git(b, repo, "for-each-ref", "--count=1", "--format=%(refname)", "refs/agentmine/tasks/"), "refs/agentmine/tasks/")
	id = strings.TrimSpace(id)
	raw := fmt.Sprintf("git rev-parse refs/agentmine/tasks/%s && git cat-file -p refs/agentmine/tasks/%s:task.json", id, id)
	settleRefs()
	compareCommands(b, repo, []string{"git", "agentmine", "task", "show", id, "--json"}, raw, nil)
}

// settleRefs waits until the fixture's packed-refs is settled (gitstore's
// settleTime, 2 s): until then no cache keyed by a stamp of the refs (the
// child index task show finds descendants with) is written, and every run
// would measure the first read after the refs changed, not the usual one.
func settleRefs() { time.Sleep(2100 * time.Millisecond) }

// rawTaskAdd is what raw git does to store one task: write the document
// blob, a tree holding it, a root commit, and create the task's ref with an
// update-ref transaction. $1 is the new task's id.
const rawTaskAdd = `set -e
b=$(printf '{"v":1,"id":"%s","title":"raw task"}\n' "$1" | git hash-object -w --stdin)
t=$(printf '100644 blob %s\ttask.json\n' "$b" | git mktree)
c=$(git commit-tree -m "task add: raw task" "$t")
printf 'start\ncreate refs/agentmine/tasks/%s %s\nprepare\ncommit\n' "$1" "$c" | git update-ref --stdin
`

// BenchmarkTaskAdd10k reports the latency of one `git agentmine task add`
// in a repository holding 10,000 tasks against raw git storing one task
// document the same way (rawTaskAdd) in the same run, as the ratio
// agentmine/raw.
func BenchmarkTaskAdd10k(b *testing.B) { benchTaskAdd(b, 10000) }

// BenchmarkTaskAdd100k is BenchmarkTaskAdd10k at 100,000 tasks.
func BenchmarkTaskAdd100k(b *testing.B) {
	scaleOnly(b)
	benchTaskAdd(b, 100000)
}

func benchTaskAdd(b *testing.B, tasks int) {
	useBuiltBinary(b)
	repo := benchRepo(b, tasks)
	timeCmd(b, repo, "git", "agentmine", "task", "list", "--json") // warm caches
	n := 0
	rawID := func() string {
		n++
		return fmt.Sprintf("raw%017x", n)
	}
	var ours, raw benchSides
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ours.run(b, repo, "git", "agentmine", "task", "add", "-q", fmt.Sprintf("bench add %d", i))
		raw.run(b, repo, "sh", "-c", rawTaskAdd, "sh", rawID())
	}
	b.StopTimer()
	reportRatio(b, ours, raw)
	b.ReportMetric(float64(ours.peakKB), "agentmine-peak-KiB")
	b.ReportMetric(float64(raw.peakKB), "raw-peak-KiB")
	counter := gittest.NewGitCounter(b)
	b.ReportMetric(float64(countGit(b, counter, repo, "git-agentmine", "task", "add", "-q", "counted")), "agentmine-git-procs")
	b.ReportMetric(float64(countGit(b, counter, repo, "sh", "-c", rawTaskAdd, "sh", rawID())), "raw-git-procs")
}

// BenchmarkTaskAddParallel8 reports 8 concurrent adders, each storing
// perAdder tasks one `task add -q` at a time, in a repository of 10,000
// tasks, against 8 concurrent raw adders (rawTaskAdd) in the same run: the
// wall-clock ratio agentmine/raw, and for each side its speed-up over the
// same number of adds done one after another (how far parallel adders
// scale on this machine: at most its number of cores).
func BenchmarkTaskAddParallel8(b *testing.B) {
	useBuiltBinary(b)
	repo := benchRepo(b, 10000)
	const adders, perAdder = 8, 4
	n := 0
	var mu sync.Mutex
	next := func() int {
		mu.Lock()
		defer mu.Unlock()
		n++
		return n
	}
	var failed error
	run := func(name string, args ...string) {
		cmd := exec.Command(name, args...)
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			mu.Lock()
			failed = fmt.Errorf("%s %v: %v: %s", name, args, err, out)
			mu.Unlock()
		}
	}
	ours := func() { run("git", "agentmine", "task", "add", "-q", fmt.Sprintf("parallel add %d", next())) }
	raw := func() { run("sh", "-c", rawTaskAdd, "sh", fmt.Sprintf("par%017x", next())) }
	spread := func(add func()) time.Duration {
		start := time.Now()
		var wg sync.WaitGroup
		for a := 0; a < adders; a++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for k := 0; k < perAdder; k++ {
					add()
				}
			}()
		}
		wg.Wait()
		return time.Since(start)
	}
	serial := func(add func()) time.Duration {
		start := time.Now()
		for k := 0; k < adders*perAdder; k++ {
			add()
		}
		return time.Since(start)
	}
	var oPar, rPar, oSer, rSer time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		oPar += spread(ours)
		rPar += spread(raw)
		oSer += serial(ours)
		rSer += serial(raw)
	}
	b.StopTimer()
	if failed != nil {
		b.Fatal(failed)
	}
	b.ReportMetric(float64(oPar)/float64(rPar), "parallel-ratio")
	b.ReportMetric(float64(oSer)/float64(rSer), "serial-ratio")
	b.ReportMetric(float64(oSer)/float64(oPar), "agentmine-speedup")
	b.ReportMetric(float64(rSer)/float64(rPar), "raw-speedup")
	// Every add landed: no lost update under concurrency.
	got := strings.Count(gittest.Git(b, repo, "for-each-ref", "--format=x", "refs/agentmine/tasks/"), "x")
	if want := 10000 + 4*b.N*adders*perAdder; got != want {
		b.Fatalf("%d task refs after the adds, want %d", got, want)
	}
}

// benchSides sums one side's wall-clock and CPU times over a benchmark and
// keeps its peak resident memory.
type benchSides struct {
	wall, cpu time.Duration
	peakKB    int64
}

func (s *benchSides) add(wall, cpu time.Duration) {
	s.wall += wall
	s.cpu += cpu
}

// runPeak runs name args in dir like runTimed and also returns the peak
// resident memory in KiB of the process and of the children it waited for,
// as GNU time (/usr/bin/time) measures it; 0 when that is not installed.
// Not from this process's own wait: Go starts children sharing its memory
// until they exec, and the kernel counts that (this benchmark's own
// hundred-odd MiB) in every child's peak.
func runPeak(b *testing.B, dir string, name string, args ...string) (wall, cpu time.Duration, peakKB int64) {
	b.Helper()
	var out string
	if _, err := os.Stat(gnuTime); err == nil {
		out = filepath.Join(b.TempDir(), "peak")
		args = append([]string{"-f", "%M", "-o", out, name}, args...)
		name = gnuTime
	}
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		b.Fatalf("%s %v: %v: %s", name, args, err, stderr.String())
	}
	wall = time.Since(start)
	if out != "" {
		data, err := os.ReadFile(out)
		if err != nil {
			b.Fatal(err)
		}
		if peakKB, err = strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64); err != nil {
			b.Fatalf("%s wrote %q: %v", gnuTime, data, err)
		}
	}
	return wall, cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), peakKB
}

// gnuTime is GNU time, which reports the peak memory of what it ran.
const gnuTime = "/usr/bin/time"

func (s *benchSides) run(b *testing.B, dir string, name string, args ...string) {
	b.Helper()
	wall, cpu, peak := runPeak(b, dir, name, args...)
	s.add(wall, cpu)
	s.peakKB = max(s.peakKB, peak)
}

// compareCommands runs ours (argv, run directly: e.g. git agentmine …) and
// raw (a shell script of raw git doing the same reads) alternately b.N
// times each in repo, after one warming run of each, and reports both
// sides' times, the ratios, both peak memories, and how many git
// processes one run of each starts (counted in an extra, untimed run).
// prepare, when not nil, runs untimed before each of our runs.
func compareCommands(b *testing.B, repo string, ours []string, raw string, prepare func()) {
	b.Helper()
	var warm benchSides
	warm.run(b, repo, ours[0], ours[1:]...)
	warm.run(b, repo, "sh", "-c", raw)
	var o, r benchSides
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if prepare != nil {
			b.StopTimer()
			prepare()
			b.StartTimer()
		}
		o.run(b, repo, ours[0], ours[1:]...)
		r.run(b, repo, "sh", "-c", raw)
	}
	b.StopTimer()
	reportRatio(b, o, r)
	b.ReportMetric(float64(o.peakKB), "agentmine-peak-KiB")
	b.ReportMetric(float64(r.peakKB), "raw-peak-KiB")
	counter := gittest.NewGitCounter(b)
	if prepare != nil {
		prepare()
	}
	args := ours[1:]
	if ours[0] == "git" && len(args) > 0 && args[0] == "agentmine" {
		args = args[1:]
	}
	b.ReportMetric(float64(countGit(b, counter, repo, "git-agentmine", args...)), "agentmine-git-procs")
	b.ReportMetric(float64(countGit(b, counter, repo, "sh", "-c", raw)), "raw-git-procs")
}

// reportRatio reports both sides' mean wall-clock and CPU time per run and
// the ratios agentmine/raw of each.
func reportRatio(b *testing.B, ours, raw benchSides) {
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
	b.ReportMetric(ms(ours.wall), "agentmine-ms/op")
	b.ReportMetric(ms(raw.wall), "raw-git-ms/op")
	b.ReportMetric(float64(ours.wall)/float64(raw.wall), "ratio")
	b.ReportMetric(ms(ours.cpu), "agentmine-cpu-ms/op")
	b.ReportMetric(ms(raw.cpu), "raw-git-cpu-ms/op")
	b.ReportMetric(float64(ours.cpu)/float64(raw.cpu), "cpu-ratio")
}

// useBuiltBinary builds the real git-agentmine, and agentmine-serve
// beside it, and puts them first on PATH, so benchmarks time the product,
// not the test binary standing in for it.
func useBuiltBinary(b *testing.B) {
	b.Helper()
	bin := b.TempDir()
	for name, pkg := range map[string]string{"git-agentmine": ".", "agentmine-serve": "../agentmine-serve"} {
		if out, err := exec.Command("go", "build", "-o", filepath.Join(bin, name), pkg).CombinedOutput(); err != nil {
			b.Fatalf("go build %s: %v: %s", pkg, err, out)
		}
	}
	b.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// scaleOnly skips a benchmark whose fixture alone takes minutes unless
// AGENTMINE_BENCH_SCALE is set, as `just bench-scale` does: `just bench`
// stays short.
func scaleOnly(b *testing.B) {
	if os.Getenv("AGENTMINE_BENCH_SCALE") == "" {
		b.Skip("a 100,000-task fixture: run with AGENTMINE_BENCH_SCALE=1 (just bench-scale)")
	}
}
