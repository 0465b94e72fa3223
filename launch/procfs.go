package launch

import (
	"errors"
	"fmt"
	"os"
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
// boot (field 22 of /proc/<pid>/stat; on macOS, microseconds since the
// epoch from sysctl kern.proc). Together with the pid it identifies a
// process: a recycled pid gets a different start time.
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

// tidyCommand readies a command line read from the process table (its
// arguments NUL-separated) for a message: arguments joined by spaces,
// control characters (a hostile process chooses its own arguments)
// replaced by '?', at most maxCommand runes.
func tidyCommand(s string) string {
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
