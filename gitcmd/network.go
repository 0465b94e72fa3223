package gitcmd

import (
	"context"
	"os/exec"
	"strconv"
	"strings"
	"sync"
)

// Never a prompt, never a hang. A git command that may reach a remote
// (push, fetch, ls-remote, clone, pull, remote update, archive --remote)
// runs without any way to ask a person for anything: terminal prompts off
// (GIT_TERMINAL_PROMPT=0), Git Credential Manager non-interactive
// (GCM_INTERACTIVE=never), no askpass program, and ssh in batch mode
// (no password, passphrase or host-key question) with a bounded connect
// time. A transfer that stalls below NetworkLowSpeed bytes a second for
// NetworkTimeout is given up (git's http.lowSpeedLimit/lowSpeedTime),
// unless the environment already sets those. An unreachable or
// unauthenticated remote is thus a prompt failure with git's own words,
// which callers turn into one warning line.

// NetworkTimeout bounds ssh's connect time and the time an HTTP transfer
// may stall.
const NetworkTimeout = 15

// NetworkLowSpeed is the transfer rate (bytes a second) below which an
// HTTP transfer counts as stalled.
const NetworkLowSpeed = 1

// networkCommands are the git subcommands that may reach a remote.
var networkCommands = map[string]bool{"push": true, "fetch": true, "ls-remote": true, "clone": true, "pull": true,
	"remote": true, "archive": true, "submodule": true}

// mayUseNetwork reports whether git args (options such as -c k=v first)
// run a subcommand that may reach a remote.
func mayUseNetwork(args []string) bool {
	return networkCommands[subcommand(args)]
}

// subcommand returns the git subcommand of args, after git's own options
// (-c k=v, -C dir, …); "" when there is none.
func subcommand(args []string) string {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-c" || a == "-C" || a == "--git-dir" || a == "--work-tree" || a == "--namespace":
			i++ // its value follows
		case strings.HasPrefix(a, "-"):
		default:
			return a
		}
	}
	return ""
}

// networkEnv is the environment added to a git process that may reach a
// remote, given the environment it would run with (env) and the ssh
// command the repository configures (core.sshCommand, "" for none).
func networkEnv(env []string, configuredSSH string) []string {
	get := func(k string) (string, bool) {
		for i := len(env) - 1; i >= 0; i-- {
			if v, ok := strings.CutPrefix(env[i], k+"="); ok {
				return v, true
			}
		}
		return "", false
	}
	out := []string{"GIT_TERMINAL_PROMPT=0", "GCM_INTERACTIVE=never", "GIT_ASKPASS=", "SSH_ASKPASS=", "SSH_ASKPASS_REQUIRE=never"}
	// GIT_SSH_COMMAND wins over core.sshCommand, so it carries the
	// command in use on, plus OpenSSH's batch mode; GIT_SSH (a program,
	// not a command line) and a command that is not OpenSSH's ssh (plink,
	// say, which knows no -o) are left as the user set them.
	ssh, ok := get("GIT_SSH_COMMAND")
	if !ok || ssh == "" {
		ssh = configuredSSH
		if _, set := get("GIT_SSH"); set {
			ssh = "-"
		} else if ssh == "" {
			ssh = "ssh"
		}
	}
	if f := strings.Fields(ssh); len(f) > 0 && (f[0] == "ssh" || strings.HasSuffix(f[0], "/ssh")) {
		out = append(out, "GIT_SSH_COMMAND="+ssh+" -o BatchMode=yes -o ConnectTimeout="+strconv.Itoa(NetworkTimeout))
	}
	if _, ok := get("GIT_HTTP_LOW_SPEED_LIMIT"); !ok {
		out = append(out, "GIT_HTTP_LOW_SPEED_LIMIT="+strconv.Itoa(NetworkLowSpeed))
	}
	if _, ok := get("GIT_HTTP_LOW_SPEED_TIME"); !ok {
		out = append(out, "GIT_HTTP_LOW_SPEED_TIME="+strconv.Itoa(NetworkTimeout))
	}
	return out
}

// offline prepares cmd, a git process that may reach a remote, so that it
// never prompts and never waits unbounded (networkEnv). It reads
// core.sshCommand in the runner's directory to keep it: once per directory
// for the copies of a runner New made, and not at all where the caller
// already read it (RememberSSHCommand).
func (r Runner) offline(ctx context.Context, cmd *exec.Cmd) {
	cmd.Env = append(cmd.Env, networkEnv(cmd.Env, r.sshCommand(ctx, cmd.Env))...)
}

// sshMemo holds the core.sshCommand read in each directory.
type sshMemo struct {
	mu    sync.Mutex
	byDir map[string]string
}

// RememberSSHCommand records core.sshCommand ("" for none) as the caller
// read it in the runner's directory with the runner's environment (from
// `git var -l`, say), so that the network commands of every copy of the
// runner need not start `git config` to read it. A runner that New did not
// make remembers nothing.
func (r Runner) RememberSSHCommand(cmd string) {
	if r.ssh == nil {
		return
	}
	r.ssh.mu.Lock()
	defer r.ssh.mu.Unlock()
	if r.ssh.byDir == nil {
		r.ssh.byDir = map[string]string{}
	}
	r.ssh.byDir[r.Dir] = cmd
}

// sshCommand returns core.sshCommand as git reads it in the runner's
// directory with env ("" for none).
func (r Runner) sshCommand(ctx context.Context, env []string) string {
	if r.ssh != nil {
		r.ssh.mu.Lock()
		defer r.ssh.mu.Unlock()
		if v, ok := r.ssh.byDir[r.Dir]; ok {
			return v
		}
	}
	name := r.Path
	if name == "" {
		name = "git"
	}
	cfg := exec.CommandContext(ctx, name, "config", "--get", "core.sshCommand")
	cfg.Dir, cfg.Env = r.Dir, env
	ssh := ""
	if out, err := cfg.Output(); err == nil {
		ssh = strings.TrimSpace(string(out))
	}
	if r.ssh != nil {
		if r.ssh.byDir == nil {
			r.ssh.byDir = map[string]string{}
		}
		r.ssh.byDir[r.Dir] = ssh
	}
	return ssh
}
