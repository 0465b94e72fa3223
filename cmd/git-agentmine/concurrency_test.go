package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

// testRepo makes a repository with one commit in the scrubbed environment
// and returns its path. git-agentmine is on PATH through TestMain.
func testRepo(t *testing.T) string {
	t.Helper()
	return gittest.NewRepo(t)
}

// run runs the command name in dir and returns its trimmed stdout, failing
// the test with its stderr.
func run(t *testing.T, dir string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr)
	}
	return strings.TrimSpace(string(out))
}

// TestParallelAdds: 32 real processes each running 20 `task add` leave
// exactly 640 tasks, all listed, and a clean fsck.
func TestParallelAdds(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: spawns 640 processes")
	}
	repo := testRepo(t)
	const procs, each = 32, 20
	var wg sync.WaitGroup
	errs := make(chan error, procs)
	for p := 0; p < procs; p++ {
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			script := fmt.Sprintf(`for i in $(seq 1 %d); do git agentmine task add "p%d task $i" -q >/dev/null || exit 1; done`, each, p)
			cmd := exec.Command("sh", "-c", script)
			cmd.Dir = repo
			if out, err := cmd.CombinedOutput(); err != nil {
				errs <- fmt.Errorf("process %d: %v: %s", p, err, out)
			}
		}(p)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	var list []map[string]any
	if err := json.Unmarshal([]byte(run(t, repo, "git", "agentmine", "task", "list", "--json")), &list); err != nil {
		t.Fatal(err)
	}
	if len(list) != procs*each {
		t.Fatalf("listed %d tasks, want %d", len(list), procs*each)
	}
	titles := map[string]bool{}
	for _, task := range list {
		titles[task["title"].(string)] = true
	}
	if len(titles) != procs*each {
		t.Fatalf("%d distinct titles, want %d", len(titles), procs*each)
	}
	if n := len(strings.Fields(run(t, repo, "git", "for-each-ref", "--format=%(refname)", "refs/agentmine/tasks/"))); n != procs*each {
		t.Fatalf("%d task refs, want %d", n, procs*each)
	}
	run(t, repo, "git", "fsck", "--no-progress", "--strict")
}

// TestConcurrentEditsOneTask: 16 processes each add a different label to one
// task while others change its description and priority at the same moment.
// Every label survives, and the description and priority are those of the
// last change committed; every change is exactly one commit.
func TestConcurrentEditsOneTask(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: 32 racing processes")
	}
	repo := testRepo(t)
	id := run(t, repo, "git", "agentmine", "task", "add", "contended", "-q")
	full := fullID(t, repo, id)
	var cmds []*exec.Cmd
	for i := 0; i < 16; i++ {
		cmds = append(cmds, exec.Command("git", "agentmine", "task", "update", id, "--add-label", fmt.Sprintf("l%02d", i)))
	}
	prios := []string{"low", "high", "critical", "medium"}
	for i := 0; i < 8; i++ {
		cmds = append(cmds, exec.Command("git", "agentmine", "task", "update", id, "-d", fmt.Sprintf("description %d", i)))
		cmds = append(cmds, exec.Command("git", "agentmine", "task", "update", id, "-p", prios[i%len(prios)]))
	}
	start := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, len(cmds))
	for _, c := range cmds {
		c.Dir = repo
		wg.Add(1)
		go func(c *exec.Cmd) {
			defer wg.Done()
			<-start
			if out, err := c.CombinedOutput(); err != nil {
				errs <- fmt.Errorf("%v: %v: %s", c.Args, err, out)
			}
		}(c)
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	var got struct {
		Labels      []string `json:"labels"`
		Description string   `json:"description"`
		Priority    string   `json:"priority"`
	}
	if err := json.Unmarshal([]byte(run(t, repo, "git", "agentmine", "task", "show", id, "--json")), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Labels) != 16 {
		t.Fatalf("labels %v: want all 16", got.Labels)
	}
	// Walk the history oldest first: the last commit that changed the
	// description (or priority) must hold the final value.
	ref := "refs/agentmine/tasks/" + full
	commits := strings.Fields(run(t, repo, "git", "rev-list", "--reverse", ref))
	// 1 add + 16 labels + 8 descriptions + the priority changes that differ
	// from the value before them.
	var lastDesc, lastPrio, prevPrio string
	prevPrio = "medium"
	changes := 0
	for _, c := range commits {
		var doc struct {
			Description string `json:"description"`
			Priority    string `json:"priority"`
		}
		if err := json.Unmarshal([]byte(run(t, repo, "git", "cat-file", "blob", c+":task.json")), &doc); err != nil {
			t.Fatal(err)
		}
		if doc.Description != lastDesc {
			lastDesc = doc.Description
		}
		if doc.Priority != prevPrio {
			lastPrio = doc.Priority
			prevPrio = doc.Priority
		}
		changes++
	}
	if got.Description != lastDesc {
		t.Errorf("description %q, want last written %q", got.Description, lastDesc)
	}
	if lastPrio != "" && got.Priority != lastPrio {
		t.Errorf("priority %q, want last written %q", got.Priority, lastPrio)
	}
	if len(commits) < 1+16+8 {
		t.Errorf("%d commits, want at least %d (one per change)", len(commits), 1+16+8)
	}
	// No commit is a no-op: each differs from its parent.
	for _, c := range commits[1:] {
		if run(t, repo, "git", "rev-parse", c+"^{tree}") == run(t, repo, "git", "rev-parse", c+"^^{tree}") {
			t.Errorf("commit %s changes nothing", c)
		}
	}
	run(t, repo, "git", "fsck", "--no-progress", "--strict")
}

func fullID(t *testing.T, repo, short string) string {
	var j struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal([]byte(run(t, repo, "git", "agentmine", "task", "show", short, "--json")), &j); err != nil {
		t.Fatal(err)
	}
	return j.ID
}

var _ = os.Getenv
