package isolation_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/isolation"
	"github.com/git-agentmine/git-agentmine/launch"
)

// writeExec writes an executable file, making its directory.
func writeExec(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o755); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// installUnderHome lays out, under home (which is under /tmp), clients
// installed the ways their installers do: a native installer's link in
// ~/.local/bin to a versioned file in ~/.local/share, and an npm global
// package (a link in the prefix's bin to a script in lib/node_modules that
// reads a file of a dependency) whose #! line runs an interpreter of a
// version manager in HOME through env(1). It returns the PATH that finds
// them.
func installUnderHome(t *testing.T, home string) string {
	interp := filepath.Join(home, ".nvm", "versions", "node", "v1", "bin")
	writeExec(t, filepath.Join(interp, "fakenode"), "#!/bin/sh\nexec /bin/sh \"$@\"\n")
	writeExec(t, filepath.Join(home, ".local", "share", "native", "versions", "1.0"), "#!/bin/sh\necho native ran\n")
	symlink(t, "../share/native/versions/1.0", filepath.Join(home, ".local", "bin", "native"))
	pkg := filepath.Join(home, ".npm-global", "lib", "node_modules", "@scope", "cli")
	writeExec(t, filepath.Join(pkg, "cli.js"), "#!/usr/bin/env fakenode\n. \"$(dirname \"$(readlink -f \"$0\")\")/node_modules/dep/lib.sh\"\necho \"npm ran with $DEP\"\n")
	if err := os.MkdirAll(filepath.Join(pkg, "node_modules", "dep"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pkg, "node_modules", "dep", "lib.sh"), []byte("DEP=dep-loaded\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	symlink(t, "../lib/node_modules/@scope/cli/cli.js", filepath.Join(home, ".npm-global", "bin", "npmcli"))
	if err := os.WriteFile(filepath.Join(home, "secret.txt"), []byte("the user's"), 0o600); err != nil {
		t.Fatal(err)
	}
	return strings.Join([]string{filepath.Join(home, ".local", "bin"), filepath.Join(home, ".npm-global", "bin"), interp, "/usr/bin", "/bin"}, ":")
}

func bwrapCaps(t *testing.T) isolation.Caps {
	t.Helper()
	caps := isolation.Probe(context.Background(), "", false)
	if caps.Why(isolation.Bwrap) != "" {
		if caps.BwrapPath != "" {
			t.Skip("the kernel refuses bubblewrap's namespaces: " + caps.Bwrap)
		}
		t.Fatalf("bwrap: %s (.ci/run installs bubblewrap)", caps.Bwrap)
	}
	return caps
}

// TestBwrapRunsClientsInstalledUnderHome: at bwrap the private HOME and
// /tmp hide the real ones, yet a client installed under HOME (native
// installer, npm global with an interpreter from a version manager) and a
// command in /tmp run, from the package tree they were installed with;
// the rest of the real HOME stays hidden and nothing shown is writable.
func TestBwrapRunsClientsInstalledUnderHome(t *testing.T) {
	caps := bwrapCaps(t)
	root := t.TempDir()
	home := filepath.Join(root, "home")
	path := installUnderHome(t, home)
	tmpCmd := filepath.Join(root, "tools", "tmpcmd")
	writeExec(t, tmpCmd, "#!/bin/sh\necho tmp ran\n")
	wt, common := filepath.Join(root, "wt"), filepath.Join(root, "git")
	gitDir := filepath.Join(common, "worktrees", "wt")
	for _, d := range []string{wt, gitDir, filepath.Join(common, "objects"), filepath.Join(common, "refs", "heads")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	env := append(os.Environ(), "PATH="+path)
	for _, c := range []struct{ name, want string }{{"native", "native ran"}, {"npmcli", "npm ran with dep-loaded"}, {tmpCmd, "tmp ran"}} {
		prog, err := launch.Resolve(c.name, wt, env)
		if err != nil {
			t.Fatalf("Resolve(%s): %v", c.name, err)
		}
		box, err := isolation.Prepare(context.Background(), isolation.Plan{Level: isolation.Bwrap, Worktree: wt, GitDir: gitDir,
			CommonDir: common, Branch: "b", Home: home, State: filepath.Join(root, "state-"+filepath.Base(c.name)), Bwrap: caps.BwrapPath,
			Programs: prog.Paths(), Environ: env})
		if err != nil {
			t.Fatal(err)
		}
		argv := box.Command([]string{"sh", "-c", `"$1"; cat "$HOME/secret.txt" 2>/dev/null && echo SECRET; { echo x > "$(dirname "$(command -v "$1")")/w"; } 2>/dev/null && echo WROTE; true`, "sh", c.name})
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = append(env, box.Env()...)
		out, err := cmd.CombinedOutput()
		box.Close()
		if err != nil {
			t.Fatalf("%s in the sandbox: %v\n%s", c.name, err, out)
		}
		if got := strings.TrimSpace(string(out)); got != c.want {
			t.Errorf("%s in the sandbox said %q, want %q (shown: %v)", c.name, got, c.want, box.Visible())
		}
	}
	// Without the programs, the sandbox shows none of them: the test
	// above is not passing because HOME is visible anyway.
	box, err := isolation.Prepare(context.Background(), isolation.Plan{Level: isolation.Bwrap, Worktree: wt, GitDir: gitDir,
		CommonDir: common, Branch: "b", Home: home, State: filepath.Join(root, "state-none"), Bwrap: caps.BwrapPath, Environ: env})
	if err != nil {
		t.Fatal(err)
	}
	defer box.Close()
	argv := box.Command([]string{"native"})
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(env, box.Env()...)
	if out, err := cmd.CombinedOutput(); err == nil {
		t.Fatalf("control: the client ran without being shown: %s", out)
	}
}

// TestVisibleNeverShowsWholeHome: a program lying directly in HOME or
// /tmp, or in a directory holding the repository, is shown alone, never
// with its directory; one in ~/bin brings its bin directory, not ~/lib.
func TestVisibleNeverShowsWholeHome(t *testing.T) {
	caps := bwrapCaps(t)
	root := t.TempDir()
	home := filepath.Join(root, "home")
	main := filepath.Join(home, "src", "repo")
	for _, d := range []string{filepath.Join(main, ".git", "objects"), filepath.Join(main, ".git", "refs", "heads"), filepath.Join(main, ".git", "worktrees", "wt")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	inHome, inSrc, inBin := filepath.Join(home, "agent.sh"), filepath.Join(home, "src", "agent.sh"), filepath.Join(home, "bin", "tool")
	writeExec(t, inHome, "#!/bin/sh\n")
	writeExec(t, inSrc, "#!/bin/sh\n")
	writeExec(t, inBin, "#!/bin/sh\n")
	writeExec(t, filepath.Join(home, "lib", "private"), "not the tool's\n")
	box, err := isolation.Prepare(context.Background(), isolation.Plan{Level: isolation.Bwrap, Worktree: filepath.Join(main, ".agentmine", "worktrees", "wt"),
		GitDir: filepath.Join(main, ".git", "worktrees", "wt"), CommonDir: filepath.Join(main, ".git"), MainTop: main, Branch: "b", Home: home,
		State: filepath.Join(root, "state"), Bwrap: caps.BwrapPath, Programs: []string{inHome, inSrc, inBin}, Environ: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	defer box.Close()
	got := strings.Join(box.Visible(), " ")
	if want := inHome + " " + filepath.Join(home, "bin") + " " + inSrc; got != want {
		t.Errorf("Visible() = %s, want %s", got, want)
	}
}

// TestCheckRefusesWhatALevelCannotHonour: a client inside the hidden main
// checkout at bwrap and clone, a configuration variable naming a special
// file at every sandboxed level; none refuses nothing, and a relative
// variable (a path in the worktree at every level) passes.
func TestCheckRefusesWhatALevelCannotHonour(t *testing.T) {
	root := t.TempDir()
	main := filepath.Join(root, "repo")
	fifo := filepath.Join(root, "fifo")
	if err := exec.Command("mkfifo", fifo, filepath.Join(root, "config.toml")).Run(); err != nil {
		t.Fatal(err)
	}
	plan := func(l isolation.Level, programs []string, env ...string) isolation.Plan {
		return isolation.Plan{Level: l, MainTop: main, CommonDir: filepath.Join(main, ".git"), Worktree: filepath.Join(main, ".agentmine", "worktrees", "w"),
			Home: filepath.Join(root, "home"), Programs: programs, Environ: env}
	}
	inMain := []string{filepath.Join(main, "tools", "agent")}
	for _, c := range []struct {
		name string
		p    isolation.Plan
		has  string
	}{
		{"client in the main checkout at bwrap", plan(isolation.Bwrap, inMain), "which isolation level bwrap hides"},
		{"client in the main checkout at clone", plan(isolation.Clone, inMain), "which isolation level clone hides"},
		{"FIFO as OPENCODE_CONFIG", plan(isolation.Landlock, nil, "OPENCODE_CONFIG="+fifo), "OPENCODE_CONFIG=" + fifo + ": it is not a regular file"},
		{"FIFO as GIT_CONFIG_GLOBAL", plan(isolation.Bwrap, nil, "GIT_CONFIG_GLOBAL="+fifo), "is not a regular file"},
		{"CODEX_HOME naming a file", plan(isolation.Clone, nil, "CODEX_HOME="+fifo), "not a directory"},
		{"a FIFO in CODEX_HOME", plan(isolation.Bwrap, nil, "CODEX_HOME="+root), "config.toml is not a regular file"},
	} {
		err := isolation.Check(c.p)
		if err == nil || !strings.Contains(err.Error(), c.has) || exitcode.Of(err) != exitcode.Config {
			t.Errorf("%s: Check = %v (exit %d), want exit 3 saying %q", c.name, err, exitcode.Of(err), c.has)
		}
	}
	for _, p := range []isolation.Plan{plan(isolation.Landlock, inMain), plan(isolation.None, inMain, "OPENCODE_CONFIG="+fifo),
		plan(isolation.Bwrap, nil, "OPENCODE_CONFIG=oc.json"),
		plan(isolation.Bwrap, []string{filepath.Join(main, ".agentmine", "worktrees", "w", "run.sh")}, "CODEX_HOME="+filepath.Join(root, "absent"))} {
		if err := isolation.Check(p); err != nil {
			t.Errorf("Check(%s, %v, %v) = %v, want nil", p.Level, p.Programs, p.Environ, err)
		}
	}
}

// TestConfigVarsHonoured: each configuration variable's file (or the
// client files of its directory), under HOME or elsewhere, is copied into
// the private HOME and the variable points at the copy, which the worker
// may write; at bwrap the path inside HOME is unchanged. HostEnv names the
// same copies as this process sees them.
func TestConfigVarsHonoured(t *testing.T) {
	root := t.TempDir()
	home, elsewhere := filepath.Join(root, "home"), filepath.Join(root, "etc")
	files := map[string]string{
		filepath.Join(home, ".codex-alt", "config.toml"):    "model = 'x'\n",
		filepath.Join(home, ".codex-alt", "sessions", "s"):  "history, not copied",
		filepath.Join(home, "oc.json"):                      "{}\n",
		filepath.Join(elsewhere, "claude", "settings.json"): "{\"a\":1}\n",
	}
	for p, text := range files {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	env := []string{"CODEX_HOME=" + filepath.Join(home, ".codex-alt"), "OPENCODE_CONFIG=" + filepath.Join(home, "oc.json"),
		"CLAUDE_CONFIG_DIR=" + filepath.Join(elsewhere, "claude"), "XDG_CACHE_HOME=" + filepath.Join(home, ".cache"), "GOMODCACHE=" + filepath.Join(home, "go", "pkg", "mod"), "NVM_DIR=" + filepath.Join(home, ".nvm"),
		"OPENCODE_CONFIG_DIR=relative/in/worktree"}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, lvl := range []isolation.Level{isolation.Landlock, isolation.Bwrap} {
		state := filepath.Join(root, "state-"+string(lvl))
		box, err := isolation.Prepare(context.Background(), isolation.Plan{Level: lvl, Worktree: root, GitDir: root, CommonDir: filepath.Join(root, "git"),
			Home: home, State: state, Self: self, Bwrap: "bwrap", Environ: env})
		if err != nil {
			t.Fatal(err)
		}
		seen, private := home, filepath.Join(state, "home")
		if lvl == isolation.Landlock {
			seen = private
		}
		want := map[string]string{
			"CODEX_HOME":        filepath.Join(seen, ".codex-alt"),
			"OPENCODE_CONFIG":   filepath.Join(seen, "oc.json"),
			"CLAUDE_CONFIG_DIR": filepath.Join(seen, ".agentmine-env", "CLAUDE_CONFIG_DIR"),
			"XDG_CACHE_HOME":    filepath.Join(seen, ".cache"),
			"GOMODCACHE":        filepath.Join(seen, "go", "pkg", "mod"),
		}
		got := map[string]string{}
		for _, kv := range box.Env() {
			k, v, _ := strings.Cut(kv, "=")
			got[k] = v
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s: %s=%q, want %q", lvl, k, got[k], v)
			}
		}
		for _, k := range []string{"NVM_DIR", "OPENCODE_CONFIG_DIR"} {
			if v, ok := got[k]; ok {
				t.Errorf("%s: %s (no client configuration, or relative) was changed to %q", lvl, k, v)
			}
		}
		for _, c := range [][2]string{{".codex-alt/config.toml", "model = 'x'\n"}, {"oc.json", "{}\n"}, {".agentmine-env/CLAUDE_CONFIG_DIR/settings.json", "{\"a\":1}\n"}} {
			data, err := os.ReadFile(filepath.Join(private, c[0]))
			if err != nil || string(data) != c[1] {
				t.Errorf("%s: private copy %s = %q, %v; want %q", lvl, c[0], data, err, c[1])
			}
		}
		if st, err := os.Stat(filepath.Join(private, "go", "pkg", "mod")); err != nil || !st.IsDir() {
			t.Errorf("%s: GOMODCACHE's directory was not made in the private HOME: %v", lvl, err)
		}
		if _, err := os.Stat(filepath.Join(private, ".codex-alt", "sessions")); err == nil {
			t.Errorf("%s: CODEX_HOME's history was copied too", lvl)
		}
		if host := strings.Join(box.HostEnv(), " "); !strings.Contains(host, "CODEX_HOME="+filepath.Join(private, ".codex-alt")) {
			t.Errorf("%s: HostEnv = %s, want CODEX_HOME at the private copy", lvl, host)
		}
		box.Close()
	}
}

// TestBwrapHomeThroughALink: a HOME that is a link (/home/u to
// /data/u) hides its target in the sandbox too (bubblewrap mounts the
// private HOME where the link leads), so a client whose real path names
// the target is still shown. The HOME is outside /tmp, which the sandbox
// replaces whole: under /var/tmp.
func TestBwrapHomeThroughALink(t *testing.T) {
	caps := bwrapCaps(t)
	root := t.TempDir()
	outside, err := os.MkdirTemp("/var/tmp", "agentmine-home-link-")
	if err != nil {
		t.Skipf("no directory outside /tmp to put a HOME in: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(outside) })
	real := filepath.Join(outside, "data", "u")
	installUnderHome(t, real)
	home := filepath.Join(outside, "u")
	symlink(t, real, home)
	wt, common := filepath.Join(root, "wt"), filepath.Join(root, "git")
	gitDir := filepath.Join(common, "worktrees", "wt")
	for _, d := range []string{wt, gitDir, filepath.Join(common, "objects"), filepath.Join(common, "refs", "heads")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	env := append(os.Environ(), "PATH="+filepath.Join(home, ".local", "bin")+":/usr/bin:/bin")
	prog, err := launch.Resolve("native", wt, env)
	if err != nil {
		t.Fatal(err)
	}
	box, err := isolation.Prepare(context.Background(), isolation.Plan{Level: isolation.Bwrap, Worktree: wt, GitDir: gitDir,
		CommonDir: common, Branch: "b", Home: home, State: filepath.Join(root, "state"), Bwrap: caps.BwrapPath,
		Programs: prog.Paths(), Environ: env})
	if err != nil {
		t.Fatal(err)
	}
	defer box.Close()
	argv := box.Command([]string{"native"})
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(env, box.Env()...)
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "native ran" {
		t.Errorf("native through a linked HOME: %v: %s (shown: %v)", err, out, box.Visible())
	}
}
