package main

import (
	"time"

	"github.com/git-agentmine/git-agentmine/agents"
	"github.com/git-agentmine/git-agentmine/launch"
	"github.com/git-agentmine/git-agentmine/memory"
	"github.com/git-agentmine/git-agentmine/merge"
	"github.com/git-agentmine/git-agentmine/replica"
	"github.com/git-agentmine/git-agentmine/sessions"
	"github.com/git-agentmine/git-agentmine/tasks"
)

// The --json outputs of the commands, in one place: docs/json.md documents
// every field of every struct type in this file, and docs_test.go checks
// that it does. Types of other packages printed as they are (merge.Result,
// replica.Report, sessions.Outcome, verify.Verdict, memory.ImportResult)
// are embedded or referenced from here; the test checks those it names.

// agentJSON is the --json form of an agent (docs/json.md).
type agentJSON struct {
	V           int              `json:"v"`
	Name        string           `json:"name"`
	File        string           `json:"file"`
	Description string           `json:"description"`
	Client      string           `json:"client"`
	Model       string           `json:"model"`
	Command     []string         `json:"command"`
	PromptFile  string           `json:"prompt_file"`
	Timeout     int              `json:"timeout"`
	DoD         []string         `json:"dod"`
	Scope       agents.Scope     `json:"scope"`
	Valid       bool             `json:"valid"`
	Problems    []agents.Problem `json:"problems"`
	Error       string           `json:"error,omitempty"`
}

// boardJSON is `status --json`: the board.
type boardJSON struct {
	V        int            `json:"v"`
	Counts   map[string]int `json:"counts"`
	Ready    int            `json:"ready"`
	Blocked  int            `json:"blocked"`
	Running  []sessionJSON  `json:"running"`
	Review   []taskJSON     `json:"review"`
	Failures []taskJSON     `json:"recent_failures"`
}

// settingJSON is one setting of `config show --json` and where it came from.
type settingJSON struct {
	Key    string `json:"key"`
	Value  string `json:"value"`
	Source string `json:"source"`
	Origin string `json:"origin"`
	Env    string `json:"env"`
	Git    string `json:"git"`
}

// initJSON is `init --json`.
type initJSON struct {
	V       int         `json:"v"`
	Top     string      `json:"top"`
	Base    string      `json:"base"`
	Remote  string      `json:"remote,omitempty"`
	Created []string    `json:"created"`
	Kept    []string    `json:"kept"`
	Exclude excludeJSON `json:"exclude"`
}

// excludeJSON is the worktree root's line in info/exclude, in `init --json`.
type excludeJSON struct {
	File    string `json:"file"`
	Pattern string `json:"pattern"`
	Added   bool   `json:"added"`
}

// memoryJSON is the --json form of a memory (docs/json.md).
type memoryJSON struct {
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

// treeNode is one task of `task tree --json`, with its children.
type treeNode struct {
	V         int        `json:"v"`
	ID        string     `json:"id"`
	ShortID   string     `json:"short_id"`
	Title     string     `json:"title"`
	Status    string     `json:"status"`
	BlockedBy []string   `json:"blocked_by"`
	Children  []treeNode `json:"children"`
}

// logJSON is one entry of `task log --json`.
type logJSON struct {
	V       int       `json:"v"`
	Commit  string    `json:"commit"`
	Time    time.Time `json:"time"`
	Author  string    `json:"author"`
	Email   string    `json:"email"`
	Message string    `json:"message"`
}

// taskJSON is the --json form of a task (docs/json.md).
type taskJSON struct {
	V            int          `json:"v"`
	ID           string       `json:"id"`
	ShortID      string       `json:"short_id"`
	Title        string       `json:"title"`
	Status       string       `json:"status"`
	StatusReason string       `json:"status_reason"`
	Blocked      bool         `json:"blocked"`
	Ready        bool         `json:"ready"`
	WaitingOn    []string     `json:"waiting_on"`
	Description  string       `json:"description"`
	Type         string       `json:"type"`
	Priority     string       `json:"priority"`
	Parent       string       `json:"parent"`
	BlockedBy    []string     `json:"blocked_by"`
	Labels       []string     `json:"labels"`
	Assignee     string       `json:"assignee"`
	DoD          []string     `json:"dod"`
	Base         string       `json:"base"`
	Acceptance   []string     `json:"acceptance"`
	Created      tasks.Stamp  `json:"created"`
	Updated      tasks.Stamp  `json:"updated"`
	Cancelled    *tasks.Fact  `json:"cancelled"`
	Reopened     *tasks.Fact  `json:"reopened"`
	Commit       string       `json:"commit"`
	Session      string       `json:"session,omitempty"`
	Extra        *sessionInfo `json:"latest_session,omitempty"`
	// Usage sums the usage every session of the task reported.
	Usage *sessions.Usage `json:"usage,omitempty"`
}

// runJSON is `worker run --json`: the session and, after --exec, its outcome.
type runJSON struct {
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
}

// sessionJSON is the --json form of a session (session list/show, worker status).
type sessionJSON struct {
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
}

// doneJSON is one element of `worker done --json`.
type doneJSON struct {
	V              int        `json:"v"`
	Session        string     `json:"session"`
	Task           string     `json:"task"`
	Worktree       string     `json:"worktree"`
	Branch         string     `json:"branch"`
	BranchDeleted  bool       `json:"branch_deleted"`
	EndedProcesses []procJSON `json:"ended_processes,omitempty"`
}

// procJSON is a process agentmine ended.
type procJSON struct {
	Pid     int    `json:"pid"`
	Command string `json:"command"`
}

func procsJSON(ps []launch.Proc) []procJSON {
	var out []procJSON
	for _, p := range ps {
		out = append(out, procJSON{Pid: p.Pid, Command: p.Command})
	}
	return out
}

// settingOneJSON is `config show KEY --json`.
type settingOneJSON struct {
	V int `json:"v"`
	settingJSON
}

// settingsJSON is `config show --json`.
type settingsJSON struct {
	V        int           `json:"v"`
	Settings []settingJSON `json:"settings"`
}

// memoryRemovedJSON is one element of `memory remove --json`.
type memoryRemovedJSON struct {
	V  int    `json:"v"`
	ID string `json:"id"`
}

// memoryPreviewJSON is `memory preview --json`.
type memoryPreviewJSON struct {
	V        int                      `json:"v"`
	Text     string                   `json:"text"`
	Memories []memoryPreviewEntryJSON `json:"memories"`
}

// memoryPreviewEntryJSON is one memory a worker's prompt lists.
type memoryPreviewEntryJSON struct {
	ID       string `json:"id"`
	Category string `json:"category"`
	Title    string `json:"title"`
	Path     string `json:"path"`
}

// memoryExportJSON is `memory export --json`.
type memoryExportJSON struct {
	V     int                     `json:"v"`
	Dir   string                  `json:"dir"`
	Files []memoryExportEntryJSON `json:"files"`
}

// memoryExportEntryJSON is one exported file.
type memoryExportEntryJSON struct {
	ID   string `json:"id"`
	Path string `json:"path"`
}

// memoryImportJSON is `memory import --json`.
type memoryImportJSON struct {
	V     int                   `json:"v"`
	Files []memory.ImportResult `json:"files"`
}

// mergeJSON is `merge --json`.
type mergeJSON struct {
	V int `json:"v"`
	merge.Result
}

// syncJSON is `sync`, `push` and `pull --json`.
type syncJSON struct {
	V int `json:"v"`
	replica.Report
}

// workerCommandJSON is `worker command --json` (fields in the order a map
// printed them, which this output had first).
type workerCommandJSON struct {
	Agent    string   `json:"agent"`
	Argv     []string `json:"argv"`
	Client   string   `json:"client"`
	Prompt   string   `json:"prompt"`
	Task     string   `json:"task"`
	V        int      `json:"v"`
	Worktree string   `json:"worktree"`
}

// versionJSON is `version --json`.
type versionJSON struct {
	// V is the schema version of this document.
	V int `json:"v"`
	// Version is the module version (a tag, a pseudo-version, or "(devel)"
	// for a build from a checkout), or the one set with -ldflags.
	Version string `json:"version"`
	// Revision is the commit the binary was built from, when the build
	// recorded it.
	Revision string `json:"revision,omitempty"`
	// Modified is true when the checkout had uncommitted changes.
	Modified bool `json:"modified,omitempty"`
	// Time is the commit time of Revision, RFC 3339.
	Time string `json:"time,omitempty"`
	// Go is the Go release that built the binary.
	Go string `json:"go"`
}

// installManJSON is `install-man --json`.
type installManJSON struct {
	// V is the schema version of this document.
	V int `json:"v"`
	// Path is the file the page was written to.
	Path string `json:"path"`
	// Found is true when man will find the page for the git-agentmine on
	// PATH without MANPATH: the page is in <bin>/../share/man/man1 of a
	// PATH directory <bin> that holds git-agentmine.
	Found bool `json:"found"`
}
