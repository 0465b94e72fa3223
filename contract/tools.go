package contract

// The documents only the MCP server returns. A tool's result must be a JSON
// object, so the lists the commands print as arrays come wrapped in one;
// the elements are the same documents.

// TasksJSON is what the task_list and task_ready tools return: the tasks
// task list --json and task ready --json print, in the same order.
type TasksJSON struct {
	V     int        `json:"v"`
	Tasks []TaskJSON `json:"tasks"`
	// Total is how many tasks matched: more than len(Tasks) when the
	// call's limit cut the list.
	Total int `json:"total"`
}

// MemoriesJSON is what the memory_list tool returns: the memories memory
// list --json prints.
type MemoriesJSON struct {
	V        int          `json:"v"`
	Memories []MemoryJSON `json:"memories"`
}

// MemoryBriefJSON is an active memory as a worker's prompt lists it: what
// it is about, without its content.
type MemoryBriefJSON struct {
	ID       string `json:"id"`
	ShortID  string `json:"short_id"`
	Category string `json:"category"`
	Title    string `json:"title"`
	Summary  string `json:"summary"`
}

// ContextJSON is what the context tool returns: where the repository is,
// the board, the tasks that are ready to start and the active memory, the
// facts an orchestrator starts from.
type ContextJSON struct {
	V int `json:"v"`
	// Top is the repository's main worktree.
	Top string `json:"top"`
	// Base is the branch merges go into.
	Base  string    `json:"base"`
	Board BoardJSON `json:"board"`
	// Ready holds the first ready tasks, highest priority first (the
	// board's ready count says how many there are).
	Ready    []TaskJSON        `json:"ready"`
	Memories []MemoryBriefJSON `json:"memories"`
}

// SessionStatusJSON is what the session_status tool returns: the session
// and what it means for its task.
type SessionStatusJSON struct {
	V       int         `json:"v"`
	Session SessionJSON `json:"session"`
	// Verdict is the session's result in the words worker wait and
	// session list use: running, review, dod_failed (…), failed (…),
	// tainted (…) or done (merged).
	Verdict string `json:"verdict"`
	// TaskStatus is the task's derived status now.
	TaskStatus string `json:"task_status"`
}

// SessionOutputJSON is what the session_output tool returns: the part of a
// session's log from a cursor on, and where to continue.
type SessionOutputJSON struct {
	V       int    `json:"v"`
	Session string `json:"session"`
	// Text is the log from the cursor given, at most the bytes asked for
	// (cut at a character boundary).
	Text string `json:"text"`
	// Cursor is where the next call continues.
	Cursor int64 `json:"cursor"`
	// More says the log already holds more after Cursor.
	More bool `json:"more"`
	// Ended says the session has ended: once More is false too, the log is
	// complete.
	Ended bool `json:"ended"`
	// State is the session's state: running, ended or lost.
	State string `json:"state"`
	// Rotated says the log was rotated since the cursor was handed out:
	// Text continues from the rotated file into the new one.
	Rotated bool `json:"rotated,omitempty"`
}
