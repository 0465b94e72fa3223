package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/git-agentmine/git-agentmine/internal/gittest"
	"github.com/git-agentmine/git-agentmine/isolation"
)

// BenchmarkIsolationLevels times `worker run --exec --skip-dod` with a
// no-op agent (`true`) at every isolation level the machine gives, on a
// small repository and on a 50,000-file one. The levels take turns within
// each iteration, so that a busy machine slows them alike, and each is
// reported as a ratio to none, by wall-clock and by CPU time (the
// supervisor and every process it waited for, the sandbox included).
// It also reports the clone level's git data (its own repository: objects
// and index) against a linked worktree's (its index and per-worktree
// files), in KiB, measured by the worker itself with du.
func BenchmarkIsolationLevels(b *testing.B) {
	useBuiltBinary(b)
	caps := isolation.Probe(b.Context(), "", true)
	for _, size := range []string{"small", "50k"} {
		b.Run(size, func(b *testing.B) {
			repo := gittest.Init(b)
			if size == "50k" {
				build50k(b, repo)
			} else {
				gittest.WriteFiles(b, repo, map[string]string{"src/a.txt": "a\n", "README.md": "r\n", ".env": "x\n"})
				gittest.Git(b, repo, "add", "-A")
				gittest.Git(b, repo, "commit", "-q", "-m", "small")
			}
			timeCmd(b, repo, "git", "agentmine", "init")
			var levels []string
			for _, l := range isolation.Levels {
				if caps.Why(l) != "" {
					b.Logf("%s: not available here: %s", l, caps.Why(l))
					continue
				}
				levels = append(levels, string(l))
				du := `echo gitdir-kib: $(du -sk "$(git rev-parse --absolute-git-dir)" | cut -f1)`
				for name, cmd := range map[string]string{"noop-" + string(l): `command = ["true"]`, "du-" + string(l): `command = ["sh", "-c", ` + strconv.Quote(du) + `]`} {
					agent := "client = \"custom\"\n" + cmd + "\n[scope]\nwrite = [\"top0/**\", \"src/**\"]\nexclude = [\"**/*.env\", \".env\", \"**/secrets/**\"]\n[isolation]\nlevel = \"" + string(l) + "\"\n"
					if err := os.WriteFile(filepath.Join(repo, ".agentmine", "agents", name+".toml"), []byte(agent), 0o644); err != nil {
						b.Fatal(err)
					}
				}
			}
			run := func(level, kind string, i int) (wall, cpu time.Duration, id string) {
				out, err := exec.Command("git", "-C", repo, "agentmine", "task", "add", fmt.Sprintf("%s %s %d", kind, level, i), "-q").Output()
				if err != nil {
					b.Fatal(err)
				}
				id = strings.TrimSpace(string(out))
				wall, cpu = runTimed(b, repo, "git", "agentmine", "worker", "run", id, "--agent", kind+"-"+level, "--exec", "--skip-dod")
				timeCmd(b, repo, "git", "agentmine", "worker", "done", id, "--force")
				return wall, cpu, id
			}
			wall := map[string]time.Duration{}
			cpu := map[string]time.Duration{}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				for _, l := range levels {
					w, c, _ := run(l, "noop", i)
					wall[l] += w
					cpu[l] += c
				}
			}
			b.StopTimer()
			n := time.Duration(b.N)
			b.ReportMetric(float64(wall["none"]/n)/1e6, "none-ms/op")
			for _, l := range levels[1:] {
				b.ReportMetric(float64(wall[l])/float64(wall["none"]), l+"/none-wall")
				b.ReportMetric(float64(cpu[l])/float64(cpu["none"]), l+"/none-cpu")
			}
			for _, l := range []string{"bwrap", "clone"} {
				if caps.Why(isolation.Level(l)) != "" {
					continue
				}
				_, _, id := run(l, "du", b.N)
				logs, err := exec.Command("git", "-C", repo, "agentmine", "worker", "logs", id).Output()
				if err != nil {
					b.Fatal(err)
				}
				var kib float64
				for _, line := range strings.Split(string(logs), "\n") {
					if v, ok := strings.CutPrefix(line, "gitdir-kib: "); ok {
						kib, _ = strconv.ParseFloat(strings.TrimSpace(v), 64)
					}
				}
				if kib == 0 {
					b.Fatalf("the %s worker reported no git dir size:\n%s", l, logs)
				}
				name := "worktree-gitdir-KiB"
				if l == "clone" {
					name = "clone-gitdir-KiB"
				}
				b.ReportMetric(kib, name)
			}
		})
	}
}
