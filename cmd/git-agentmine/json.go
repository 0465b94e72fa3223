package main

import (
	"time"

	"github.com/git-agentmine/git-agentmine/agents"
	"github.com/git-agentmine/git-agentmine/contract"
	"github.com/git-agentmine/git-agentmine/launch"
	"github.com/git-agentmine/git-agentmine/memory"
	"github.com/git-agentmine/git-agentmine/replica"
	"github.com/git-agentmine/git-agentmine/sessions"
	"github.com/git-agentmine/git-agentmine/tasknote"
)

// The --json outputs of the commands, in one place: docs/json.md documents
// every field of every struct type in this file and in package contract,
// and docs_test.go checks that it does. The documents the MCP server
// returns too (tasks, sessions, the board, memories, runs, merges) live in
// package contract and are named here by their old names. Types of other
// packages printed as they are (merge.Result, replica.Report,
// sessions.Outcome, verify.Verdict, memory.ImportResult) are embedded or
// referenced from here; the test checks those it names.

// The documents shared with the MCP server (package contract).
type (
	taskJSON    = contract.TaskJSON
	sessionJSON = contract.SessionJSON
	boardJSON   = contract.BoardJSON
	memoryJSON  = contract.MemoryJSON
	runJSON     = contract.RunJSON
	mergeJSON   = contract.MergeJSON
)

// agentJSON is the --json form of an agent (docs/json.md).
type agentJSON struct {
	V           int              `json:"v"`
	Name        string           `json:"name"`
	File        string           `json:"file"`
	Description string           `json:"description"`
	Role        string           `json:"role"`
	Client      string           `json:"client"`
	Model       string           `json:"model"`
	Command     []string         `json:"command"`
	PromptFile  string           `json:"prompt_file"`
	Timeout     int              `json:"timeout"`
	DoD         []string         `json:"dod"`
	Scope       agents.Scope     `json:"scope"`
	Isolation   agentIsolation   `json:"isolation"`
	Valid       bool             `json:"valid"`
	Problems    []agents.Problem `json:"problems"`
	Error       string           `json:"error,omitempty"`

	// Worktree is the agent's [worktree] table (setup commands, included
	// and shared paths), absent when it has none.
	Worktree *agents.Worktree `json:"worktree,omitempty"`
}

// agentIsolation is an agent's [isolation] with the project's setting
// applied.
type agentIsolation struct {
	Level    string `json:"level"`
	Fallback bool   `json:"fallback"`
	Network  bool   `json:"network"`
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

// doctorJSON is `doctor --json`: what isolation this machine can give.
type doctorJSON struct {
	V           int               `json:"v"`
	Levels      []doctorLevelJSON `json:"levels"`
	Default     string            `json:"default"`
	Configured  string            `json:"configured,omitempty"`
	Used        string            `json:"used,omitempty"`
	LandlockABI int               `json:"landlock_abi"`
	Bwrap       string            `json:"bwrap,omitempty"`
}

// doctorLevelJSON is one isolation level in doctorJSON.
type doctorLevelJSON struct {
	Level     string `json:"level"`
	Available bool   `json:"available"`
	Reason    string `json:"reason,omitempty"`
	Gives     string `json:"gives"`
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

// doneJSON is one element of `worker done --json`.
type doneJSON struct {
	V               int        `json:"v"`
	Session         string     `json:"session"`
	Task            string     `json:"task"`
	Worktree        string     `json:"worktree"`
	Branch          string     `json:"branch"`
	WorktreeRemoved bool       `json:"worktree_removed"`
	BranchDeleted   bool       `json:"branch_deleted"`
	BranchKept      bool       `json:"branch_kept"`
	EndedProcesses  []procJSON `json:"ended_processes,omitempty"`
}

// pruneJSON is `worker prune --json`.
type pruneJSON struct {
	V              int            `json:"v"`
	DryRun         bool           `json:"dry_run"`
	OlderThan      string         `json:"older_than"`
	Leftovers      []leftoverJSON `json:"leftovers"`
	EndedProcesses []procJSON     `json:"ended_processes,omitempty"`
}

// leftoverJSON is one worktree or branch `worker prune` found.
type leftoverJSON struct {
	Kind    string `json:"kind"`
	Name    string `json:"name"`
	Task    string `json:"task"`
	Session string `json:"session"`
	Ended   string `json:"ended"`
	Merged  bool   `json:"merged"`
	Removed bool   `json:"removed"`
	Error   string `json:"error,omitempty"`
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

// planJSON is `plan --json` and `task import --json`.
type planJSON = contract.PlanJSON

// reviewJSON is `review --json`.
type reviewJSON struct {
	V      int              `json:"v"`
	Task   string           `json:"task"`
	Review *sessions.Review `json:"review"`
}

// taskNoteJSON is `task note --json`.
type taskNoteJSON struct {
	V int `json:"v"`
	tasknote.Note
}

// runStatusJSON is the --json form of a run (docs/json.md).
type runStatusJSON = contract.RunStatusJSON
