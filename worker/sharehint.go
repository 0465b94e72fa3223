package worker

// ShareHint is the one hint for a repository that has the remote sync
// would use (origin) but shares nothing through it: the command line
// prints it as a hint: line, MCP returns it in a tool's result and the web
// board shows it. "" when a sync remote is configured or there is no such
// remote.
func (e *Env) ShareHint() string {
	r := e.UnsharedRemote()
	if r == "" {
		return ""
	}
	return "nothing is shared through " + r + " (no sync remote configured); to share tasks, claims and outcomes with other clones: git agentmine init --remote " + r
}
