package gitstore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/git-agentmine/git-agentmine/gitcmd"
	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

// TestTransactSurvivesCancel: a context cancelled while git applies a ref
// transaction does not kill update-ref half-way, so the caller learns what
// happened to the refs. A reference-transaction hook (run with a plain
// runner: the store's own git runs no hooks) holds update-ref after it
// committed until the context is cancelled. Killing it there used to
// return an error for a write that had happened: a supervisor interrupted
// while it recorded its worker's pid took its own write for a forged one.
func TestTransactSurvivesCancel(t *testing.T) {
	dir := objRepo(t)
	marks := t.TempDir()
	hook := filepath.Join(dir, ".git", "hooks", "reference-transaction")
	script := "#!/bin/sh\n[ \"$1\" = committed ] || exit 0\ntouch '" + marks + "/committed'\n" +
		"i=0; while [ ! -e '" + marks + "/cancelled' ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done\n"
	if err := os.WriteFile(hook, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	r, err := gitcmd.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	head := gittest.Git(t, dir, "rev-parse", "HEAD")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- transact(ctx, r, "0000000000000000000000000000000000000000", []RefOp{{Verb: "create", Ref: "refs/agentmine/probe", New: head}})
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(marks, "committed")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the reference-transaction hook never saw the commit")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	time.Sleep(50 * time.Millisecond) // let a context-bound process be killed
	if err := os.WriteFile(filepath.Join(marks, "cancelled"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("transact reported %v for a transaction git committed", err)
	}
	if got := gittest.Git(t, dir, "rev-parse", "refs/agentmine/probe"); got != head {
		t.Fatalf("refs/agentmine/probe = %s, want %s", got, head)
	}

	// A context already done refuses the transaction: nothing is written.
	s := objOpen(t, dir)
	if err := s.Transact(ctx, []RefOp{{Verb: "create", Ref: "refs/agentmine/late", New: head}}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Transact with a cancelled context: %v, want context.Canceled", err)
	}
	if out, _ := r.Output(context.Background(), "for-each-ref", "refs/agentmine/late"); out != "" {
		t.Fatalf("a cancelled Transact wrote its ref: %s", out)
	}
}
