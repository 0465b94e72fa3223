// Package darwinproc reads the process table of macOS (darwin): each
// process's identity (pid and start time), parent, process group and
// session, and the arguments and environment it was started with. It
// holds what launch and gitstore read from /proc on Linux.
//
// The decoding of what the kernel returns (struct kinfo_proc records from
// sysctl kern.proc, the KERN_PROCARGS2 buffer, lsof's field output) is in
// pure functions without a build tag, so that their tests run on every
// system; only the calls that fetch the bytes are darwin's.
package darwinproc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Proc is one process as the kernel describes it in struct kinfo_proc.
type Proc struct {
	// Pid is the process id.
	Pid int
	// PPid is the parent's pid.
	PPid int
	// Pgid is the process group id.
	Pgid int
	// Session is the session id (getsid); 0 when it could not be read.
	Session int
	// Start is the start time in microseconds since the Unix epoch: with
	// the pid it identifies a process, as a recycled pid gets a later one.
	Start uint64
	// Zombie is true for a process that has ended and awaits its reaping,
	// or is exiting.
	Zombie bool
	// UID is the effective user id.
	UID uint32
	// Comm is the command name (at most 16 bytes).
	Comm string
}

// The layout of struct kinfo_proc on 64-bit darwin (amd64 and arm64
// alike): struct extern_proc, then struct eproc. sysctl_darwin.go checks
// every offset against golang.org/x/sys/unix.KinfoProc at compile time,
// so a cross-compile fails if one is wrong.
const (
	// KinfoSize is sizeof(struct kinfo_proc).
	KinfoSize   = 648
	offStartSec = 0   // p_starttime.tv_sec, int64
	offStartUs  = 8   // p_starttime.tv_usec, int32
	offFlag     = 32  // p_flag, int32
	offStat     = 36  // p_stat, int8
	offPid      = 40  // p_pid, int32
	offComm     = 243 // p_comm, [17]byte
	offEproc    = 296 // kp_eproc
	offUID      = offEproc + 120 + 4
	offPPid     = offEproc + 264 // e_ppid, int32
	offPgid     = offEproc + 268 // e_pgid, int32
	commLen     = 17
	// sZomb is p_stat of a zombie (SZOMB in sys/proc.h).
	sZomb = 5
	// pWExit is the p_flag bit of a process that is exiting (P_WEXIT).
	pWExit = 0x2000
)

// ParseKinfo decodes a buffer of struct kinfo_proc records, as sysctl
// kern.proc.all and kern.proc.pid.<pid> return them. The session is not
// in the record (eproc has a kernel pointer there); it is left 0.
func ParseKinfo(b []byte) ([]Proc, error) {
	if len(b)%KinfoSize != 0 {
		return nil, fmt.Errorf("decoding kinfo_proc: %d bytes is not a whole number of %d-byte records", len(b), KinfoSize)
	}
	le := binary.LittleEndian
	out := make([]Proc, 0, len(b)/KinfoSize)
	for ; len(b) > 0; b = b[KinfoSize:] {
		sec := int64(le.Uint64(b[offStartSec:]))
		usec := int64(int32(le.Uint32(b[offStartUs:])))
		if sec < 0 || usec < 0 || usec >= 1e6 {
			return nil, fmt.Errorf("decoding kinfo_proc: start time %d.%06d out of range", sec, usec)
		}
		comm := b[offComm : offComm+commLen]
		if i := strings.IndexByte(string(comm), 0); i >= 0 {
			comm = comm[:i]
		}
		p := Proc{
			Pid:    int(int32(le.Uint32(b[offPid:]))),
			PPid:   int(int32(le.Uint32(b[offPPid:]))),
			Pgid:   int(int32(le.Uint32(b[offPgid:]))),
			Start:  uint64(sec)*1e6 + uint64(usec),
			Zombie: b[offStat] == sZomb || int32(le.Uint32(b[offFlag:]))&pWExit != 0,
			UID:    le.Uint32(b[offUID:]),
			Comm:   string(comm),
		}
		out = append(out, p)
	}
	return out, nil
}

// ErrNoArgs is returned for a KERN_PROCARGS2 buffer too short to hold even
// the argument count (a zombie, a system process).
var ErrNoArgs = errors.New("no process arguments")

// ParseProcArgs decodes a KERN_PROCARGS2 buffer: a native-endian int32
// argc, the executable's path and its NUL padding, argc NUL-terminated
// arguments, then the NUL-terminated environment entries up to an empty
// string (after which the kernel's own "apple" strings follow, which are
// not the environment). A buffer cut short yields what it holds whole.
func ParseProcArgs(b []byte) (argv, env []string, err error) {
	if len(b) < 4 {
		return nil, nil, ErrNoArgs
	}
	argc := int(int32(binary.LittleEndian.Uint32(b)))
	if argc < 0 {
		return nil, nil, fmt.Errorf("decoding process arguments: argc %d", argc)
	}
	rest := b[4:]
	// The executable path, then padding NULs up to the first argument.
	i := indexNUL(rest)
	if i < 0 {
		return nil, nil, errors.New("decoding process arguments: no executable path")
	}
	rest = rest[i:]
	for len(rest) > 0 && rest[0] == 0 {
		rest = rest[1:]
	}
	next := func() (string, bool) {
		j := indexNUL(rest)
		if j < 0 {
			return "", false
		}
		s := string(rest[:j])
		rest = rest[j+1:]
		return s, true
	}
	for len(argv) < argc {
		s, ok := next()
		if !ok {
			return argv, nil, nil
		}
		argv = append(argv, s)
	}
	for {
		s, ok := next()
		if !ok || s == "" {
			return argv, env, nil
		}
		env = append(env, s)
	}
}

func indexNUL(b []byte) int {
	for i, c := range b {
		if c == 0 {
			return i
		}
	}
	return -1
}

// ParseLsofPids returns the pids in lsof's field output (-F p): one line
// "p<pid>" per process, other field lines ignored, each pid once in the
// order seen.
func ParseLsofPids(out string) ([]int, error) {
	var pids []int
	seen := map[int]bool{}
	for _, line := range strings.Split(out, "\n") {
		v, ok := strings.CutPrefix(line, "p")
		if !ok {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || pid <= 0 {
			return nil, fmt.Errorf("decoding lsof output: bad pid line %q", line)
		}
		if !seen[pid] {
			seen[pid] = true
			pids = append(pids, pid)
		}
	}
	return pids, nil
}
