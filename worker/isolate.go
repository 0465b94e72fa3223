package worker

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/git-agentmine/git-agentmine/agents"
	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/gitcmd"
	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/isolation"
	"github.com/git-agentmine/git-agentmine/launch"
	"github.com/git-agentmine/git-agentmine/sessions"
)

// binaryName is the name of agentmine's binary, which also acts as the
// Landlock helper (isolation.HelperArg).
const binaryName = "git-agentmine"

// selfBinary returns the path of the git-agentmine binary this process
// runs as, "" when this process is not git-agentmine (a test binary): the
// Landlock level needs it to restrict the worker and not itself.
func selfBinary() string {
	if filepath.Base(os.Args[0]) == binaryName {
		if p, err := exec.LookPath(os.Args[0]); err == nil {
			if abs, err := filepath.Abs(p); err == nil {
				return abs
			}
		}
	}
	if p, err := os.Executable(); err == nil && filepath.Base(p) == binaryName {
		return p
	}
	return ""
}

// Capabilities returns what isolation this machine can give, probed once
// and cached under the repository's local directory (fresh probes again).
func (e *Env) Capabilities(ctx context.Context, fresh bool) isolation.Caps {
	cache := ""
	if dir, err := e.St.LocalDir(); err == nil {
		cache = isolation.CacheFile(dir)
	}
	c := isolation.Probe(ctx, cache, fresh)
	if e.Self == "" && c.Landlock == "" {
		c.Landlock = "this process is not the git-agentmine binary, which restricts the worker"
	}
	return c
}

// chooseIsolation decides the isolation of a session prepared for --exec:
// the agent's [isolation] level, else the configured one, else auto. A
// level the machine cannot give is an error naming the agent, unless the
// agent allows fallback.
func (e *Env) chooseIsolation(ctx context.Context, ag agents.Agent) (*sessions.Isolation, error) {
	want := ag.Isolation.Level
	if want == "" {
		want = e.Cfg.Isolation
	}
	lvl, err := isolation.ParseLevel(want)
	if err != nil {
		return nil, exitcode.New(exitcode.Config, fmt.Errorf("agent %s: %w", ag.Name, err), "")
	}
	if lvl == isolation.None {
		// Nothing to probe: none needs nothing of the machine.
		return &sessions.Isolation{Requested: string(lvl), Level: string(lvl), Network: true}, nil
	}
	got, note, err := e.Capabilities(ctx, false).Choose(lvl, ag.Isolation.Fallback)
	if err != nil {
		return nil, fmt.Errorf("agent %s: %w", ag.Name, err)
	}
	iso := &sessions.Isolation{Requested: string(lvl), Level: string(got), Network: true, Note: note}
	if got == isolation.Bwrap || got == isolation.Clone || got == isolation.Seatbelt {
		iso.Network = ag.Isolation.NetworkOr(true)
	}
	return iso, nil
}

// isolate prepares the session's isolation for its run (a no-op box for
// sessions without one or at none).
func (e *Env) isolate(ctx context.Context, s sessions.Session) (*isolation.Box, error) {
	lvl := isolation.None
	net := true
	if s.Isolation != nil {
		lvl, net = isolation.Level(s.Isolation.Level), s.Isolation.Network
	}
	if lvl == isolation.None {
		return isolation.Prepare(ctx, isolation.Plan{Level: isolation.None})
	}
	loc := e.St.Location()
	gitDir, err := worktreeGitDir(ctx, e.St.Git().In(s.Worktree))
	if err != nil {
		return nil, fmt.Errorf("preparing %s isolation: finding the worktree's git dir: %w", lvl, err)
	}
	state, err := e.St.LocalDir("isolation", s.ID)
	if err != nil {
		return nil, err
	}
	caps := e.Capabilities(ctx, false)
	mainTop := e.mainTopFor()
	environ := launch.WorkerEnv(e.workerEnv(sessions.Record{Session: s}))
	var programs []string
	if len(s.Command) > 0 {
		// Found again as the worker starts: a client that went away since
		// the session was prepared fails here, recorded as a start failure.
		prog, err := launch.Resolve(s.Command[0], s.Worktree, environ)
		if err != nil {
			return nil, err
		}
		programs = prog.Paths()
	}
	return isolation.Prepare(ctx, isolation.Plan{Level: lvl, Network: net, Worktree: s.Worktree, GitDir: gitDir,
		Programs: programs, Environ: environ,
		CommonDir: loc.CommonDir, MainTop: mainTop, Branch: s.Branch, Home: os.Getenv("HOME"), State: state,
		Self: e.Self, Bwrap: caps.BwrapPath, SandboxExec: caps.SandboxExecPath, Git: e.St.Git(),
		WriteBlob: func(ctx context.Context, data []byte) (string, error) { return e.St.WriteObject(ctx, "blob", data) }})
}

// mainTopFor returns the main checkout a sandbox hides: the repository's
// top when its git dir is a ".git" directory in it, "" otherwise.
func (e *Env) mainTopFor() string {
	if filepath.Base(e.St.Location().CommonDir) == ".git" {
		return e.Top
	}
	return ""
}

// preflight refuses a run that could not start, before anything of the
// session exists (no session ref, claim, branch or worktree), with the same
// error at every level: the client's program is found in the worker's PATH
// and checked to be something this machine executes (for a #! script, its
// interpreter too; launch.Resolve). Then what the chosen level cannot
// honour is refused with why (isolation.Check): a client inside the
// hidden repository at bwrap and clone, a configuration variable it
// cannot copy. A program inside the worktree-to-be (a {worktree}
// placeholder, a relative path) is checked when the worker starts.
func (e *Env) preflight(inv launch.Invocation, iso *sessions.Isolation) error {
	argv0 := inv.Program()
	if argv0 == "" {
		return nil
	}
	environ := launch.WorkerEnv(nil)
	var programs []string
	if inWorktree := !filepath.IsAbs(argv0) && strings.Contains(argv0, "/") || isWithin(argv0, inv.Worktree); !inWorktree {
		prog, err := launch.Resolve(argv0, inv.Worktree, environ)
		if err != nil {
			return err
		}
		programs = prog.Paths()
	}
	if iso == nil {
		return nil
	}
	return isolation.Check(isolation.Plan{Level: isolation.Level(iso.Level), Worktree: inv.Worktree,
		CommonDir: e.St.Location().CommonDir, MainTop: e.mainTopFor(), Home: os.Getenv("HOME"),
		Programs: programs, Environ: environ})
}

// isWithin reports whether path is dir or beneath it.
func isWithin(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return dir != "" && err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// bringBack moves the session's branch to where the worker left it when
// the isolation kept the branch apart (bwrap, clone), through the store's
// ref transaction, and refreshes the worktree's index at clone (the
// worker committed in its own repository). It returns an error only when
// the branch could not be brought back; the run is then judged on the
// branch as it was.
func (e *Env) bringBack(ctx context.Context, box *isolation.Box, s sessions.Session) error {
	if l := box.Level(); l != isolation.Bwrap && l != isolation.Clone {
		return nil
	}
	ref := "refs/heads/" + s.Branch
	g := e.St.Git().In(s.Worktree)
	cur, err := g.Output(ctx, "rev-parse", "--verify", "-q", ref)
	if err != nil {
		return fmt.Errorf("reading branch %s: %w", s.Branch, err)
	}
	tip, err := box.Tip(ctx, cur)
	if err != nil || tip == "" {
		return err
	}
	if err := e.St.Transact(ctx, []gitstore.RefOp{{Verb: "update", Ref: ref, New: tip, Old: cur}}); err != nil {
		return fmt.Errorf("moving branch %s to the worker's commit %s: %w", s.Branch, tip[:12], err)
	}
	if box.Level() == isolation.Clone {
		// The worktree's index still describes the base: make it describe
		// the tip, leaving the files as the worker left them.
		if _, err := g.Run(ctx, "reset", "-q", "--mixed", tip); err != nil {
			return fmt.Errorf("refreshing the worktree's index after the worker's commits: %w", err)
		}
	}
	return nil
}

// sandboxed drops from leftovers the sandbox's own init process at bwrap
// and clone: bubblewrap's outer process reports the worker's exit while
// the sandbox's first process is still being ended by the kernel, with
// every process of its PID namespace. Nothing of the worker survives it.
func sandboxed(box *isolation.Box, leftovers []launch.Proc) []launch.Proc {
	if l := box.Level(); l != isolation.Bwrap && l != isolation.Clone {
		return leftovers
	}
	var keep []launch.Proc
	for _, p := range leftovers {
		if p.Command == "[bwrap]" || strings.HasPrefix(p.Command, box.Bwrap()+" ") {
			continue
		}
		keep = append(keep, p)
	}
	return keep
}

// worktreeGitDir returns the git dir of the worktree g runs in, as
// `git rev-parse --absolute-git-dir` does: read from the worktree's .git
// file when it names, as git writes it, an absolute path that is a
// directory with no symbolic link on the way; git answers anything else.
func worktreeGitDir(ctx context.Context, g gitcmd.Runner) (string, error) {
	if b, err := os.ReadFile(filepath.Join(g.Dir, ".git")); err == nil && len(b) < 4096 {
		line, rest, _ := strings.Cut(string(b), "\n")
		dir, ok := strings.CutPrefix(line, "gitdir: ")
		if ok && strings.TrimSpace(rest) == "" && filepath.IsAbs(dir) && filepath.Clean(dir) == dir {
			if real, err := filepath.EvalSymlinks(dir); err == nil && real == dir {
				if fi, err := os.Stat(filepath.Join(dir, "HEAD")); err == nil && fi.Mode().IsRegular() {
					return dir, nil
				}
			}
		}
	}
	return g.Output(ctx, "rev-parse", "--absolute-git-dir")
}
