package gittest

import (
	"bytes"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Terminal is a pseudo-terminal a test runs commands on, as a person's
// shell would: the command's controlling terminal, standard input, output
// and error. Output collects everything the command wrote to it (prompts
// a program writes to /dev/tty included).
type Terminal struct {
	master    *os.File
	slave     *os.File
	mu        sync.Mutex
	out       bytes.Buffer
	done      chan struct{}
	closeOnce sync.Once
}

// NewTerminal opens a pseudo-terminal (/dev/ptmx) and starts collecting
// what is written to it; it is closed when the test ends.
func NewTerminal(t testing.TB) *Terminal {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(master.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		master.Close()
		t.Fatalf("unlocking the pseudo-terminal: %v", err)
	}
	n, err := unix.IoctlGetInt(int(master.Fd()), unix.TIOCGPTN)
	if err != nil {
		master.Close()
		t.Fatalf("naming the pseudo-terminal: %v", err)
	}
	slave, err := os.OpenFile("/dev/pts/"+itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		master.Close()
		t.Fatalf("opening the pseudo-terminal: %v", err)
	}
	term := &Terminal{master: master, slave: slave, done: make(chan struct{})}
	go func() {
		defer close(term.done)
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			term.mu.Lock()
			term.out.Write(buf[:n])
			term.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		term.closeSlave()
		master.Close()
		<-term.done
	})
	return term
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

// Attach makes the terminal cmd's controlling terminal, standard input,
// output and error, in a session of its own (as a shell starts a job).
func (term *Terminal) Attach(cmd *exec.Cmd) {
	cmd.Stdin, cmd.Stdout, cmd.Stderr = term.slave, term.slave, term.slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
}

// Output returns what was written to the terminal so far.
func (term *Terminal) Output() string {
	term.mu.Lock()
	defer term.mu.Unlock()
	return term.out.String()
}

func (term *Terminal) closeSlave() {
	term.closeOnce.Do(func() { term.slave.Close() })
}

// Settled returns everything written to the terminal once the commands
// attached to it have ended: it closes the test's own end of the terminal
// and waits until the reader has drained what they wrote, so nothing a
// command printed just before it exited is missed. It waits at most five
// seconds for a process that still holds the terminal, then returns what
// arrived. The terminal takes no further commands afterwards.
func (term *Terminal) Settled() string {
	term.closeSlave()
	select {
	case <-term.done:
	case <-time.After(5 * time.Second):
	}
	return term.Output()
}
