package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// rawMCP speaks MCP's JSON-RPC by hand to a `git agentmine mcp` process, so
// that a benchmark times the server until the last byte of its answer has
// arrived, not a client decoding it.
type rawMCP struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
	id  int
}

// startRawMCP starts `git-agentmine mcp` in dir and initializes the
// session. The binary is run directly, not through git, so that its pid is
// the server's (for cpu).
func startRawMCP(b *testing.B, dir string) *rawMCP {
	b.Helper()
	cmd := exec.Command("git-agentmine", "mcp")
	cmd.Dir = dir
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	r := &rawMCP{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<20)}
	b.Cleanup(func() {
		in.Close()
		cmd.Wait()
	})
	r.request(b, "initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "bench", "version": "1"}})
	r.send(b, map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	return r
}

func (r *rawMCP) send(b *testing.B, msg any) {
	b.Helper()
	data, err := json.Marshal(msg)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := r.in.Write(append(data, '\n')); err != nil {
		b.Fatal(err)
	}
}

// request sends a request and returns the line of its response, whole.
func (r *rawMCP) request(b *testing.B, method string, params any) []byte {
	b.Helper()
	r.id++
	r.send(b, map[string]any{"jsonrpc": "2.0", "id": r.id, "method": method, "params": params})
	want := []byte(fmt.Sprintf(`"id":%d,`, r.id))
	for {
		line, err := r.out.ReadBytes('\n')
		if err != nil {
			b.Fatalf("%s: reading the answer: %v", method, err)
		}
		if bytes.Contains(line[:min(len(line), 64)], want) {
			return line
		}
	}
}

// cpu returns the CPU time the server process has used so far, its own
// and that of the git processes it has waited for (/proc/<pid>/stat:
// utime, stime, cutime, cstime, in ticks of 10 ms). On a machine shared
// with other work it is steadier than the wall-clock time.
func (r *rawMCP) cpu(b *testing.B) time.Duration {
	b.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", r.cmd.Process.Pid))
	if err != nil {
		b.Fatal(err)
	}
	// The fields after the command name, which is in parentheses.
	f := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+2:]))
	var ticks int64
	for _, i := range []int{11, 12, 13, 14} { // fields 14-17 of the whole line
		n, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			b.Fatalf("parsing /proc stat: %v", err)
		}
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}

// BenchmarkMCPToolsList reports the size of the tools/list answer, the
// context every MCP client loads: the whole answer, and the part a model
// is given (each tool's name, description and input schema; clients keep
// the output schemas to themselves).
func BenchmarkMCPToolsList(b *testing.B) {
	useBuiltBinary(b)
	r := startRawMCP(b, benchRepo(b, 0))
	var line []byte
	start := time.Now()
	for i := 0; i < b.N; i++ {
		line = r.request(b, "tools/list", map[string]any{})
	}
	b.ReportMetric(float64(time.Since(start).Microseconds())/1000/float64(b.N), "ms/list")
	var res struct {
		Result struct {
			Tools []map[string]json.RawMessage `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal(line, &res); err != nil || len(res.Result.Tools) == 0 {
		b.Fatalf("tools/list: %v: %.200s", err, line)
	}
	model := 0
	for _, t := range res.Result.Tools {
		model += len(t["name"]) + len(t["description"]) + len(t["inputSchema"])
	}
	b.ReportMetric(float64(len(line)), "tools-list-bytes")
	b.ReportMetric(float64(model), "model-visible-bytes")
	b.ReportMetric(float64(len(res.Result.Tools)), "tools")
}

// BenchmarkMCPTaskList10k reports task_list over 10,000 tasks (limit 0:
// all of them) through a running `git agentmine mcp`, from the request to
// the last byte of the answer, against `git agentmine task list --json` as
// a process in the same run, as the ratio mcp/cli. Both read the same
// board the same way; the server saves the process start and answers each
// task twice (structured, and as the text a model reads).
func BenchmarkMCPTaskList10k(b *testing.B) {
	useBuiltBinary(b)
	repo := benchRepo(b, 10000)
	r := startRawMCP(b, repo)
	args := map[string]any{"name": "task_list", "arguments": map[string]any{"limit": 0}}
	line := r.request(b, "tools/call", args) // warms the list cache and the page cache
	var res struct {
		Result struct {
			IsError           bool `json:"isError"`
			StructuredContent struct {
				Tasks []json.RawMessage `json:"tasks"`
				Total int               `json:"total"`
			} `json:"structuredContent"`
		} `json:"result"`
	}
	if err := json.Unmarshal(line, &res); err != nil || res.Result.IsError || len(res.Result.StructuredContent.Tasks) != 10000 {
		b.Fatalf("task_list: %v, %d tasks: %.300s", err, len(res.Result.StructuredContent.Tasks), line)
	}
	cliOut, err := exec.Command("git", "-C", repo, "agentmine", "task", "list", "--json").Output()
	if err != nil {
		b.Fatal(err)
	}
	var ours, cli, oursCPU, cliCPU time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cpu0 := r.cpu(b)
		start := time.Now()
		r.request(b, "tools/call", args)
		ours += time.Since(start)
		oursCPU += r.cpu(b) - cpu0
		wall, cpu := runTimed(b, repo, "git", "agentmine", "task", "list", "--json")
		cli += wall
		cliCPU += cpu
	}
	b.StopTimer()
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
	b.ReportMetric(ms(ours), "mcp-ms/op")
	b.ReportMetric(ms(cli), "cli-ms/op")
	b.ReportMetric(float64(ours)/float64(cli), "ratio")
	b.ReportMetric(ms(oursCPU), "mcp-cpu-ms/op")
	b.ReportMetric(ms(cliCPU), "cli-cpu-ms/op")
	b.ReportMetric(float64(oursCPU)/float64(cliCPU), "cpu-ratio")
	b.ReportMetric(float64(len(line)), "mcp-answer-bytes")
	b.ReportMetric(float64(len(cliOut)), "cli-output-bytes")
}
