package gittest

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// WaitPidFile waits, up to 30 seconds, for a process the test started to
// write its pid into the file at path, and returns the pid; it fails the
// test when no pid comes.
func WaitPidFile(t testing.TB, path string) int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		data, err := os.ReadFile(path)
		if pid, perr := strconv.Atoi(strings.TrimSpace(string(data))); err == nil && perr == nil && pid > 0 {
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pid in %s after 30 s", path)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Gone reports whether process pid no longer runs: there is no such
// process, or it is a zombie (or dead) waiting for its parent to reap it.
// A pid can be reused once reaped; a test asks about processes whose end
// it is waiting for, soon after.
func Gone(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) == 0 || f[0] == "Z" || f[0] == "X"
}

// EnvHolders lists the live processes whose environment holds the entry
// kv (KEY=VALUE), each as its pid and command line: the processes a
// marker in the environment was given to. It sees only the processes
// whose environment it may read (every process, for root) and none that
// is a zombie (whose environment reads empty).
func EnvHolders(t testing.TB, kv string) []string {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	want := []byte(kv)
	var out []string
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		data, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil {
			continue
		}
		for _, entry := range bytes.Split(data, []byte{0}) {
			if bytes.Equal(entry, want) {
				cmd, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
				out = append(out, e.Name()+" "+string(bytes.TrimSpace(bytes.ReplaceAll(cmd, []byte{0}, []byte{' '}))))
				break
			}
		}
	}
	return out
}
