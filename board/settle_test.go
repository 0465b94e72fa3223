package board

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/internal/gittest"
	"github.com/git-agentmine/git-agentmine/launch"
	"github.com/git-agentmine/git-agentmine/sessions"
	"github.com/git-agentmine/git-agentmine/status"
	"github.com/git-agentmine/git-agentmine/tasks"
)

// TestSettleSeesAnOutcomeRecordedAfterTheRead: a supervisor that records
// its outcome and exits after its session was read looks lost to the read
// it missed; Settle reads the outcome again and the session has ended (its
// timeout, not "lost"). A session whose supervisor died without a word
// stays lost, and one still running is judged running, a judgement every
// later Liveness of the record repeats (LiveNow looks again). Every board a
// reader loads is settled the same way.
func TestSettleSeesAnOutcomeRecordedAfterTheRead(t *testing.T) {
	ctx := context.Background()
	dir := gittest.NewRepo(t)
	st, err := gitstore.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	here := HereOf(st)
	if here.Repo == "" {
		t.Fatal("no repository id")
	}
	// start runs a stand-in supervisor and records a session naming it.
	start := func(title string) (sessions.Record, *exec.Cmd) {
		t.Helper()
		x, err := tasks.Add(ctx, st, tasks.New{Title: title})
		if err != nil {
			t.Fatal(err)
		}
		sup := exec.Command("sleep", "60")
		if err := sup.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			sup.Process.Kill()
			sup.Wait()
		})
		pstart, err := launch.StartTime(sup.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		s := sessions.Session{ID: gitstore.NewID(), Task: x.ID, Agent: "coder", Client: "custom", Mode: sessions.ModeExec,
			Host: here.Host, Repo: here.Repo, Pid: sup.Process.Pid, PidStart: pstart, Timeout: 60, Started: time.Now().UTC()}
		s.Branch = sessions.Branch(x.ID, s.ID)
		s, root, err := sessions.Create(ctx, st, s)
		if err != nil {
			t.Fatal(err)
		}
		return sessions.Record{Session: s, Root: root}, sup
	}
	stop := func(sup *exec.Cmd) {
		t.Helper()
		sup.Process.Kill()
		sup.Wait()
	}
	timedOut, timedOutSup := start("times out")
	died, diedSup := start("dies silently")
	running, runningSup := start("keeps running")

	// The read, then the supervisor's last acts: record, exit.
	recs, _, err := sessions.LoadAll(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 {
		t.Fatalf("read %d sessions, want 3", len(recs))
	}
	o := sessions.Outcome{ExitCode: 124, TimedOut: true, Finished: time.Now().UTC(), By: "supervisor"}
	if err := sessions.RecordOutcome(ctx, st, timedOut, &o); err != nil {
		t.Fatal(err)
	}
	stop(timedOutSup)
	stop(diedSup)

	byID := func(recs []sessions.Record, id string) sessions.Record {
		t.Helper()
		for _, r := range recs {
			if r.Session.ID == id {
				return r
			}
		}
		t.Fatalf("session %s not read", id)
		return sessions.Record{}
	}
	// What the record read before the exit says without settling: lost.
	if _, lost := Liveness(byID(recs, timedOut.Session.ID), here, time.Now()); !lost {
		t.Fatal("the fixture does not reproduce the race: an unsettled record of an exited supervisor is not lost")
	}
	if err := Settle(ctx, st, recs, here, time.Now()); err != nil {
		t.Fatal(err)
	}
	check := func(what string, recs []sessions.Record) {
		t.Helper()
		r := byID(recs, timedOut.Session.ID)
		if r.Outcome == nil || !r.Outcome.TimedOut {
			t.Fatalf("%s: the timed-out session has outcome %+v, want its timeout", what, r.Outcome)
		}
		if live, lost := Liveness(r, here, time.Now()); live || lost {
			t.Fatalf("%s: the timed-out session: live %v lost %v, want ended", what, live, lost)
		}
		if live, lost := Liveness(byID(recs, died.Session.ID), here, time.Now()); live || !lost {
			t.Fatalf("%s: the silent one: live %v lost %v, want lost", what, live, lost)
		}
		if live, lost := Liveness(byID(recs, running.Session.ID), here, time.Now()); !live || lost {
			t.Fatalf("%s: the running one: live %v lost %v, want running", what, live, lost)
		}
		for _, r := range recs {
			if !r.Judged {
				t.Fatalf("%s: session %s was not judged", what, r.Session.ID)
			}
		}
	}
	check("settled", recs)

	// Every loader settles what it reads.
	whole, err := Load(ctx, st, "")
	if err != nil {
		t.Fatal(err)
	}
	check("Load", whole.Sessions)
	summary, err := LoadSummary(ctx, st, "")
	if err != nil {
		t.Fatal(err)
	}
	check("LoadSummary", summary.Sessions)
	part, err := LoadStatus(ctx, st, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(part.Sessions) != 1 || part.Sessions[0].Session.ID != running.Session.ID {
		t.Fatalf("LoadStatus: running sessions %v, want only %s", part.Sessions, running.Session.ID)
	}
	for _, b := range []*Board{whole, summary, part} {
		if got := b.Status[timedOut.Session.Task].Status; got != status.Failed {
			t.Fatalf("status of the timed-out task %s, want failed", got)
		}
		if got := b.Status[running.Session.Task].Status; got != status.InProgress {
			t.Fatalf("status of the running task %s, want in_progress", got)
		}
	}
	if a := part.Facts.Attempts[timedOut.Session.Task]; len(a) != 1 || !a[0].TimedOut || a[0].Lost {
		t.Fatalf("LoadStatus: the timed-out attempt %+v, want timed out, not lost", a)
	}
	if a := part.Facts.Attempts[died.Session.Task]; len(a) != 1 || !a[0].Lost {
		t.Fatalf("LoadStatus: the silent attempt %+v, want lost", a)
	}
	one, _, err := LoadTask(ctx, st, "", timedOut.Session.Task)
	if err != nil {
		t.Fatal(err)
	}
	if a := one.Facts.Attempts[timedOut.Session.Task]; len(a) != 1 || !a[0].TimedOut || a[0].Lost {
		t.Fatalf("LoadTask: the timed-out attempt %+v, want timed out, not lost", a)
	}
	r, err := Session(ctx, st, died.Session.ID[:8])
	if err != nil {
		t.Fatal(err)
	}
	if !r.Judged || !r.Lost {
		t.Fatalf("Session: the silent one judged %v lost %v, want judged lost", r.Judged, r.Lost)
	}

	// A judgement is of its read: the running one's supervisor exits, the
	// record still says running, and LiveNow, for acting on processes,
	// looks again.
	r = byID(recs, running.Session.ID)
	if !LiveNow(r, here) {
		t.Fatal("LiveNow: the running one is not live")
	}
	stop(runningSup)
	if live, _ := Liveness(r, here, time.Now()); !live {
		t.Fatal("the judged record changed its mind")
	}
	if LiveNow(r, here) {
		t.Fatal("LiveNow: a supervisor that exited is live")
	}
}
