package main

import (
	"fmt"
	"strings"

	"github.com/git-agentmine/git-agentmine/config"
	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/output"
	"github.com/git-agentmine/git-agentmine/replica"
	"github.com/git-agentmine/git-agentmine/scaffold"
)

// InitCmd is `init`.
type InitCmd struct {
	Base   string `help:"Base branch to record in .agentmine/config.toml (default: the current branch)."`
	Remote string `help:"Make REMOTE the sync remote (git config agentmine.remote), so sync/push/pull and claims use it."`
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
	files, err := scaffold.Files(base)
	if err != nil {
		return err
	}
	written, err := scaffold.Write(top, files)
	if err != nil {
		return err
	}
	res := initJSON{V: output.SchemaVersion, Top: top, Base: base, Remote: c.Remote, Created: written.Created, Kept: written.Kept}
	cfg, err := loadConfig(a, st, nil)
	if err != nil {
		return err
	}
	if res.Base == "" || !contains(res.Created, config.File) {
		res.Base = cfg.Base
	}
	ex, err := scaffold.ExcludeWorktrees(st.Location().CommonDir, top, cfg.WorktreeDir(top))
	if err != nil {
		return err
	}
	res.Exclude = excludeJSON(ex)
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
