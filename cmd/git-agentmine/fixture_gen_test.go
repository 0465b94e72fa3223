package main

import (
	"os"
	"testing"

	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

func TestGenStatusFixture(t *testing.T) {
	dir := os.Getenv("AGENTMINE_FIXTURE_DIR")
	if dir == "" {
		t.Skip("set AGENTMINE_FIXTURE_DIR to build the status fixture there")
	}
	gittest.Git(t, "", "init", "-q", "-b", "main", dir)
	buildStatusFixture(t, dir, 10000, 3)
}
