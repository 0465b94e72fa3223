// The process facts the journal reads, on darwin: sysctl kern.proc and
// kern.procargs2.

package gitstore

import (
	"strings"

	"github.com/git-agentmine/git-agentmine/internal/darwinproc"
)

// readProc reads the parent and start time of pid.
func readProc(pid int) (procInfo, error) {
	p, err := darwinproc.Lookup(pid)
	if err != nil {
		return procInfo{}, err
	}
	return procInfo{ppid: p.PPid, start: p.Start}, nil
}

// environSession reads SessionEnv from the initial environment of pid, ""
// when it is not set or cannot be read (another user's process).
func environSession(pid int) string {
	_, env, err := darwinproc.Args(pid)
	if err != nil {
		return ""
	}
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, SessionEnv+"="); ok && v != "" {
			return v
		}
	}
	return ""
}
