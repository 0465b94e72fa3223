package worker

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// memoryHelperEnv makes the test binary act as a supervisor: protect its
// memory or not, then start a child of the same user that tries to read
// its memory map, and print what the child could do.
const memoryHelperEnv = "AGENTMINE_TEST_MEMORY_HELPER"

// TestMemoryHelper is the helper process of TestProtectMemory; it does
// nothing in a normal run.
func TestMemoryHelper(t *testing.T) {
	mode := os.Getenv(memoryHelperEnv)
	if mode == "" {
		t.Skip("helper process of TestProtectMemory")
	}
	if mode == "protected" {
		if err := protectMemory(); err != nil {
			fmt.Println("prctl:", err)
			os.Exit(2)
		}
	}
	// the child is what a worker is: started by the supervisor, same user
	out, err := exec.Command("cat", "/proc/"+strconv.Itoa(os.Getpid())+"/maps").CombinedOutput()
	switch {
	case err == nil && len(out) > 0:
		fmt.Println("read")
	case strings.Contains(string(out), "Permission denied"):
		fmt.Println("denied")
	default:
		fmt.Printf("unexpected: %v: %s\n", err, out)
	}
	os.Exit(0)
}

// TestProtectMemory: a process of the same user (a worker) reads the
// memory map of a supervisor that did not protect its memory, and is
// denied once the supervisor did (the same ptrace check guards
// /proc/<pid>/mem, where the nonce is). Run as root, the supervisor and
// worker are the unprivileged account nobody, since root reads any
// process's memory whatever it does; root reading the protected
// supervisor shows that.
func TestProtectMemory(t *testing.T) {
	var cred *syscall.Credential
	bin := os.Args[0]
	if os.Geteuid() == 0 {
		acc, err := user.Lookup("nobody")
		if err != nil {
			t.Skipf("running as root and there is no nobody account to run the helper as: %v", err)
		}
		uid, _ := strconv.Atoi(acc.Uid)
		gid, _ := strconv.Atoi(acc.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}
		// nobody must be able to run a copy of this test binary
		dir, err := os.MkdirTemp("", "agentmine-memory-test")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		bin = filepath.Join(dir, "worker.test")
		if err := copyExecutable(os.Args[0], bin); err != nil {
			t.Fatal(err)
		}
	}
	helper := func(mode string) string {
		cmd := exec.Command(bin, "-test.run=^TestMemoryHelper$")
		cmd.Dir = os.TempDir()
		cmd.Env = append(os.Environ(), memoryHelperEnv+"="+mode)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("helper %s: %v: %s", mode, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if got := helper("plain"); got != "read" {
		t.Fatalf("a same-user child of an unprotected process: %q, want read (the test proves nothing otherwise)", got)
	}
	if got := helper("protected"); got != "denied" {
		t.Fatalf("a same-user child of a protected process: %q, want denied", got)
	}
}

func copyExecutable(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	return errors.Join(err, out.Close())
}
