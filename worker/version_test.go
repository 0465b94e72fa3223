package worker

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

// TestClientVersionCached: the version is asked once per executable and
// asked again when the executable changes (an upgrade); a client that is
// not installed has no version.
func TestClientVersionCached(t *testing.T) {
	repo := gittest.Init(t)
	st, err := gitstore.Open(context.Background(), repo)
	if err != nil {
		t.Fatal(err)
	}
	e := &Env{St: st, Top: repo}
	bin := t.TempDir()
	calls := filepath.Join(t.TempDir(), "calls")
	script := filepath.Join(bin, "fakeclient")
	write := func(version string) {
		body := "#!/bin/sh\necho x >> " + calls + "\necho '" + version + "'\n"
		if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	count := func() int {
		data, _ := os.ReadFile(calls)
		return strings.Count(string(data), "x")
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	ctx := context.Background()

	write("fake 1.0")
	for i := 0; i < 3; i++ {
		if v := e.clientVersion(ctx, "fakeclient"); v != "fake 1.0" {
			t.Fatalf("version %q, want fake 1.0", v)
		}
	}
	if n := count(); n != 1 {
		t.Fatalf("--version ran %d times, want once", n)
	}
	write("fake 2.0.1") // a different size: an upgrade
	if v := e.clientVersion(ctx, "fakeclient"); v != "fake 2.0.1" {
		t.Fatalf("after upgrade: version %q, want fake 2.0.1", v)
	}
	if n := count(); n != 2 {
		t.Fatalf("--version ran %d times, want twice", n)
	}
	if v := e.clientVersion(ctx, "no-such-client-xyz"); v != "" {
		t.Fatalf("missing client: version %q", v)
	}
}
