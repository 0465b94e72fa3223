package darwinproc

import (
	"errors"
	"fmt"
	"os/exec"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The offsets ParseKinfo uses, checked against x/sys's struct: a wrong one
// makes one of these constants negative or a non-zero array length, and
// the build fails.
var (
	_ [KinfoSize - unsafe.Sizeof(unix.KinfoProc{})]struct{}
	_ [unsafe.Sizeof(unix.KinfoProc{}) - KinfoSize]struct{}
	_ [offStartUs - unsafe.Offsetof(unix.KinfoProc{}.Proc.P_starttime.Usec)]struct{}
	_ [unsafe.Offsetof(unix.KinfoProc{}.Proc.P_starttime.Usec) - offStartUs]struct{}
	_ [offFlag - unsafe.Offsetof(unix.KinfoProc{}.Proc.P_flag)]struct{}
	_ [unsafe.Offsetof(unix.KinfoProc{}.Proc.P_flag) - offFlag]struct{}
	_ [offStat - unsafe.Offsetof(unix.KinfoProc{}.Proc.P_stat)]struct{}
	_ [unsafe.Offsetof(unix.KinfoProc{}.Proc.P_stat) - offStat]struct{}
	_ [offPid - unsafe.Offsetof(unix.KinfoProc{}.Proc.P_pid)]struct{}
	_ [unsafe.Offsetof(unix.KinfoProc{}.Proc.P_pid) - offPid]struct{}
	_ [offComm - unsafe.Offsetof(unix.KinfoProc{}.Proc.P_comm)]struct{}
	_ [unsafe.Offsetof(unix.KinfoProc{}.Proc.P_comm) - offComm]struct{}
	_ [commLen - len(unix.KinfoProc{}.Proc.P_comm)]struct{}
	_ [offEproc - unsafe.Offsetof(unix.KinfoProc{}.Eproc)]struct{}
	_ [unsafe.Offsetof(unix.KinfoProc{}.Eproc) - offEproc]struct{}
	_ [offUID - offEproc - unsafe.Offsetof(unix.KinfoProc{}.Eproc.Ucred) - unsafe.Offsetof(unix.KinfoProc{}.Eproc.Ucred.Uid)]struct{}
	_ [unsafe.Offsetof(unix.KinfoProc{}.Eproc.Ucred) + unsafe.Offsetof(unix.KinfoProc{}.Eproc.Ucred.Uid) + offEproc - offUID]struct{}
	_ [offPPid - offEproc - unsafe.Offsetof(unix.KinfoProc{}.Eproc.Ppid)]struct{}
	_ [unsafe.Offsetof(unix.KinfoProc{}.Eproc.Ppid) + offEproc - offPPid]struct{}
	_ [offPgid - offEproc - unsafe.Offsetof(unix.KinfoProc{}.Eproc.Pgid)]struct{}
	_ [unsafe.Offsetof(unix.KinfoProc{}.Eproc.Pgid) + offEproc - offPgid]struct{}
)

// Lookup reads process pid (sysctl kern.proc.pid.<pid>) and its session.
// A pid no process has is an error wrapping unix.ESRCH.
func Lookup(pid int) (Proc, error) {
	b, err := unix.SysctlRaw("kern.proc.pid", pid)
	if err != nil {
		return Proc{}, fmt.Errorf("reading process %d: %w", pid, err)
	}
	ps, err := ParseKinfo(b)
	if err != nil {
		return Proc{}, err
	}
	if len(ps) != 1 || ps[0].Pid != pid {
		return Proc{}, fmt.Errorf("reading process %d: %w", pid, unix.ESRCH)
	}
	p := ps[0]
	p.Session, _ = unix.Getsid(pid)
	return p, nil
}

// Table reads every process (sysctl kern.proc.all) with its session.
// Processes that end while it runs may be left out or be listed as
// zombies.
func Table() (map[int]Proc, error) {
	var b []byte
	var err error
	// The table can grow between the kernel's size estimate and the read.
	for try := 0; try < 5; try++ {
		if b, err = unix.SysctlRaw("kern.proc.all"); !errors.Is(err, unix.ENOMEM) {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("listing processes: %w", err)
	}
	ps, err := ParseKinfo(b)
	if err != nil {
		return nil, fmt.Errorf("listing processes: %w", err)
	}
	out := make(map[int]Proc, len(ps))
	for _, p := range ps {
		if p.Pid == 0 {
			continue
		}
		p.Session, _ = unix.Getsid(p.Pid)
		out[p.Pid] = p
	}
	return out, nil
}

// Args returns the arguments and the environment process pid was started
// with (sysctl kern.procargs2). Only one's own processes (all, as root)
// can be read.
func Args(pid int) (argv, env []string, err error) {
	b, err := unix.SysctlRaw("kern.procargs2", pid)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the arguments of process %d: %w", pid, err)
	}
	return ParseProcArgs(b)
}

// Users lists the pids of the processes that have dir or a file beneath
// it open, as their working directory or otherwise (lsof +D). lsof exits
// 1 when it finds none.
func Users(dir string) ([]int, error) {
	out, err := exec.Command("lsof", "-n", "-w", "-F", "p", "+D", dir).Output()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 1 && len(out) == 0 {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing the processes using %s: %w", dir, err)
	}
	return ParseLsofPids(string(out))
}
