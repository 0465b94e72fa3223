package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-agentmine/git-agentmine/isolation"
)

// TestIsolationAsNormalUser: run as a normal user (no root privileges, so
// bubblewrap needs unprivileged user namespaces), a worker at bwrap and at
// clone tries to write the main .env through a hard link, to widen its
// own agent definition and to move the base branch; every attempt fails in
// the worker, the files and the base are unchanged, and its honest commit
// still ends review and merges.
func TestIsolationAsNormalUser(t *testing.T) {
	if c := isolation.Probe(t.Context(), "", false); c.BwrapPath != "" && c.Bwrap != "" {
		t.Skip("the kernel refuses bubblewrap's namespaces here: " + c.Bwrap)
	}
	attack := `M="$MAIN"; ` +
		`if ln "$M/.env" src/l 2>/dev/null; then echo "link: succeeded"; else echo "link: failed"; fi; ` +
		`if printf 'client = "custom"\ncommand = ["true"]\n[scope]\nwrite = ["**"]\n' > "$M/.agentmine/agents/w.toml" 2>/dev/null; then echo "agent: succeeded"; else echo "agent: failed"; fi; ` +
		`echo b >> src/a.txt && git commit -qam work && git update-ref refs/heads/main HEAD; echo "main: $?"`
	for _, level := range []string{"bwrap", "clone"} {
		t.Run(level, func(t *testing.T) {
			agent := "client = \"custom\"\ncommand = [\"sh\", \"-c\", " + tomlString(attack) + "]\ndod = [\"test -s src/a.txt\"]\n[scope]\nwrite = [\"src/**\"]\n[isolation]\nlevel = \"" + level + "\"\n"
			u, dir := normalUserRepo(t, map[string]string{"src/a.txt": "a\n", ".gitignore": ".env\n", ".env": "SECRET=1\n"}, map[string]string{"w": agent})
			before := u.Run(t, dir, "git", "rev-parse", "main")
			toml, err := os.ReadFile(filepath.Join(dir, ".agentmine", "agents", "w.toml"))
			if err != nil {
				t.Fatal(err)
			}
			task := u.Run(t, dir, "git", "agentmine", "task", "add", "Attack", "-q")
			cmd := u.Command(dir, "git", "agentmine", "worker", "run", task, "--agent", "w", "--exec")
			cmd.Env = append(cmd.Env, "MAIN="+dir)
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), ": review — ") {
				t.Fatalf("worker run as %s at %s: %v\n%s", u.Name, level, err, out)
			}
			logs := u.Run(t, dir, "git", "agentmine", "worker", "logs", task)
			for _, want := range []string{"link: failed", "agent: failed"} {
				if !strings.Contains(logs, want) {
					t.Errorf("the worker's log lacks %q:\n%s", want, logs)
				}
			}
			if got, err := os.ReadFile(filepath.Join(dir, ".env")); err != nil || string(got) != "SECRET=1\n" {
				t.Errorf(".env = %q, %v", got, err)
			}
			if got, err := os.ReadFile(filepath.Join(dir, ".agentmine", "agents", "w.toml")); err != nil || string(got) != string(toml) {
				t.Errorf("the agent definition changed: %q, %v", got, err)
			}
			if got := u.Run(t, dir, "git", "rev-parse", "main"); got != before {
				t.Errorf("main moved from %s to %s", before, got)
			}
			if show := u.Run(t, dir, "git", "agentmine", "task", "show", task); !strings.Contains(show, "isolation: "+level+"\n") {
				t.Errorf("task show does not name the level:\n%s", show)
			}
			u.Run(t, dir, "git", "agentmine", "merge", task)
			if got := u.Run(t, dir, "git", "show", "main:src/a.txt"); got != "a\nb" {
				t.Errorf("main:src/a.txt = %q after merge", got)
			}
		})
	}
}
