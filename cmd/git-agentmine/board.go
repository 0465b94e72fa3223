package main

import (
	"fmt"
	"runtime/debug"
	"sort"
	"time"

	"github.com/git-agentmine/git-agentmine/board"
	"github.com/git-agentmine/git-agentmine/contract"
	"github.com/git-agentmine/git-agentmine/output"
	"github.com/git-agentmine/git-agentmine/pipeline"
	"github.com/git-agentmine/git-agentmine/sessions"
	"github.com/git-agentmine/git-agentmine/status"
	"github.com/git-agentmine/git-agentmine/verify"
)

// StatusCmd is `status`: the board for people.
type StatusCmd struct {
	Failures int `short:"n" default:"5" help:"How many recent failures to show."`
}

// Run prints the board.
func (c *StatusCmd) Run(a *App) error {
	// The JSON board holds no session's own document beyond the running
	// ones, which summaries keep whole, so it reads a partial board (one
	// fact per attempt, board.LoadStatus); the human board prints the
	// findings of listed sessions, which need their full verdicts.
	debug.SetGCPercent(board.StatusGCPercent)
	load := loadView
	if a.G.JSON {
		load = func(a *App) (*view, error) { return loadViewWith(a, board.LoadStatus) }
	}
	v, err := load(a)
	if err != nil {
		return err
	}
	j := contract.NewBoard(v.Loaded, c.Failures, time.Now())
	if a.G.JSON {
		return a.P.PrintJSON(j)
	}
	if a.G.Quiet {
		// The rows the board lists, in its order: running sessions,
		// tasks in review, recent failures.
		for _, r := range j.Running {
			a.P.Printf("%s\n", r.ID)
		}
		for _, t := range j.Review {
			a.P.Printf("%s\n", t.ID)
		}
		for _, t := range j.Failures {
			a.P.Printf("%s\n", t.ID)
		}
		return nil
	}
	p := a.P
	p.Printf("%s\n", p.Paint(output.Bold, "Tasks"))
	for _, s := range status.All {
		extra := ""
		if s == status.Open {
			extra = fmt.Sprintf("  (%d ready, %d blocked)", j.Ready, j.Blocked)
		}
		p.Printf("  %-12s %s%s\n", s, p.Paint(statusColor(s), fmt.Sprint(j.Counts[string(s)])), extra)
	}
	printBlockedByCancelled(a, v)
	printLiveRuns(a, v.Loaded)
	p.Printf("\n%s\n", p.Paint(output.Bold, "Running workers"))
	if len(j.Running) == 0 {
		p.Printf("  none\n")
	}
	for _, r := range j.Running {
		p.Printf("  %s task %s  agent %s  pid %d  %s of %ds\n", r.ShortID, v.Board.ShortID(r.Task), agentLabel(r.Agent, r.Role), r.Pid, time.Duration(r.Elapsed*float64(time.Second)), r.Timeout)
	}
	p.Printf("\n%s\n", p.Paint(output.Bold, "In review (ready to merge)"))
	if len(j.Review) == 0 {
		p.Printf("  none\n")
	}
	for _, t := range j.Review {
		p.Printf("  %s %s%s\n", p.Paint(output.Yellow, t.ShortID), t.Title, usageSuffix(t.Usage))
		printTaskFindings(a, t)
	}
	p.Printf("\n%s\n", p.Paint(output.Bold, "Recent failures"))
	if len(j.Failures) == 0 {
		p.Printf("  none\n")
	}
	for _, t := range j.Failures {
		p.Printf("  %s %s %s%s\n    %s\n", p.Paint(output.Yellow, t.ShortID), p.Paint(statusColor(status.Status(t.Status)), t.Status), t.Title, usageSuffix(t.Usage), t.StatusReason)
		printTaskFindings(a, t)
	}
	return nil
}

// boardFindings is how many findings the board shows under one task;
// task show lists them all.
const boardFindings = 5

// printTaskFindings prints the violations and warnings of the task's
// latest session under it on the board.
func printTaskFindings(a *App, t taskJSON) {
	r := latestRecord(a, t.ID)
	if r == nil || r.Outcome == nil {
		return
	}
	v := verify.ParseVerdicts(r.Outcome)
	printFindings(a.P, "    ", v, boardFindings, "git agentmine task show "+t.ShortID)
	printDoDTail(a.P, "    ", v)
}

// usageSuffix renders a task's summed usage after its title.
func usageSuffix(u *sessions.Usage) string {
	if u == nil {
		return ""
	}
	return "  (" + u.String() + ")"
}

// printLiveRuns prints the runs whose supervisor is running, or gone
// before the run ended (start it again to resume), with their progress;
// nothing when there are none.
func printLiveRuns(a *App, b *board.Board) {
	st, err := a.Store()
	if err != nil {
		return
	}
	recs, err := pipeline.List(a.Ctx, st)
	if err != nil {
		return
	}
	first := true
	for _, r := range recs {
		if r.Ended != nil {
			continue
		}
		if first {
			a.P.Printf("\n%s\n", a.P.Paint(output.Bold, "Runs"))
			first = false
		}
		j := newRunStatus(r, b)
		state := fmt.Sprintf("running (pid %d)", r.Supervisor.Pid)
		if j.State == "dead" {
			state = "not running: start it again to resume"
		}
		usage := ""
		if j.Usage != nil {
			usage = "; usage " + j.Usage.String()
		}
		a.P.Printf("  %s  %s  %d/%d done, %d attempt(s), %d running%s; log %s\n", r.Name, state, j.Done, j.Total, j.Attempts, len(j.Running), usage, r.Log)
	}
}

// printBlockedByCancelled lists the open tasks that wait on a cancelled
// blocker, each with how to unblock it; nothing when there are none.
func printBlockedByCancelled(a *App, v *view) {
	var ids []string
	for id := range v.Board.Tasks {
		if v.Status[id].Status == status.Open && len(v.Loaded.CancelledBlockers(id)) > 0 {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return
	}
	sort.Strings(ids)
	a.P.Printf("\n%s\n", a.P.Paint(output.Bold, "Blocked by a cancelled task (never ready until unblocked)"))
	for _, id := range ids {
		a.P.Printf("  %s %s\n", a.P.Paint(output.Yellow, v.Board.ShortID(id)), v.Board.Tasks[id].Task.Title)
		printCancelledBlockers(a, v, id, "    ")
	}
}
