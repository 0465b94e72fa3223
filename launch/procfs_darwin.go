// The process table on darwin: sysctl kern.proc and kern.procargs2
// through darwinproc. Start times are microseconds since the Unix epoch
// there, not clock ticks since boot; they are compared only with each
// other on the same host.

package launch

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/git-agentmine/git-agentmine/internal/darwinproc"
)

// statOf turns darwin's view of a process into the fields launch uses.
func statOf(p darwinproc.Proc) procStat {
	st := procStat{state: 'R', ppid: p.PPid, pgrp: p.Pgid, session: p.Session, startTime: p.Start}
	if p.Zombie {
		st.state = 'Z'
	}
	return st
}

func readProcStat(pid int) (procStat, error) {
	p, err := darwinproc.Lookup(pid)
	if err != nil {
		return procStat{}, err
	}
	return statOf(p), nil
}

// scanProcs reads every process (sysctl kern.proc.all).
func scanProcs() (map[int]procStat, error) {
	all, err := darwinproc.Table()
	if err != nil {
		return nil, err
	}
	out := make(map[int]procStat, len(all))
	for pid, p := range all {
		out[pid] = statOf(p)
	}
	return out, nil
}

// family reads root and its descendants. darwin keeps no children lists:
// the whole table is read and followed by parent links.
func family(root int) map[int]procStat {
	out := map[int]procStat{}
	all, err := scanProcs()
	if err != nil {
		return out
	}
	for pid, st := range all {
		if pid == root || descends(all, pid, root) {
			out[pid] = st
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
	_, env, err := darwinproc.Args(pid)
	return err == nil && slices.Contains(env, kv)
}

// WithLastArg finds a live process whose last command-line argument is
// arg exactly. Unreadable argument lists never match.
func WithLastArg(arg string) (Proc, bool) {
	if arg == "" {
		return Proc{}, false
	}
	procs, err := scanProcs()
	if err != nil {
		return Proc{}, false
	}
	for pid, st := range procs {
		if st.dead() {
			continue
		}
		argv, _, err := darwinproc.Args(pid)
		if err != nil || len(argv) < 2 || argv[len(argv)-1] != arg {
			continue
		}
		return procOf(pid, st), true
	}
	return Proc{}, false
}

// commandOf reads the command line of pid for a message (see
// tidyCommand); a process whose arguments cannot be read gets its name in
// brackets.
func commandOf(pid int) string {
	argv, _, err := darwinproc.Args(pid)
	s := strings.Join(argv, "\x00")
	if err != nil || s == "" {
		p, _ := darwinproc.Lookup(pid)
		s = "[" + p.Comm + "]"
	}
	return tidyCommand(s)
}

// UsersOf lists the live processes that use dir or anything beneath it
// (lsof +D: working directory, open or mapped files, the executable).
// This process and its ancestors are left out.
func UsersOf(dir string) ([]Proc, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("finding the processes using %s: %w", dir, err)
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	pids, err := darwinproc.Users(abs)
	if err != nil {
		return nil, fmt.Errorf("finding the processes using %s: %w", dir, err)
	}
	procs, err := scanProcs()
	if err != nil {
		return nil, fmt.Errorf("finding the processes using %s: %w", dir, err)
	}
	skip := ancestors(procs)
	var out []Proc
	for _, pid := range pids {
		st, ok := procs[pid]
		if !ok || st.dead() || skip[pid] {
			continue
		}
		out = append(out, procOf(pid, st))
	}
	sortProcs(out)
	return out, nil
}
