package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/git-agentmine/git-agentmine/cmd/internal/serverargs"
	"github.com/git-agentmine/git-agentmine/cmd/internal/servers"
	"github.com/git-agentmine/git-agentmine/internal/gittest"
	"github.com/git-agentmine/git-agentmine/isolation"
)

// TestMain lets the test binary act as git-agentmine and as
// agentmine-serve (testscript puts both on PATH for every test), so
// testscripts run `git agentmine …` through git itself.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"git-agentmine": func() {
			os.Exit(processMain())
		},
		serverargs.Name: func() {
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
			code := servers.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv)
			stop()
			os.Exit(code)
		},
	})
}

// TestScripts runs the end-to-end scenarios in testdata/script; under
// `go test -short` it leaves out the slow ones (slowScripts) and the attack
// scenarios (attack_*: hostile workers, each run to its verdict).
func TestScripts(t *testing.T) {
	p := ScriptParams(t, "testdata/script")
	for name := range slowScripts() {
		if _, err := os.Stat(filepath.Join(p.Dir, name+".txtar")); err != nil {
			t.Errorf("slow script %s: %v", name, err)
		}
	}
	setup := p.Setup
	p.Setup = func(env *testscript.Env) error {
		name := strings.TrimPrefix(filepath.Base(env.WorkDir), "script-")
		if why, slow := slowScripts()[name]; slow && testing.Short() {
			env.T().Skip("slow: " + why)
		}
		if strings.HasPrefix(name, "attack_") && testing.Short() {
			env.T().Skip("slow: a hostile worker run, waited for and judged")
		}
		return setup(env)
	}
	testscript.Run(t, p)
}

// slowScripts names the scenarios `go test -short` skips, each with why it
// is slow. The edit loop keeps one quick scenario per command family (init,
// agent, config, task, memory, sync, worker, session); the full suite runs
// them all.
func slowScripts() map[string]string {
	return map[string]string{
		"worker_faults":              "real workers timing out, ignoring SIGTERM and crashing, each waited for",
		"worker_misbehave":           "real workers breaking their scope in every way, each run and checked",
		"worker_exec":                "real workers launched, timed out and waited for",
		"worker_stop_wait":           "real workers stopped through their grace period, and waited for",
		"worker_other_clone":         "a worker in a second clone held until released, then waited for",
		"sync_claims":                "clones racing for claims with real workers that sleep",
		"worker_lost_processes":      "detached supervisors killed, what their workers left ended through the grace period",
		"merge_gate":                 "a worker, a DoD and a gated merge per refusal case",
		"demo":                       "the whole demo: init, tasks, three workers, merges, then the loop (plan, run, review, retries)",
		"session_manual":             "manual sessions opened, committed to, ended and judged",
		"sync_claims_default_remote": "clones claiming through a shared remote",
		"sync_remote_base":           "clones syncing against a moving remote base",
		"memory_concurrent":          "real parallel memory writers",
		"worker_strict":              "strict-mode workers stopped at their first breach and waited for",
		"task_errors":                "every task command's refusals, each a full command run",
		"memory_bad_input":           "every memory command's refusals, each a full command run",
		"agent_bad_input":            "every agent definition refusal, each a full command run",
		"worker_lost":                "detached supervisors killed and their sessions found lost",
		"memory_corrupt_refs":        "memory refs corrupted one way after another",
		"memory_export_import":       "a Memory Bank exported and imported into a second repository",
		"task_empty_clone":           "clones of a repository with and without agentmine refs",
		"worker_refs_meanwhile":      "a worker held until released while agentmine merges around it, then waited for",
		"isolation_levels":           "real workers run in bubblewrap sandboxes and partial clones, and under Landlock",
		"isolation_setup":            "clients installed under HOME run at every level, and setup problems refused at each",
		"pipeline_review":            "scripted planner, two worker attempts and two reviewer runs, each in its own worktree",
		"task_import":                "every plan and task.yaml refusal, each a full command run, then imports",
		"bestof_review":              "two best-of runs of three workers each, rounds reviewed and merged",
		"bestof_smallest":            "best-of runs of three workers each, nine sessions in all",
		"bestof_killed":              "a best-of run killed with SIGKILL mid-round and resumed, its workers waited for",
	}
}

// ScriptParams is the pinned environment every scenario runs in: a private
// HOME, no system git config, fixed author, committer and dates so hashes are
// reproducible, and a fresh repository with one commit in $WORK/repo.
func ScriptParams(t *testing.T, dir string) testscript.Params {
	return testscript.Params{
		Dir:                 dir,
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			home := filepath.Join(env.WorkDir, ".home")
			if err := os.MkdirAll(home, 0o755); err != nil {
				return err
			}
			for k, v := range gittest.Vars(home) {
				env.Setenv(k, v)
			}
			// Workers and DoD run /bin/sh scripts.
			env.Setenv("PATH", env.Getenv("PATH")+string(os.PathListSeparator)+"/usr/bin:/bin")
			return nil
		},
		// [bwrap-refused]: bubblewrap is installed but the kernel refuses
		// its namespaces. Scenarios of the bwrap and clone levels skip
		// only then: a missing bwrap fails them (.ci/run installs it).
		// [root]: the scenario runs as root (TestAttacksAsNormalUser runs
		// the same scenarios as an unprivileged user).
		Condition: func(cond string) (bool, error) {
			if cond == "root" {
				return os.Geteuid() == 0, nil
			}
			if cond != "bwrap-refused" {
				return false, fmt.Errorf("unknown condition %q", cond)
			}
			c := isolation.Probe(context.Background(), "", false)
			return c.BwrapPath != "" && c.Bwrap != "", nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			// capture NAME: set $NAME to the last command's stdout, trimmed.
			"capture": func(ts *testscript.TestScript, neg bool, args []string) {
				if len(args) != 1 {
					ts.Fatalf("usage: capture NAME")
				}
				ts.Setenv(args[0], strings.TrimSpace(ts.ReadFile("stdout")))
			},
			// mode PERM PATH...: assert the permission bits of each path.
			"mode": func(ts *testscript.TestScript, neg bool, args []string) {
				if len(args) < 2 {
					ts.Fatalf("usage: mode PERM PATH...")
				}
				for _, p := range args[1:] {
					fi, err := os.Lstat(ts.MkAbs(p))
					ts.Check(err)
					got := fi.Mode().Perm().String()[1:]
					if (got == args[0]) == neg {
						ts.Fatalf("%s: mode %s, want %s%s", p, got, map[bool]string{true: "not ", false: ""}[neg], args[0])
					}
				}
			},
		},
	}
}
