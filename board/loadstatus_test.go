package board

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/internal/gittest"
	"github.com/git-agentmine/git-agentmine/sessions"
	"github.com/git-agentmine/git-agentmine/status"
	"github.com/git-agentmine/git-agentmine/tasks"
)

// TestLoadStatusMatchesLoad: the partial board LoadStatus reads gives
// every task the status the whole board gives it, keeps exactly the
// running sessions, and per task the usage all its sessions reported and
// when the last of them finished — on a board with failed, reviewed,
// merged, running, planner and reviewer sessions, with the summary cache
// cold, warm and dropped.
func TestLoadStatusMatchesLoad(t *testing.T) {
	ctx := context.Background()
	dir := gittest.NewRepo(t)
	st, err := gitstore.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, title := range []string{"failed", "review", "merged", "running", "open", "planned"} {
		x, err := tasks.Add(ctx, st, tasks.New{Title: title})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, x.ID)
	}
	base := gittest.Git(t, dir, "rev-parse", "main")
	n := 0
	session := func(taskID, mode, role string, exit int, commit, ended bool, usage int64) sessions.Record {
		t.Helper()
		n++
		s := sessions.Session{ID: gitstore.NewID(), Task: taskID, Agent: "coder", Client: "custom", Mode: mode, Role: role,
			Host: "elsewhere", Timeout: 60, Started: time.Date(2026, 1, 2, 3, 4, n, 0, time.UTC), BaseRef: "main", BaseCommit: base}
		s.Branch = sessions.Branch(taskID, s.ID)
		tip := ""
		if commit {
			tree := gittest.Git(t, dir, "rev-parse", base+"^{tree}")
			tip = gittest.Git(t, dir, "commit-tree", "-p", base, "-m", "work "+s.ID, tree)
			gittest.Git(t, dir, "update-ref", "refs/heads/"+s.Branch, tip)
		}
		s, root, err := sessions.Create(ctx, st, s)
		if err != nil {
			t.Fatal(err)
		}
		r := sessions.Record{Session: s, Root: root}
		if ended {
			valid := true
			o := sessions.Outcome{ExitCode: exit, Finished: s.Started.Add(time.Duration(n) * time.Minute), By: "t", Tip: tip, ScopeValid: &valid,
				DoDStatus: "passed", Scope: json.RawMessage(`{"valid":true,"violations":[],"changed":[]}`),
				DoD: json.RawMessage(`{"status":"passed"}`), Commits: 1}
			if usage > 0 {
				o.Usage = &sessions.Usage{InputTokens: usage, OutputTokens: 1, CostUSD: 0.25}
			}
			if err := sessions.RecordOutcome(ctx, st, r, &o); err != nil {
				t.Fatal(err)
			}
		}
		return r
	}
	session(ids[0], sessions.ModeDetach, "", 1, false, true, 10)
	session(ids[0], sessions.ModeDetach, "", 2, false, true, 20)
	session(ids[1], sessions.ModeDetach, "", 0, true, true, 30)
	session(ids[1], sessions.ModeDetach, sessions.RoleReviewer, 0, false, true, 5)
	m := session(ids[2], sessions.ModeDetach, "", 0, true, true, 0)
	gittest.Git(t, dir, "update-ref", "refs/heads/main", gittest.Git(t, dir, "rev-parse", "refs/heads/"+m.Session.Branch))
	session(ids[3], sessions.ModeManual, "", 0, false, false, 0)
	session(ids[5], sessions.ModeDetach, sessions.RolePlanner, 0, false, true, 7)
	fallback := false
	check := func(what string) {
		t.Helper()
		// LoadStatus first: LoadSummary would mend a damaged cache.
		part, err := LoadStatus(ctx, st, "")
		if err != nil {
			t.Fatal(err)
		}
		whole, err := LoadSummary(ctx, st, "")
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(part.Status, whole.Status) {
			t.Fatalf("%s: statuses\n got %+v\nwant %+v", what, part.Status, whole.Status)
		}
		usage := map[string]*sessions.Usage{}
		finished := map[string]time.Time{}
		var live []string
		for _, r := range whole.Sessions {
			if o := r.Outcome; o != nil {
				if o.Usage != nil {
					if usage[r.Session.Task] == nil {
						usage[r.Session.Task] = &sessions.Usage{}
					}
					*usage[r.Session.Task] = usage[r.Session.Task].Add(*o.Usage)
				}
				if o.Finished.After(finished[r.Session.Task]) {
					finished[r.Session.Task] = o.Finished
				}
			}
			if l, _ := Liveness(r, whole.Here, time.Now()); l {
				live = append(live, r.Session.ID)
			}
		}
		if !part.Partial {
			// The fallback of a cache that did not check out: the whole
			// board.
			if !fallback || len(part.Sessions) != len(whole.Sessions) {
				t.Fatalf("%s: a whole board (%d sessions of %d) where a partial one was due", what, len(part.Sessions), len(whole.Sessions))
			}
			return
		}
		var gotLive []string
		for _, r := range part.Sessions {
			gotLive = append(gotLive, r.Session.ID)
		}
		if !reflect.DeepEqual(part.Usage, usage) || !reflect.DeepEqual(part.Finished, finished) || !reflect.DeepEqual(gotLive, live) {
			t.Fatalf("%s: usage %v finished %v live %v\nwant %v %v %v", what, part.Usage, part.Finished, gotLive, usage, finished, live)
		}
		if len(live) != 1 || strings.Count(fmtStatuses(part), "review") == 0 {
			t.Fatalf("%s: the fixture lost its running session or its review: %v %s", what, live, fmtStatuses(part))
		}
	}
	check("cache cold")
	check("cache warm")
	// A cache whose key still matches but whose content was damaged: the
	// stream finds out only at its end, and the board is read from git.
	cache := filepath.Join(dir, ".git", "agentmine", "cache", "summary-"+sessions.Kind.Dir)
	raw, err := os.ReadFile(cache)
	if err != nil {
		t.Fatal(err)
	}
	raw[len(raw)/2] ^= 0x01
	if err := os.WriteFile(cache, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	fallback = true
	check("cache damaged under its key")
	fallback = false
	if err := st.DropCaches(tasks.Kind, sessions.Kind); err != nil {
		t.Fatal(err)
	}
	check("caches dropped")
}

func fmtStatuses(b *Board) string {
	var out []string
	for _, id := range b.Tasks.IDs {
		out = append(out, string(b.Status[id].Status))
	}
	return strings.Join(out, " ")
}

// TestPermute: permute puts what was at order[i] at i, for random
// permutations, cycles of every length included.
func TestPermute(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for round := 0; round < 200; round++ {
		n := rng.IntN(40)
		order := rng.Perm(n)
		attempts := make([]status.Attempt, n)
		taskOf := make([]string, n)
		for i := range attempts {
			attempts[i].Session = fmt.Sprint(i)
			taskOf[i] = fmt.Sprint("t", i)
		}
		permute(attempts, taskOf, order)
		for i, from := range order {
			if attempts[i].Session != fmt.Sprint(from) || taskOf[i] != fmt.Sprint("t", from) {
				t.Fatalf("round %d: position %d holds %s/%s, want %d", round, i, attempts[i].Session, taskOf[i], from)
			}
		}
	}
}
