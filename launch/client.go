// Package launch owns starting AI coding clients as workers: the per-client
// adapters (argv, environment, context file, how the prompt is passed), the
// supervision of a worker process (own process group, closed stdin, bounded
// log, timeout with SIGTERM, grace and SIGKILL, cancellation), process
// identity that survives PID reuse, detached starts for supervisors that
// outlive the CLI, and reading a client's own failure words from its output.
package launch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/git-agentmine/git-agentmine/exitcode"
)

// Client names an AI coding client that can run as a worker.
type Client string

// The supported clients. The strings are the values of `client` in agent
// definitions.
const (
	ClaudeCode Client = "claude-code"
	Codex      Client = "codex"
	Aider      Client = "aider"
	Gemini     Client = "gemini"
	OpenCode   Client = "opencode"
	Custom     Client = "custom"
)

// Clients lists every supported client, in documentation order.
func Clients() []Client {
	return []Client{ClaudeCode, Codex, Aider, Gemini, OpenCode, Custom}
}

// ParseClient turns a client name from configuration or a flag into a
// Client. "claude" is accepted as an alias of "claude-code". An unknown
// name is a configuration error listing the valid names.
func ParseClient(s string) (Client, error) {
	name := strings.ToLower(strings.TrimSpace(s))
	if name == "claude" {
		return ClaudeCode, nil
	}
	for _, c := range Clients() {
		if string(c) == name {
			return c, nil
		}
	}
	names := make([]string, 0, len(Clients()))
	for _, c := range Clients() {
		names = append(names, string(c))
	}
	return "", exitcode.New(exitcode.Config,
		fmt.Errorf("unknown client %q (valid: %s)", s, strings.Join(names, ", ")), "")
}

// MaxArgBytes is the largest prompt passed inline as one argument. Linux
// refuses any single argument of 128 KiB or more (MAX_ARG_STRLEN counts the
// terminating NUL); longer prompts go by stdin or by a file flag.
const MaxArgBytes = 128*1024 - 1

// adapter is one row of the client table: how a client is run
// non-interactively with every permission prompt auto-approved.
type adapter struct {
	// binary is the executable looked up in PATH.
	binary string
	// contextFile is the file the client reads project instructions from
	// in its working directory ("" if it reads none by default).
	contextFile string
	// env holds KEY=VALUE pairs the client needs in its environment.
	env []string
	// args returns the arguments after the binary. inline is the prompt
	// text when it fits one argument; when inline is "" the prompt must be
	// passed through promptFile, and args says whether it wants the file
	// as stdin.
	args func(in adapterInput) (args []string, stdinFile string)
	// stalls are phrases the client prints when it can make no progress
	// and will not give up by itself (lower case; see StallPhrases).
	stalls []string
}

// adapterInput is what an adapter builds its arguments from.
type adapterInput struct {
	inline     string // the prompt itself, or "" to pass it by file
	promptFile string
	model      string
	worktree   string
	task       string
	writable   []string
}

// sessionTitle is the title given to a client that would otherwise ask the
// model for one (opencode).
func sessionTitle(task string) string {
	if task == "" {
		return "agentmine worker"
	}
	return "agentmine task " + task
}

// longPromptNote is the short prompt given next to a prompt passed by file
// or stdin, where the client wants a message argument as well.
const longPromptNote = "Carry out the instructions given above."

// adapterFor is the adapter table. Each row was checked against the real
// client's --help, run without network or credentials, as root, and run
// end to end (edit, commit, failures) against a scripted model server on
// loopback, with the versions pinned for the tests in
// internal/modelserver/clients/package.json: Claude Code 2.1.330, Codex CLI
// 0.169.0, Gemini CLI 0.61.0, opencode 1.18.33. Aider was not installed
// (Python); its row follows its documented flags. Client flags change
// between releases: when a client rejects a flag, the fix belongs here, and
// agents can override the whole argv with `command`.
//
// Every client is asked for machine-readable output that it prints as it
// goes (one JSON event a line), so that the session log shows the run live,
// a stall_timeout sees every event as progress, ReadUsage finds its token
// counts and ReadVerdict its error and retry events.
//
//   - claude-code: `claude -p <prompt> --dangerously-skip-permissions
//     --output-format stream-json --verbose [--model M]` (`--output-format
//     json` prints one document at exit and nothing before; stream-json
//     needs --verbose). Long prompts: no prompt argument, the prompt file
//     on stdin (`-p` reads stdin). IS_SANDBOX=1 is set because Claude Code
//     refuses --dangerously-skip-permissions when run as root unless the
//     environment declares itself a sandbox; a worker cannot answer
//     permission prompts, and agentmine confines it to a scope-restricted
//     worktree and verifies its diff afterwards. Exit code alone is not the
//     verdict: the final result event's is_error is (ReadVerdict). Each
//     retry of a failed request is a system event with subtype api_retry.
//   - codex: `codex exec --json --dangerously-bypass-approvals-and-sandbox
//     -C <worktree> [--add-dir D]... [-m M] <prompt>`; long prompts: `-` and
//     the prompt on stdin. --full-auto no longer exists (exit 2). Codex's
//     own sandbox (--sandbox workspace-write) is not used: run against a
//     model server it re-mounted .git read-only (the worker could not
//     commit: "Unable to create .../index.lock: Read-only file system") and
//     created mount points (.agents and others) in the worktree for the
//     length of each command, which the live watcher rightly reports as
//     writes outside the scope. agentmine's scoped worktree and its
//     verification confine the worker instead. The writable directories
//     (the repository's git dir) are still passed with --add-dir, for a
//     command override that turns the sandbox back on. --json prints events
//     (usage in turn.completed, retries as "error" events) and no echo of
//     the prompt. With no network it prints "Reconnecting... (waiting for
//     network)" forever (0.169.0).
//   - gemini: `gemini --yolo --skip-trust -o stream-json [-m M]
//     --prompt=<prompt>`; long prompts: the file on stdin and a short
//     --prompt, which Gemini appends to stdin. Without --skip-trust every
//     new worktree is untrusted (exit 55). stream-json prints events and
//     ends with a "result" event holding the stats (-o json prints one
//     document at exit); retries are plain lines ("Attempt 2 failed with
//     status 500. Retrying with backoff...").
//   - opencode: `opencode run <prompt> --auto --format json --title <title>
//     --dir <worktree> [-m M]`; long prompts: a short message and `--file
//     <prompt file>` (last, because the flag takes a list). --format json
//     prints events (usage in step_finish). --title names the session, so
//     that opencode makes no request of its own to invent a title: that
//     request's tokens (about 850) appear in no event. No stall phrase
//     (1.18.33): it no longer waits for its model list (without network,
//     "Failed to fetch models.dev" ends it in under a second), and against
//     a provider that does not answer it retries for about 3.5 minutes
//     printing nothing, then exits 1 with one JSON error line; there is no
//     output to recognise, so an agent's stall_timeout (no output, no
//     commit) is what stops it early.
//   - aider: `aider --yes-always --no-auto-commits --message-file <file>
//     [--model M]`: always by file, so prompt length never matters.
func adapterFor(c Client) (adapter, bool) {
	switch c {
	case ClaudeCode:
		return adapter{
			binary:      "claude",
			contextFile: "CLAUDE.md",
			env:         []string{"IS_SANDBOX=1"},
			args: func(in adapterInput) ([]string, string) {
				a := []string{"-p"}
				stdin := ""
				if in.inline != "" {
					a = append(a, in.inline)
				} else {
					stdin = in.promptFile
				}
				a = append(a, "--dangerously-skip-permissions", "--output-format", "stream-json", "--verbose")
				if in.model != "" {
					a = append(a, "--model", in.model)
				}
				return a, stdin
			},
		}, true
	case Codex:
		return adapter{
			binary:      "codex",
			contextFile: "AGENTS.md",
			args: func(in adapterInput) ([]string, string) {
				a := []string{"exec", "--json", "--dangerously-bypass-approvals-and-sandbox"}
				if in.worktree != "" {
					a = append(a, "-C", in.worktree)
				}
				for _, d := range in.writable {
					a = append(a, "--add-dir", d)
				}
				if in.model != "" {
					a = append(a, "-m", in.model)
				}
				if in.inline != "" {
					return append(a, in.inline), ""
				}
				return append(a, "-"), in.promptFile
			},
			stalls: []string{
				"waiting for network", // 0.169.0: retries forever with no network
			},
		}, true
	case Gemini:
		return adapter{
			binary:      "gemini",
			contextFile: "GEMINI.md",
			args: func(in adapterInput) ([]string, string) {
				a := []string{"--yolo", "--skip-trust", "-o", "stream-json"}
				if in.model != "" {
					a = append(a, "-m", in.model)
				}
				if in.inline != "" {
					return append(a, "--prompt="+in.inline), ""
				}
				return append(a, "--prompt="+longPromptNote), in.promptFile
			},
		}, true
	case OpenCode:
		return adapter{
			binary:      "opencode",
			contextFile: "AGENTS.md",
			args: func(in adapterInput) ([]string, string) {
				msg := in.inline
				if msg == "" {
					msg = "Carry out the instructions in the attached file."
				}
				a := []string{"run", msg, "--auto", "--format", "json", "--title", sessionTitle(in.task)}
				if in.worktree != "" {
					a = append(a, "--dir", in.worktree)
				}
				if in.model != "" {
					a = append(a, "-m", in.model)
				}
				if in.inline == "" {
					a = append(a, "--file", in.promptFile)
				}
				return a, ""
			},
		}, true
	case Aider:
		return adapter{
			binary: "aider",
			args: func(in adapterInput) ([]string, string) {
				a := []string{"--yes-always", "--no-auto-commits", "--message-file", in.promptFile}
				if in.model != "" {
					a = append(a, "--model", in.model)
				}
				return a, ""
			},
		}, true
	}
	return adapter{}, false
}

// ContextFile names the file the client reads project instructions from in
// its working directory: CLAUDE.md for Claude Code, AGENTS.md for Codex and
// opencode, GEMINI.md for Gemini, "" for aider and custom clients.
func ContextFile(c Client) string {
	a, _ := adapterFor(c)
	return a.contextFile
}

// StallPhrases lists what client c prints, in lower case, when it can make
// no progress and would wait forever: a worker whose output holds one of
// them is stopped early and fails with that line as the reason (see
// Spec.Stalls). Each phrase names, in the adapter table, the client
// version it was seen with.
func StallPhrases(c Client) []string {
	a, _ := adapterFor(c)
	return append([]string(nil), a.stalls...)
}

// Binary names the executable the client's adapter runs ("" for custom).
func Binary(c Client) string {
	a, _ := adapterFor(c)
	return a.binary
}

// Invocation is everything needed to build a worker's command line.
type Invocation struct {
	// Client selects the adapter.
	Client Client
	// Model is passed with the client's model flag when not empty.
	Model string
	// Command, when not empty, replaces the adapter's argv entirely (the
	// agent's `command`; required for the custom client). Its arguments may
	// contain the placeholders {prompt_file}, {worktree}, {task} and, when
	// OutputFile is set, {output_file}, which are replaced wherever they
	// occur; "{{" stands for a literal "{" (see ExpandArg).
	Command []string
	// PromptFile is the file holding the prompt (required).
	PromptFile string
	// Worktree is the worker's working directory.
	Worktree string
	// Task is the task id (for the {task} placeholder).
	Task string
	// OutputFile is the file a planner or reviewer writes its answer to
	// (for the {output_file} placeholder); "" leaves {output_file} as it is.
	OutputFile string
	// Writable lists directories outside the worktree that the client's own
	// sandbox must let the worker write (the repository's git dir, so that
	// it can commit). Only clients with a sandbox use it (codex).
	Writable []string
}

// Command is a built worker command line.
type Command struct {
	// Argv is the program and its arguments.
	Argv []string
	// Stdin is a file to feed as standard input, or "" for none.
	Stdin string
	// Env holds KEY=VALUE pairs to add to the worker's environment.
	Env []string
}

// Build returns the command line that runs the invocation. Prompts that fit
// one argument are passed inline where the client takes them so; longer
// ones (or ones starting with "-", which a client could take for a flag)
// by stdin or a file flag, per the adapter table.
func (inv Invocation) Build() (Command, error) {
	return inv.build(false)
}

// ShellCommand returns the invocation as one shell command line for a
// person or an orchestrator to run by hand in the worktree. The prompt is
// always passed by file or stdin redirection, so the line stays short.
func (inv Invocation) ShellCommand() (string, error) {
	cmd, err := inv.build(true)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, e := range cmd.Env {
		k, v, _ := strings.Cut(e, "=")
		b.WriteString(k + "=" + shellQuote(v) + " ")
	}
	for i, a := range cmd.Argv {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(shellQuote(a))
	}
	if cmd.Stdin != "" {
		b.WriteString(" < " + shellQuote(cmd.Stdin))
	}
	return b.String(), nil
}

func (inv Invocation) build(byFile bool) (Command, error) {
	if inv.PromptFile == "" {
		return Command{}, errors.New("build worker command: no prompt file")
	}
	if len(inv.Command) > 0 {
		return Command{Argv: expandPlaceholders(inv.Command, inv)}, nil
	}
	if inv.Client == Custom {
		return Command{}, exitcode.New(exitcode.Config,
			errors.New("build worker command: client \"custom\" needs a command"),
			"set command = [\"prog\", \"{prompt_file}\"] in the agent definition")
	}
	a, ok := adapterFor(inv.Client)
	if !ok {
		_, err := ParseClient(string(inv.Client))
		return Command{}, fmt.Errorf("build worker command: %w", err)
	}
	in := adapterInput{promptFile: inv.PromptFile, model: inv.Model, worktree: inv.Worktree, task: inv.Task, writable: inv.Writable}
	if !byFile {
		data, err := os.ReadFile(inv.PromptFile)
		if err != nil {
			return Command{}, exitcode.New(exitcode.NotFound, fmt.Errorf("read prompt: %w", err), "")
		}
		if p := string(data); len(p) > 0 && len(p) <= MaxArgBytes && !strings.HasPrefix(p, "-") && !strings.ContainsRune(p, 0) {
			in.inline = p
		}
	}
	args, stdin := a.args(in)
	return Command{Argv: append([]string{a.binary}, args...), Stdin: stdin, Env: append([]string(nil), a.env...)}, nil
}

// Program returns the program the invocation runs (argv[0] of Build,
// placeholders expanded), without reading the prompt: "" for a custom
// client without a command or an unknown client.
func (inv Invocation) Program() string {
	if len(inv.Command) > 0 {
		return expandPlaceholders(inv.Command[:1], inv)[0]
	}
	a, ok := adapterFor(inv.Client)
	if !ok || inv.Client == Custom {
		return ""
	}
	return a.binary
}

func expandPlaceholders(argv []string, inv Invocation) []string {
	values := map[string]string{"{prompt_file}": inv.PromptFile, "{worktree}": inv.Worktree, "{task}": inv.Task}
	if inv.OutputFile != "" {
		values["{output_file}"] = inv.OutputFile
	}
	out := make([]string, len(argv))
	for i, a := range argv {
		out[i] = ExpandArg(a, values)
	}
	return out
}

// ExpandArg replaces the placeholders of one argument of a custom command
// in one pass from the left: "{{" is a literal "{" (so "{{task}" is the
// text "{task}", and awk's "{{print}" is "{print}"), a {name} in values is
// its value, and anything else is kept as written. A value is never
// expanded again.
func ExpandArg(arg string, values map[string]string) string {
	if !strings.Contains(arg, "{") {
		return arg
	}
	var b strings.Builder
	for i := 0; i < len(arg); {
		if arg[i] != '{' {
			b.WriteByte(arg[i])
			i++
			continue
		}
		if strings.HasPrefix(arg[i:], "{{") {
			b.WriteByte('{')
			i += 2
			continue
		}
		if j := strings.IndexByte(arg[i:], '}'); j > 0 {
			if v, ok := values[arg[i:i+j+1]]; ok {
				b.WriteString(v)
				i += j + 1
				continue
			}
		}
		b.WriteByte('{')
		i++
	}
	return b.String()
}

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:@%+,", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Version runs `<argv0> --version` and returns the first line it prints,
// trimmed to at most 100 bytes, or "" if it fails or takes longer than
// five seconds. It is best effort: the session records it so that a flag
// change can be traced to a client release.
func Version(ctx context.Context, argv0 string) string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv0, "--version")
	cmd.Env = WorkerEnv(nil)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(out), "\n") {
		line = strings.TrimSpace(line)
		if line != "" {
			if len(line) > 100 {
				line = line[:100]
			}
			return line
		}
	}
	return ""
}

// WorkerEnv returns the environment a worker runs with: this process's
// environment without the variables that make Claude Code believe it runs
// inside another Claude Code session (CLAUDECODE, CLAUDE_CODE_ENTRYPOINT;
// it refuses to start then), plus extra KEY=VALUE pairs, which override
// inherited ones. The result is sorted by key.
func WorkerEnv(extra []string) []string {
	m := map[string]string{}
	for _, kv := range append(os.Environ(), extra...) {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			continue
		}
		m[k] = v
	}
	delete(m, "CLAUDECODE")
	delete(m, "CLAUDE_CODE_ENTRYPOINT")
	env := make([]string, 0, len(m))
	for k, v := range m {
		env = append(env, k+"="+v)
	}
	sort.Strings(env)
	return env
}
