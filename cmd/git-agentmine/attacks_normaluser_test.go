package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

// TestAttacksAsNormalUser runs every attack scenario
// (testdata/script/attack_*.txtar, which TestScripts runs as whoever runs
// the tests, on these machines root) once more as the normal user: this
// test binary, installed for that user, runs TestScripts with just that
// scenario, so git, agentmine, the supervisor and the hostile worker all
// run as the user, and each scenario's own assertions (the status is not
// review or done, merge refuses, task show names the violation, the
// honest control ends review and merges) hold for a normal user too. The
// scenarios stay the one place to change. Run as a normal user already,
// TestScripts is that run, and this test skips.
func TestAttacksAsNormalUser(t *testing.T) {
	gittest.SkipShort(t, "every attack scenario run again as a normal user")
	u := gittest.NormalUser(t)
	if !u.Switch {
		t.Skipf("the tests run as %s, a normal user: TestScripts runs the attack scenarios as that user", u.Name)
	}
	scripts, err := filepath.Glob(filepath.Join("testdata", "script", "attack_*.txtar"))
	if err != nil || len(scripts) == 0 {
		t.Fatalf("no attack scenarios in testdata/script: %v", err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// Not named git-agentmine: under that name the binary is agentmine.
	bin := u.Install(t, "agentmine.test", exe)
	// The user cannot read this source tree: the child runs in a copy of
	// the scenarios (all of them, as TestScripts checks its slow list).
	pkg := filepath.Join(t.TempDir(), "pkg")
	all, err := filepath.Glob(filepath.Join("testdata", "script", "*.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, f := range all {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		files[filepath.ToSlash(f)] = string(data)
	}
	gittest.WriteFiles(t, pkg, files)
	u.Give(t, pkg)

	for _, s := range scripts {
		name := strings.TrimSuffix(filepath.Base(s), ".txtar")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			args := []string{"-test.run=^TestScripts$/^" + regexp.QuoteMeta(name) + "$", "-test.v", "-test.short=false", "-test.count=1"}
			if d, ok := t.Deadline(); ok {
				args = append(args, "-test.timeout="+time.Until(d).Round(time.Second).String())
			}
			out, err := u.Command(pkg, bin, args...).CombinedOutput()
			passed := regexp.MustCompile(`(?m)^\s*--- PASS: TestScripts/` + regexp.QuoteMeta(name) + ` \(`)
			if err != nil || !passed.Match(out) {
				t.Fatalf("%s as %s (uid %d): %v\n%s", name, u.Name, u.UID, err, out)
			}
		})
	}
}
