package darwinproc

import (
	"encoding/binary"
	"reflect"
	"strings"
	"testing"
)

// kinfo encodes p as the kernel lays out struct kinfo_proc on 64-bit
// darwin, with stat as p_stat and flag as p_flag.
func kinfo(p Proc, stat byte, flag int32) []byte {
	b := make([]byte, KinfoSize)
	le := binary.LittleEndian
	le.PutUint64(b[offStartSec:], p.Start/1e6)
	le.PutUint32(b[offStartUs:], uint32(p.Start%1e6))
	le.PutUint32(b[offFlag:], uint32(flag))
	b[offStat] = stat
	le.PutUint32(b[offPid:], uint32(p.Pid))
	copy(b[offComm:offComm+commLen-1], p.Comm)
	le.PutUint32(b[offUID:], p.UID)
	le.PutUint32(b[offPPid:], uint32(p.PPid))
	le.PutUint32(b[offPgid:], uint32(p.Pgid))
	// Fields ParseKinfo must not read as any of the above.
	for _, o := range []int{16, 24, 44, 48, offEproc, offEproc + 8, offEproc + 272} {
		b[o] = 0xAA
	}
	return b
}

func TestParseKinfo(t *testing.T) {
	want := []Proc{
		{Pid: 1, PPid: 0, Pgid: 1, Start: 1_700_000_000_000_001, Comm: "launchd"},
		{Pid: 4242, PPid: 4200, Pgid: 4242, Start: 1_700_000_123_999_999, UID: 501, Comm: "sixteen-char-com"},
		{Pid: 4243, PPid: 4242, Pgid: 4242, Start: 1_700_000_124_000_000, UID: 501, Comm: "sh", Zombie: true},
		{Pid: 4244, PPid: 4242, Pgid: 4244, Start: 1_700_000_124_500_000, UID: 501, Comm: "exiting", Zombie: true},
	}
	var buf []byte
	buf = append(buf, kinfo(want[0], 2, 0)...)
	buf = append(buf, kinfo(want[1], 3, 0x4)...)
	buf = append(buf, kinfo(want[2], sZomb, 0)...)
	buf = append(buf, kinfo(want[3], 2, pWExit)...)
	got, err := ParseKinfo(buf)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ParseKinfo:\n got %+v\nwant %+v", got, want)
	}
	// A later start time on the same pid is a different process.
	if got[1].Start <= got[0].Start {
		t.Fatalf("start times not ordered: %d then %d", got[0].Start, got[1].Start)
	}
}

func TestParseKinfoRefusesBadInput(t *testing.T) {
	if _, err := ParseKinfo(make([]byte, KinfoSize+1)); err == nil || !strings.Contains(err.Error(), "whole number") {
		t.Fatalf("a torn buffer: err = %v", err)
	}
	b := kinfo(Proc{Pid: 7}, 2, 0)
	binary.LittleEndian.PutUint32(b[offStartUs:], 1_000_000)
	if _, err := ParseKinfo(b); err == nil || !strings.Contains(err.Error(), "out of range") {
		t.Fatalf("usec out of range: err = %v", err)
	}
	if ps, err := ParseKinfo(nil); err != nil || len(ps) != 0 {
		t.Fatalf("empty table: %v, %v", ps, err)
	}
}

// procargs lays out a KERN_PROCARGS2 buffer the way xnu does: argc, the
// executable path, NUL padding to a word, the arguments, the environment,
// an empty string, then the "apple" strings.
func procargs(argc int32, exe string, pad int, args, env, apple []string) []byte {
	b := binary.LittleEndian.AppendUint32(nil, uint32(argc))
	b = append(b, exe...)
	b = append(b, make([]byte, 1+pad)...)
	for _, s := range args {
		b = append(append(b, s...), 0)
	}
	for _, s := range env {
		b = append(append(b, s...), 0)
	}
	b = append(b, 0)
	for _, s := range apple {
		b = append(append(b, s...), 0)
	}
	return b
}

func TestParseProcArgs(t *testing.T) {
	args := []string{"/bin/sh", "-c", "sleep 60 # AGENTMINE_RUN=forged", ""}
	env := []string{"PATH=/usr/bin:/bin", "AGENTMINE_RUN=0123abcd", "HOME=/Users/me", "EMPTY="}
	apple := []string{"executable_path=/bin/sh", "AGENTMINE_RUN=apple"}
	for _, pad := range []int{0, 3, 7} {
		argv, envv, err := ParseProcArgs(procargs(int32(len(args)), "/bin/sh", pad, args, env, apple))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(argv, args) {
			t.Errorf("pad %d: argv = %q, want %q", pad, argv, args)
		}
		if !reflect.DeepEqual(envv, env) {
			t.Errorf("pad %d: env = %q, want %q (the apple strings are not the environment)", pad, envv, env)
		}
	}
}

func TestParseProcArgsShortAndEmpty(t *testing.T) {
	if _, _, err := ParseProcArgs([]byte{1, 0}); err != ErrNoArgs {
		t.Fatalf("3 bytes: err = %v, want ErrNoArgs", err)
	}
	if _, _, err := ParseProcArgs(binary.LittleEndian.AppendUint32(nil, 1)); err == nil {
		t.Fatal("argc without an executable path: no error")
	}
	neg := procargs(-1, "/bin/x", 0, nil, nil, nil)
	if _, _, err := ParseProcArgs(neg); err == nil {
		t.Fatal("negative argc: no error")
	}
	// Cut inside the environment: the whole entries before the cut count,
	// the torn one does not.
	full := procargs(1, "/bin/x", 2, []string{"x"}, []string{"A=1", "AGENTMINE_RUN=abcdef"}, nil)
	cut := full[:len(full)-6]
	argv, env, err := ParseProcArgs(cut)
	if err != nil || !reflect.DeepEqual(argv, []string{"x"}) || !reflect.DeepEqual(env, []string{"A=1"}) {
		t.Fatalf("cut buffer: %q %q %v", argv, env, err)
	}
	// No environment at all.
	argv, env, err = ParseProcArgs(procargs(2, "/bin/x", 0, []string{"x", "y"}, nil, []string{"ptr_munge="}))
	if err != nil || len(argv) != 2 || len(env) != 0 {
		t.Fatalf("no environment: %q %q %v", argv, env, err)
	}
}

func TestParseLsofPids(t *testing.T) {
	out := "p812\nfcwd\nn/Users/me/wt\np99\nf3\nn/Users/me/wt/a.go\np812\n"
	got, err := ParseLsofPids(out)
	if err != nil || !reflect.DeepEqual(got, []int{812, 99}) {
		t.Fatalf("ParseLsofPids = %v, %v", got, err)
	}
	if _, err := ParseLsofPids("pabc\n"); err == nil {
		t.Fatal("a bad pid line: no error")
	}
	if got, err := ParseLsofPids(""); err != nil || len(got) != 0 {
		t.Fatalf("no output: %v, %v", got, err)
	}
}
