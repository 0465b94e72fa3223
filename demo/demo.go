// Package demo owns `git agentmine demo`: a narrated run of the whole worker
// lifecycle in a throwaway repository, driving the real binary exactly as a
// user or an orchestrator would. Its workers are small shell scripts (the
// custom client), so it needs nothing but the binary, git and /bin/sh.
package demo

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Options configure a demo run.
type Options struct {
	// Exe is the git-agentmine binary to drive.
	Exe string
	// Out receives the narration and the commands' output.
	Out io.Writer
	// Keep leaves the repository in place instead of removing it.
	Keep bool
	// Dir, if set, is where the repository is made (default: a temp dir).
	Dir string
}

type runner struct {
	exe, repo string
	out       io.Writer
	env       []string
}

func (r *runner) say(format string, a ...any) { fmt.Fprintf(r.out, format+"\n", a...) }

// am runs `git agentmine args…` in the demo repository, echoing the command
// and its output; it returns stdout and the exit code.
func (r *runner) am(ctx context.Context, echo bool, args ...string) (string, int) {
	if echo {
		r.say("\n$ git agentmine %s", strings.Join(args, " "))
	}
	cmd := exec.CommandContext(ctx, r.exe, append([]string{"-C", r.repo}, args...)...)
	cmd.Env = r.env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		code = -1
		stderr.WriteString(err.Error())
	}
	if echo {
		for _, s := range []string{stdout.String(), stderr.String()} {
			s = strings.TrimRight(s, "\n")
			if s != "" {
				r.say("%s", indent(s))
			}
		}
		if code != 0 {
			r.say("  (exit %d)", code)
		}
	}
	return strings.TrimSpace(stdout.String()), code
}

func (r *runner) git(ctx context.Context, args ...string) error {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = r.repo
	cmd.Env = r.env
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return nil
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(s, "\n", "\n  ")
}

// Run plays the demo.
func Run(ctx context.Context, o Options) error {
	start := time.Now()
	base := o.Dir
	if base == "" {
		d, err := os.MkdirTemp("", "agentmine-demo-")
		if err != nil {
			return fmt.Errorf("creating the demo directory: %w", err)
		}
		base = d
	}
	if !o.Keep {
		defer removeAll(base)
	}
	repo := filepath.Join(base, "repo")
	scripts := filepath.Join(base, "workers")
	env := append(os.Environ(), "NO_COLOR=1", "GIT_AUTHOR_NAME=agentmine demo", "GIT_AUTHOR_EMAIL=demo@agentmine.invalid",
		"GIT_COMMITTER_NAME=agentmine demo", "GIT_COMMITTER_EMAIL=demo@agentmine.invalid")
	r := &runner{exe: o.Exe, repo: repo, out: o.Out, env: env}

	r.say("git agentmine demo: four AI-worker stand-ins run in parallel, each in its own scoped")
	r.say("worktree; only observable facts decide what happens to their work.")
	r.say("\nBuilding a throwaway repository in %s", repo)
	if err := writeFiles(repo, map[string]string{
		"src/app.sh":         "#!/bin/sh\ncat src/*.txt 2>/dev/null\n",
		"tests/check.sh":     "#!/bin/sh\n# The project's test: every message is polite.\nset -e\nfor f in src/*.txt; do\n  [ -e \"$f\" ] || continue\n  if grep -q '!!!' \"$f\"; then echo \"$f shouts\"; exit 1; fi\ndone\necho all polite\n",
		"docs/guide.md":      "# Guide\n\nRead-only for workers.\n",
		"secrets/api-key":    "sk-demo-not-a-real-key\n",
		".env":               "TOKEN=demo\n",
		"README.md":          "# demo project\n",
		"src/hello.txt":      "hello\n",
		"tests/fixtures.txt": "fixture\n",
	}); err != nil {
		return err
	}
	if err := writeFiles(scripts, map[string]string{
		"good.sh":     "#!/bin/sh\n# Writes a polite greeting inside its scope and commits it.\necho 'good morning' > src/greeting.txt\ngit add src/greeting.txt && git commit -qm 'Add a greeting'\n",
		"breaker.sh":  "#!/bin/sh\n# Stays in scope but breaks the project's test (the DoD).\necho 'GOOD MORNING!!!' > src/shout.txt\ngit add src/shout.txt && git commit -qm 'Shout the greeting'\n",
		"trespass.sh": "#!/bin/sh\n# Edits a read-only file (root ignores the mode bits) and peeks at a secret path.\nchmod u+w docs docs/guide.md 2>/dev/null\necho 'edited by a worker' >> docs/guide.md\nmkdir -p secrets 2>/dev/null && echo leak > secrets/copied && rm -f secrets/copied\ngit add -A && git commit -qm 'Polish the docs'\n",
		"sleeper.sh":  "#!/bin/sh\n# Never finishes: the timeout ends it.\nsleep 120\n",
	}); err != nil {
		return err
	}
	if err := os.MkdirAll(repo, 0o755); err != nil {
		return err
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-q", "-m", "Initial project"}} {
		if err := r.git(ctx, args...); err != nil {
			return err
		}
	}
	if _, code := r.am(ctx, true, "init"); code != 0 {
		return fmt.Errorf("git agentmine init failed (exit %d)", code)
	}
	scope := "\n[scope]\nwrite = [\"src/**\", \"tests/**\"]\nexclude = [\"**/*.env\", \".env\", \"secrets/**\", \".agentmine/**\"]\n"
	agentsDir := filepath.Join(repo, ".agentmine", "agents")
	for name, script := range map[string]string{"good": "good.sh", "breaker": "breaker.sh", "trespasser": "trespass.sh", "sleeper": "sleeper.sh"} {
		def := fmt.Sprintf("description = %q\nclient = \"custom\"\ncommand = [\"sh\", %q]\ndod = [\"sh tests/check.sh\"]\n%s",
			"demo worker: "+name, filepath.Join(scripts, script), scope)
		if err := os.WriteFile(filepath.Join(agentsDir, name+".toml"), []byte(def), 0o644); err != nil {
			return err
		}
	}
	r.say("\nFour agent definitions (custom client = a shell script), each with write = src/**, tests/**")
	r.say("and exclude = .env, **/*.env, secrets/**; DoD = sh tests/check.sh.")
	r.am(ctx, true, "agent", "list")

	add := func(title string, extra ...string) string {
		id, _ := r.am(ctx, false, append([]string{"task", "add", title, "-q"}, extra...)...)
		return id
	}
	t1 := add("Add a greeting", "--assignee", "good", "-p", "high")
	t2 := add("Shout the greeting", "--assignee", "breaker")
	t3 := add("Polish the docs", "--assignee", "trespasser")
	t4 := add("Benchmark everything", "--assignee", "sleeper", "-p", "low")
	t5 := add("Write release notes", "--blocked-by", t1)
	if t1 == "" || t5 == "" {
		return fmt.Errorf("creating the demo tasks failed")
	}
	r.say("\nFive tasks; the release notes wait for the greeting:")
	r.am(ctx, true, "task", "list")

	r.say("\nStarting four workers in parallel, detached:")
	for _, t := range []string{t1, t2, t3} {
		r.am(ctx, true, "worker", "run", t, "--exec", "--detach")
	}
	r.am(ctx, true, "worker", "run", t4, "--exec", "--detach", "--timeout", "2")
	r.am(ctx, true, "worker", "run", t5, "--exec")
	r.say("  (refused: it is blocked — the release notes must wait for the greeting)")

	r.say("\nWaiting for them (no polling: the supervisors' exits wake the wait):")
	r.am(ctx, true, "worker", "wait", t1, t2, t3, t4)

	r.say("\nWhat the facts say about the trespasser:")
	r.am(ctx, true, "task", "show", t3)

	r.say("\nMerging is gated on the facts:")
	r.am(ctx, true, "merge", t1)
	r.am(ctx, true, "merge", t2)
	r.am(ctx, true, "worker", "done", t1)
	r.say("\nWith the greeting merged, the release notes are ready:")
	r.am(ctx, true, "task", "ready")

	r.say("\nThe board:")
	r.am(ctx, true, "status")

	if err := r.loop(ctx, scripts, scope); err != nil {
		return err
	}
	r.say("\nDemo finished in %s.", time.Since(start).Round(100*time.Millisecond))
	if o.Keep {
		r.say("The repository is kept at %s", repo)
	}
	return nil
}

// The loop's stand-ins: a planner that splits the goal (and, asked again
// after an NG review, rewrites the task), a reviewer that says NG to a
// draft, and one worker script whose behaviour follows its prompt.
const (
	loopPlan = `{"summary": "one greeting per language, two at a time",
 "tasks": [
  {"key": "fr", "title": "French greeting", "description": "Write src/fr.txt.", "agent": "greeter"},
  {"key": "de", "title": "German greeting", "description": "Write src/de.txt.", "agent": "greeter"},
  {"key": "ja", "title": "Japanese greeting", "description": "Write src/ja.txt.", "agent": "greeter",
   "acceptance_criteria": ["the greeting is final, not a draft"]},
  {"key": "all", "title": "Greeting index", "description": "List the greetings in src/index.txt.", "agent": "greeter",
   "blocked_by": ["fr", "de", "ja"]}]}`
	loopReplan  = `{"tasks": [], "rewrite": {"description": "Write src/ja.txt: the final greeting, no draft markers.", "reason": "the reviewer found a draft"}}`
	loopPlanner = `#!/bin/sh
# Scripted planner: $1 is its prompt, $2 the answer file.
if grep -q 'polish the draft' "$1"; then cp "$(dirname "$0")/replan.json" "$2"; else cp "$(dirname "$0")/plan.json" "$2"; fi
`
	loopReviewer = `#!/bin/sh
# Scripted reviewer: NG to a diff that adds a draft, OK otherwise.
if grep -q '^+.*(draft)' "$1"; then
  echo '{"verdict":"NG","reasons":["REVIEW: polish the draft"],"follow_up":"remove the (draft) marker"}' > "$2"
else
  echo '{"verdict":"OK","reasons":["polite and final"]}' > "$2"
fi
`
	loopWorker = `#!/bin/sh
# One stand-in for every child: it reads its prompt, as an AI client would.
p=.agentmine/prompt.md
sleep 1
if grep -q 'French greeting' $p; then echo bonjour > src/fr.txt; f=src/fr.txt
elif grep -q 'German greeting' $p; then
  # Shouts until the feedback quotes the failing test.
  if grep -q 'src/de.txt shouts' $p; then echo 'guten tag' > src/de.txt; else echo 'GUTEN TAG!!!' > src/de.txt; fi; f=src/de.txt
elif grep -q 'Japanese greeting' $p; then
  if grep -q 'polish the draft' $p; then echo konnichiwa > src/ja.txt; else echo 'konnichiwa (draft)' > src/ja.txt; fi; f=src/ja.txt
else ls src/*.txt > src/index.txt; f=src/index.txt; fi
git add "$f" && git commit -qm "Write $f"
`
)

// loop is the demo's second act: a goal split by a planner and run by the
// supervisor, two workers at a time, with a retry and a review.
func (r *runner) loop(ctx context.Context, scripts, scope string) error {
	if err := writeFiles(scripts, map[string]string{"plan.json": loopPlan, "replan.json": loopReplan,
		"planner.sh": loopPlanner, "reviewer.sh": loopReviewer, "greeter.sh": loopWorker}); err != nil {
		return err
	}
	agentsDir := filepath.Join(r.repo, ".agentmine", "agents")
	defs := map[string]string{
		"greeter":  fmt.Sprintf("description = \"demo worker: greetings\"\nclient = \"custom\"\ncommand = [\"sh\", %q]\ndod = [\"sh tests/check.sh\"]\n%s", filepath.Join(scripts, "greeter.sh"), scope),
		"planner":  fmt.Sprintf("description = \"demo planner\"\nrole = \"planner\"\nclient = \"custom\"\ncommand = [\"sh\", %q, \"{prompt_file}\", \"{output_file}\"]\n", filepath.Join(scripts, "planner.sh")),
		"reviewer": fmt.Sprintf("description = \"demo reviewer\"\nrole = \"reviewer\"\nclient = \"custom\"\ncommand = [\"sh\", %q, \"{prompt_file}\", \"{output_file}\"]\n", filepath.Join(scripts, "reviewer.sh")),
	}
	for name, def := range defs {
		if err := os.WriteFile(filepath.Join(agentsDir, name+".toml"), []byte(def), 0o644); err != nil {
			return err
		}
	}
	r.say("\n--- The loop: plan, run two at a time, review, retry with feedback, merge ---")
	r.say("\nA goal, split by a (scripted) planner agent into children with dependencies:")
	goal, _ := r.am(ctx, false, "task", "add", "Greet the world", "-q")
	if goal == "" {
		return fmt.Errorf("creating the goal failed")
	}
	if _, code := r.am(ctx, true, "plan", goal); code != 0 {
		return fmt.Errorf("git agentmine plan failed (exit %d)", code)
	}
	r.am(ctx, true, "task", "tree", goal)
	r.say("\nThe supervisor runs them: at most 2 workers, up to 3 attempts each, a reviewer")
	r.say("after DoD and scope pass, merges one at a time. The German worker fails the")
	r.say("project's test first; the Japanese one is reviewed NG; both retry with feedback.")
	r.am(ctx, true, "run", goal, "--parallel", "2", "--max-loops", "3", "--review", "--merge")
	de, _ := r.am(ctx, false, "task", "list", "-q", "--all")
	for _, id := range strings.Fields(de) {
		if title, _ := r.am(ctx, false, "task", "show", id, "--json"); strings.Contains(title, `"title": "German greeting"`) {
			r.say("\nThe Task Note of the German greeting (stored in git, synced with the tasks):")
			r.am(ctx, true, "task", "note", id)
		}
	}
	return nil
}

func writeFiles(root string, files map[string]string) error {
	for name, body := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		mode := os.FileMode(0o644)
		if strings.HasSuffix(name, ".sh") {
			mode = 0o755
		}
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			return err
		}
	}
	return nil
}

// removeAll deletes the demo directory, first restoring write permission
// (worktrees hold read-only directories).
func removeAll(dir string) {
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Chmod(p, 0o755)
		}
		return nil
	})
	os.RemoveAll(dir)
}
