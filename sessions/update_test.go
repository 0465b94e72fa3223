package sessions

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

// TestUpdateAt: a session updated at the commit Create returned is written
// with no read of its document (one git process: the ref update); when the
// ref has moved meanwhile, the change is made to the session as it is now,
// and what moved it is kept.
func TestUpdateAt(t *testing.T) {
	ctx := context.Background()
	dir := gittest.NewRepo(t)
	counter := gittest.NewGitCounter(t)
	t.Setenv("PATH", counter.Dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	st := open(t, dir)
	s, root, err := Create(ctx, st, Session{ID: gitstore.NewID(), Task: gitstore.NewID(), Agent: "coder", Client: "custom", Mode: ModeManual})
	if err != nil {
		t.Fatal(err)
	}
	counter.Reset()
	got, err := UpdateAt(ctx, st, s, root, "session prepared", func(s *Session) { s.Sparse = []string{"/*"} })
	if err != nil {
		t.Fatal(err)
	}
	if calls := counter.Calls(t); calls != "-c core.warnAmbiguousRefs=false update-ref --stdin\n" {
		t.Errorf("UpdateAt ran\n%s", calls)
	}
	stored, err := st.Get(ctx, Kind, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := Decode(stored.Data); len(d.Sparse) != 1 || len(got.Sparse) != 1 {
		t.Fatalf("stored %+v, returned %+v", d.Sparse, got.Sparse)
	}
	if msg := gittest.Git(t, dir, "log", "-1", "--format=%s", Kind.Ref(s.ID)); msg != "session prepared" {
		t.Errorf("commit message %q", msg)
	}

	// From a stale commit: the update lands on the current document.
	if _, err := Update(ctx, st, s.ID, "pid", func(s *Session) { s.Pid = 42 }); err != nil {
		t.Fatal(err)
	}
	got, err = UpdateAt(ctx, st, s, root, "late", func(s *Session) { s.ClientVersion = "v1" })
	if err != nil {
		t.Fatal(err)
	}
	if got.Pid != 42 || got.ClientVersion != "v1" || len(got.Sparse) != 1 {
		t.Errorf("after a stale UpdateAt: %+v", got)
	}
	log := gittest.Git(t, dir, "log", "--format=%s", Kind.Ref(s.ID))
	if !strings.HasPrefix(log, "late\npid\nsession prepared\n") {
		t.Errorf("history:\n%s", log)
	}
}
