package tasknote

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/git-agentmine/git-agentmine/board"
	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/internal/gittest"
	"github.com/git-agentmine/git-agentmine/replica"
	"github.com/git-agentmine/git-agentmine/sessions"
	"github.com/git-agentmine/git-agentmine/tasks"
	"github.com/git-agentmine/git-agentmine/verify"
)

// attempt records a manual session of task with a commit on its branch and
// an outcome (exit code, DoD, scope), then a review when verdict is set.
func attempt(t *testing.T, dir string, st *gitstore.Store, task tasks.Task, exit int, dod string, verdict string, usage *sessions.Usage) sessions.Record {
	t.Helper()
	ctx := context.Background()
	base := gittest.Git(t, dir, "rev-parse", "main")
	sid := gitstore.NewID()
	branch := sessions.Branch(task.ID, sid)
	gittest.Git(t, dir, "checkout", "-q", "-b", branch, base)
	tip := gittest.CommitFiles(t, dir, "work "+sid[:4], map[string]string{"src/" + sid[:4] + ".txt": "x\n"})
	gittest.Git(t, dir, "checkout", "-q", "main")
	s, root, err := sessions.Create(ctx, st, sessions.Session{ID: sid, Task: task.ID, Agent: "coder", Branch: branch,
		BaseRef: "main", BaseCommit: base, Started: time.Now().UTC().Add(-2 * time.Second), Mode: sessions.ModeManual})
	if err != nil {
		t.Fatal(err)
	}
	rec := sessions.Record{Session: s, Root: root}
	out := sessions.Outcome{ExitCode: exit, Finished: time.Now().UTC(), Tip: tip, Commits: 1, By: "test", Usage: usage}
	verify.Verdicts{Scope: verify.Verdict{Valid: true, Tip: tip, Violations: []verify.Violation{}}, HasScope: true,
		DoD: verify.DoDResult{Status: dod}}.Record(&out)
	if err := sessions.RecordOutcome(ctx, st, rec, &out); err != nil {
		t.Fatal(err)
	}
	rec, err = sessions.Get(ctx, st, sid)
	if err != nil {
		t.Fatal(err)
	}
	if verdict != "" {
		r := sessions.Review{Verdict: verdict, Reasons: []string{"reason " + verdict}, Agent: "rev", By: "test"}
		if err := sessions.RecordReview(ctx, st, rec, &r); err != nil {
			t.Fatal(err)
		}
	}
	return rec
}

func TestNoteOfAttemptsAndReviews(t *testing.T) {
	gittest.SkipShort(t, "three attempts with commits, then a sync to a second clone")
	dir := gittest.NewRepo(t)
	ctx := context.Background()
	st, err := gitstore.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	task, err := tasks.Add(ctx, st, tasks.New{Title: "Greet", Description: "Say hi.", Acceptance: []string{"it greets", "it exits 0"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Read(ctx, st, task.ID); !errors.Is(err, ErrNone) || exitcode.Of(err) != exitcode.NotFound {
		t.Fatalf("no note yet: %v", err)
	}
	attempt(t, dir, st, task, 0, "failed", "", &sessions.Usage{InputTokens: 100, OutputTokens: 10})
	attempt(t, dir, st, task, 0, "passed", "NG", nil)
	last := attempt(t, dir, st, task, 0, "passed", "OK", &sessions.Usage{InputTokens: 5, OutputTokens: 1, CostUSD: 0.5})
	gittest.Git(t, dir, "merge", "-q", "--no-ff", "-m", "merge", last.Session.Branch)

	n, err := WriteFor(ctx, st, "main", task.ID[:6], Options{By: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if n.State != "done" || len(n.Attempts) != 3 || n.Attempts[0].DoD != "failed" || n.Attempts[1].Review != "NG" || n.Attempts[2].Review != "OK" {
		t.Fatalf("note %+v", n)
	}
	if n.Usage == nil || n.Usage.InputTokens != 105 || n.Usage.CostUSD != 0.5 {
		t.Fatalf("usage %+v", n.Usage)
	}
	if !n.Criteria[0].Met || !n.Criteria[1].Met || n.Criteria[1].ID != "AC-2" {
		t.Fatalf("criteria %+v", n.Criteria)
	}
	if !strings.Contains(n.DiffStat, "src/"+last.Session.ID[:4]+".txt") {
		t.Fatalf("diff stat %q", n.DiffStat)
	}
	md := n.Markdown()
	for _, want := range []string{"# Task Note - ", "- State: done", "- [x] AC-1: it greets", "| 1 | " + n.Attempts[0].Session[:8] + " | coder | 0 | failed | valid | - |",
		"| 2 | " + n.Attempts[1].Session[:8] + " | coder | 0 | passed | valid | NG |", "review NG by rev: reason NG", "Say hi.", "Usage (all sessions): 105 in, 11 out, $0.5000", "```\n src/"} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md)
		}
	}
	got, err := Read(ctx, st, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(n)
	b, _ := json.Marshal(got)
	if string(a) != string(b) {
		t.Fatalf("read back\n%s\nwant\n%s", b, a)
	}

	// An exhausted task: the supervisor's state wins, and the newer note is read.
	if _, err := WriteFor(ctx, st, "main", task.ID, Options{State: "exhausted", Reason: "2 attempts used"}); err != nil {
		t.Fatal(err)
	}
	if got, _ := Read(ctx, st, task.ID); got.State != "exhausted" || !strings.Contains(got.Summary, "ended exhausted after 3 attempts (reviews: 1 OK, 1 NG): 2 attempts used.") {
		t.Fatalf("exhausted note %+v", got)
	}

	// The note travels with sync to another clone.
	remote := gittest.Init(t)
	gittest.Git(t, remote, "config", "receive.denyCurrentBranch", "ignore")
	gittest.Git(t, dir, "remote", "add", "origin", remote)
	gittest.Git(t, dir, "push", "-q", "origin", "main")
	if _, err := replica.Sync(ctx, st, replica.Options{}); err != nil {
		t.Fatal(err)
	}
	clone := gittest.Init(t)
	gittest.Git(t, clone, "remote", "add", "origin", remote)
	gittest.Git(t, clone, "pull", "-q", "origin", "main")
	st2, err := gitstore.Open(ctx, clone)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := replica.Pull(ctx, st2, replica.Options{}); err != nil {
		t.Fatal(err)
	}
	there, err := Read(ctx, st2, task.ID)
	if err != nil || there.State != "exhausted" || len(there.Attempts) != 3 {
		t.Fatalf("in the clone: %+v %v", there, err)
	}
	// planner and reviewer runs are counted apart, never as attempts.
	b2, err := board.Load(ctx, st, "main")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := sessions.Create(ctx, st, sessions.Session{ID: gitstore.NewID(), Task: task.ID, Agent: "rev", Role: sessions.RoleReviewer,
		Started: time.Now().UTC(), Mode: sessions.ModeExec}); err != nil {
		t.Fatal(err)
	}
	b3, _ := board.Load(ctx, st, "main")
	n3, err := Build(ctx, st, b3, task.ID, Options{})
	if err != nil || len(n3.Attempts) != 3 || n3.Runs != 1 || len(n3.Calls) != 1 || n3.Calls[0].Role != "reviewer" || n3.Calls[0].ExitCode != nil || b3.Status[task.ID].Reason != b2.Status[task.ID].Reason {
		t.Fatalf("with a reviewer run: %+v %v", n3, err)
	}
}
