package worker

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/git-agentmine/git-agentmine/gitcmd"
	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

// BenchmarkMainCheckoutSnapshot reports the snapshots of the main checkout
// a supervised run takes (before, then after with nothing changed) on a
// checkout of 50,000 tracked files and 20,000 ignored ones (a
// node_modules), against raw git listing the same checkout's changed and
// untracked files (`git status -uall`, what the comparison ran before it
// looked at ignored files, times and hashes), in the same run, as the ratio
// snapshots/raw.
func BenchmarkMainCheckoutSnapshot(b *testing.B) {
	dir := gittest.Init(b)
	var in bytes.Buffer
	in.WriteString("commit refs/heads/main\ncommitter Ada Author <ada@example.com> 1767323045 +0000\ndata 4\n50k\n")
	for i := 0; i < 50000; i++ {
		fmt.Fprintf(&in, "M 100644 inline top%d/dir%d/file%d.txt\ndata 6\nhello\n", i%10, i%500, i)
	}
	in.WriteString("M 100644 inline .gitignore\ndata 14\nnode_modules/\n\n")
	gittest.GitInput(b, dir, &in, "fast-import", "--quiet")
	gittest.Git(b, dir, "checkout", "-q", "-f", "main")
	for i := 0; i < 20000; i++ {
		p := filepath.Join(dir, "node_modules", fmt.Sprintf("pkg%d", i%1000), fmt.Sprintf("m%d.js", i))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte("x\n"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	gittest.WriteFiles(b, dir, map[string]string{".env": "SECRET=1\n", "notes.txt": "untracked\n"})
	g := gitcmd.Runner{Dir: dir, Env: []string{"GIT_OPTIONAL_LOCKS=0"}}
	ctx := context.Background()
	gittest.Git(b, dir, "status", "-uall") // warm the index and the cache
	var ours, raw time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		before, err := snapshotMain(ctx, g, nil, ".agentmine/worktrees", racyWindow, nil)
		if err != nil {
			b.Fatal(err)
		}
		after, err := snapshotMain(ctx, g, nil, ".agentmine/worktrees", racyWindow, before)
		if err != nil {
			b.Fatal(err)
		}
		ours += time.Since(start)
		if f := compareMain(before, after); len(f) != 0 || len(after.paths) < 20000 {
			b.Fatalf("%d paths, findings %v", len(after.paths), f)
		}
		start = time.Now()
		for k := 0; k < 2; k++ {
			if _, err := g.Run(ctx, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames"); err != nil {
				b.Fatal(err)
			}
		}
		raw += time.Since(start)
	}
	n := float64(b.N)
	b.ReportMetric(float64(ours.Nanoseconds())/n, "snapshots-ns/op")
	b.ReportMetric(float64(raw.Nanoseconds())/n, "raw-ns/op")
	b.ReportMetric(float64(ours)/float64(raw), "ratio-vs-raw")
}
