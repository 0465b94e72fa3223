package main

import "github.com/git-agentmine/git-agentmine/demo"

// DemoCmd is `demo`.
type DemoCmd struct {
	Keep  bool   `help:"Keep the demo repository instead of removing it."`
	Where string `name:"in" placeholder:"DIR" help:"Make the demo repository in DIR instead of a temp dir."`
}

// Run plays the demo.
func (c *DemoCmd) Run(a *App) error {
	return demo.Run(a.Ctx, demo.Options{Exe: a.Args0, Out: a.P.Out, Keep: c.Keep, Dir: c.Where})
}
