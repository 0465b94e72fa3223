package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/git-agentmine/git-agentmine/agents"
	"github.com/git-agentmine/git-agentmine/config"
	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/output"
	"github.com/git-agentmine/git-agentmine/replica"
)

// InitCmd is `init`.
type InitCmd struct {
	Base   string `help:"Base branch to record in .agentmine/config.toml (default: the current branch)."`
	Remote string `help:"Make REMOTE the sync remote (git config agentmine.remote), so sync/push/pull and claims use it."`
}

type initJSON struct {
	V       int         `json:"v"`
	Top     string      `json:"top"`
	Base    string      `json:"base"`
	Remote  string      `json:"remote,omitempty"`
	Created []string    `json:"created"`
	Kept    []string    `json:"kept"`
	Exclude excludeJSON `json:"exclude"`
}

type excludeJSON struct {
	File    string `json:"file"`
	Pattern string `json:"pattern"`
	Added   bool   `json:"added"`
}

// Run scaffolds the project files that do not exist yet and ignores the
// worktree root through the common info/exclude. It never overwrites a
// file, never commits and never touches the index. A repository with no
// commits yet is fine (tasks work there too); only worker run needs one.
func (c *InitCmd) Run(a *App) error {
	st, err := a.Store()
	if err != nil {
		return err
	}
	top, err := repoTop(a, st)
	if err != nil {
		return err
	}
	// Refuse a broken existing configuration before changing anything.
	if _, err := loadConfig(a, st, nil); err != nil {
		return err
	}
	base, err := c.base(a, st)
	if err != nil {
		return err
	}
	if c.Remote != "" {
		// Checked (and set) first: a missing remote changes nothing.
		if err := replica.ConfigureRemote(a.Ctx, st, c.Remote); err != nil {
			return err
		}
	}
	files := []struct {
		rel  string
		text string
	}{
		{config.File, configTemplate(base)},
		{agents.Dir + "/coder.toml", coderTemplate},
		{agents.PromptDir + "/coder.md", coderPrompt},
	}
	res := initJSON{V: output.SchemaVersion, Top: top, Base: base, Remote: c.Remote, Created: []string{}, Kept: []string{}}
	for _, f := range files {
		created, err := createFile(top, f.rel, f.text)
		if err != nil {
			return err
		}
		if created {
			res.Created = append(res.Created, f.rel)
		} else {
			res.Kept = append(res.Kept, f.rel)
		}
	}
	cfg, err := loadConfig(a, st, nil)
	if err != nil {
		return err
	}
	if res.Base == "" || !contains(res.Created, config.File) {
		res.Base = cfg.Base
	}
	res.Exclude, err = excludeWorktrees(st, top, cfg)
	if err != nil {
		return err
	}
	if a.G.JSON {
		return a.P.PrintJSON(res)
	}
	if a.G.Quiet {
		return nil
	}
	for _, f := range res.Created {
		a.P.Printf("created %s\n", f)
	}
	for _, f := range res.Kept {
		a.P.Printf("kept    %s (exists)\n", f)
	}
	switch {
	case res.Exclude.Pattern == "":
		a.P.Printf("worktree root %s is outside the repository: nothing to exclude\n", cfg.WorktreeRoot)
	case res.Exclude.Added:
		a.P.Printf("ignored %s (in %s)\n", res.Exclude.Pattern, res.Exclude.File)
	default:
		a.P.Printf("kept    %s in %s\n", res.Exclude.Pattern, res.Exclude.File)
	}
	if c.Remote != "" {
		a.P.Printf("sync remote %s (git config agentmine.remote); share the board with: git agentmine sync\n", c.Remote)
	}
	if res.Base == "" {
		a.P.Warnf("HEAD is detached: no base branch recorded; set one with --base or in %s", config.File)
	}
	if c.Base != "" && !contains(res.Created, config.File) && cfg.Base != c.Base {
		a.P.Warnf("%s exists and was kept: base stays %q (edit the file to change it)", config.File, cfg.Base)
	}
	if len(res.Created) > 0 {
		a.P.Notef("review the new files and commit them when you like; next: git agentmine task add <title>\n")
	}
	if !st.HasCommits(a.Ctx) {
		a.P.Notef("the repository has no commits yet: tasks work now, worker run needs a first commit\n")
	}
	return nil
}

// base returns the branch to record: --base (which must name a commit) or
// the current branch, "" when HEAD is detached.
func (c *InitCmd) base(a *App, st *gitstore.Store) (string, error) {
	if c.Base != "" {
		if strings.HasPrefix(c.Base, "-") || strings.ContainsAny(c.Base, " \t\r\n") {
			return "", exitcode.New(exitcode.Usage, fmt.Errorf("invalid base %q", c.Base), "")
		}
		if _, err := st.Git().Run(a.Ctx, "rev-parse", "--verify", "-q", c.Base+"^{commit}"); err != nil {
			// Before the first commit the current branch names nothing
			// yet, but it is the branch that commit will start.
			if cur, _ := st.Git().Output(a.Ctx, "symbolic-ref", "-q", "--short", "HEAD"); cur == c.Base && !st.HasCommits(a.Ctx) {
				return c.Base, nil
			}
			return "", exitcode.New(exitcode.NotFound, fmt.Errorf("base %q does not name a commit", c.Base), "list branches with: git branch")
		}
		return c.Base, nil
	}
	b, err := st.Git().Output(a.Ctx, "symbolic-ref", "-q", "--short", "HEAD")
	if err != nil {
		return "", nil
	}
	return b, nil
}

// createFile writes top/rel with text unless it exists; it reports whether
// it created the file.
func createFile(top, rel, text string) (bool, error) {
	p := filepath.Join(top, filepath.FromSlash(rel))
	if _, err := os.Lstat(p); err == nil {
		return false, nil
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return false, fmt.Errorf("creating %s: %w", filepath.Dir(rel), err)
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("creating %s: %w", rel, err)
	}
	_, werr := f.WriteString(text)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		os.Remove(p)
		return false, fmt.Errorf("writing %s: %w", rel, werr)
	}
	return true, nil
}

// excludeWorktrees adds the worktree root, anchored, to the common
// info/exclude (shared by every worktree of the repository) unless an
// equivalent line is there already.
func excludeWorktrees(st *gitstore.Store, top string, cfg config.Config) (excludeJSON, error) {
	file := filepath.Join(st.Location().CommonDir, "info", "exclude")
	res := excludeJSON{File: file}
	rel, err := filepath.Rel(top, cfg.WorktreeDir(top))
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return res, nil
	}
	rel = filepath.ToSlash(rel)
	res.Pattern = "/" + rel + "/"
	data, err := os.ReadFile(file)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return res, fmt.Errorf("reading %s: %w", file, err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		l = strings.TrimSpace(l)
		if l == res.Pattern || l == rel+"/" || l == rel || l == "/"+rel {
			return res, nil
		}
	}
	text := string(data)
	if text != "" && !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	text += "# git agentmine: worker worktrees\n" + res.Pattern + "\n"
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return res, fmt.Errorf("creating %s: %w", filepath.Dir(file), err)
	}
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		return res, fmt.Errorf("writing %s: %w", file, err)
	}
	res.Added = true
	return res, nil
}

func configTemplate(base string) string {
	baseLine := "base = " + strconv.Quote(base)
	if base == "" {
		baseLine = `# base = "main"`
	}
	return `# git agentmine project settings. Precedence, highest first: command-line
# flags, AGENTMINE_<KEY> environment variables, git config agentmine.<key>,
# this file, built-in defaults. See "git agentmine config show".

# Branch that task branches start from and merge into.
` + baseLine + `

# Where worker worktrees are created (relative to the top of the repository).
# worktree_root = ".agentmine/worktrees"

# Worker timeout in seconds, for agents that set none.
# timeout = 300

# Timeout of each Definition-of-Done command, in seconds.
# dod_timeout = 600

# Seconds between SIGTERM and SIGKILL when a worker is stopped.
# grace = 10

# Agent used when neither --agent nor the task's assignee names one.
default_agent = "coder"

# Client for agents that name none: claude-code, codex, aider, gemini,
# opencode or custom.
# client = "claude-code"

# Remote used by sync (default: origin, if it exists).
# remote = "origin"
`
}

const coderTemplate = `# A general-purpose coding agent. Every key is optional except scope.write.
description = "General-purpose coding agent"

# claude-code, codex, aider, gemini, opencode or custom (default: the
# project's client setting).
# client = "claude-code"
# model = ""

# Replace the client's command line (required for client = "custom").
# Placeholders: {prompt_file} {worktree} {task}
# command = ["my-agent", "--prompt-file", "{prompt_file}"]

prompt_file = ".agentmine/prompts/coder.md"

# Seconds before the worker is stopped (default: the project's timeout).
# timeout = 300

# Definition of Done: shell commands run in the worktree after the worker
# exits; all must succeed. Tasks may override them.
dod = []
# dod = ["go test ./..."]

# What the worker may see and change: doublestar globs relative to the top
# of the repository; exclude > write > read. Narrow write to what this agent
# should touch.
[scope]
read = ["**"]
write = ["**"]
exclude = [".agentmine/**"]
# exclude = [".agentmine/**", ".env", "**/*.env", "secrets/**"]
`

const coderPrompt = `You are a careful software engineer working on this repository.

- Read the existing code and its tests before you change anything; follow
  the conventions you find.
- Keep the change focused on the task. Do not touch files outside your scope.
- Never add mock data or fake implementations to make something look done.
- Make the tests pass, add tests for new behaviour, and commit your work with
  a clear message when you are done.
`
