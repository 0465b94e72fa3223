package main

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"os"
	"os/exec"
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
	repo := gittest.Init(b)
	buildStatusFixture(b, repo, 10000, 3)
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
	u := strings.TrimSpace(string(buf[:n]))
	base, _, _ := strings.Cut(u, "/?token=")
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	fetch := func(path string) (time.Duration, int) {
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
		return time.Since(start), len(body)
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
			var board, list time.Duration
			size := 0
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				d, n := fetch(mode.path)
				board += d
				size = n
				list += timeCmd(b, repo, "git", "agentmine", "task", "list", "--json")
			}
			b.StopTimer()
			ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
			b.ReportMetric(ms(board), "board-ms/op")
			b.ReportMetric(ms(list), "task-list-json-ms/op")
			b.ReportMetric(float64(board)/float64(list), "ratio")
			b.ReportMetric(float64(size)/1024, "page-KiB")
		})
	}
	os.Stdout.Sync()
}
