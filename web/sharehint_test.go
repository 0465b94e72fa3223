package web

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

// testShareHint words the share hint as the command line's would, naming
// the remote.
func testShareHint(remote string) string {
	return "nothing is shared through " + remote + "; share with init --remote " + remote
}

// TestShareHint: a repository with an origin and no sync remote shares
// nothing, and the board and Runs pages say so with the command that
// shares; once a sync remote is configured the hint is gone, and a
// repository without a remote never shows it.
func TestShareHint(t *testing.T) {
	repo := gittest.NewRepo(t)
	_, ts := serve(t, repo, false)
	c := client(t, ts)
	const words = "hint: nothing is shared through origin"
	for _, u := range []string{"/", "/runs"} {
		if _, body := get(t, c, ts.URL+u); strings.Contains(body, "hint:") {
			t.Errorf("%s without any remote shows a hint", u)
		}
	}
	git := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("remote", "add", "origin", t.TempDir())
	for _, u := range []string{"/", "/runs"} {
		_, body := get(t, c, ts.URL+u)
		if !strings.Contains(body, words) || !strings.Contains(body, "share with init --remote origin") {
			t.Errorf("%s with an unshared origin does not say how to share:\n%s", u, body)
		}
	}
	if _, body := get(t, c, ts.URL+"/memory"); strings.Contains(body, words) {
		t.Errorf("the Memory Bank page, which starts no work, shows the share hint")
	}
	git("config", "agentmine.remote", "origin")
	for _, u := range []string{"/", "/runs"} {
		if _, body := get(t, c, ts.URL+u); strings.Contains(body, "hint:") {
			t.Errorf("%s shows the share hint although origin is the sync remote", u)
		}
	}
}
