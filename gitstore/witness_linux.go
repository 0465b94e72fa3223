package gitstore

import (
	"errors"
	"net"
	"os"
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

// dialWitness connects to the witness listening at the abstract address
// addr. Every ancestor of a process that writes is asked (onBehalf), and
// almost none has a witness: a refused connection is found with a plain
// socket and connect, without the net package's dialer and poller, and a
// connection made is handed to net as it is. Only a connect that would
// wait (the witness's backlog is full) goes through net's dialer and its
// timeout.
func dialWitness(addr string) (net.Conn, error) {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return net.DialTimeout("unix", addr, witnessTimeout)
	}
	switch err := unix.Connect(fd, &unix.SockaddrUnix{Name: addr}); {
	case err == nil:
		f := os.NewFile(uintptr(fd), "witness")
		defer f.Close()
		return net.FileConn(f)
	case errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINPROGRESS) || errors.Is(err, unix.EINTR):
		unix.Close(fd)
		return net.DialTimeout("unix", addr, witnessTimeout)
	default:
		unix.Close(fd)
		return nil, err
	}
}
