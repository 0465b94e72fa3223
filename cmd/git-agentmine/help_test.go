package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

// runMain runs Main with args and no -C, in the test's environment.
func runMain(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(context.Background(), args, Stdio{In: strings.NewReader(""), Out: &out, Err: &errb}, os.Getenv)
	return code, out.String(), errb.String()
}

// TestHelpCommand checks that `help <command>` prints exactly what
// `<command> --help` prints, for the program and every visible command.
func TestHelpCommand(t *testing.T) {
	gittest.Scrub(t)
	paths := [][]string{{}}
	for _, c := range docsCommands(t) {
		paths = append(paths, c.path)
	}
	for _, p := range paths {
		code, out, errs := runMain(t, append([]string{"help"}, p...)...)
		_, want, _ := runMain(t, append(append([]string{}, p...), "--help")...)
		if code != 0 || errs != "" || out != want || out == "" {
			t.Errorf("help %v: exit %d, stderr %q, stdout differs from --help:\n%s\nwant:\n%s", p, code, errs, out, want)
		}
	}
	for _, args := range [][]string{{"help", "nosuch"}, {"help", "task", "nosuch"}} {
		code, out, errs := runMain(t, args...)
		lines := strings.Split(strings.TrimSuffix(errs, "\n"), "\n")
		if code != 2 || out != "" || len(lines) != 2 || !strings.HasPrefix(lines[0], "error: no help for ") ||
			lines[1] != "hint: see 'git agentmine help' for the list of commands" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2, an error and a hint", args, code, out, errs)
		}
	}
}

// TestVersionCommand checks `version`, `version --json` and `--version`
// against what the Go toolchain recorded in the running binary.
func TestVersionCommand(t *testing.T) {
	gittest.Scrub(t)
	code, out, errs := runMain(t, "version")
	if code != 0 || errs != "" || !strings.HasPrefix(out, "git-agentmine version ") || !strings.HasSuffix(out, " "+runtime.Version()+"\n") {
		t.Errorf("version: exit %d, stderr %q, stdout %q", code, errs, out)
	}
	if _, flag, _ := runMain(t, "--version"); flag != out {
		t.Errorf("--version printed %q, version printed %q", flag, out)
	}
	code, js, errs := runMain(t, "version", "--json")
	var v map[string]any
	if err := json.Unmarshal([]byte(js), &v); code != 0 || errs != "" || err != nil {
		t.Fatalf("version --json: exit %d, stderr %q, %v: %s", code, errs, err, js)
	}
	if v["v"] != 1.0 || v["go"] != runtime.Version() || v["version"] == "" || v["version"] == nil {
		t.Errorf("version --json: %v", v)
	}
	if !strings.HasPrefix(out, "git-agentmine version "+v["version"].(string)+" ") {
		t.Errorf("version %q does not name the JSON version %q", out, v["version"])
	}
}

// TestInstallMan writes the page into a directory that does not exist yet
// and checks it is the page of the source tree, byte for byte; then the
// failure paths leave nothing behind.
func TestInstallMan(t *testing.T) {
	gittest.Scrub(t)
	src, err := os.ReadFile(manPagePath)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "share", "man", "man1")
	code, out, errs := runMain(t, "install-man", "--man-dir", dir)
	page := filepath.Join(dir, "git-agentmine.1")
	if code != 0 || out != "installed "+page+"\n" || !strings.HasPrefix(errs, "warning: man will not find this page") {
		t.Errorf("install-man: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if got, err := os.ReadFile(page); err != nil || !bytes.Equal(got, src) {
		t.Errorf("the installed page differs from %s (%v)", manPagePath, err)
	}
	if fi, err := os.Stat(page); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("the installed page: %v, %v; want mode 0644", fi, err)
	}
	code, out, errs = runMain(t, "install-man", "--man-dir", dir, "--json")
	var res map[string]any
	if err := json.Unmarshal([]byte(out), &res); code != 0 || errs != "" || err != nil || res["path"] != page || res["found"] != false || res["v"] != 1.0 {
		t.Errorf("install-man --json: exit %d, stderr %q, %v: %s", code, errs, err, out)
	}
	if code, out, _ := runMain(t, "install-man", "-q", "--man-dir", dir); code != 0 || out != page+"\n" {
		t.Errorf("install-man -q: exit %d, stdout %q; want the path", code, out)
	}

	// A directory that cannot be made (a file is in the way).
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs = runMain(t, "install-man", "--man-dir", filepath.Join(file, "man1"))
	if code != 1 || out != "" || !strings.HasPrefix(errs, "error: installing the man page: ") || strings.Count(errs, "\n") != 1 {
		t.Errorf("install-man under a file: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	// -C names a repository, which install-man has none of.
	other := t.TempDir()
	code, out, errs = runMain(t, "-C", other, "install-man")
	if code != 2 || out != "" || !strings.Contains(errs, "\nhint: choose where the page goes with --man-dir DIR\n") {
		t.Errorf("-C install-man: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if entries, _ := os.ReadDir(other); len(entries) != 0 {
		t.Errorf("-C install-man wrote %v", entries)
	}
}

// readmeInstall returns the commands of README's Install section, comments
// dropped.
func readmeInstall(t *testing.T) []string {
	t.Helper()
	f, err := os.Open("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var cmds []string
	section, block := false, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "## "):
			section = line == "## Install"
		case section && strings.HasPrefix(line, "```"):
			if block {
				return cmds
			}
			block = true
		case section && block:
			cmd, _, _ := strings.Cut(line, "#")
			if cmd = strings.TrimSpace(cmd); cmd != "" {
				cmds = append(cmds, cmd)
			}
		}
	}
	t.Fatal("README has no code block under ## Install")
	return nil
}

// TestReadmeInstall follows README's install on a machine that has nothing
// of git-agentmine: `go install` into an empty <prefix>/bin, then the rest
// of the section with only that and the system on PATH, a fresh HOME and no
// MANPATH. Then `git agentmine --help` must open the page through git and
// man, and `help task` and `version` must answer.
func TestReadmeInstall(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	for _, tool := range []string{"go", "man"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed (.ci/run installs it)", tool)
		}
	}
	cmds := readmeInstall(t)
	if len(cmds) != 2 || cmds[0] != "go install ./cmd/..." || cmds[1] != "git agentmine install-man" {
		t.Fatalf("README's Install runs %q; this test follows exactly: go install ./cmd/..., git agentmine install-man", cmds)
	}
	prefix := t.TempDir()
	bin := filepath.Join(prefix, "bin")
	home := t.TempDir()
	env := []string{"PATH=" + bin + ":/usr/bin:/bin", "HOME=" + home, "GIT_CONFIG_NOSYSTEM=1"}
	run := func(line string) (int, string, string) {
		t.Helper()
		cmd := exec.Command("sh", "-c", line)
		cmd.Dir = home
		cmd.Env = env
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		if _, ok := err.(*exec.ExitError); err != nil && !ok {
			t.Fatalf("%s: %v", line, err)
		}
		return cmd.ProcessState.ExitCode(), out.String(), errb.String()
	}

	// go install, as README says, with GOBIN standing for $GOPATH/bin.
	build := exec.Command("go", "install", "./cmd/...")
	build.Dir = "../.."
	build.Env = append(os.Environ(), "GOBIN="+bin)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go install: %v\n%s", err, out)
	}
	// Both programs, side by side: serve and mcp run the second.
	for _, name := range []string{"git-agentmine", "agentmine-serve"} {
		if _, err := os.Stat(filepath.Join(bin, name)); err != nil {
			t.Fatalf("go install ./cmd/... did not install %s: %v", name, err)
		}
	}

	// git offers every git-* program on PATH as a subcommand (completion
	// lists them with --list-cmds=others): agentmine, never the server.
	if code, out, errs := run("git --list-cmds=others"); code != 0 || !strings.Contains(out, "agentmine\n") ||
		strings.Contains(out, "serve") {
		t.Errorf("git --list-cmds=others: exit %d, stderr %q, stdout %q; want agentmine and no server", code, errs, out)
	}

	// Before install-man: git hands --help to man, which has no page.
	if code, out, errs := run("git agentmine --help"); code == 0 || !strings.Contains(errs, "No manual entry for git-agentmine") {
		t.Fatalf("git agentmine --help before install-man: exit %d, stdout %.200q, stderr %q; want man's \"No manual entry\" (is a page installed system-wide?)", code, out, errs)
	}

	page := filepath.Join(prefix, "share", "man", "man1", "git-agentmine.1")
	if code, out, errs := run(cmds[1]); code != 0 || out != "installed "+page+"\n" || errs != "" {
		t.Fatalf("%s: exit %d, stdout %q, stderr %q; want the page beside bin and no warning", cmds[1], code, out, errs)
	}
	code, out, errs := run("git agentmine --help")
	if code != 0 || !strings.Contains(out, "GIT-AGENTMINE(1)") || !strings.Contains(out, "run parallel AI coding agents in scoped worktrees") ||
		!strings.Contains(out, "install-man") {
		t.Errorf("git agentmine --help: exit %d, stderr %q, stdout:\n%.400s", code, errs, out)
	}
	code, out, errs = run("git agentmine help task")
	if code != 0 || errs != "" || !strings.HasPrefix(out, "Usage: git agentmine task <command>") || !strings.Contains(out, "task add") {
		t.Errorf("git agentmine help task: exit %d, stderr %q, stdout:\n%s", code, errs, out)
	}
	code, out, errs = run("git agentmine version")
	if code != 0 || errs != "" || !strings.HasPrefix(out, "git-agentmine version ") || !strings.HasSuffix(out, " "+runtime.Version()+"\n") {
		t.Errorf("git agentmine version: exit %d, stderr %q, stdout %q", code, errs, out)
	}
	// The installed git-agentmine finds the installed server: outside a
	// repository, mcp is refused by agentmine-serve itself (exit 6),
	// not as a missing program (exit 5).
	code, out, errs = run("git agentmine mcp </dev/null")
	if code != 6 || out != "" || !strings.Contains(errs, "not a git repository") {
		t.Errorf("git agentmine mcp outside a repository: exit %d, stdout %q, stderr %q", code, out, errs)
	}
}
