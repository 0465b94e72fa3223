// The process facts the journal reads, on Linux: /proc.

package gitstore

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
)

// readProc reads the parent and start time of pid from /proc/<pid>/stat.
// The command name (field 2) is in parentheses and may itself hold spaces
// and parentheses, so fields are counted from the last ')'.
func readProc(pid int) (procInfo, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procInfo{}, err
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return procInfo{}, errors.New("malformed /proc stat line")
	}
	f := strings.Fields(string(data[i+1:]))
	// f[0] is field 3 (state): field k is f[k-3].
	if len(f) < 20 {
		return procInfo{}, errors.New("malformed /proc stat line")
	}
	var p procInfo
	if _, err := fmt.Sscan(f[4-3], &p.ppid); err != nil {
		return procInfo{}, err
	}
	if _, err := fmt.Sscan(f[22-3], &p.start); err != nil {
		return procInfo{}, err
	}
	return p, nil
}

// environSession reads SessionEnv from the initial environment of pid, ""
// when it is not set or cannot be read (another user's process).
func environSession(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		return ""
	}
	for _, kv := range bytes.Split(b, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, []byte(SessionEnv+"=")); ok && len(v) > 0 {
			return string(v)
		}
	}
	return ""
}
