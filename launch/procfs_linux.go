// Linux's process table: /proc.

package launch

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

func readProcStat(pid int) (procStat, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, err
	}
	return parseProcStat(string(data))
}

// scanProcs reads /proc/<pid>/stat of every process. Processes that end
// while the scan runs are left out.
func scanProcs() (map[int]procStat, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("listing processes: %w", err)
	}
	out := make(map[int]procStat, len(ents))
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, err := readProcStat(pid); err == nil {
			out[pid] = st
		}
	}
	return out, nil
}

// family reads root and its descendants: the children lists of /proc
// (one per thread) from root down, and the stat of those processes alone,
// so that the rest of the process table (where a busy process can make a
// stat read slow) is never read. A process forked or adopted while the
// walk runs may be missed: callers look again.
func family(root int) map[int]procStat {
	out := map[int]procStat{}
	queue := []int{root}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		if _, seen := out[pid]; seen {
			continue
		}
		st, err := readProcStat(pid)
		if err != nil {
			continue
		}
		out[pid] = st
		dir := "/proc/" + strconv.Itoa(pid) + "/task"
		tasks, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, t := range tasks {
			data, err := os.ReadFile(dir + "/" + t.Name() + "/children")
			if err != nil {
				continue
			}
			for _, f := range strings.Fields(string(data)) {
				if c, err := strconv.Atoi(f); err == nil {
					queue = append(queue, c)
				}
			}
		}
	}
	return out
}

// environHas reports whether the environment process pid was started with
// holds the entry kv ("KEY=VALUE") exactly. An unreadable environment (a
// zombie, another user's process) holds nothing.
func environHas(pid int, kv string) bool {
	if kv == "" {
		return false
	}
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	for _, e := range bytes.Split(data, []byte{0}) {
		if string(e) == kv {
			return true
		}
	}
	return false
}

// WithLastArg finds a live process whose last command-line argument is
// arg exactly (a session id a process was started for, say). Unreadable
// command lines (zombies, kernel threads) never match.
func WithLastArg(arg string) (Proc, bool) {
	if arg == "" {
		return Proc{}, false
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return Proc{}, false
	}
	want := []byte("\x00" + arg + "\x00")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !bytes.HasSuffix(data, want) {
			continue
		}
		st, err := readProcStat(pid)
		if err != nil || st.dead() {
			continue
		}
		return procOf(pid, st), true
	}
	return Proc{}, false
}

// commandOf reads the command line of pid for a message: arguments joined
// by spaces, control characters (a hostile process chooses its own
// arguments) replaced by '?', at most maxCommand runes. A process without
// a command line (a kernel thread, a zombie) gets its name in brackets.
func commandOf(pid int) string {
	dir := "/proc/" + strconv.Itoa(pid)
	data, err := os.ReadFile(dir + "/cmdline")
	s := strings.TrimRight(string(data), "\x00")
	if err != nil || s == "" {
		comm, _ := os.ReadFile(dir + "/comm")
		s = "[" + strings.TrimSpace(string(comm)) + "]"
	}
	return tidyCommand(s)
}

// UsersOf lists the live processes that use dir or anything beneath it:
// as their working or root directory, their executable, an open file or a
// mapped file. This process and its ancestors (whoever asked) are left
// out. Only processes whose /proc entries this user may read are seen:
// all of them as root, one's own otherwise.
func UsersOf(dir string) ([]Proc, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("finding the processes using %s: %w", dir, err)
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	procs, err := scanProcs()
	if err != nil {
		return nil, fmt.Errorf("finding the processes using %s: %w", dir, err)
	}
	skip := ancestors(procs)
	var out []Proc
	for pid, st := range procs {
		if st.dead() || skip[pid] {
			continue
		}
		if usesDir(pid, abs) {
			out = append(out, procOf(pid, st))
		}
	}
	sortProcs(out)
	return out, nil
}

// usesDir reports whether process pid uses dir (absolute, symlinks
// resolved) as described for UsersOf.
func usesDir(pid int, dir string) bool {
	base := "/proc/" + strconv.Itoa(pid)
	under := func(p string) bool {
		p = strings.TrimSuffix(p, " (deleted)")
		return p == dir || strings.HasPrefix(p, dir+"/")
	}
	for _, l := range []string{"cwd", "root", "exe"} {
		if p, err := os.Readlink(base + "/" + l); err == nil && under(p) {
			return true
		}
	}
	if fds, err := os.ReadDir(base + "/fd"); err == nil {
		for _, fd := range fds {
			if p, err := os.Readlink(base + "/fd/" + fd.Name()); err == nil && under(p) {
				return true
			}
		}
	}
	if maps, err := os.ReadFile(base + "/maps"); err == nil {
		for _, line := range strings.Split(string(maps), "\n") {
			// address perms offset dev inode path: the path starts at
			// the first '/' after the five fixed fields.
			if i := strings.IndexByte(line, '/'); i >= 0 && under(line[i:]) {
				return true
			}
		}
	}
	return false
}
