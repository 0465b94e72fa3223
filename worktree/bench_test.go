package worktree

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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
//     --no-cone`, then `git -c checkout.workers=0 read-tree -mu HEAD` (the
//     fastest raw sequence found; Create does this plus classification,
//     chmod and verification).
//
// Run it with: go test ./worktree -run '^$' -bench Create50k -benchtime 5x
func BenchmarkCreate50k(b *testing.B) {
	repo := bigRepo(b, 50000)
	ctx := context.Background()
	spec := scope.Spec{Write: []string{"top0/**", "top1/**"}, Exclude: []string{"**/*.env", "**/secrets/**"}}
	run := func(dir string, args ...string) { gittest.Git(b, dir, args...) }
	var tCreate, tRaw, tBest time.Duration
	var patterns []string
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ours := wtPath(repo, fmt.Sprintf("ours%d", i))
		raw := wtPath(repo, fmt.Sprintf("raw%d", i))
		best := wtPath(repo, fmt.Sprintf("best%d", i))
		doOurs := func() {
			start := time.Now()
			res, err := Create(ctx, Options{Repo: repo, Path: ours, Branch: fmt.Sprintf("ours%d", i), Base: "main", Scope: spec})
			if err != nil {
				b.Fatal(err)
			}
			tCreate += time.Since(start)
			patterns = res.Patterns
		}
		doRaw := func() {
			start := time.Now()
			run(repo, "worktree", "add", "-q", "-b", fmt.Sprintf("raw%d", i), raw, "main")
			run(raw, append([]string{"sparse-checkout", "set", "--no-cone"}, patterns...)...)
			tRaw += time.Since(start)
		}
		doBest := func() {
			start := time.Now()
			run(repo, "worktree", "add", "-q", "--no-checkout", "-b", fmt.Sprintf("best%d", i), best, "main")
			run(best, append([]string{"sparse-checkout", "set", "--no-cone"}, patterns...)...)
			run(best, "-c", "checkout.workers=0", "read-tree", "-mu", "HEAD")
			tBest += time.Since(start)
		}
		// Alternate the order so that neither side always runs on a
		// warmer cache.
		if i%2 == 0 {
			doOurs()
			doRaw()
			doBest()
		} else {
			doBest()
			doRaw()
			doOurs()
		}
		b.StopTimer()
		if n := len(onDisk(b, raw)); n != len(onDisk(b, ours)) || n != len(onDisk(b, best)) {
			b.Fatalf("raw git checked out %d files, Create %d", n, len(onDisk(b, ours)))
		}
		if err := Remove(ctx, repo, ours, fmt.Sprintf("ours%d", i), true); err != nil {
			b.Fatal(err)
		}
		for _, p := range []string{raw, best} {
			run(repo, "worktree", "remove", "--force", p)
		}
		run(repo, "branch", "-q", "-D", fmt.Sprintf("raw%d", i), fmt.Sprintf("best%d", i))
		_ = os.RemoveAll(filepath.Join(repo, ".agentmine", "worktrees"))
		b.StartTimer()
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64(tCreate.Nanoseconds())/n, "create-ns/op")
	b.ReportMetric(float64(tRaw.Nanoseconds())/n, "raw-ns/op")
	b.ReportMetric(float64(tBest.Nanoseconds())/n, "rawbest-ns/op")
	b.ReportMetric(float64(tCreate)/float64(tRaw), "ratio-vs-raw")
	b.ReportMetric(float64(tCreate)/float64(tBest), "ratio-vs-rawbest")
	b.ReportMetric(float64(len(patterns)), "patterns")
}
