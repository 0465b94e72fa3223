package launch

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// procStat holds the fields of /proc/<pid>/stat that identify a process
// and place it in the process tree.
type procStat struct {
	state     byte
	ppid      int
	pgrp      int
	session   int
	startTime uint64
}

// dead reports whether the process has ended (a zombie waiting to be
// reaped, or being torn down).
func (s procStat) dead() bool { return s.state == 'Z' || s.state == 'X' }

func readProcStat(pid int) (procStat, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, err
	}
	return parseProcStat(string(data))
}

// parseProcStat parses a /proc/<pid>/stat line. The command name (field 2)
// is in parentheses and may itself hold spaces and parentheses, so the
// fields are counted from the last ')'.
func parseProcStat(s string) (procStat, error) {
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return procStat{}, errors.New("malformed /proc stat line")
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state), so field k is f[k-3].
	if len(f) < 20 {
		return procStat{}, errors.New("malformed /proc stat line")
	}
	var ints [3]int
	for j, k := range []int{4, 5, 6} { // ppid, pgrp, session
		n, err := strconv.Atoi(f[k-3])
		if err != nil {
			return procStat{}, fmt.Errorf("malformed /proc stat line: %w", err)
		}
		ints[j] = n
	}
	st, err := strconv.ParseUint(f[22-3], 10, 64)
	if err != nil {
		return procStat{}, fmt.Errorf("malformed /proc stat line: %w", err)
	}
	return procStat{state: f[0][0], ppid: ints[0], pgrp: ints[1], session: ints[2], startTime: st}, nil
}

// StartTime returns the start time of process pid in clock ticks since
// boot (field 22 of /proc/<pid>/stat). Together with the pid it identifies
// a process: a recycled pid gets a different start time.
func StartTime(pid int) (uint64, error) {
	if pid <= 0 {
		return 0, fmt.Errorf("process start time: invalid pid %d", pid)
	}
	st, err := readProcStat(pid)
	if err != nil {
		return 0, fmt.Errorf("process start time of %d: %w", pid, err)
	}
	return st.startTime, nil
}

// Alive reports whether the process identified by pid and startTime (as
// returned by StartTime, Process.StartTime or Detach) is still running on
// this host: the pid exists, has the same start time (so it was not
// recycled) and is not a zombie.
func Alive(pid int, startTime uint64) bool {
	if pid <= 0 {
		return false
	}
	st, err := readProcStat(pid)
	if err != nil {
		return false
	}
	return st.startTime == startTime && !st.dead()
}

// groupAlive reports whether process group pgid has a member that is not a
// zombie. kill(-pgid, 0) answers for most cases; when it says a member
// exists, /proc is scanned, because zombies count for kill.
func groupAlive(pgid int) bool {
	if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	procs, err := scanProcs()
	if err != nil {
		return true
	}
	for _, st := range procs {
		if st.pgrp == pgid && !st.dead() {
			return true
		}
	}
	return false
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

// descends reports whether pid is a descendant of ancestor in procs,
// following parent links (a process's parent started no later than it did,
// which also ends the walk on a table read while processes came and went).
func descends(procs map[int]procStat, pid, ancestor int) bool {
	for depth := 0; depth < 4096; depth++ {
		st, ok := procs[pid]
		if !ok || st.ppid <= 0 {
			return false
		}
		if st.ppid == ancestor {
			return true
		}
		parent, ok := procs[st.ppid]
		if !ok || parent.startTime > st.startTime {
			return false
		}
		pid = st.ppid
	}
	return false
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

// Proc names one process: its pid, its start time (which tells it from a
// later process given the same pid) and its command line, for messages.
type Proc struct {
	// Pid is the process id.
	Pid int
	// Start is the start time in clock ticks since boot (see StartTime).
	Start uint64
	// Command is the command line, shortened and with control characters
	// replaced, or the command name when the command line is unreadable.
	Command string
}

// String renders the process as "pid 123 (sleep 60)".
func (p Proc) String() string {
	return fmt.Sprintf("pid %d (%s)", p.Pid, p.Command)
}

// maxCommand bounds Proc.Command.
const maxCommand = 80

// procOf describes process pid as seen in st.
func procOf(pid int, st procStat) Proc {
	return Proc{Pid: pid, Start: st.startTime, Command: commandOf(pid)}
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
	s = strings.Map(func(r rune) rune {
		switch {
		case r == 0:
			return ' '
		case r < 0x20 || r == 0x7f:
			return '?'
		}
		return r
	}, s)
	if r := []rune(s); len(r) > maxCommand {
		s = string(r[:maxCommand-1]) + "…"
	}
	return s
}

// ancestors returns this process and its ancestors, up to init.
func ancestors(procs map[int]procStat) map[int]bool {
	out := map[int]bool{}
	for pid := os.Getpid(); pid > 0 && !out[pid]; {
		out[pid] = true
		st, ok := procs[pid]
		if !ok {
			break
		}
		pid = st.ppid
	}
	return out
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
