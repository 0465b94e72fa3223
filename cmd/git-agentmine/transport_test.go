package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

// The git remote is the distributed engine (design §8): these tests run
// sync and remote claims over git's own network transports, not only over
// local paths: smart HTTP (`git http-backend` behind an HTTP server on
// loopback) and the git protocol (`git daemon`).

// httpRemote serves the bare repositories under root over git's smart HTTP
// protocol on loopback and returns the base URL. env is added to the
// environment of the git processes that serve.
func httpRemote(tb testing.TB, root string, env ...string) string {
	tb.Helper()
	git, err := exec.LookPath("git")
	if err != nil {
		tb.Fatal(err)
	}
	h := &cgi.Handler{Path: git, Args: []string{"http-backend"}, Root: "/",
		Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1", "GIT_CONFIG_NOSYSTEM=1", "HOME=" + os.Getenv("HOME")}}
	h.Env = append(h.Env, env...)
	srv := httptest.NewServer(h)
	tb.Cleanup(srv.Close)
	return srv.URL
}

// daemonRemote serves the bare repositories under root with `git daemon`
// (pushes enabled) on a free loopback port and returns the base URL. env
// is added to the environment of the git processes that serve.
func daemonRemote(tb testing.TB, root string, env ...string) string {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	// No cap on connections: at its default of 32, git daemon makes room
	// by killing a live connection from an address that has two, and
	// every client here is 127.0.0.1, so a fleet's claim pushes were cut
	// off mid-way (and ran without a claim, as from an unreachable remote).
	cmd := exec.Command("git", "daemon", "--reuseaddr", "--export-all", "--enable=receive-pack", "--max-connections=0",
		"--base-path="+root, "--listen=127.0.0.1", fmt.Sprintf("--port=%d", port), root)
	cmd.Env = append(os.Environ(), env...)
	// `git daemon` runs git-daemon as its child, which forks one process a
	// connection: all of them are ended with their process group, or the
	// daemon would outlive the test.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	})
	url := fmt.Sprintf("git://127.0.0.1:%d", port)
	for i := 0; ; i++ {
		if exec.Command("git", "ls-remote", url+"/remote.git").Run() == nil {
			return url
		}
		if i == 100 {
			tb.Fatal("git daemon did not start")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// newServedRemote makes root/remote.git, a bare repository that accepts
// pushes over HTTP, with one commit on main.
func newServedRemote(tb testing.TB) (root string) {
	tb.Helper()
	root = tb.TempDir()
	bare := filepath.Join(root, "remote.git")
	gittest.Git(tb, "", "init", "-q", "--bare", "-b", "main", bare)
	gittest.Git(tb, bare, "config", "http.receivepack", "true")
	seed := gittest.NewRepo(tb)
	gittest.Git(tb, seed, "push", "-q", bare, "HEAD:refs/heads/main")
	return root
}

// cloneOf clones url into a new directory, ready for agentmine with its
// sync remote and an agent for manual runs.
func cloneOf(tb testing.TB, url string) string {
	tb.Helper()
	dir := filepath.Join(tb.TempDir(), "clone")
	gittest.Git(tb, "", "clone", "-q", url, dir)
	run(tb.(*testing.T), dir, "git", "agentmine", "init", "--remote", "origin")
	if err := os.WriteFile(filepath.Join(dir, ".agentmine", "agents", "hand.toml"), []byte("client = \"custom\"\ncommand = [\"true\"]\n[scope]\nwrite = [\"src/**\"]\n"), 0o644); err != nil {
		tb.Fatal(err)
	}
	return dir
}

// tryRun runs name args in dir and returns its stdout and exit code.
func tryRun(dir, name string, args ...string) (string, int, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return string(out), ee.ExitCode(), fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, ee.Stderr)
	}
	return string(out), 0, err
}

// syncRetry runs sync until it succeeds: with eight clones pushing at once,
// a sync may find the remote moved every time it retries, and says so.
func syncRetry(dir string) error {
	var err error
	for i := 0; i < 20; i++ {
		if _, _, err = tryRun(dir, "git", "agentmine", "sync"); err == nil {
			return nil
		}
		time.Sleep(time.Duration(50+i*25) * time.Millisecond)
	}
	return err
}

// TestEightClonesOverTransports: eight clones of one remote served over
// smart HTTP, and over git daemon, each add a task, label a shared task and
// sync, all at once, for several rounds; in each round all eight race to
// run the round's task with remote claims. Every clone ends with the same
// board, no task or label is lost, and no task was claimed twice.
func TestEightClonesOverTransports(t *testing.T) {
	gittest.SkipShort(t, "eight clones syncing and claiming over two network transports")
	for _, tr := range []struct {
		name  string
		serve func(testing.TB, string, ...string) string
	}{{"http", httpRemote}, {"daemon", daemonRemote}} {
		t.Run(tr.name, func(t *testing.T) {
			const clones, rounds = 8, 2
			root := newServedRemote(t)
			url := tr.serve(t, root) + "/remote.git"
			first := cloneOf(t, url)
			shared := run(t, first, "git", "agentmine", "task", "add", "shared", "-q")
			var claimTasks []string
			for r := 0; r < rounds; r++ {
				claimTasks = append(claimTasks, run(t, first, "git", "agentmine", "task", "add", fmt.Sprintf("claim round %d", r), "-q"))
			}
			run(t, first, "git", "agentmine", "sync")
			dirs := []string{first}
			for c := 1; c < clones; c++ {
				d := cloneOf(t, url)
				run(t, d, "git", "agentmine", "sync")
				dirs = append(dirs, d)
			}
			wantLabels := []string{}
			wantTitles := map[string]bool{"shared": true}
			for r := 0; r < rounds; r++ {
				// Everyone adds, edits and syncs at once.
				var wg sync.WaitGroup
				errs := make(chan error, clones)
				for c, d := range dirs {
					label := fmt.Sprintf("c%d-r%d", c, r)
					title := fmt.Sprintf("from clone %d round %d", c, r)
					wantLabels = append(wantLabels, label)
					wantTitles[title] = true
					wg.Add(1)
					go func(d, label, title string) {
						defer wg.Done()
						for _, args := range [][]string{{"task", "add", title, "-q"}, {"task", "update", shared, "--add-label", label}} {
							if _, _, err := tryRun(d, "git", append([]string{"agentmine"}, args...)...); err != nil {
								errs <- err
								return
							}
						}
						errs <- syncRetry(d)
					}(d, label, title)
				}
				wg.Wait()
				for range dirs {
					if err := <-errs; err != nil {
						t.Fatal(err)
					}
				}
				// Everyone races for the round's task.
				codes := make([]int, clones)
				for c, d := range dirs {
					wg.Add(1)
					go func(c int, d string) {
						defer wg.Done()
						_, code, err := tryRun(d, "git", "agentmine", "worker", "run", claimTasks[r], "--agent", "hand")
						if code == 0 && err != nil {
							t.Error(err)
						}
						codes[c] = code
					}(c, d)
				}
				wg.Wait()
				won := 0
				for c, code := range codes {
					switch code {
					case 0:
						won++
					case 6: // claimed by another clone
					default:
						t.Fatalf("round %d clone %d: worker run exited %d", r, c, code)
					}
				}
				if won != 1 {
					t.Fatalf("round %d: %d clones claimed the task (exit codes %v), want exactly 1", r, won, codes)
				}
			}
			// Two passes of sync, one clone after the other, reach a fixpoint.
			for pass := 0; pass < 2; pass++ {
				for _, d := range dirs {
					if err := syncRetry(d); err != nil {
						t.Fatal(err)
					}
				}
			}
			var boards []string
			for c, d := range dirs {
				var list []struct {
					ID     string   `json:"id"`
					Title  string   `json:"title"`
					Labels []string `json:"labels"`
					Status string   `json:"status"`
					Commit string   `json:"commit"`
				}
				if err := json.Unmarshal([]byte(run(t, d, "git", "agentmine", "task", "list", "--json")), &list); err != nil {
					t.Fatal(err)
				}
				titles := map[string]bool{}
				for _, task := range list {
					titles[task.Title] = true
					if task.ID == shared {
						sort.Strings(wantLabels)
						if strings.Join(task.Labels, ",") != strings.Join(wantLabels, ",") {
							t.Fatalf("clone %d: shared task labels %v, want %v", c, task.Labels, wantLabels)
						}
					}
				}
				for title := range wantTitles {
					if !titles[title] {
						t.Fatalf("clone %d lost task %q", c, title)
					}
				}
				b, _ := json.Marshal(list)
				boards = append(boards, string(b))
			}
			for c := 1; c < clones; c++ {
				if boards[c] != boards[0] {
					t.Fatalf("clone %d did not converge with clone 0:\n%s\n%s", c, boards[c], boards[0])
				}
			}
			// The claims are on the remote, one per round's task.
			claims := gittest.Git(t, filepath.Join(root, "remote.git"), "for-each-ref", "--format=%(refname)", "refs/agentmine-claims/")
			if n := len(strings.Fields(claims)); n != rounds {
				t.Fatalf("%d claims on the remote, want %d:\n%s", n, rounds, claims)
			}
		})
	}
}

// rawSync is raw git doing the transfers sync does over origin: fetch the
// remote's agentmine refs into a staging namespace, push the local ones.
const rawSync = "git fetch -q origin '+refs/agentmine/*:refs/agentmine-remote/origin/*' && git push -q origin 'refs/agentmine/*:refs/agentmine/*'"

// BenchmarkSyncHTTP reports `git agentmine sync` over smart HTTP against
// raw git fetching and pushing the same refs over the same transport
// (rawSync), as the ratio agentmine/raw: before each timed run, both
// clones add 20 tasks untimed, so each side pushes 20 new refs and fetches
// the other's. It also reports, from one more untimed round, the git
// processes each side starts (git-agentmine run directly, through a
// counting wrapper), and agentmine's own peak memory: the peak resident set
// (VmHWM) of the git-agentmine process itself, read from /proc every 2 ms
// while it syncs, not counting its git children (most of it is the
// binary's own pages), next to a quiet sync's right after, which changes
// nothing; agentmine-peak-B/changed-entity is the difference over the 40
// entities the first one changes. BenchmarkSync10k measures memory per
// changed entity where there are enough of them to weigh.
func BenchmarkSyncHTTP(b *testing.B) {
	useBuiltBinary(b)
	root := newServedRemote(b)
	url := httpRemote(b, root) + "/remote.git"
	clone := func() string {
		dir := filepath.Join(b.TempDir(), "clone")
		gittest.Git(b, "", "clone", "-q", url, dir)
		timeCmd(b, dir, "git", "agentmine", "init", "--remote", "origin")
		return dir
	}
	ours, raw := clone(), clone()
	n := 0
	add := func(dir string) {
		for i := 0; i < 20; i++ {
			n++
			timeCmd(b, dir, "git", "agentmine", "task", "add", "-q", fmt.Sprintf("task %d", n))
		}
	}
	var o, r benchSides
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		add(ours)
		add(raw)
		b.StartTimer()
		o.run(b, ours, "git", "agentmine", "sync")
		r.run(b, raw, "sh", "-c", rawSync)
	}
	b.StopTimer()
	reportRatio(b, o, r)
	b.ReportMetric(float64(o.peakKB), "agentmine-peak-KiB")
	b.ReportMetric(float64(r.peakKB), "raw-peak-KiB")

	// Two more rounds, untimed, each side adding 20 tasks and the raw clone
	// pushing first: each sync fetches 20 entities and pushes 20.
	add(ours)
	add(raw)
	counter := gittest.NewGitCounter(b)
	b.ReportMetric(float64(countGit(b, counter, raw, "sh", "-c", rawSync)), "raw-git-procs")
	b.ReportMetric(float64(countGit(b, counter, ours, "git-agentmine", "sync")), "agentmine-git-procs")
	add(ours)
	add(raw)
	timeCmd(b, raw, "sh", "-c", rawSync)
	peak := ownPeakKB(b, ours, "git-agentmine", "sync")
	quiet := ownPeakKB(b, ours, "git-agentmine", "sync")
	b.ReportMetric(float64(peak), "agentmine-own-peak-KiB")
	b.ReportMetric(float64(quiet), "agentmine-quiet-peak-KiB")
	b.ReportMetric(float64(peak-quiet)*1024/40, "agentmine-peak-B/changed-entity")
}

// ownPeakKB runs name args in dir and returns the peak resident set (VmHWM)
// of that process alone, in KiB, read from /proc every 2 ms while it runs:
// its children are not in it, and a peak in its last 2 ms could be missed.
func ownPeakKB(b *testing.B, dir string, name string, args ...string) int64 {
	b.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	status := fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)
	var peak int64
	for {
		if data, err := os.ReadFile(status); err == nil {
			for _, l := range strings.Split(string(data), "\n") {
				if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
					kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
					peak = max(peak, kb)
				}
			}
		}
		select {
		case err := <-done:
			if err != nil {
				b.Fatalf("%s %v: %v: %s", name, args, err, stderr.String())
			}
			return peak
		case <-time.After(2 * time.Millisecond):
		}
	}
}
