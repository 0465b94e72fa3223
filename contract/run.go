package contract

import (
	"time"

	"github.com/git-agentmine/git-agentmine/board"
	"github.com/git-agentmine/git-agentmine/pipeline"
	"github.com/git-agentmine/git-agentmine/plan"
	"github.com/git-agentmine/git-agentmine/status"
)

// RunStatusJSON is a run as run status --json and the run_status tool
// show it (docs/json.md).
type RunStatusJSON struct {
	pipeline.Record
	// State is running, ended, or dead (no supervisor, not ended: start it again to resume).
	State    string           `json:"state"`
	Done     int              `json:"done"`
	Total    int              `json:"total"`
	Attempts int              `json:"attempts"`
	Running  []RunWorkerJSON  `json:"running"`
	Statuses map[string]int   `json:"statuses"`
	LogTail  []string         `json:"log_tail,omitempty"`
	Tasks    []RunTaskRowJSON `json:"tasks"`
	// Usage sums the usage the run's sessions reported (pipeline.UsageOf);
	// nil where the board was not read (run --detach).
	Usage *pipeline.RunUsage `json:"usage,omitempty"`
}

// RunWorkerJSON is one running worker of a run.
type RunWorkerJSON struct {
	Session string    `json:"session"`
	Task    string    `json:"task"`
	Title   string    `json:"title"`
	Started time.Time `json:"started"`
	Pid     int       `json:"pid"`
}

// RunTaskRowJSON is one target of a run.
type RunTaskRowJSON struct {
	Task     string `json:"task"`
	Title    string `json:"title"`
	Status   string `json:"status"`
	Reason   string `json:"reason"`
	Attempts int    `json:"attempts"`
	// Waiting says why a ready target is not started: its declared paths
	// overlap those of a target that holds them (pipeline.OverlapWaits).
	Waiting *pipeline.Overlap `json:"waiting,omitempty"`
}

// NewRunStatus is run r as the board b says of its targets (b nil: the
// record alone).
func NewRunStatus(r pipeline.Record, b *board.Board) RunStatusJSON {
	j := RunStatusJSON{Record: r, Total: len(r.Targets), Running: []RunWorkerJSON{}, Statuses: map[string]int{}, Tasks: []RunTaskRowJSON{}}
	switch {
	case r.Ended != nil:
		j.State = "ended"
	case r.Alive():
		j.State = "running"
	default:
		j.State = "dead"
	}
	if b == nil {
		return j
	}
	var waits map[string]pipeline.Overlap
	if r.Ended == nil {
		waits = pipeline.OverlapWaits(b, r) // an ended run starts nothing
	}
	for _, id := range r.Targets {
		e, ok := b.Tasks.Tasks[id]
		if !ok {
			continue
		}
		res := b.Status[id]
		j.Statuses[string(res.Status)]++
		if res.Status == status.Done {
			j.Done++
		}
		n := 0
		for _, s := range b.SessionsOf(id) {
			if s.Session.Started.Before(r.Started) || pipeline.IsStartFailure(s, b.Here, time.Now()) || !pipeline.IsWorkerSession(s.Session) ||
				s.Outcome.RateLimited() || pipeline.IsStopped(s) {
				continue
			}
			n++
			if live, _ := board.Liveness(s, b.Here, time.Now()); live {
				j.Running = append(j.Running, RunWorkerJSON{Session: s.Session.ID, Task: id, Title: e.Task.Title, Started: s.Session.Started, Pid: s.Session.Pid})
			}
		}
		j.Attempts += n
		row := RunTaskRowJSON{Task: id, Title: e.Task.Title, Status: string(res.Status), Reason: res.Reason, Attempts: n}
		if o, ok := waits[id]; ok {
			row.Waiting = &o
		}
		j.Tasks = append(j.Tasks, row)
	}
	u := pipeline.UsageOf(b, r)
	j.Usage = &u
	return j
}

// RunFollowJSON is what the run_status tool returns: the run as run status
// --json shows it, and its log (one line per event) from a cursor on.
type RunFollowJSON struct {
	V   int           `json:"v"`
	Run RunStatusJSON `json:"run"`
	// Text is the run's log from the cursor given, at most the bytes asked
	// for (cut at a character boundary).
	Text string `json:"text"`
	// Cursor is where the next call continues; More says the log already
	// holds more after it.
	Cursor int64 `json:"cursor"`
	More   bool  `json:"more"`
	// Ended says the run has ended (or its supervisor is gone): once More
	// is false too, the log is complete.
	Ended bool `json:"ended"`
}

// PlanJSON is `plan --json` and `task import --json`, and what the
// task_plan and plan_import tools return.
type PlanJSON struct {
	V       int    `json:"v"`
	DryRun  bool   `json:"dry_run"`
	Session string `json:"planner_session,omitempty"`
	Summary string `json:"summary"`
	// Plan is the plan as read.
	Plan plan.Plan `json:"plan"`
	// Created are the tasks created, in the plan's order.
	Created []TaskJSON `json:"created"`
}
