package main

// CLI is the kong grammar: global flags plus one field per command group.
// It is built as a value in Main; there is no package-level parser.
type CLI struct {
	Globals

	Init       InitCmd       `cmd:"" help:"Set up agentmine in this repository (idempotent)."`
	Task       TaskCmd       `cmd:"" help:"Create, inspect and change tasks."`
	Memory     MemoryCmd     `cmd:"" help:"Manage the Memory Bank of project decisions."`
	Agent      AgentCmd      `cmd:"" help:"Inspect agent definitions in .agentmine/agents."`
	Worker     WorkerCmd     `cmd:"" help:"Run agents on tasks in scoped worktrees and watch them."`
	Session    SessionCmd    `cmd:"" help:"Record sessions run by an orchestrator itself."`
	Plan       PlanCmd       `cmd:"" help:"Run a planner agent to split a task into children, created all at once or not at all."`
	Review     ReviewCmd     `cmd:"" help:"Run a reviewer agent on a finished session and record its verdict (OK or NG)."`
	Run        RunCmd        `cmd:"" help:"Supervise a run: start ready tasks in parallel, retry with feedback, review, merge, until every target is settled."`
	Merge      MergeCmd      `cmd:"" help:"Merge a task's latest session into its base, only if DoD passed and the scope held."`
	Status     StatusCmd     `cmd:"" help:"Show the board: counts per status, running workers, review queue, recent failures."`
	Mcp        McpCmd        `cmd:"" name:"mcp" help:"Serve this repository's tasks, workers and memory to an AI client as MCP tools over stdio."`
	Serve      ServeCmd      `cmd:"" help:"Serve the web board: tasks, sessions, live worker output and actions, in the browser."`
	Demo       DemoCmd       `cmd:"" help:"Run the whole lifecycle in a throwaway repository (takes under a minute)."`
	Config     ConfigCmd     `cmd:"" help:"Show the project settings and where each comes from."`
	Doctor     DoctorCmd     `cmd:"" help:"Show what isolation levels this machine can give workers (probed afresh)."`
	Sync       SyncCmd       `cmd:"" help:"Share state with a remote: fetch, merge entity by entity, push back."`
	Push       PushCmd       `cmd:"" help:"Send local agentmine state that fast-forwards the remote."`
	Pull       PullCmd       `cmd:"" help:"Fetch a remote's agentmine state and merge it locally."`
	Completion CompletionCmd `cmd:"" help:"Print a shell completion script (bash, zsh or fish) generated from this grammar."`
	Help       HelpCmd       `cmd:"" help:"Show the usage of a command, without man (git agentmine --help opens the man page)."`
	Version    VersionCmd    `cmd:"" help:"Print the version, commit and Go release this binary was built from."`
	InstallMan InstallManCmd `cmd:"" name:"install-man" help:"Install the man page where man finds it for this binary, so git agentmine --help works."`
}
