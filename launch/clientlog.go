package launch

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// ClientLogReason returns the last error a client wrote into its own log
// files during a run that started at since, for clients that keep their
// reason there rather than in their output: opencode writes
// `level=ERROR … message=…` lines under $XDG_DATA_HOME/opencode/log
// (default ~/.local/share/opencode/log) and may print nothing. env is the
// worker's environment (KEY=VALUE). It returns "" when there is nothing.
func ClientLogReason(c Client, env []string, since time.Time) string {
	if c != OpenCode {
		return ""
	}
	data := envValue(WorkerEnv(env), "XDG_DATA_HOME")
	if data == "" {
		home := envValue(WorkerEnv(env), "HOME")
		if home == "" {
			return ""
		}
		data = filepath.Join(home, ".local", "share")
	}
	dir := filepath.Join(data, "opencode", "log")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	var newest string
	var newestTime time.Time
	for _, e := range ents {
		info, err := e.Info()
		if err != nil || !info.Mode().IsRegular() || !strings.HasSuffix(e.Name(), ".log") || info.ModTime().Before(since) {
			continue
		}
		if info.ModTime().After(newestTime) {
			newest, newestTime = filepath.Join(dir, e.Name()), info.ModTime()
		}
	}
	if newest == "" {
		return ""
	}
	tail, err := readEnd(newest, 256<<10)
	if err != nil {
		return ""
	}
	last := ""
	sc := bufio.NewScanner(strings.NewReader(string(tail)))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if l := sc.Text(); strings.Contains(l, "level=ERROR") {
			last = l
		}
	}
	if last == "" {
		return ""
	}
	return clip(logfmtMessage(last), MaxReasonBytes)
}

// logfmtMessage turns a logfmt line into its message and error fields,
// without the timestamp, level and run id.
func logfmtMessage(line string) string {
	var parts []string
	for _, key := range []string{"message=", "error=", "err="} {
		i := strings.Index(line, " "+key)
		if i < 0 {
			continue
		}
		v := line[i+1+len(key):]
		if strings.HasPrefix(v, `"`) {
			end := 1
			for end < len(v) && (v[end] != '"' || v[end-1] == '\\') {
				end++
			}
			v = strings.ReplaceAll(v[1:min(end, len(v))], `\"`, `"`)
		} else if sp := strings.IndexByte(v, ' '); sp >= 0 {
			v = v[:sp]
		}
		if v != "" {
			parts = append(parts, v)
		}
	}
	if len(parts) == 0 {
		return strings.TrimSpace(line)
	}
	return strings.Join(parts, ": ")
}
