package gitstore

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

// TestStoreRunsNoHooks: a reference-transaction hook (which a worker of
// the same user can install) runs for git's own ref updates but not for
// the store's: agentmine's state writes never run repository hooks.
func TestStoreRunsNoHooks(t *testing.T) {
	ctx := context.Background()
	dir := objRepo(t)
	marker := filepath.Join(t.TempDir(), "hook-ran")
	hook := filepath.Join(dir, ".git", "hooks", "reference-transaction")
	if err := os.WriteFile(hook, []byte("#!/bin/sh\ntouch '"+marker+"'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	// a user-supplied GIT_CONFIG_COUNT stays in force next to the store's
	t.Setenv("GIT_CONFIG_COUNT", "1")
	t.Setenv("GIT_CONFIG_KEY_0", "agentmine.probe")
	t.Setenv("GIT_CONFIG_VALUE_0", "kept")
	s := objOpen(t, dir)
	if v, ok := s.Config("agentmine.probe"); !ok || v != "kept" {
		t.Fatalf("agentmine.probe = %q, %v: the environment's config was lost", v, ok)
	}
	k := Kind{Dir: "things", File: "thing.json", Noun: "thing", Version: 1}
	if _, err := s.Create(ctx, k, NewID(), Change{Data: []byte(`{"v":1}`), Message: "one"}); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendNote(ctx, gittest.Git(t, dir, "rev-parse", "HEAD"), []byte(`{"v":1}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the store's ref update ran the repository's reference-transaction hook")
	}
	gittest.Git(t, dir, "update-ref", "refs/heads/probe", "HEAD")
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("git's own update-ref did not run the hook either (%v): this test proves nothing", err)
	}
}
