package gitstore

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// peerPid is the pid of the process at the other end of a UNIX socket, as
// the kernel saw it connect (SO_PEERCRED): one the sender cannot choose.
func peerPid(raw syscall.RawConn) (int, error) {
	var cred *unix.Ucred
	var err error
	if cerr := raw.Control(func(fd uintptr) { cred, err = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED) }); cerr != nil {
		return 0, cerr
	}
	if err != nil {
		return 0, err
	}
	if cred == nil {
		return 0, unix.EINVAL
	}
	return int(cred.Pid), nil
}
