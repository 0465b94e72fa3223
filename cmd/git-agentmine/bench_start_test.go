package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

// BenchmarkVersion reports what every command pays before it does anything
// (starting the process, package initialisation, the command line): `git
// agentmine version` against `git --version`, run alternately b.N times
// each (-benchtime 200x: one run takes milliseconds). "ratio" is the
// median of the pairs' ratios of wall-clock time, steadier than the ratio
// of the sums on a shared machine; "cpu-ratio" that of the sums of CPU
// time.
func BenchmarkVersion(b *testing.B) {
	useBuiltBinary(b)
	comparePairs(b, b.TempDir(), []string{"git", "agentmine", "version"}, []string{"git", "--version"})
}

// BenchmarkGoFloor is BenchmarkVersion's floor: a Go program that only
// prints a line, built with the same go build and run through the same
// front door (`git gofloor`), against `git --version`. No Go
// command can start faster than this ratio.
func BenchmarkGoFloor(b *testing.B) {
	src := b.TempDir()
	gittest.WriteFiles(b, src, map[string]string{
		"go.mod":  "module gofloor\n\ngo 1.26\n",
		"main.go": "package main\n\nimport \"os\"\n\nfunc main() { os.Stdout.WriteString(\"floor\\n\") }\n",
	})
	bin := b.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(bin, "git-gofloor"), ".")
	build.Dir = src
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("go build: %v: %s", err, out)
	}
	b.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	comparePairs(b, b.TempDir(), []string{"git", "gofloor"}, []string{"git", "--version"})
}

// BenchmarkTaskShowOneTask reports the fixed start of a command that opens
// the repository: `git agentmine task show <id> --json` on a board of one
// task against `git rev-parse --verify` of that task's ref, git's own
// cheapest command that finds the repository and reads a ref, run
// alternately b.N times each (-benchtime 200x), reported as
// BenchmarkVersion's are.
func BenchmarkTaskShowOneTask(b *testing.B) {
	useBuiltBinary(b)
	repo := gittest.NewRepo(b)
	gittest.Git(b, repo, "agentmine", "init")
	id := strings.TrimSpace(gittest.Git(b, repo, "agentmine", "task", "add", "-q", "the only task"))
	settleRefs()
	comparePairs(b, repo, []string{"git", "agentmine", "task", "show", id, "--json"},
		[]string{"git", "rev-parse", "--verify", "refs/agentmine/tasks/" + id})
}

// comparePairs runs ours and raw (argv, run directly) alternately b.N
// times each in dir, after one warming run of each, and reports both
// sides' times, the ratios ("ratio": the median of the pairs' ratios of
// wall-clock time, steadier than the ratio of the sums on a shared machine;
// "cpu-ratio": that of the sums of CPU time) and the git processes one run
// of each starts, counted by git's trace in an extra, untimed run.
func comparePairs(b *testing.B, dir string, ours, raw []string) {
	b.Helper()
	runTimed(b, dir, ours[0], ours[1:]...)
	runTimed(b, dir, raw[0], raw[1:]...)
	var o, r benchSides
	ratios := make([]float64, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ow, oc := runTimed(b, dir, ours[0], ours[1:]...)
		rw, rc := runTimed(b, dir, raw[0], raw[1:]...)
		o.add(ow, oc)
		r.add(rw, rc)
		ratios = append(ratios, float64(ow)/float64(rw))
	}
	b.StopTimer()
	reportRatio(b, o, r)
	sort.Float64s(ratios)
	b.ReportMetric(ratios[len(ratios)/2], "ratio")
	b.ReportMetric(float64(tracedGitProcs(b, dir, nil, ours[0], ours[1:]...)), "agentmine-git-procs")
	b.ReportMetric(float64(tracedGitProcs(b, dir, nil, raw[0], raw[1:]...)), "raw-git-procs")
}

// tracedGitProcs runs name args in dir (with env added) and returns the
// number of git processes that ran, counted by git's own trace
// (GIT_TRACE2_EVENT): the ones git starts for itself count too, and a
// `git agentmine …` counts its outer git.
func tracedGitProcs(b *testing.B, dir string, env []string, name string, args ...string) int {
	b.Helper()
	trace := filepath.Join(b.TempDir(), "trace")
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), env...), "GIT_TRACE2_EVENT="+trace)
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("%s %v: %v: %s", name, args, err, out)
	}
	data, err := os.ReadFile(trace)
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	for _, l := range strings.Split(string(data), "\n") {
		var ev struct {
			Event string `json:"event"`
		}
		if json.Unmarshal([]byte(l), &ev) == nil && ev.Event == "start" {
			n++
		}
	}
	return n
}

// BenchmarkTaskShowConfigOverride10k is BenchmarkTaskShow10k run as `git
// -c color.ui=never agentmine task show` (GIT_CONFIG_PARAMETERS in the
// environment, for both sides): the configuration given on git's command
// line must not cost agentmine a git process (agentmine-git-procs 0).
func BenchmarkTaskShowConfigOverride10k(b *testing.B) {
	b.Setenv("GIT_CONFIG_PARAMETERS", "'color.ui'='never'")
	benchTaskShow(b, 10000)
}

// BenchmarkWorkerRunExec reports one whole `worker run --exec` of a no-op
// agent (`true`): prepare a worktree, run, verify, record. Its figure is
// the number of git processes it starts (git-procs, counted by git's
// trace, the outer `git agentmine` and git's own children included) and
// its wall-clock time; raw git has no one command doing the same.
func BenchmarkWorkerRunExec(b *testing.B) {
	useBuiltBinary(b)
	repo := gittest.NewRepo(b)
	gittest.Git(b, repo, "agentmine", "init")
	gittest.WriteFiles(b, repo, map[string]string{
		".agentmine/agents/noop.toml": "client = \"custom\"\ncommand = [\"true\"]\n[scope]\nwrite = [\"src/**\"]\n",
		"src/a.go":                    "package a\n",
	})
	gittest.Git(b, repo, "add", "-A")
	gittest.Git(b, repo, "commit", "-qm", "files")
	add := func() string {
		return strings.TrimSpace(gittest.Git(b, repo, "agentmine", "task", "add", "-q", "no-op"))
	}
	// The repository's first worktree turns on per-worktree configuration.
	runTimed(b, repo, "git", "agentmine", "worker", "run", add(), "--agent", "noop", "--exec")
	var total time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		id := add()
		b.StartTimer()
		w, _ := runTimed(b, repo, "git", "agentmine", "worker", "run", id, "--agent", "noop", "--exec")
		total += w
	}
	b.StopTimer()
	b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "agentmine-ms/op")
	b.ReportMetric(float64(tracedGitProcs(b, repo, nil, "git", "agentmine", "worker", "run", add(), "--agent", "noop", "--exec")), "git-procs")
}
