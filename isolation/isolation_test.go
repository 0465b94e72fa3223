package isolation_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/isolation"
)

// TestMain lets this test binary act as the Landlock helper, as the
// git-agentmine binary does (isolation.HelperArg).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == isolation.HelperArg {
		os.Exit(isolation.RunHelper(os.Args[2:], os.Stderr))
	}
	os.Exit(m.Run())
}

func TestParseLevel(t *testing.T) {
	for in, want := range map[string]isolation.Level{"": isolation.Auto, "auto": isolation.Auto, "none": isolation.None,
		"landlock": isolation.Landlock, "bwrap": isolation.Bwrap, "clone": isolation.Clone} {
		got, err := isolation.ParseLevel(in)
		if err != nil || got != want {
			t.Errorf("ParseLevel(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	_, err := isolation.ParseLevel("chroot")
	if !errors.Is(err, isolation.ErrUnknownLevel) || exitcode.Of(err) != exitcode.Config {
		t.Fatalf("ParseLevel(chroot) = %v (exit %d), want ErrUnknownLevel with exit code Config", err, exitcode.Of(err))
	}
	if !strings.Contains(err.Error(), `"chroot"`) || !strings.Contains(err.Error(), "none, landlock, seatbelt, bwrap, clone, auto") {
		t.Errorf("error does not name the value and the known levels: %v", err)
	}
}

// TestChoose covers the decisions on machines that lack a level: the
// error without fallback, the strongest weaker level with it, and the
// default.
func TestChoose(t *testing.T) {
	all := isolation.Caps{LandlockABI: 7}
	noBwrap := isolation.Caps{LandlockABI: 7, Bwrap: "bwrap is not installed"}
	nothing := isolation.Caps{Landlock: "the kernel has no Landlock", Bwrap: "bwrap is not installed"}
	for _, c := range []struct {
		name     string
		caps     isolation.Caps
		want     isolation.Level
		fallback bool
		got      isolation.Level
		noteHas  string
		err      bool
	}{
		{"auto with landlock", all, isolation.Auto, false, isolation.Landlock, "", false},
		{"auto without landlock", nothing, isolation.Auto, false, isolation.None, "", false},
		{"clone here", all, isolation.Clone, false, isolation.Clone, "", false},
		{"bwrap missing", noBwrap, isolation.Bwrap, false, "", "", true},
		{"clone needs bwrap", noBwrap, isolation.Clone, false, "", "", true},
		{"clone falls back to landlock", noBwrap, isolation.Clone, true, isolation.Landlock, "clone asked for, not available here (it needs bwrap: bwrap is not installed): fell back to landlock", false},
		{"landlock falls back to none", nothing, isolation.Landlock, true, isolation.None, "fell back to none", false},
		{"none always", nothing, isolation.None, false, isolation.None, "", false},
	} {
		got, note, err := c.caps.Choose(c.want, c.fallback)
		if c.err {
			if !errors.Is(err, isolation.ErrUnavailable) || exitcode.Of(err) != exitcode.Config {
				t.Errorf("%s: err = %v, want ErrUnavailable with exit code Config", c.name, err)
			}
			continue
		}
		if err != nil || got != c.got || !strings.Contains(note, c.noteHas) || (c.noteHas == "" && note != "") {
			t.Errorf("%s: Choose = %q, %q, %v; want %q with a note holding %q", c.name, got, note, err, c.got, c.noteHas)
		}
	}
}

// TestLandlockHelperRestrictsOnlyTheWorker runs the helper as a real
// process: the command it execs can write the directory it was given and
// nothing else, while this process (the supervisor's side) still can.
func TestLandlockHelperRestrictsOnlyTheWorker(t *testing.T) {
	caps := isolation.Probe(context.Background(), "", true)
	if caps.Landlock != "" {
		t.Skip("landlock: " + caps.Landlock)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	rw, other := t.TempDir(), t.TempDir()
	script := `echo in > "$1/ok" && echo out > "$2/no"`
	cmd := exec.Command(self, isolation.HelperArg, "--rw", rw, "--", "sh", "-c", script, "sh", rw, other)
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the restricted command wrote outside its directory: %s", out)
	}
	if !strings.Contains(string(out), "Permission denied") {
		t.Errorf("want a permission error from the worker, got: %s", out)
	}
	if _, err := os.Stat(filepath.Join(rw, "ok")); err != nil {
		t.Errorf("the allowed write did not happen: %v", err)
	}
	if _, err := os.Stat(filepath.Join(other, "no")); err == nil {
		t.Error("the forbidden file exists")
	}
	// The helper restricted the child it became, not this process.
	if err := os.WriteFile(filepath.Join(other, "supervisor"), []byte("x"), 0o644); err != nil {
		t.Errorf("the supervisor's side is restricted too: %v", err)
	}
}

func TestLandlockHelperBadArguments(t *testing.T) {
	var stderr strings.Builder
	for _, args := range [][]string{{"--rw"}, {"--bogus", "--", "true"}, {"--rw", "/tmp", "--"}} {
		stderr.Reset()
		if code := isolation.RunHelper(args, &stderr); code != 126 {
			t.Errorf("RunHelper(%q) = %d, want 126", args, code)
		}
		if msg := stderr.String(); !strings.HasPrefix(msg, "agentmine landlock helper: ") || strings.Count(msg, "\n") != 1 {
			t.Errorf("RunHelper(%q) said %q, want one line", args, msg)
		}
	}
}

// TestProbeCache: a probe is cached and reused while its key matches; a
// cache from another machine state (another key) is probed again.
func TestProbeCache(t *testing.T) {
	file := filepath.Join(t.TempDir(), "probe.json")
	first := isolation.Probe(context.Background(), file, false)
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("no cache written: %v", err)
	}
	again := isolation.Probe(context.Background(), file, false)
	if !again.Probed.Equal(first.Probed) {
		t.Errorf("the cached probe was not reused: %v then %v", first.Probed, again.Probed)
	}
	stale := strings.Replace(string(data), first.Key, "kernel 0.0; uid 0; no-bwrap-at-all", 1)
	if err := os.WriteFile(file, []byte(stale), 0o644); err != nil {
		t.Fatal(err)
	}
	if fresh := isolation.Probe(context.Background(), file, false); fresh.Probed.Equal(first.Probed) || fresh.Key != first.Key {
		t.Errorf("a cache with another key was reused")
	}
}

// TestLandlockWorkerCannotSignalItsSupervisor: the restricted worker
// cannot signal a process outside its Landlock domain (kill -0 probes the
// permission without sending anything), where the kernel scopes signals.
func TestLandlockWorkerCannotSignalItsSupervisor(t *testing.T) {
	caps := isolation.Probe(context.Background(), "", true)
	if caps.Landlock != "" {
		t.Skip("landlock: " + caps.Landlock)
	}
	if caps.LandlockABI < 6 {
		t.Skipf("landlock ABI %d has no signal scoping (6+)", caps.LandlockABI)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	pid := strconv.Itoa(os.Getpid())
	if out, err := exec.Command("sh", "-c", `kill -0 "$1"`, "sh", pid).CombinedOutput(); err != nil {
		t.Fatalf("control: an unrestricted process cannot signal this one: %v %s", err, out)
	}
	out, err := exec.Command(self, isolation.HelperArg, "--rw", t.TempDir(), "--", "sh", "-c", `kill -0 "$1"`, "sh", pid).CombinedOutput()
	if err == nil {
		t.Fatalf("the restricted worker could signal its supervisor: %s", out)
	}
}

// TestBwrapWithoutHome: a user whose HOME does not exist (the nobody
// account's /nonexistent) still gets a sandbox, with its private HOME in
// the private /tmp; the worker writes its worktree, and what it writes
// next to it lands in the private /tmp, never on the host.
func TestBwrapWithoutHome(t *testing.T) {
	caps := isolation.Probe(context.Background(), "", false)
	if caps.Why(isolation.Bwrap) != "" {
		if caps.BwrapPath != "" {
			t.Skip("the kernel refuses bubblewrap's namespaces: " + caps.Bwrap)
		}
		t.Fatalf("bwrap: %s (.ci/run installs bubblewrap)", caps.Bwrap)
	}
	root := t.TempDir()
	wt, common, gitDir := filepath.Join(root, "wt"), filepath.Join(root, "git"), filepath.Join(root, "git", "worktrees", "wt")
	for _, d := range []string{wt, gitDir, filepath.Join(common, "objects"), filepath.Join(common, "refs", "heads")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	box, err := isolation.Prepare(context.Background(), isolation.Plan{Level: isolation.Bwrap, Worktree: wt, GitDir: gitDir,
		CommonDir: common, Branch: "b", Home: "/nonexistent-home-of-nobody", State: filepath.Join(root, "state"), Bwrap: caps.BwrapPath})
	if err != nil {
		t.Fatal(err)
	}
	defer box.Close()
	argv := box.Command([]string{"sh", "-c", `echo "$HOME"; echo x > "$HOME/f" && echo y > ok; echo rc=$?; echo z > "$1/escape" 2>/dev/null; true`, "sh", root})
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), box.Env()...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("sandboxed worker: %v\n%s", err, out)
	}
	if !strings.HasPrefix(string(out), "/tmp/agentmine-home\n") || !strings.HasSuffix(string(out), "rc=0\n") {
		t.Errorf("the sandboxed worker said %q; want its HOME in /tmp, then rc=0", out)
	}
	if _, err := os.Stat(filepath.Join(wt, "ok")); err != nil {
		t.Errorf("the worktree write did not land: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "escape")); err == nil {
		t.Error("the worker wrote outside its worktree")
	}
}
