package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

// pathsWorker is the scripted worker of the overlapping-paths workload: it
// overwrites every file its prompt's "files:" line names with its session
// id (so two sessions that edit one file from the same base conflict when
// the second is merged), after a short pause that lets parallel sessions
// overlap in time, and commits.
const pathsWorker = `files=$(sed -n 's/^files: //p' "$AGENTMINE_PROMPT_FILE" | head -n1)
sleep 0.5
for f in $files; do
	mkdir -p "$(dirname "$f")"
	echo "$AGENTMINE_SESSION" >"$f"
	git add -- "$f"
done
git commit -qm "edit $files"
`

// pathsWorkload makes a repository with the scripted worker and n tasks
// over five modules: task i edits mod<i%5>/shared.txt and a file of its
// own there; every fourth one also edits the next module's shared file.
// With declare, each task declares the modules it edits (mod<k>/**).
func pathsWorkload(b *testing.B, n int, declare bool) string {
	b.Helper()
	repo := gittest.Init(b)
	files := map[string]string{"README": "x\n"}
	for k := 0; k < 5; k++ {
		files[fmt.Sprintf("mod%d/shared.txt", k)] = "base\n"
	}
	gittest.CommitFiles(b, repo, "modules", files)
	timeCmd(b, repo, "git", "agentmine", "init")
	script := filepath.Join(b.TempDir(), "edit.sh")
	if err := os.WriteFile(script, []byte(pathsWorker), 0o644); err != nil {
		b.Fatal(err)
	}
	gittest.WriteFiles(b, repo, map[string]string{".agentmine/agents/edit.toml": fmt.Sprintf(
		"client = \"custom\"\ncommand = [\"sh\", %q]\n[scope]\nwrite = [\"**\"]\n", script)})
	gittest.Git(b, repo, "add", "-A")
	gittest.Git(b, repo, "commit", "-qm", "agents")
	for i := 0; i < n; i++ {
		k := i % 5
		edit := []string{fmt.Sprintf("mod%d/shared.txt", k), fmt.Sprintf("mod%d/task%d.txt", k, i)}
		paths := []string{fmt.Sprintf("mod%d/**", k)}
		if i%4 == 3 {
			next := (k + 1) % 5
			edit = append(edit, fmt.Sprintf("mod%d/shared.txt", next))
			paths = append(paths, fmt.Sprintf("mod%d/**", next))
		}
		args := []string{"-C", repo, "agentmine", "task", "add", fmt.Sprintf("edit %d", i), "--assignee", "edit",
			"-d", "files: " + strings.Join(edit, " "), "-q"}
		if declare {
			for _, p := range paths {
				args = append(args, "--paths", p)
			}
		}
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			b.Fatalf("task add: %v\n%s", err, out)
		}
	}
	return repo
}

// pathsResult is what one run of the workload gave.
type pathsResult struct {
	wall                                  time.Duration
	conflicts, retries, exhausted, merged int
	done, total                           int
	// other counts the reasons of the retries that did not follow a
	// merge conflict.
	other map[string]int
}

// runPathsWorkload runs `run --parallel 4 --merge` on the workload's repo
// and counts from its events: merge conflicts (attempts retried because
// their merge conflicted), retries (attempts after the first), exhausted
// tasks and merges.
func runPathsWorkload(b *testing.B, repo string) pathsResult {
	b.Helper()
	start := time.Now()
	cmd := exec.Command("git", "agentmine", "run", "--parallel", "4", "--merge", "--max-loops", "20", "--json")
	cmd.Dir = repo
	out, err := cmd.Output()
	r := pathsResult{other: map[string]int{}}
	r.wall = time.Since(start)
	if ee, ok := err.(*exec.ExitError); err != nil && (!ok || ee.ExitCode() != 1) {
		b.Fatalf("run: %v\n%s", err, out)
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var e struct {
			Event   string `json:"event"`
			Reason  string `json:"reason"`
			Summary *struct {
				Done  int `json:"done"`
				Total int `json:"total"`
			} `json:"summary"`
		}
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue
		}
		switch e.Event {
		case "retried":
			r.retries++
			if strings.Contains(e.Reason, "conflict") {
				r.conflicts++
			} else {
				r.other[e.Reason]++
			}
		case "exhausted":
			r.exhausted++
		case "merged":
			r.merged++
		case "finished":
			if e.Summary != nil {
				r.done, r.total = e.Summary.Done, e.Summary.Total
			}
		}
	}
	if r.total == 0 {
		b.Fatalf("run did not finish:\n%s", out)
	}
	return r
}

// BenchmarkRunPaths measures scope-aware scheduling on a workload of
// AGENTMINE_BENCH_PATHS_TASKS (default 20) tasks whose scripted workers
// edit overlapping files (pathsWorkload): `run --parallel 4 --merge` over
// the tasks without declared paths (blind: sessions that edit one file at
// once conflict when the second is merged, and retry) and with them (the
// run never runs two overlapping tasks at once), in
// AGENTMINE_BENCH_PATHS_PAIRS (default 1) alternating pairs. It reports,
// summed over the pairs, the merge conflicts, retries, exhausted tasks and
// wall-clock seconds of each side, and the load average at the start and
// the end. Skipped unless AGENTMINE_BENCH_PATHS or AGENTMINE_BENCH_SCALE is
// set (just bench-paths). Run with -benchtime=1x.
func BenchmarkRunPaths(b *testing.B) {
	if os.Getenv("AGENTMINE_BENCH_PATHS") == "" && os.Getenv("AGENTMINE_BENCH_SCALE") == "" {
		b.Skip("real runs of 20 scripted workers each: run with AGENTMINE_BENCH_PATHS=1 (just bench-paths)")
	}
	useBuiltBinary(b)
	n := envInt("AGENTMINE_BENCH_PATHS_TASKS", 20)
	pairs := envInt("AGENTMINE_BENCH_PATHS_PAIRS", 1)
	b.ReportMetric(loadAvg(), "load-start")
	for i := 0; i < b.N; i++ {
		blind, declared := pathsResult{other: map[string]int{}}, pathsResult{other: map[string]int{}}
		for p := 0; p < pairs; p++ {
			for _, declare := range []bool{false, true} {
				r := runPathsWorkload(b, pathsWorkload(b, n, declare))
				side := &blind
				if declare {
					side = &declared
				}
				side.wall += r.wall
				side.conflicts += r.conflicts
				side.retries += r.retries
				side.exhausted += r.exhausted
				side.merged += r.merged
				side.done += r.done
				side.total += r.total
				for why, k := range r.other {
					side.other[why] += k
				}
			}
		}
		for _, s := range []struct {
			name string
			r    pathsResult
		}{{"blind", blind}, {"paths", declared}} {
			b.ReportMetric(float64(s.r.conflicts), "conflicts-"+s.name)
			b.ReportMetric(float64(s.r.retries), "retries-"+s.name)
			b.ReportMetric(float64(s.r.exhausted), "exhausted-"+s.name)
			b.ReportMetric(s.r.wall.Seconds(), "wall-s-"+s.name)
			b.Logf("%-6s %d tasks x %d run(s), --parallel 4 --merge: %d/%d done, %d merge conflicts, %d retries, %d exhausted, %.1fs",
				s.name, n, pairs, s.r.done, s.r.total, s.r.conflicts, s.r.retries, s.r.exhausted, s.r.wall.Seconds())
			for why, k := range s.r.other {
				b.Logf("%-6s %d retries after: %s", s.name, k, why)
			}
		}
	}
	b.ReportMetric(loadAvg(), "load-end")
}
