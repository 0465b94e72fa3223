package gitstore

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// peerPid is the pid of the process at the other end of a UNIX socket, as
// the kernel saw it connect (LOCAL_PEERPID): one the sender cannot choose.
func peerPid(raw syscall.RawConn) (int, error) {
	var pid int
	var err error
	if cerr := raw.Control(func(fd uintptr) { pid, err = unix.GetsockoptInt(int(fd), unix.SOL_LOCAL, unix.LOCAL_PEERPID) }); cerr != nil {
		return 0, cerr
	}
	return pid, err
}

// dialWitness connects to the witness listening at addr.
func dialWitness(addr string) (net.Conn, error) {
	return net.DialTimeout("unix", addr, witnessTimeout)
}
