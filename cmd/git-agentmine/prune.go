package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/git-agentmine/git-agentmine/board"
	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/output"
	"github.com/git-agentmine/git-agentmine/worker"
)

// WorkerPruneCmd is `worker prune`.
type WorkerPruneCmd struct {
	OlderThan string `name:"older-than" placeholder:"DURATION" default:"24h" help:"Only sessions that ended longer ago than this (a Go duration such as 12h, or seconds; 0: every ended session)."`
	DryRun    bool   `name:"dry-run" short:"n" help:"List what would be removed; remove nothing."`
}

// parseAge reads a duration flag: a Go duration, or a bare number of
// seconds.
func parseAge(flag, v string) (time.Duration, error) {
	v = strings.TrimSpace(v)
	d, err := time.ParseDuration(v)
	if err != nil {
		n, nerr := strconv.ParseFloat(v, 64)
		if nerr != nil {
			return 0, exitcode.New(exitcode.Usage, fmt.Errorf("%s %q is not a duration", flag, v), "give a Go duration such as 12h or 30m, or a number of seconds")
		}
		d = time.Duration(n * float64(time.Second))
	}
	if d < 0 {
		return 0, exitcode.New(exitcode.Usage, fmt.Errorf("%s must not be negative", flag), "")
	}
	return d, nil
}

// Run removes (or lists) the left-overs.
func (c *WorkerPruneCmd) Run(a *App) error {
	age, err := parseAge("--older-than", c.OlderThan)
	if err != nil {
		return err
	}
	env, err := workerEnv(a, nil)
	if err != nil {
		return err
	}
	b, err := board.Load(a.Ctx, env.St, env.Cfg.Base)
	if err != nil {
		return err
	}
	opts := worker.PruneOptions{DryRun: c.DryRun, Merged: b.Merged}
	if age > 0 {
		opts.Before = time.Now().Add(-age)
	}
	res, err := env.Prune(a.Ctx, b.Sessions, opts)
	if err != nil {
		return err
	}
	if len(res.Ended) > 0 {
		a.P.Notef("ended %s that were still running\n", worker.LeftoverText(res.Ended))
	}
	failed := 0
	j := pruneJSON{V: output.SchemaVersion, DryRun: c.DryRun, OlderThan: age.String(), Leftovers: []leftoverJSON{}, EndedProcesses: procsJSON(res.Ended)}
	for _, l := range res.Leftovers {
		if l.Err != "" {
			failed++
		}
		j.Leftovers = append(j.Leftovers, leftoverJSON{Kind: l.Kind, Name: l.Name, Task: l.Task, Session: l.Session,
			Ended: l.Ended.UTC().Format(time.RFC3339), Merged: l.Merged, Removed: l.Removed, Error: l.Err})
	}
	switch {
	case a.G.JSON:
		if err := a.P.PrintJSON(j); err != nil {
			return err
		}
	case a.G.Quiet:
		for _, l := range res.Leftovers {
			if l.Removed || c.DryRun {
				a.P.Printf("%s\n", l.Name)
			}
		}
	default:
		printPrune(a, b, res, c.DryRun, age)
	}
	if failed > 0 {
		return exitcode.New(exitcode.State, errors.New(plural(failed, "left-over", "left-overs")+" could not be removed"), "see why above (a process that uses a worktree: end it), then run it again: git agentmine worker prune")
	}
	return nil
}

// printPrune says exactly what prune removed (or would remove), one line
// each, and when nothing qualified, that nothing did.
func printPrune(a *App, b *board.Board, res worker.PruneResult, dry bool, age time.Duration) {
	if len(res.Leftovers) == 0 {
		a.P.Printf("nothing to remove (no ended session older than %s left a worktree or branch)\n", age)
		return
	}
	removed := 0
	for _, l := range res.Leftovers {
		verb := "removed"
		switch {
		case dry:
			verb = "would remove"
		case l.Err != "":
			verb = "could not remove"
		}
		what := l.Kind + " " + l.Name
		merged := "not merged"
		if l.Merged {
			merged = "merged"
		}
		line := fmt.Sprintf("%s %s (task %s, session %s, %s, ended %s)", verb, what, b.Tasks.ShortID(l.Task),
			l.Session[:8], merged, l.Ended.UTC().Format(time.RFC3339))
		if l.Err != "" {
			line += ": " + l.Err
		}
		if l.Removed {
			removed++
		}
		a.P.Printf("%s\n", line)
	}
	if dry {
		a.P.Notef("dry run: nothing was removed\n")
	} else {
		a.P.Notef("removed %s\n", plural(removed, "left-over", "left-overs"))
	}
}
