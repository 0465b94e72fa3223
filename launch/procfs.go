package launch

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// procStat holds the fields of /proc/<pid>/stat that identify a process.
type procStat struct {
	state     byte
	pgrp      int
	startTime uint64
}

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
	pgrp, err := strconv.Atoi(f[5-3])
	if err != nil {
		return procStat{}, fmt.Errorf("malformed /proc stat line: %w", err)
	}
	st, err := strconv.ParseUint(f[22-3], 10, 64)
	if err != nil {
		return procStat{}, fmt.Errorf("malformed /proc stat line: %w", err)
	}
	return procStat{state: f[0][0], pgrp: pgrp, startTime: st}, nil
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
	return st.startTime == startTime && st.state != 'Z' && st.state != 'X'
}

// groupAlive reports whether process group pgid has a member that is not a
// zombie. kill(-pgid, 0) answers for most cases; when it says a member
// exists, /proc is scanned, because zombies waiting to be reaped by an init
// that reaps late still count for kill.
func groupAlive(pgid int) bool {
	if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return true
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := readProcStat(pid)
		if err != nil {
			continue
		}
		if st.pgrp == pgid && st.state != 'Z' && st.state != 'X' {
			return true
		}
	}
	return false
}
