// Package contract owns the JSON documents git agentmine hands to programs:
// the --json output of its commands and the results of its MCP tools
// (docs/json.md documents every field), and how each is filled from the
// board, the sessions and the Memory Bank. The command line and the MCP
// server print the same types built by the same functions, and the MCP
// tools' output schemas are generated from these types, so the two front
// ends cannot drift apart.
package contract

import (
	"time"

	"github.com/git-agentmine/git-agentmine/bestof"
	"github.com/git-agentmine/git-agentmine/memory"
	"github.com/git-agentmine/git-agentmine/merge"
	"github.com/git-agentmine/git-agentmine/sessions"
	"github.com/git-agentmine/git-agentmine/status"
	"github.com/git-agentmine/git-agentmine/tasks"
)

// TaskJSON is the --json form of a task (docs/json.md).
type TaskJSON struct {
	V            int      `json:"v"`
	ID           string   `json:"id"`
	ShortID      string   `json:"short_id"`
	Title        string   `json:"title"`
	Status       string   `json:"status"`
	StatusReason string   `json:"status_reason"`
	Blocked      bool     `json:"blocked"`
	Ready        bool     `json:"ready"`
	WaitingOn    []string `json:"waiting_on"`
	Description  string   `json:"description"`
	Type         string   `json:"type"`
	Priority     string   `json:"priority"`
	Parent       string   `json:"parent"`
	BlockedBy    []string `json:"blocked_by"`
	Labels       []string `json:"labels"`
	Assignee     string   `json:"assignee"`
	DoD          []string `json:"dod"`
	Base         string   `json:"base"`
	Acceptance   []string `json:"acceptance"`
	// Criteria are the acceptance criteria with their ids (AC-1, …).
	Criteria []Criterion `json:"criteria"`
	// MaxLoops is the task's own attempt limit (0: the run's --max-loops).
	MaxLoops int `json:"max_loops,omitempty"`
	// BestOf is the task's own best-of setting (0: the run's --best-of).
	BestOf int `json:"best_of,omitempty"`
	// Paths are the paths the task expects to change (absent: none
	// declared).
	Paths []string `json:"paths,omitempty"`
	// Children is the roll-up of a task with children: done of total
	// (cancelled ones left out), and the exhausted ones.
	Children  *status.Progress `json:"children,omitempty"`
	Created   tasks.Stamp      `json:"created"`
	Updated   tasks.Stamp      `json:"updated"`
	Cancelled *tasks.Fact      `json:"cancelled"`
	Reopened  *tasks.Fact      `json:"reopened"`
	Exhausted *tasks.Fact      `json:"exhausted,omitempty"`
	Commit    string           `json:"commit"`
	Session   string           `json:"session,omitempty"`
	Extra     *SessionJSON     `json:"latest_session,omitempty"`
	// Usage sums the usage every session of the task reported.
	Usage *sessions.Usage `json:"usage,omitempty"`
	// Review is the review of the session that decided the status (task
	// show only); nil when it was not reviewed.
	Review *sessions.Review `json:"review,omitempty"`
	// Rounds lists the task's best-of rounds, each with its attempts and,
	// once decided, the comparison and the choice (task show only).
	Rounds []bestof.Round `json:"best_of_rounds,omitempty"`
	// BlockedByCancelled lists the blockers that are cancelled: the task
	// waits on them forever until they are removed from it or reopened.
	BlockedByCancelled []string `json:"blocked_by_cancelled,omitempty"`
}

// Criterion is an acceptance criterion with its id.
type Criterion struct {
	ID   string `json:"id"`
	Text string `json:"text"`
}

// SessionJSON is the --json form of a session (session list/show, worker
// status, and a task's latest session).
type SessionJSON struct {
	V        int               `json:"v"`
	ID       string            `json:"id"`
	ShortID  string            `json:"short_id"`
	Task     string            `json:"task"`
	Agent    string            `json:"agent"`
	Client   string            `json:"client"`
	Version  string            `json:"client_version,omitempty"`
	Mode     string            `json:"mode"`
	Branch   string            `json:"branch"`
	BaseRef  string            `json:"base_ref"`
	Base     string            `json:"base_commit"`
	Worktree string            `json:"worktree"`
	Host     string            `json:"host"`
	Pid      int               `json:"pid,omitempty"`
	Started  time.Time         `json:"started"`
	Timeout  int               `json:"timeout"`
	State    string            `json:"state"`
	Elapsed  float64           `json:"elapsed_seconds"`
	Log      string            `json:"log"`
	Tail     []string          `json:"log_tail,omitempty"`
	Outcome  *sessions.Outcome `json:"outcome"`
	// Sealed: the outcome is a supervised verdict (the supervisor sealed
	// the session); false for manual sessions, whose outcome is an
	// orchestrator's report, and for sessions recorded before seals.
	Sealed bool               `json:"sealed"`
	Forged []sessions.Forgery `json:"forged,omitempty"`

	// WorkerPid is the worker's own pid, as its supervisor recorded it.
	WorkerPid int `json:"worker_pid,omitempty"`
	// Isolation is the isolation level the worker ran under, as decided
	// when the session was prepared; nil in manual sessions.
	Isolation *sessions.Isolation `json:"isolation,omitempty"`
	// Role is "planner" or "reviewer" for those runs, absent for a
	// worker's; Reviews is the session a reviewer reviewed.
	Role    string `json:"role,omitempty"`
	Reviews string `json:"reviews,omitempty"`
	// Review is the session's review, ForgedReviews the review lines
	// rejected as unproven.
	Review        *sessions.Review   `json:"review,omitempty"`
	ForgedReviews []sessions.Forgery `json:"forged_reviews,omitempty"`
}

// BoardJSON is `status --json`: the board.
type BoardJSON struct {
	V        int            `json:"v"`
	Counts   map[string]int `json:"counts"`
	Ready    int            `json:"ready"`
	Blocked  int            `json:"blocked"`
	Running  []SessionJSON  `json:"running"`
	Review   []TaskJSON     `json:"review"`
	Failures []TaskJSON     `json:"recent_failures"`
}

// MemoryJSON is the --json form of a memory (docs/json.md).
type MemoryJSON struct {
	V        int          `json:"v"`
	ID       string       `json:"id"`
	ShortID  string       `json:"short_id"`
	Category string       `json:"category"`
	Title    string       `json:"title"`
	Summary  string       `json:"summary"`
	Content  string       `json:"content"`
	Status   string       `json:"status"`
	Tags     []string     `json:"tags"`
	Task     string       `json:"task"`
	Path     string       `json:"path"`
	Created  memory.Stamp `json:"created"`
	Updated  memory.Stamp `json:"updated"`
	Commit   string       `json:"commit"`
}

// RunJSON is `worker run --json`: the session and, after --exec, its
// outcome.
type RunJSON struct {
	V        int               `json:"v"`
	Session  string            `json:"session"`
	Task     string            `json:"task"`
	Agent    string            `json:"agent"`
	Client   string            `json:"client"`
	Branch   string            `json:"branch"`
	Worktree string            `json:"worktree"`
	Prompt   string            `json:"prompt_file"`
	Command  []string          `json:"command"`
	Mode     string            `json:"mode"`
	Pid      int               `json:"pid,omitempty"`
	Log      string            `json:"log"`
	Outcome  *sessions.Outcome `json:"outcome,omitempty"`
	Status   string            `json:"status,omitempty"`
	// Isolation is the isolation level the worker runs at (nil for a
	// manual session).
	Isolation *sessions.Isolation `json:"isolation,omitempty"`
	// Hint is the one line saying how to share the session with other
	// clones, when the repository has a remote but shares nothing through
	// it (MCP's worker_start; the command line prints it as a hint line).
	Hint string `json:"hint,omitempty"`
}

// MergeJSON is `merge --json`.
type MergeJSON struct {
	V int `json:"v"`
	merge.Result
}
