package verify

import (
	"context"
	"os/exec"
	"testing"

	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

// sh runs a shell script in dir as a real process, failing the test on error.
func sh(t testing.TB, dir, script string) {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-ec", script)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("script failed: %v\n%s\n%s", err, script, out)
	}
}

// newRepo creates a repository with one commit holding files.
func newRepo(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := gittest.Init(t)
	gittest.CommitFiles(t, dir, "initial", files)
	return dir
}

func ctxT(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return ctx
}
