package main

import (
	"context"

	"github.com/git-agentmine/git-agentmine/isolation"
	"github.com/git-agentmine/git-agentmine/output"
)

// DoctorCmd is `doctor`: what this machine can give.
type DoctorCmd struct{}

// Run probes the isolation levels afresh (refreshing the cached probe of
// the repository, when run in one) and prints what each can do here.
func (c *DoctorCmd) Run(a *App) error {
	caps, level, configured := doctorProbe(a)
	j := doctorJSON{V: output.SchemaVersion, Default: string(caps.Default()), Configured: configured, Used: level,
		LandlockABI: caps.LandlockABI, Bwrap: caps.BwrapPath}
	for _, l := range isolation.Levels {
		why := caps.Why(l)
		j.Levels = append(j.Levels, doctorLevelJSON{Level: string(l), Available: why == "", Reason: why, Gives: levelGives(l)})
	}
	if a.G.JSON {
		return a.P.PrintJSON(j)
	}
	p := a.P
	p.Printf("isolation levels on this machine:\n")
	for _, l := range j.Levels {
		mark := p.Paint(output.Green, "yes")
		if !l.Available {
			mark = p.Paint(output.Red, "no ")
		}
		p.Printf("  %-9s %s  %s\n", l.Level, mark, l.Gives)
		if !l.Available {
			p.Printf("            %s\n", l.Reason)
		}
	}
	if caps.LandlockABI > 0 {
		p.Printf("landlock ABI: %d\n", caps.LandlockABI)
	}
	p.Printf("default (auto): %s\n", j.Default)
	if configured != "" {
		p.Printf("configured (isolation setting): %s, used: %s\n", configured, orDash(level))
	}
	return nil
}

// doctorProbe probes afresh: through the repository's worker environment
// when there is one (its cache and configured level), else without.
func doctorProbe(a *App) (caps isolation.Caps, used, configured string) {
	ctx := context.Background()
	if _, err := a.Store(); err == nil {
		if e, err := workerEnv(a, nil); err == nil {
			caps = e.Capabilities(ctx, true)
			configured = e.Cfg.Isolation
			if want, err := isolation.ParseLevel(configured); err == nil {
				if got, _, err := caps.Choose(want, false); err == nil {
					used = string(got)
				}
			}
			return caps, used, configured
		}
	}
	return isolation.Probe(ctx, "", true), "", ""
}

// levelGives says in a few words what a level prevents.
func levelGives(l isolation.Level) string {
	switch l {
	case isolation.None:
		return "guard rails only (sparse checkout, read-only files); verification detects the rest"
	case isolation.Landlock:
		return "the worker writes only its worktree, the object store, branches, a private HOME and temp dir"
	case isolation.Seatbelt:
		return "macOS sandbox: writes only its worktree, object store, own branch, private HOME and temp dir; main checkout hidden"
	case isolation.Bwrap:
		return "sandbox: main checkout hidden, refs and notes out of reach, own PID namespace"
	case isolation.Clone:
		return "bwrap plus a repository of its own without the excluded files' content"
	}
	return ""
}
