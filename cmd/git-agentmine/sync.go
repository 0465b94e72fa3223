package main

import (
	"errors"
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/memory"
	"github.com/git-agentmine/git-agentmine/output"
	"github.com/git-agentmine/git-agentmine/replica"
	"github.com/git-agentmine/git-agentmine/tasks"
)

// SyncCmd is `sync`: fetch, merge entity by entity, push back.
type SyncCmd struct {
	Remote string `arg:"" optional:"" help:"Remote (default: agentmine.remote, else origin)."`
}

// PushCmd is `push`: send local changes that fast-forward the remote.
type PushCmd struct {
	Remote string `arg:"" optional:"" help:"Remote (default: agentmine.remote, else origin)."`
}

// PullCmd is `pull`: fetch and merge, push nothing.
type PullCmd struct {
	Remote string `arg:"" optional:"" help:"Remote (default: agentmine.remote, else origin)."`
}

// Run syncs.
func (c *SyncCmd) Run(a *App) error { return runSync(a, c.Remote, "sync") }

// Run pushes.
func (c *PushCmd) Run(a *App) error { return runSync(a, c.Remote, "push") }

// Run pulls.
func (c *PullCmd) Run(a *App) error { return runSync(a, c.Remote, "pull") }

// syncRules names the set-like fields of each kind.
func syncRules() map[string]replica.MergeRules {
	r := replica.DefaultMergeRules()
	return map[string]replica.MergeRules{
		tasks.Kind.Dir:  {SetFields: []string{"labels", "blocked_by"}, MaxVersion: tasks.SchemaVersion, Unreported: r.Unreported},
		memory.Kind.Dir: {SetFields: []string{"tags"}, MaxVersion: memory.SchemaVersion, Unreported: r.Unreported},
	}
}

func runSync(a *App, remote, verb string) error {
	st, err := a.Store()
	if err != nil {
		return err
	}
	debug.SetGCPercent(replica.GCPercent)
	opts := replica.Options{Remote: remote, Rules: syncRules()}
	progress := output.IsTerminal(a.P.Err) && !a.G.Quiet && !a.G.JSON
	if progress {
		opts.Progress = func(p replica.Progress) {
			line := fmt.Sprintf("%s: %s (round %d)", verb, p.Phase, p.Round)
			if p.Total > 0 {
				line += fmt.Sprintf(" %d/%d", p.Done, p.Total)
			}
			fmt.Fprintf(a.P.Err, "\r\x1b[K%s", line)
		}
	}
	var rep replica.Report
	switch verb {
	case "push":
		rep, err = replica.Push(a.Ctx, st, opts)
	case "pull":
		rep, err = replica.Pull(a.Ctx, st, opts)
	default:
		rep, err = replica.Sync(a.Ctx, st, opts)
	}
	if progress {
		fmt.Fprint(a.P.Err, "\r\x1b[K")
	}
	skipped := errors.Is(err, replica.ErrSkipped)
	if err != nil && !skipped {
		return err
	}
	if a.G.JSON {
		a.P.PrintJSON(syncJSON{output.SchemaVersion, rep})
	} else if !a.G.Quiet {
		p := a.P
		p.Printf("%s with %s: %d fetched, %d new, %d fast-forwarded, %d merged (%s), %d pushed, %d up to date",
			verb, rep.Remote, rep.Fetched, rep.Created, rep.FastForwarded, rep.Merged, plural(rep.ConflictingFields, "conflicting field", "conflicting fields"), rep.Pushed, rep.UpToDate)
		if rep.Pending > 0 {
			p.Printf(", %d pending", rep.Pending)
		}
		if rep.Rounds > 1 {
			p.Printf(" in %d rounds", rep.Rounds)
		}
		p.Printf("\n")
		for _, c := range rep.Conflicts {
			p.Printf("  conflict %s\n", conflictLine(c))
		}
		for _, s := range rep.Skipped {
			p.Warnf("skipped %s", skipLine(s))
		}
	}
	if skipped {
		return exitcode.New(exitcode.Failed, fmt.Errorf("%s: %s not be synced", verb, plural(len(rep.Skipped), "entity could", "entities could")), "see the warnings above; the rest synced")
	}
	return nil
}

func conflictLine(c replica.Conflict) string {
	win, lose := c.Remote, c.Local
	if c.Winner == "local" {
		win, lose = c.Local, c.Remote
	}
	id := c.ID
	if len(id) > 8 {
		id = id[:8]
	}
	return fmt.Sprintf("%s %s %s: kept %s (%s), overrode %s (kept in history, %s)", c.Kind, id, c.Field,
		strings.TrimSpace(string(win)), c.Winner, strings.TrimSpace(string(lose)), shortCommit(c.MergeCommit))
}

func shortCommit(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
}

func skipLine(s replica.Skip) string {
	return s.Ref + ": " + s.Error
}
