package main

import (
	"strings"

	"github.com/git-agentmine/git-agentmine/bestof"
)

// printBestOf prints the best-of rounds of a task (task show): each
// round's outcome, then each attempt with its agent, verdict, diff size,
// usage, and whether it was chosen and why; the winner is starred.
func printBestOf(a *App, rec bestof.Record) {
	if len(rec.Rounds) == 0 {
		return
	}
	p := a.P
	p.Printf("\n  best of:\n")
	for i, rd := range rec.Rounds {
		p.Printf("    round %d (best of %d): %s\n", i+1, rd.K, rd.Summary())
		if rd.Decided == nil {
			for _, c := range rd.Attempts {
				p.Printf("      %d  %s  %s  running\n", c.Slot, short8(c.Session), c.Agent)
			}
			continue
		}
		for _, c := range rd.Decided.Candidates {
			mark, chosen := "  ", "not chosen"
			if c.Chosen {
				mark, chosen = "* ", "chosen"
			}
			verdict := "passed"
			if !c.Passed {
				verdict = "failed"
			}
			p.Printf("    %s%d  %s  %s  %s  %s  %s  %s: %s\n", mark, c.Slot, short8(c.Session), c.Agent, verdict,
				c.DiffText(), c.UsageText(), chosen, strings.TrimPrefix(c.Why, "did not pass: "))
		}
	}
}
