package replica

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

// TestSyncHelperProcess is not a test: the tests below re-execute the test
// binary with AGENTMINE_SYNC_HELPER set to run a sync or a batch of edits in a
// real, separate process (that can be killed with SIGKILL).
func TestSyncHelperProcess(t *testing.T) {
	action := os.Getenv("AGENTMINE_SYNC_HELPER")
	if action == "" {
		t.Skip("helper process only")
	}
	ctx := context.Background()
	s, err := gitstore.Open(ctx, os.Getenv("AGENTMINE_SYNC_DIR"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	switch action {
	case "sync":
		killAt := os.Getenv("AGENTMINE_SYNC_KILL_AT")
		rep, err := Sync(ctx, s, Options{Progress: func(p Progress) {
			if p.Phase == killAt && p.Done == 0 {
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
			}
		}})
		json.NewEncoder(os.Stdout).Encode(rep)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	case "edit":
		c, _ := strconv.Atoi(os.Getenv("AGENTMINE_SYNC_CLONE"))
		shared := strings.Fields(os.Getenv("AGENTMINE_SYNC_SHARED"))
		if err := threeCloneEdits(ctx, s, c, shared); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	os.Exit(0)
}

// threeCloneEdits is what clone c does: create 200 entities and edit the 100
// shared ones, in fields of its own, fields shared with other clones, and
// the labels set.
func threeCloneEdits(ctx context.Context, s *gitstore.Store, c int, shared []string) error {
	for i := 0; i < 200; i++ {
		id := gitstore.NewID()
		doc := fmt.Sprintf(`{"v":1,"id":%q,"title":"clone %d entity %d","labels":["c%d"]}`, id, c, i, c)
		if _, err := s.Create(ctx, syncKind, id, gitstore.Change{Data: []byte(doc), Message: "create"}); err != nil {
			return err
		}
	}
	for _, id := range shared {
		_, _, err := s.Update(ctx, syncKind, id, func(cur gitstore.Doc) (gitstore.Change, error) {
			var d map[string]any
			if err := json.Unmarshal(cur.Data, &d); err != nil {
				return gitstore.Change{}, err
			}
			d["title"] = fmt.Sprintf("title by %d", c) // all three clones: conflict
			d[fmt.Sprintf("note%d", c)] = fmt.Sprintf("by %d", c)
			if c > 0 {
				d["priority"] = fmt.Sprintf("p%d", c) // clones 1 and 2: conflict
			}
			if c == 1 {
				d["assignee"] = "one" // only clone 1
			}
			var labels []any
			for _, l := range d["labels"].([]any) {
				if !(c == 0 && l == "old") { // clone 0 removes "old"
					labels = append(labels, l)
				}
			}
			d["labels"] = append(labels, fmt.Sprintf("l%d", c))
			data, _ := json.MarshalIndent(d, "", "  ")
			return gitstore.Change{Data: data, Message: "edit"}, nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// syncHelper starts the helper process for action in dir with extra env.
func syncHelper(t *testing.T, dir, action string, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestSyncHelperProcess$")
	cmd.Env = append(os.Environ(), append([]string{"AGENTMINE_SYNC_HELPER=" + action, "AGENTMINE_SYNC_DIR=" + dir}, env...)...)
	return cmd
}

func dateEnv(offset int) []string {
	d := fmt.Sprintf("%d +0000", syncBaseTime+offset)
	return []string{"GIT_AUTHOR_DATE=" + d, "GIT_COMMITTER_DATE=" + d}
}

// A sync killed with SIGKILL at any phase, then run again, converges and
// loses nothing.
func TestSyncKilledHalfWay(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: three rounds of two clones and a sync process killed with SIGKILL")
	}
	for _, phase := range []string{"merge", "push", "update"} {
		t.Run(phase, func(t *testing.T) {
			gittest.Scrub(t)
			remote := syncRemote(t)
			a, b := syncClone(t, remote), syncClone(t, remote)
			sa := syncOpen(t, a, 0)
			var shared []string
			for i := 0; i < 20; i++ {
				shared = append(shared, syncCreate(t, sa, map[string]any{"title": "shared", "labels": []string{"x"}}))
			}
			syncRun(t, sa, Options{})
			syncRun(t, syncOpen(t, b, 0), Options{})
			sa, sb := syncOpen(t, a, 10), syncOpen(t, b, 20)
			for _, id := range shared {
				syncEdit(t, sa, id, func(d map[string]any) { d["title"] = "a"; d["labels"] = []string{"x", "a"} })
				syncEdit(t, sb, id, func(d map[string]any) { d["title"] = "b"; d["owner"] = "b"; d["labels"] = []string{"x", "b"} })
			}
			onlyA := syncCreate(t, sa, map[string]any{"title": "only a"})
			onlyB := syncCreate(t, sb, map[string]any{"title": "only b"})
			syncRun(t, sa, Options{})

			before := syncRefs(t, b)
			cmd := syncHelper(t, b, "sync", append(dateEnv(30), "AGENTMINE_SYNC_KILL_AT="+phase)...)
			err := cmd.Run()
			ee, ok := err.(*exec.ExitError)
			if !ok || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				t.Fatalf("helper was not killed: %v", err)
			}
			if phase != "update" && syncRefs(t, b) != before {
				t.Fatalf("local refs changed before the kill point")
			}
			out, err := syncHelper(t, b, "sync", dateEnv(30)...).Output()
			if err != nil {
				t.Fatalf("sync after the kill: %v", err)
			}
			var rep Report
			json.Unmarshal(out, &rep)
			syncRun(t, sa, Options{})
			if syncRefs(t, a) != syncRefs(t, b) {
				t.Fatalf("clones did not converge")
			}
			docs := syncDocs(t, syncOpen(t, b, 40))
			if docs[onlyA] == nil || docs[onlyB] == nil || len(docs) != 22 {
				t.Fatalf("entities lost: %d", len(docs))
			}
			for _, id := range shared {
				d := docs[id]
				if d["title"] != "b" || d["owner"] != "b" || labelsOf(d) != "a,b,x" {
					t.Fatalf("shared %s: %v", id, d)
				}
			}
		})
	}
}

// Three clones of one remote each create 200 entities and edit 100 shared
// ones concurrently (real processes), then sync concurrently in rounds until
// a round changes nothing anywhere.
func TestSyncThreeClonesConverge(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: three clones of real processes editing and syncing until they converge")
	}
	gittest.Scrub(t)
	remote := syncRemote(t)
	clones := []string{syncClone(t, remote), syncClone(t, remote), syncClone(t, remote)}
	s0 := syncOpen(t, clones[0], 0)
	var shared []string
	for i := 0; i < 100; i++ {
		shared = append(shared, syncCreate(t, s0, map[string]any{"title": fmt.Sprintf("shared %d", i), "priority": "low", "labels": []string{"old", "base"}}))
	}
	syncRun(t, s0, Options{})
	for _, c := range clones[1:] {
		syncRun(t, syncOpen(t, c, 0), Options{})
	}

	// Concurrent edits; clone c's commits are dated 100*(c+1) seconds later.
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for c, dir := range clones {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := syncHelper(t, dir, "edit", append(dateEnv(100*(c+1)), fmt.Sprintf("AGENTMINE_SYNC_CLONE=%d", c), "AGENTMINE_SYNC_SHARED="+strings.Join(shared, " "))...)
			if out, err := cmd.CombinedOutput(); err != nil {
				errs[c] = fmt.Errorf("clone %d edits: %v\n%s", c, err, out)
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}

	quiet := false
	for round := 1; round <= 10 && !quiet; round++ {
		reps := make([]Report, 3)
		for c, dir := range clones {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var stderr bytes.Buffer
				cmd := syncHelper(t, dir, "sync", dateEnv(1000+round)...)
				cmd.Stderr = &stderr
				out, err := cmd.Output()
				if err != nil {
					errs[c] = fmt.Errorf("round %d clone %d: %v: %s", round, c, err, stderr.String())
					return
				}
				errs[c] = json.Unmarshal(out, &reps[c])
			}()
		}
		wg.Wait()
		quiet = true
		for c, r := range reps {
			if errs[c] != nil {
				t.Fatal(errs[c])
			}
			t.Logf("round %d clone %d: fetched %d created %d ff %d merged %d conflicts %d pushed %d rounds %d",
				round, c, r.Fetched, r.Created, r.FastForwarded, r.Merged, r.ConflictingFields, r.Pushed, r.Rounds)
			if r.Fetched+r.Created+r.FastForwarded+r.Merged+r.Pushed > 0 || r.NotesMerged || r.NotesPushed || r.NotesUpdated {
				quiet = false
			}
		}
	}
	if !quiet {
		t.Fatal("no quiet round after 10 rounds")
	}

	var first []byte
	for c, dir := range clones {
		docs := syncDocs(t, syncOpen(t, dir, 0))
		if len(docs) != 700 {
			t.Fatalf("clone %d has %d entities, want 700", c, len(docs))
		}
		created := map[int]int{}
		for _, d := range docs {
			var cl, i int
			if n, _ := fmt.Sscanf(d["title"].(string), "clone %d entity %d", &cl, &i); n == 2 {
				created[cl]++
			}
		}
		if created[0] != 200 || created[1] != 200 || created[2] != 200 {
			t.Fatalf("clone %d: created entities per clone %v", c, created)
		}
		for _, id := range shared {
			d := docs[id]
			if d["title"] != "title by 2" || d["priority"] != "p2" || d["assignee"] != "one" ||
				d["note0"] != "by 0" || d["note1"] != "by 1" || d["note2"] != "by 2" || labelsOf(d) != "base,l0,l1,l2" {
				t.Fatalf("clone %d shared %s: %v", c, id, d)
			}
		}
		js, _ := json.Marshal(docs)
		if first == nil {
			first = js
		} else if !bytes.Equal(first, js) {
			t.Fatalf("clone %d lists different values than clone 0", c)
		}
	}
	if syncRefs(t, clones[0]) != syncRefs(t, clones[1]) || syncRefs(t, clones[1]) != syncRefs(t, clones[2]) {
		t.Fatal("clones' refs differ")
	}
}
