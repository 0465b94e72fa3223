package main

import (
	"os"
	"os/exec"
	"testing"
)

func TestGenStatusFixture(t *testing.T) {
	dir := os.Getenv("AGENTMINE_FIXTURE_DIR")
	if dir == "" {
		t.Skip("set AGENTMINE_FIXTURE_DIR to build the status fixture there")
	}
	exec.Command("git", "init", "-q", "-b", "main", dir).Run()
	buildStatusFixture(t, dir, 10000, 3)
}
