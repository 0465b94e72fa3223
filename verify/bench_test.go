package verify

import (
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/git-agentmine/git-agentmine/internal/gittest"
	"github.com/git-agentmine/git-agentmine/scope"
)

// BenchmarkCheck50k measures post-run verification of a 50,000-file
// worktree with 100 changed files (50 committed, 30 modified, 20 untracked)
// and reports it as a ratio to what raw git takes for
// `git status --porcelain` plus `git diff --name-only <base>` in the same
// run ("x-git"). Half the files are read-only (their modes are checked),
// some are excluded (their absence is checked).
func BenchmarkCheck50k(b *testing.B) {
	gittest.Scrub(b)
	root := b.TempDir()
	repo := filepath.Join(root, "repo")
	const dirs, perDir = 500, 100
	var files []string
	for d := 0; d < dirs; d++ {
		top := "src"
		switch {
		case d%2 == 1:
			top = "lib"
		case d%50 == 0:
			top = "secrets"
		}
		for f := 0; f < perDir; f++ {
			files = append(files, fmt.Sprintf("%s/d%03d/f%03d.txt", top, d, f))
		}
	}
	// Write the commit straight into the object store; only the worktree
	// is checked out.
	gittest.Git(b, root, "init", "-q", "-b", "main", repo)
	var stream strings.Builder
	stream.WriteString("commit refs/heads/main\ncommitter A <a@example.com> 1700000000 +0000\ndata 3\nbig\n")
	for _, p := range files {
		fmt.Fprintf(&stream, "M 100644 inline %s\ndata %d\n%s\n\n", p, len(p)+1, p)
	}
	gittest.GitInput(b, repo, strings.NewReader(stream.String()), "fast-import", "--quiet")
	base := gittest.Git(b, repo, "rev-parse", "HEAD")
	spec := scope.Spec{Write: []string{"src/**"}, Exclude: []string{"secrets/**"}}
	wt := filepath.Join(root, "wt")
	gittest.Git(b, repo, "worktree", "add", "-q", "--no-checkout", "-b", "task", wt, base)
	sparse := spec.SparsePatterns(files)
	gittest.Git(b, wt, append([]string{"sparse-checkout", "set", "--no-cone", "--"}, sparse...)...)
	gittest.Git(b, wt, "-c", "checkout.workers=0", "reset", "-q", "--hard", base)
	access := spec.ClassifyAll(files)
	dirWritable := map[string]bool{}
	for i, p := range files {
		if access[i] == scope.ReadOnly {
			full := filepath.Join(wt, filepath.FromSlash(p))
			if err := os.Chmod(full, 0o444); err != nil {
				b.Fatal(err)
			}
			for d := path.Dir(p); d != "."; d = path.Dir(d) {
				w, ok := dirWritable[d]
				if !ok {
					w = spec.DirWritable(d)
					dirWritable[d] = w
				}
				if !w {
					_ = os.Chmod(filepath.Join(wt, filepath.FromSlash(d)), 0o555)
				}
			}
		}
	}
	// 100 changes in scope: 50 committed, 30 modified, 20 untracked.
	n := 0
	for i, p := range files {
		if access[i] != scope.Writable {
			continue
		}
		full := filepath.Join(wt, filepath.FromSlash(p))
		switch {
		case n < 80:
			if err := os.WriteFile(full, []byte("changed\n"), 0o644); err != nil {
				b.Fatal(err)
			}
		case n < 100:
			if err := os.WriteFile(full+".new", []byte("new\n"), 0o644); err != nil {
				b.Fatal(err)
			}
		}
		n++
		if n == 50 {
			gittest.Git(b, wt, "commit", "-q", "-a", "-m", "work")
		}
		if n == 100 {
			break
		}
	}
	// Warm the caches and check the fixture says what it should.
	in := Input{Worktree: wt, Base: base, Scope: spec, Sparse: sparse, Permissions: true}
	v, err := Check(ctxT(b), in)
	if err != nil {
		b.Fatal(err)
	}
	if !v.Valid || len(v.Changed) != 100 {
		b.Fatalf("fixture: valid=%v changed=%d violations=%v", v.Valid, len(v.Changed), v.Violations)
	}
	rawGit := func() {
		for _, args := range [][]string{{"status", "--porcelain"}, {"diff", "--name-only", base}} {
			cmd := exec.Command("git", args...)
			cmd.Dir = wt
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("git %v: %v\n%s", args, err, out)
			}
		}
	}
	rawGit()
	// Starting the live watcher on this worktree (one walk, one watch per
	// directory) is reported too.
	ws := time.Now()
	w, err := StartWatch(ctxT(b), wt, WatchOptions{})
	if err != nil {
		b.Fatal(err)
	}
	watchStart := time.Since(ws)
	if rec := w.Stop(); rec.Incomplete || rec.Watched < dirs*9/10 {
		b.Fatalf("watcher: %+v", rec)
	}
	var gitTime time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Check(ctxT(b), in); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		start := time.Now()
		rawGit()
		gitTime += time.Since(start)
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed())/float64(gitTime), "x-git")
	b.ReportMetric(float64(gitTime.Milliseconds())/float64(b.N), "git-ms/op")
	b.ReportMetric(float64(watchStart.Milliseconds()), "watch-start-ms")
}
