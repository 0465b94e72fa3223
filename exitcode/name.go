package exitcode

import "strconv"

// Name returns the name of a documented exit code, the word programs that
// do not see the process's status (the MCP server's tool errors) get
// instead: "ok", "failed", "usage", "config", "not_found", "state",
// "timeout", "git" or "interrupted"; "exit_<n>" for any other code.
func Name(code int) string {
	switch code {
	case OK:
		return "ok"
	case Failed:
		return "failed"
	case Usage:
		return "usage"
	case Config:
		return "config"
	case NotFound:
		return "not_found"
	case State:
		return "state"
	case Timeout:
		return "timeout"
	case Git:
		return "git"
	case Interrupted:
		return "interrupted"
	}
	return "exit_" + strconv.Itoa(code)
}
