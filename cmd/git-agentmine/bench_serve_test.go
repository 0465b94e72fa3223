package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

// BenchmarkBoard10k reports the time to render the web board of 10,000
// tasks (30,000 sessions, a third merged: the status fixture) as the
// latency of one GET of the page from a running `git agentmine serve`
// (the real binary), against `git agentmine task list --json` on the same
// repository in the same run, as the ratio board/list. "default" is the
// board as it opens (at most 200 cards a column), "all" every card.
func BenchmarkBoard10k(b *testing.B) {
	useBuiltBinary(b)
	// BOARD_FIXTURE names a directory to keep the fixture in between runs
	// (building it takes minutes): built there when it is not a
	// repository yet, reused when it is.
	repo := os.Getenv("BOARD_FIXTURE")
	switch {
	case repo == "":
		repo = gittest.Init(b)
		buildStatusFixture(b, repo, 10000, 3)
	default:
		if _, err := os.Stat(filepath.Join(repo, ".git")); err != nil {
			gittest.Git(b, "", "init", "-q", "-b", "main", repo)
			buildStatusFixture(b, repo, 10000, 3)
		}
	}
	cmd := exec.Command("git", "agentmine", "serve", "--addr", "127.0.0.1:0")
	cmd.Dir = repo
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	}()
	buf := make([]byte, 200)
	n, err := out.Read(buf)
	if err != nil {
		b.Fatal(err)
	}
	// git runs git-agentmine as its child: that is the server to measure.
	kids, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", cmd.Process.Pid, cmd.Process.Pid))
	if err != nil || len(strings.Fields(string(kids))) != 1 {
		b.Fatalf("the server process: %q %v", kids, err)
	}
	server, _ := strconv.Atoi(strings.Fields(string(kids))[0])
	u := strings.TrimSpace(string(buf[:n]))
	base, _, _ := strings.Cut(u, "/?token=")
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	fetch := func(path string) (time.Duration, time.Duration, int) {
		cpu0 := procCPU(b, server)
		start := time.Now()
		res, err := c.Get(base + path)
		if err != nil {
			b.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 {
			b.Fatalf("GET %s: %d", path, res.StatusCode)
		}
		return time.Since(start), procCPU(b, server) - cpu0, len(body)
	}
	if res, err := c.Get(u); err != nil {
		b.Fatal(err)
	} else {
		res.Body.Close()
	}
	for _, mode := range []struct{ name, path string }{{"default", "/"}, {"all", "/?all=1"}} {
		b.Run(mode.name, func(b *testing.B) {
			fetch(mode.path) // warm the caches
			timeCmd(b, repo, "git", "agentmine", "task", "list", "--json")
			var board, boardCPU, list, listCPU time.Duration
			size := 0
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				d, cpu, n := fetch(mode.path)
				board += d
				boardCPU += cpu
				size = n
				d, cpu = runTimed(b, repo, "git", "agentmine", "task", "list", "--json")
				list += d
				listCPU += cpu
			}
			b.StopTimer()
			ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
			b.ReportMetric(ms(board), "board-ms/op")
			b.ReportMetric(ms(list), "task-list-json-ms/op")
			b.ReportMetric(float64(board)/float64(list), "ratio")
			b.ReportMetric(ms(boardCPU), "board-cpu-ms/op")
			b.ReportMetric(ms(listCPU), "task-list-json-cpu-ms/op")
			b.ReportMetric(float64(boardCPU)/float64(listCPU), "cpu-ratio")
			b.ReportMetric(float64(size)/1024, "page-KiB")
		})
	}
}

// procCPU is the CPU time (user + system) a process used, with that of
// the children it waited for (its git processes).
func procCPU(b *testing.B, pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+2:]))
	var ticks int64
	for _, i := range []int{11, 12, 13, 14} { // utime stime cutime cstime
		n, _ := strconv.ParseInt(f[i], 10, 64)
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond // USER_HZ is 100 on Linux
}
