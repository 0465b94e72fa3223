package worktree

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/git-agentmine/git-agentmine/internal/gittest"
	"github.com/git-agentmine/git-agentmine/scope"
)

// bigRepo builds a repository with files files in one commit through
// git fast-import: top<k>/dir<d>/file<i>.txt spread over 10 top-level
// directories of 100-file directories, plus files the benchmark scope
// excludes (.env files at the root, in config/ and in every directory of
// top9, and a secrets/ directory).
func bigRepo(b *testing.B, files int) string {
	b.Helper()
	dir := gittest.Init(b)
	var s bytes.Buffer
	const blobs = 64
	for i := 1; i <= blobs; i++ {
		content := strings.Repeat(fmt.Sprintf("line %d of a generated source file\n", i), 20+i)
		fmt.Fprintf(&s, "blob\nmark :%d\ndata %d\n%s\n", i, len(content), content)
	}
	s.WriteString("commit refs/heads/main\ncommitter Bench <bench@example.com> 1700000000 +0000\ndata 6\nlarge\n")
	for i := 0; i < files; i++ {
		d := i / 100
		fmt.Fprintf(&s, "M 100644 :%d top%d/dir%d/file%d.txt\n", i%blobs+1, d%10, d, i)
		if d%10 == 9 && i%100 == 0 {
			fmt.Fprintf(&s, "M 100644 :1 top9/dir%d/local.env\n", d)
		}
	}
	for _, f := range []string{".env", "config/prod.env", "config/app.yml", "secrets/key", "secrets/more/key2"} {
		fmt.Fprintf(&s, "M 100644 :2 %s\n", f)
	}
	s.WriteString("\n")
	gittest.GitInput(b, dir, &s, "fast-import", "--quiet")
	// The main worktree stays unpopulated: Create and raw git both read
	// the commit, and checking out 50,000 files here would only slow the
	// setup down.
	appendExclude(b, dir)
	return dir
}

// BenchmarkCreate50k measures Create on a 50,000-file repository against
// raw git doing the same job in the same run, interleaved:
//
//   - raw: `git worktree add` + `git sparse-checkout set --no-cone` with the
//     patterns Create computed (the plain way: full checkout, then prune);
//   - rawbest: `git worktree add --no-checkout`, `git sparse-checkout set
//     --no-cone`, then `git read-tree -mu HEAD` (the raw sequence Create
//     follows, plus classification, chmod and verification).
//
// It reports each side's wall time and CPU time (this process's and its
// children's: Create runs in-process; "incore" is this process's part)
// per run and their ratios, the git
// processes one run of each side starts (counted through a wrapper on
// PATH, in an extra untimed run), and the Go memory one Create allocates.
//
// Run it with: go test ./worktree -run '^$' -bench Create50k -benchtime 5x
func BenchmarkCreate50k(b *testing.B) {
	repo := bigRepo(b, 50000)
	ctx := context.Background()
	spec := scope.Spec{Write: []string{"top0/**", "top1/**"}, Exclude: []string{"**/*.env", "**/secrets/**"}}
	run := func(dir string, args ...string) { gittest.Git(b, dir, args...) }
	var create, raw, best sideTimes
	var allocs uint64
	var patterns []string
	doOurs := func(name string) {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		before := ms.TotalAlloc
		stop := create.start(b)
		res, err := Create(ctx, Options{Repo: repo, Path: wtPath(repo, name), Branch: name, Base: "main", Scope: spec})
		if err != nil {
			b.Fatal(err)
		}
		stop()
		runtime.ReadMemStats(&ms)
		allocs += ms.TotalAlloc - before
		patterns = res.Patterns
	}
	doRaw := func(name string) {
		stop := raw.start(b)
		run(repo, "worktree", "add", "-q", "-b", name, wtPath(repo, name), "main")
		run(wtPath(repo, name), append([]string{"sparse-checkout", "set", "--no-cone"}, patterns...)...)
		stop()
	}
	doBest := func(name string) {
		stop := best.start(b)
		run(repo, "worktree", "add", "-q", "--no-checkout", "-b", name, wtPath(repo, name), "main")
		run(wtPath(repo, name), append([]string{"sparse-checkout", "set", "--no-cone"}, patterns...)...)
		run(wtPath(repo, name), "read-tree", "-mu", "HEAD")
		stop()
	}
	cleanUp := func(ours, raw, best string) {
		if n := len(onDisk(b, wtPath(repo, raw))); n != len(onDisk(b, wtPath(repo, ours))) || n != len(onDisk(b, wtPath(repo, best))) {
			b.Fatalf("raw git checked out %d files, Create %d", n, len(onDisk(b, wtPath(repo, ours))))
		}
		if err := Remove(ctx, repo, wtPath(repo, ours), ours, true); err != nil {
			b.Fatal(err)
		}
		for _, p := range []string{raw, best} {
			run(repo, "worktree", "remove", "--force", wtPath(repo, p))
		}
		run(repo, "branch", "-q", "-D", raw, best)
		_ = os.RemoveAll(filepath.Join(repo, ".agentmine", "worktrees"))
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ours, rawName, bestName := fmt.Sprintf("ours%d", i), fmt.Sprintf("raw%d", i), fmt.Sprintf("best%d", i)
		// Alternate the order so that neither side always runs on a
		// warmer cache.
		if i%2 == 0 {
			doOurs(ours)
			doRaw(rawName)
			doBest(bestName)
		} else {
			doBest(bestName)
			doRaw(rawName)
			doOurs(ours)
		}
		b.StopTimer()
		cleanUp(ours, rawName, bestName)
		b.StartTimer()
	}
	b.StopTimer()

	// One more run of each side, untimed, with every git process counted.
	counter := gittest.NewGitCounter(b)
	procs := []int{
		countGit(b, counter, func() { doOurs("counted-ours") }),
		countGit(b, counter, func() { doRaw("counted-raw") }),
		countGit(b, counter, func() { doBest("counted-best") }),
	}
	cleanUp("counted-ours", "counted-raw", "counted-best")

	n := float64(b.N)
	b.ReportMetric(float64(create.wall.Nanoseconds())/n, "create-ns/op")
	b.ReportMetric(float64(raw.wall.Nanoseconds())/n, "raw-ns/op")
	b.ReportMetric(float64(best.wall.Nanoseconds())/n, "rawbest-ns/op")
	b.ReportMetric(float64(create.wall)/float64(raw.wall), "ratio-vs-raw")
	b.ReportMetric(float64(create.wall)/float64(best.wall), "ratio-vs-rawbest")
	b.ReportMetric(float64(create.cpu.Nanoseconds())/n, "create-cpu-ns/op")
	b.ReportMetric(float64(raw.cpu.Nanoseconds())/n, "raw-cpu-ns/op")
	b.ReportMetric(float64(best.cpu.Nanoseconds())/n, "rawbest-cpu-ns/op")
	b.ReportMetric(float64(create.self.Nanoseconds())/n, "create-incore-cpu-ns/op")
	b.ReportMetric(float64(create.cpu)/float64(raw.cpu), "cpu-ratio-vs-raw")
	b.ReportMetric(float64(create.cpu)/float64(best.cpu), "cpu-ratio-vs-rawbest")
	b.ReportMetric(float64(procs[0]), "create-git-procs")
	b.ReportMetric(float64(procs[1]), "raw-git-procs")
	b.ReportMetric(float64(procs[2]), "rawbest-git-procs")
	b.ReportMetric(float64(allocs)/n/(1<<20), "create-alloc-MB/op")
	b.ReportMetric(float64(len(patterns)), "patterns")
}

// sideTimes adds up one side's wall and CPU time.
type sideTimes struct {
	wall, cpu, self time.Duration
}

// start starts timing one run and returns the function that ends it. CPU
// time is this process's (all threads) plus that of the children it has
// waited for, read from getrusage before and after.
func (s *sideTimes) start(b *testing.B) func() {
	b.Helper()
	self0, children0 := cpuTime(b, syscall.RUSAGE_SELF), cpuTime(b, syscall.RUSAGE_CHILDREN)
	t0 := time.Now()
	return func() {
		s.wall += time.Since(t0)
		self := cpuTime(b, syscall.RUSAGE_SELF) - self0
		s.self += self
		s.cpu += self + cpuTime(b, syscall.RUSAGE_CHILDREN) - children0
	}
}

// cpuTime is the user plus system time getrusage reports for who.
func cpuTime(b *testing.B, who int) time.Duration {
	b.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(who, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// countGit runs f with c's wrapper first on PATH and returns how many git
// processes it started.
func countGit(b *testing.B, c gittest.GitCounter, f func()) int {
	b.Helper()
	c.Reset()
	path := os.Getenv("PATH")
	b.Setenv("PATH", c.Dir+string(os.PathListSeparator)+path)
	f()
	b.Setenv("PATH", path)
	return c.Count(b)
}
