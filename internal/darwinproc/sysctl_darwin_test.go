package darwinproc

import (
	"os"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

// The decoder against x/sys's own struct, on a real darwin kernel.
func TestLookupSelfMatchesKinfoProc(t *testing.T) {
	me, err := Lookup(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	k, err := unix.SysctlKinfoProc("kern.proc.pid", os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	start := uint64(k.Proc.P_starttime.Sec)*1e6 + uint64(k.Proc.P_starttime.Usec)
	if me.Pid != int(k.Proc.P_pid) || me.PPid != int(k.Eproc.Ppid) || me.Pgid != int(k.Eproc.Pgid) || me.Start != start || me.Zombie {
		t.Fatalf("Lookup = %+v, kinfo_proc says pid %d ppid %d pgid %d start %d", me, k.Proc.P_pid, k.Eproc.Ppid, k.Eproc.Pgid, start)
	}
	if me.PPid != os.Getppid() {
		t.Fatalf("ppid %d, want %d", me.PPid, os.Getppid())
	}
	all, err := Table()
	if err != nil {
		t.Fatal(err)
	}
	if all[os.Getpid()].Start != me.Start {
		t.Fatalf("Table has %+v for this process, Lookup %+v", all[os.Getpid()], me)
	}
}

func TestArgsSelf(t *testing.T) {
	argv, env, err := Args(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(argv, os.Args) {
		t.Fatalf("argv = %q, want %q", argv, os.Args)
	}
	for _, kv := range os.Environ() {
		if !slices.Contains(env, kv) {
			t.Fatalf("env lacks %q", kv)
		}
	}
}
