package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

// TestStopDuringPreparationKeepsSessions: `run stop` lands while the run
// still prepares its two sessions (recorded, listed as running, their
// worktrees being made: here the client's version probe holds them, as a
// slow checkout did on a loaded machine). Processes listing the sessions
// all along never see one vanish: each stays, recorded as stopped before
// its worker started (exit 143, SIGTERM, as docs/trust.md says of a stop during
// set-up), and a listing after the stop holds both. They used to be
// rolled back (deleted), and `session list` right after `run stop` found
// fewer sessions than `run status` had shown running.
func TestStopDuringPreparationKeepsSessions(t *testing.T) {
	gittest.SkipShort(t, "a detached run stopped mid-preparation, listed by two processes meanwhile")
	repo := testRepo(t)
	run(t, repo, "git", "agentmine", "init")
	dir := t.TempDir()
	// A client whose version probe waits (at most a minute) for a file
	// that never comes: preparation blocks after the session is recorded.
	client := filepath.Join(dir, "slow-client")
	script := fmt.Sprintf("#!/bin/sh\nif [ \"$1\" = --version ]; then\n  i=0; while [ ! -e %q ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done\n  echo 1.0; exit 0\nfi\nsleep 60\n", filepath.Join(dir, "never"))
	if err := os.WriteFile(client, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	gittest.WriteFiles(t, repo, map[string]string{
		".agentmine/agents/slow.toml": fmt.Sprintf("client = \"claude-code\"\ncommand = [%q]\n[scope]\nwrite = [\"**\"]\n", client)})
	gittest.Git(t, repo, "add", "-A")
	gittest.Git(t, repo, "commit", "-qm", "slow agent")
	for i := 0; i < 3; i++ {
		run(t, repo, "git", "agentmine", "task", "add", fmt.Sprintf("slow %d", i), "-q", "--assignee", "slow")
	}
	run(t, repo, "git", "agentmine", "run", "--detach", "--name", "bg", "--parallel", "2")
	var st runStatusJSON
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		json.Unmarshal([]byte(run(t, repo, "git", "agentmine", "run", "status", "bg", "--json")), &st)
		if len(st.Running) == 2 || time.Now().After(deadline) {
			break
		}
	}
	if len(st.Running) != 2 {
		t.Fatalf("run status: %d running, want the 2 being prepared", len(st.Running))
	}
	// Two processes list the sessions over and over, one listing a line,
	// until the stop file appears.
	stop := filepath.Join(dir, "stop")
	var listers []*exec.Cmd
	var outs []*strings.Builder
	for l := 0; l < 2; l++ {
		cmd := exec.Command("sh", "-c", fmt.Sprintf(`while [ ! -e %q ]; do echo "$(git agentmine session list -q | sort | tr '\n' ' ')"; done`, stop))
		cmd.Dir = repo
		var out strings.Builder
		cmd.Stdout = &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		listers, outs = append(listers, cmd), append(outs, &out)
	}
	time.Sleep(300 * time.Millisecond) // a few listings before the stop
	run(t, repo, "git", "agentmine", "run", "stop", "bg", "--reason", "enough")
	time.Sleep(300 * time.Millisecond) // and a few after
	if err := os.WriteFile(stop, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for l, cmd := range listers {
		if err := cmd.Wait(); err != nil {
			t.Errorf("lister %d: %v", l, err)
		}
		seen := map[string]bool{}
		lines := strings.Split(strings.TrimSpace(outs[l].String()), "\n")
		for i, line := range lines {
			have := map[string]bool{}
			for _, id := range strings.Fields(line) {
				have[id] = true
			}
			for id := range seen {
				if !have[id] {
					t.Fatalf("lister %d, listing %d of %d: session %s, listed before, is gone: %q", l, i+1, len(lines), id, line)
				}
			}
			for id := range have {
				seen[id] = true
			}
		}
		if len(seen) != 2 {
			t.Errorf("lister %d saw %d sessions, want 2", l, len(seen))
		}
	}
	var ss []struct {
		Outcome *struct {
			ExitCode int    `json:"exit_code"`
			Signal   string `json:"signal"`
			Reason   string `json:"reason"`
		} `json:"outcome"`
	}
	json.Unmarshal([]byte(run(t, repo, "git", "agentmine", "session", "list", "--json")), &ss)
	if len(ss) != 2 {
		t.Fatalf("after run stop: %d sessions, want the 2 it was preparing", len(ss))
	}
	for _, s := range ss {
		if o := s.Outcome; o == nil || o.ExitCode != 143 || o.Signal != "SIGTERM" || o.Reason != "stopped before the worker started" {
			t.Errorf("a session stopped while prepared: outcome %+v, want exit 143, SIGTERM, stopped before the worker started", o)
		}
	}
}
