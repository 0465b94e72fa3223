package main

import (
	"strings"

	"github.com/git-agentmine/git-agentmine/merge"
	"github.com/git-agentmine/git-agentmine/output"
)

// MergeCmd is `merge`.
type MergeCmd struct {
	ID           string `arg:"" help:"Task id."`
	AllowSkipped bool   `name:"allow-skipped" help:"Merge although the session's DoD was skipped."`
	AcceptMain   bool   `name:"accept-main-changes" help:"Merge although the main checkout changed during the run: you made those changes (recorded in the merge commit)."`
}

// Run merges the task's latest session if its facts allow it.
func (c *MergeCmd) Run(a *App) error {
	env, err := workerEnv(a, nil)
	if err != nil {
		return err
	}
	res, err := merge.Task(a.Ctx, env.St, env.Cfg.Base, c.ID, merge.Options{AllowSkipped: c.AllowSkipped, AcceptMainChanges: c.AcceptMain})
	if err != nil {
		return err
	}
	if a.G.JSON {
		return a.P.PrintJSON(mergeJSON{V: output.SchemaVersion, Result: res})
	}
	if a.G.Quiet {
		a.P.Printf("%s\n", res.Commit)
		return nil
	}
	for _, w := range res.Finished {
		a.P.Printf("finished updating the checkout in %s, which an interrupted merge had left behind\n", w)
	}
	if res.Already {
		a.P.Printf("task %s: session %s is already in %s\n", res.Task[:8], res.Session[:8], res.Base)
		return nil
	}
	a.P.Printf("merged task %s (session %s) into %s: %s\n", res.Task[:8], res.Session[:8], strings.TrimPrefix(res.Base, "refs/heads/"), res.Commit[:12])
	if n := len(res.Kept); n > 0 {
		a.P.Printf("left as they were, uncommitted: %s", strings.Join(res.Kept[:min(n, 5)], ", "))
		if n > 5 {
			a.P.Printf(" (+%d more)", n-5)
		}
		a.P.Printf("\n")
	}
	if len(res.Accepted) > 0 {
		a.P.Printf("accepted as yours, recorded in the merge commit: main-checkout changes of %s\n", strings.Join(res.Accepted, ", "))
	}
	return nil
}
