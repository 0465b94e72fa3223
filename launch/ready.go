package launch

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// A detached supervisor is signalled by pid (worker stop, run stop) as soon
// as its session records that pid. A signal that arrives before the program
// has set up its signal handling (the Go runtime and package initialisation
// take a few milliseconds, far more on a loaded machine) kills it outright:
// the session is lost with no outcome, though the stop was an ordinary one.
// So Detach hands the process the write end of a pipe and waits until the
// process says, through it, that it handles signals (Ready), or exits, or
// readyWait passes; only then does the caller record the pid.

// ReadyEnv names the environment variable that tells a detached process
// which inherited file descriptor to signal readiness on, as
// "<fd>:<parent pid>": the parent's pid keeps the process's own children,
// which could inherit the variable, from acting on it.
const ReadyEnv = "AGENTMINE_READY_FD"

// readyWait bounds how long Detach waits for a detached process to say it
// handles signals: one that never does (a program that knows nothing of
// ReadyEnv) is only signalled by pid a little sooner than it could be.
const readyWait = 10 * time.Second

// Ready tells the process that detached this one that its signal handling
// is in place, when it was started by Detach (getenv(ReadyEnv) names an
// inherited descriptor and this process's parent), and removes ReadyEnv
// from the environment so that no child inherits it. Call it once, after
// signal.Notify; it does nothing otherwise.
func Ready(getenv func(string) string) {
	ReadyLater(getenv)()
}

// ReadyLater is Ready for a process that tells its detacher later than
// when its signal handling is in place: it removes ReadyEnv from the
// environment and keeps the descriptor from this process's children at
// once, and returns what tells the detacher (once; nothing when this
// process was not started by Detach). A detached supervisor calls it once
// its session records its pid (the seal): until then no one signals it by
// pid, and the detacher need not record the pid itself.
func ReadyLater(getenv func(string) string) func() {
	v := getenv(ReadyEnv)
	if v == "" {
		return func() {}
	}
	os.Unsetenv(ReadyEnv)
	fdText, ppidText, ok := strings.Cut(v, ":")
	fd, err1 := strconv.Atoi(fdText)
	ppid, err2 := strconv.Atoi(ppidText)
	if !ok || err1 != nil || err2 != nil || fd < 3 || ppid != os.Getppid() {
		return func() {}
	}
	syscall.CloseOnExec(fd)
	f := os.NewFile(uintptr(fd), "ready")
	if f == nil {
		return func() {}
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			f.Write([]byte{'\n'})
			f.Close()
		})
	}
}

// waitReady waits until r yields a byte or its end (the process said it
// is ready, or exited), or readyWait passes, then closes r.
func waitReady(r *os.File) {
	defer r.Close()
	r.SetReadDeadline(time.Now().Add(readyWait))
	var b [1]byte
	r.Read(b[:])
}
