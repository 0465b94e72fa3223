package launch_test

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/launch"
)

// TestResolveFindsTheWholeChain: a link in PATH to a #! script run
// through env(1) by an interpreter that is itself a link: every path the
// kernel passes through is named, so a sandbox can show them all.
func TestResolveFindsTheWholeChain(t *testing.T) {
	dir := t.TempDir()
	mk := func(rel, text string) string {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	interp := mk("prefix/versions/v1/bin/interp", "#!/bin/sh\nexec sh \"$@\"\n")
	if err := os.Symlink(interp, filepath.Join(dir, "prefix/interp")); err != nil {
		t.Fatal(err)
	}
	script := mk("pkg/node_modules/cli/cli.js", "#!/usr/bin/env -S interp --flag\necho hi\n")
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../pkg/node_modules/cli/cli.js", filepath.Join(dir, "bin", "cli")); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=" + filepath.Join(dir, "bin") + ":" + filepath.Join(dir, "prefix") + ":/usr/bin:/bin"}
	p, err := launch.Resolve("cli", dir, env)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(p.Paths(), "\n")
	for _, want := range []string{filepath.Join(dir, "bin", "cli"), script, filepath.Join(dir, "prefix", "interp"), interp, "/bin/sh"} {
		if !strings.Contains(got, want) {
			t.Errorf("Paths() lacks %s:\n%s", want, got)
		}
	}
}

// TestResolveRefusesWhatCannotStart: each way a client cannot start is
// one error with exit code 5 and the hint, before anything runs.
func TestResolveRefusesWhatCannotStart(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string, mode os.FileMode) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), mode); err != nil {
			t.Fatal(err)
		}
	}
	write("noexec", "#!/bin/sh\n", 0o644)
	write("nointerp", "#!/no/such/interpreter\n", 0o755)
	write("noenvinterp", "#!/usr/bin/env no-such-interpreter-xyz\n", 0o755)
	write("text", "just text\n", 0o755)
	write("empty", "#!\n", 0o755)
	elf, err := os.ReadFile("/bin/true")
	if err != nil {
		t.Fatal(err)
	}
	foreign := append([]byte(nil), elf...)
	machine := uint16(22) // EM_S390
	if binary.LittleEndian.Uint16(foreign[18:]) == machine {
		machine = 62 // EM_X86_64
	}
	binary.LittleEndian.PutUint16(foreign[18:], machine)
	write("foreign", string(foreign), 0o755)
	env := []string{"PATH=" + dir + ":/usr/bin:/bin"}
	for name, has := range map[string]string{
		"no-such-client-xyz":         `client "no-such-client-xyz" not found in PATH`,
		"noexec":                     `client "noexec" not found in PATH`,
		filepath.Join(dir, "noexec"): "not found or not executable",
		"nointerp":                   `its interpreter "/no/such/interpreter" (the #! line) not found`,
		"noenvinterp":                `its interpreter "no-such-interpreter-xyz" (the #! line) not found`,
		"text":                       "neither a program for this machine nor a #! script",
		"empty":                      "empty #! line",
		"foreign":                    "cannot run on this machine",
	} {
		_, err := launch.Resolve(name, dir, env)
		if err == nil || !strings.Contains(err.Error(), has) || exitcode.Of(err) != exitcode.NotFound || exitcode.HintOf(err) == "" {
			t.Errorf("Resolve(%s) = %v (exit %d, hint %q); want exit 5 with a hint, saying %q", name, err, exitcode.Of(err), exitcode.HintOf(err), has)
		}
	}
	if _, err := launch.Resolve("true", dir, env); err != nil {
		t.Errorf("control: Resolve(true) = %v", err)
	}
}
