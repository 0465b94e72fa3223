// Package serverargs owns the command line git-agentmine gives
// agentmine-serve (package servers): rendered by the one, parsed by the
// other. It imports nothing heavy, so that git-agentmine stays small.
package serverargs

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/git-agentmine/git-agentmine/plan"
)

// Name is the server executable's name.
const Name = "agentmine-serve"

// DefaultAddr is where the board listens unless told otherwise.
const DefaultAddr = "127.0.0.1:7878"

// Serve holds the flags of `git agentmine serve`.
type Serve struct {
	Addr        string
	Open        bool
	ReadOnly    bool
	AllowRemote bool
	// TLSCert and TLSKey name a PEM certificate (chain) and its key: the
	// board is then served over HTTPS.
	TLSCert, TLSKey string
}

// Args is the command line git-agentmine gives agentmine-serve
// (rendered by Argv, parsed back by Parse).
type Args struct {
	Dir       string
	Agentmine string
	Version   string
	Quiet     bool
	NoColor   bool
	// Command is "serve" or "mcp".
	Command string
	Serve   Serve
}

// Argv renders a for the executable at path.
func (a Args) Argv(path string) []string {
	argv := []string{path, "-C", a.Dir, "--agentmine", a.Agentmine, "--agentmine-version", a.Version}
	if a.Quiet {
		argv = append(argv, "--quiet")
	}
	if a.NoColor {
		argv = append(argv, "--no-color")
	}
	argv = append(argv, a.Command)
	if a.Command == "serve" {
		argv = append(argv, "--addr", a.Serve.Addr)
		for _, f := range []struct {
			on   bool
			name string
		}{{a.Serve.Open, "--open"}, {a.Serve.ReadOnly, "--read-only"}, {a.Serve.AllowRemote, "--allow-remote"}} {
			if f.on {
				argv = append(argv, f.name)
			}
		}
		if a.Serve.TLSCert != "" {
			argv = append(argv, "--tls-cert", a.Serve.TLSCert)
		}
		if a.Serve.TLSKey != "" {
			argv = append(argv, "--tls-key", a.Serve.TLSKey)
		}
	}
	return argv
}

// Parse parses what Argv renders (without the program name).
func Parse(args []string) (Args, error) {
	var a Args
	top := flag.NewFlagSet(Name, flag.ContinueOnError)
	top.SetOutput(io.Discard)
	top.StringVar(&a.Dir, "C", ".", "")
	top.StringVar(&a.Agentmine, "agentmine", "", "")
	top.StringVar(&a.Version, "agentmine-version", "(devel)", "")
	top.BoolVar(&a.Quiet, "quiet", false, "")
	top.BoolVar(&a.NoColor, "no-color", false, "")
	if err := top.Parse(args); err != nil {
		return a, err
	}
	rest := top.Args()
	if len(rest) == 0 {
		return a, errors.New("no command: want serve or mcp")
	}
	a.Command = rest[0]
	switch a.Command {
	case "serve":
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		fs.StringVar(&a.Serve.Addr, "addr", DefaultAddr, "")
		fs.BoolVar(&a.Serve.Open, "open", false, "")
		fs.BoolVar(&a.Serve.ReadOnly, "read-only", false, "")
		fs.BoolVar(&a.Serve.AllowRemote, "allow-remote", false, "")
		fs.StringVar(&a.Serve.TLSCert, "tls-cert", "", "")
		fs.StringVar(&a.Serve.TLSKey, "tls-key", "", "")
		if err := fs.Parse(rest[1:]); err != nil {
			return a, err
		}
		if fs.NArg() > 0 {
			return a, fmt.Errorf("unexpected argument %q", fs.Arg(0))
		}
	case "mcp":
		if len(rest) > 1 {
			return a, fmt.Errorf("unexpected argument %q", rest[1])
		}
	default:
		return a, fmt.Errorf("unknown command %q: want serve or mcp", a.Command)
	}
	return a, nil
}

// ShareHint is the one hint for a repository that has a remote (named
// remote) which sync would use but shares nothing through it: the command
// line prints it as a hint: line, MCP's worker_start returns it and the web
// board shows it. "" for no remote.
func ShareHint(remote string) string {
	if remote == "" {
		return ""
	}
	return "nothing is shared through " + remote + " (no sync remote configured); to share tasks, claims and outcomes with other clones: git agentmine init --remote " + remote
}

// DecodeTaskYAML is the one argument with which agentmine-serve decodes
// AgentRunner's task.yaml for `git agentmine task import`: the file's bytes
// on its standard input, a TaskYAMLReply as JSON on its standard output.
// The YAML decoder is linked only into agentmine-serve, so that the
// commands that never read YAML do not initialise it.
const DecodeTaskYAML = "__decode-task-yaml"

// TaskYAMLReply is agentmine-serve's answer to DecodeTaskYAML: the decoded
// file, or that it was empty, or the decoder's error.
type TaskYAMLReply struct {
	YAML  plan.TaskYAML `json:"yaml"`
	Empty bool          `json:"empty,omitempty"`
	Error string        `json:"error,omitempty"`
}
