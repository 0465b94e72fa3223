package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

// raceResult is what a prune race left: writes acknowledged (the writer
// was told it succeeded), refused (it was told it failed), lost
// (acknowledged, but the ref's document no longer reads), the gc runs
// made meanwhile and git fsck's complaints afterwards.
type raceResult struct {
	acked, refused, lost, gcs int
	fsck                      []string
	refusals                  []string
}

// agentmineWriter is writer w's script: each `task add` acknowledged
// prints its ref, each refused prints "refused".
func agentmineWriter(w, each int) string {
	return fmt.Sprintf(`for i in $(seq 1 %d); do
  if id=$(git agentmine task add "writer %d task $i" -q 2>>"$ERRS"); then echo "refs/agentmine/tasks/$id"; else echo refused; fi
done`, each, w)
}

// plainGitWriter is writer w's script doing what a task add stores, with
// git's own commands: a JSON blob, a tree holding it, a root commit and a
// ref created from nothing.
func plainGitWriter(w, each int) string {
	return fmt.Sprintf(`for i in $(seq 1 %d); do
  ref=refs/plain/w%d-$i
  if blob=$(printf '{"title":"writer %d task %%s","at":"%%s"}\n' "$i" "$(date +%%s%%N)" | git hash-object -w --stdin 2>>"$ERRS") &&
     tree=$(printf '100644 blob %%s\ttask.json\n' "$blob" | git mktree 2>>"$ERRS") &&
     commit=$(git commit-tree "$tree" -m "task add" 2>>"$ERRS") &&
     git update-ref "$ref" "$commit" "" 2>>"$ERRS"; then echo "$ref"; else echo refused; fi
done`, each, w, w)
}

// pruneRace runs writers processes, each running the script script(w)
// makes, while a loop runs `git gc` with gcArgs in repo until they are
// done, and then checks every acknowledged write.
func pruneRace(t *testing.T, repo string, writers int, script func(w int) string, gcArgs ...string) raceResult {
	t.Helper()
	var res raceResult
	var mu sync.Mutex
	var refs []string
	errs := filepath.Join(t.TempDir(), "stderr")
	done := make(chan struct{})
	var gcs atomic.Int64
	gcDone := make(chan struct{})
	go func() {
		defer close(gcDone)
		for {
			select {
			case <-done:
				return
			default:
			}
			cmd := exec.Command("git", append([]string{"gc", "--quiet"}, gcArgs...)...)
			cmd.Dir = repo
			if cmd.Run() == nil {
				gcs.Add(1)
			}
		}
	}()
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			cmd := exec.Command("sh", "-c", script(w))
			cmd.Dir = repo
			cmd.Env = append(os.Environ(), "ERRS="+errs)
			out, err := cmd.Output()
			if err != nil {
				t.Errorf("writer %d: %v", w, err)
			}
			mu.Lock()
			defer mu.Unlock()
			for _, l := range strings.Fields(string(out)) {
				if l == "refused" {
					res.refused++
					continue
				}
				refs = append(refs, l)
			}
		}(w)
	}
	wg.Wait()
	close(done)
	<-gcDone
	res.gcs = int(gcs.Load())
	res.acked = len(refs)
	if data, err := os.ReadFile(errs); err == nil {
		for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			if l != "" && len(res.refusals) < 5 {
				res.refusals = append(res.refusals, l)
			}
		}
	}
	// Every acknowledged ref's document must read: one cat-file for all.
	cmd := exec.Command("git", "cat-file", "--batch-check")
	cmd.Dir = repo
	var in strings.Builder
	for _, r := range refs {
		in.WriteString(r + ":task.json\n")
	}
	cmd.Stdin = strings.NewReader(in.String())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("checking the acknowledged writes: %v", err)
	}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) != 3 || f[1] != "blob" {
			res.lost++
		}
	}
	fsck := exec.Command("git", "fsck", "--no-progress")
	fsck.Dir = repo
	fout, _ := fsck.CombinedOutput()
	for _, l := range strings.Split(strings.TrimSpace(string(fout)), "\n") {
		if l != "" && !strings.HasPrefix(l, "dangling ") {
			res.fsck = append(res.fsck, l)
		}
	}
	return res
}

// TestWritesSurvivePrune: 16 processes each running 20 `task add` while a
// loop runs `git gc --prune=now` beside them: every acknowledged add is
// there afterwards, listed and readable, nothing is refused, and git fsck
// finds nothing wrong. Plain git doing the same writes under the same loop
// loses some (docs/dependencies.md; `just prune-race` measures both).
func TestWritesSurvivePrune(t *testing.T) {
	gittest.SkipShort(t, "320 task adds from 16 processes beside a gc --prune=now loop")
	repo := testRepo(t)
	const writers, each = 16, 20
	res := pruneRace(t, repo, writers, func(w int) string { return agentmineWriter(w, each) }, "--prune=now")
	t.Logf("%d acknowledged, %d refused, %d lost, %d gc runs", res.acked, res.refused, res.lost, res.gcs)
	if res.lost != 0 {
		t.Errorf("%d of %d acknowledged adds lost", res.lost, res.acked)
	}
	if res.refused != 0 {
		t.Errorf("%d adds refused: %s", res.refused, strings.Join(res.refusals, "\n"))
	}
	if res.gcs == 0 {
		t.Error("no gc ran beside the writers")
	}
	if len(res.fsck) != 0 {
		t.Errorf("git fsck: %s", strings.Join(res.fsck, "\n"))
	}
	var list []struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal([]byte(run(t, repo, "git", "agentmine", "task", "list", "--json")), &list); err != nil {
		t.Fatal(err)
	}
	if len(list) != res.acked {
		t.Errorf("task list shows %d tasks, %d were acknowledged", len(list), res.acked)
	}
}

// TestPruneRaceNumbers prints what docs/dependencies.md reports: agentmine's task add
// and plain git doing the same writes (hash-object, mktree, commit-tree,
// update-ref), each with 16 writers of 20 writes beside a `git gc
// --prune=now` loop and beside a default `git gc` loop. Run by `just
// prune-race` (AGENTMINE_PRUNE_RACE=1); a measurement, not a check.
func TestPruneRaceNumbers(t *testing.T) {
	if os.Getenv("AGENTMINE_PRUNE_RACE") == "" {
		t.Skip("a measurement: AGENTMINE_PRUNE_RACE=1 (just prune-race)")
	}
	const writers, each = 16, 20
	for _, loop := range [][]string{{"--prune=now"}, nil} {
		name := "git gc " + strings.Join(loop, " ")
		for _, side := range []struct {
			name   string
			script func(w int) string
		}{
			{"git agentmine task add", func(w int) string { return agentmineWriter(w, each) }},
			{"plain git", func(w int) string { return plainGitWriter(w, each) }},
		} {
			res := pruneRace(t, testRepo(t), writers, side.script, loop...)
			fmt.Printf("%-22s beside %-22s %d writers x %d: %3d acknowledged, %2d lost, %2d refused, %2d fsck errors (%d gc runs)\n",
				side.name, strings.TrimSpace(name), writers, each, res.acked, res.lost, res.refused, len(res.fsck), res.gcs)
			for _, r := range res.refusals {
				fmt.Printf("    refused: %s\n", r)
			}
		}
	}
}
