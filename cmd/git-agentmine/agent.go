package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/git-agentmine/git-agentmine/agents"
	"github.com/git-agentmine/git-agentmine/config"
	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/output"
)

// AgentCmd groups the agent definition commands.
type AgentCmd struct {
	List     AgentListCmd     `cmd:"" aliases:"ls" help:"List the agents defined in .agentmine/agents."`
	Show     AgentShowCmd     `cmd:"" help:"Show one agent definition with the defaults applied."`
	Validate AgentValidateCmd `cmd:"" help:"Check agent definitions; exit 3 if any is invalid."`
}

func strs(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// agentView is an agent with the project defaults applied and its problems.
func agentView(top string, cfg config.Config, d agents.Agent) agentJSON {
	ps := agents.Validate(top, d)
	if ps == nil {
		ps = []agents.Problem{}
	}
	return agentJSON{V: output.SchemaVersion, Name: d.Name, File: d.File, Description: d.Description,
		Role: d.RoleOr(), Client: d.ClientOr(cfg.Client), Model: d.Model, Command: strs(d.Command), PromptFile: d.PromptPath(top),
		Timeout: int(d.TimeoutOr(cfg.Timeout).Seconds()), DoD: strs(d.DoD),
		Scope:     agents.Scope{Read: strs(d.Scope.Read), Write: strs(d.Scope.Write), Exclude: strs(d.Scope.Exclude)},
		Isolation: agentIsolation{Level: firstSet(d.Isolation.Level, cfg.Isolation), Fallback: d.Isolation.Fallback, Network: d.Isolation.NetworkOr(true)},
		Worktree:  worktreeView(d.Worktree),
		Valid:     len(ps) == 0, Problems: ps}
}

// worktreeView is an agent's [worktree] table for output, nil when empty.
func worktreeView(w agents.Worktree) *agents.Worktree {
	if len(w.Setup) == 0 && len(w.Include) == 0 && len(w.Share) == 0 {
		return nil
	}
	return &w
}

func brokenView(le *agents.LoadError) agentJSON {
	return agentJSON{V: output.SchemaVersion, Name: le.Name, File: le.File, Command: []string{}, DoD: []string{},
		Scope: agents.Scope{Read: []string{}, Write: []string{}, Exclude: []string{}}, Problems: []agents.Problem{},
		Error: le.Error()}
}

// agentContext opens the store and reads the working tree top and settings.
func agentContext(a *App) (string, config.Config, error) {
	st, err := a.Store()
	if err != nil {
		return "", config.Config{}, err
	}
	top, err := repoTop(a, st)
	if err != nil {
		return "", config.Config{}, err
	}
	cfg, err := loadConfig(a, st, nil)
	if err != nil {
		return "", config.Config{}, err
	}
	return top, cfg, nil
}

// loadAgentViews reads every definition, broken ones included.
func loadAgentViews(top string, cfg config.Config) ([]agentJSON, error) {
	defs, problems, err := agents.Load(top)
	if err != nil {
		return nil, err
	}
	var out []agentJSON
	for _, d := range defs {
		out = append(out, agentView(top, cfg, d))
	}
	for _, p := range problems {
		var le *agents.LoadError
		if errors.As(p, &le) {
			out = append(out, brokenView(le))
		}
	}
	sortAgents(out)
	return out, nil
}

func sortAgents(vs []agentJSON) {
	for i := 1; i < len(vs); i++ {
		for j := i; j > 0 && vs[j].Name < vs[j-1].Name; j-- {
			vs[j], vs[j-1] = vs[j-1], vs[j]
		}
	}
}

// AgentListCmd is `agent list`.
type AgentListCmd struct{}

// Run lists the agents; unreadable definitions are listed as invalid with a
// warning naming the file and line.
func (c *AgentListCmd) Run(a *App) error {
	top, cfg, err := agentContext(a)
	if err != nil {
		return err
	}
	vs, err := loadAgentViews(top, cfg)
	if err != nil {
		return err
	}
	for _, v := range vs {
		if v.Error != "" {
			a.P.Warnf("%s", v.Error)
		}
	}
	if a.G.JSON {
		if vs == nil {
			vs = []agentJSON{}
		}
		return a.P.PrintJSON(vs)
	}
	if a.G.Quiet {
		for _, v := range vs {
			a.P.Printf("%s\n", v.Name)
		}
		return nil
	}
	if len(vs) == 0 {
		a.P.Notef("no agents defined in %s (run: git agentmine init)\n", agents.Dir)
		return nil
	}
	tb := a.P.NewTable("NAME", "ROLE", "CLIENT", "MODEL", "TIMEOUT", "WRITE", "STATE", "DESCRIPTION")
	for _, v := range vs {
		state, color := "ok", output.Green
		switch {
		case v.Error != "":
			state, color = "unreadable", output.Red
		case !v.Valid:
			state, color = plural(len(v.Problems), "problem", "problems"), output.Red
		}
		timeout := strconv.Itoa(v.Timeout) + "s"
		if v.Error != "" {
			timeout = ""
		}
		name := v.Name
		if name == cfg.DefaultAgent {
			name += "*"
		}
		write := strings.Join(v.Scope.Write, ",")
		if v.Role != agents.RoleWorker && v.Error == "" {
			write = "(read-only)"
		}
		tb.ColorRow([]string{output.Cyan, "", "", "", "", "", color, ""}, name, v.Role, v.Client, v.Model, timeout,
			write, state, v.Description)
	}
	tb.Flush()
	return nil
}

// AgentShowCmd is `agent show`.
type AgentShowCmd struct {
	Name string `arg:"" help:"Agent name (file name without .toml)."`
}

// Run shows the definition with the project defaults applied.
func (c *AgentShowCmd) Run(a *App) error {
	top, cfg, err := agentContext(a)
	if err != nil {
		return err
	}
	d, err := agents.Get(top, c.Name)
	if err != nil {
		return err
	}
	v := agentView(top, cfg, d)
	if a.G.JSON {
		return a.P.PrintJSON(v)
	}
	if a.G.Quiet {
		a.P.Printf("%s\n", v.Name)
		return nil
	}
	p := a.P
	p.Printf("%s %s\n", p.Paint(output.Cyan, v.Name), p.Paint(output.Gray, v.File))
	if v.Description != "" {
		p.Printf("  description: %s\n", v.Description)
	}
	client := v.Client
	if d.Client == "" {
		client += " (project default)"
	}
	p.Printf("  client:      %s\n", client)
	if v.Model != "" {
		p.Printf("  model:       %s\n", v.Model)
	}
	if len(v.Command) > 0 {
		p.Printf("  command:     %s\n", strings.Join(quoteArgs(v.Command), " "))
	}
	prompt := v.PromptFile
	if prompt == "" {
		prompt = "(none)"
	}
	p.Printf("  prompt file: %s\n", prompt)
	timeout := fmt.Sprintf("%ds", v.Timeout)
	if d.Timeout == 0 {
		timeout += " (project default)"
	}
	p.Printf("  timeout:     %s\n", timeout)
	for _, x := range v.DoD {
		p.Printf("  dod:         %s\n", x)
	}
	read := v.Scope.Read
	if len(read) == 0 {
		read = []string{"** (default)"}
	}
	p.Printf("  scope read:    %s\n", strings.Join(read, ", "))
	p.Printf("  scope write:   %s\n", strings.Join(v.Scope.Write, ", "))
	p.Printf("  scope exclude: %s\n", strings.Join(v.Scope.Exclude, ", "))
	iso := v.Isolation.Level
	if d.Isolation.Level == "" {
		iso += " (project default)"
	}
	if v.Isolation.Fallback {
		iso += ", fallback"
	}
	if !v.Isolation.Network {
		iso += ", no network"
	}
	p.Printf("  isolation:     %s\n", iso)
	if w := v.Worktree; w != nil {
		for _, x := range w.Include {
			p.Printf("  include:       %s (copied)\n", x)
		}
		for _, x := range w.Share {
			p.Printf("  share:         %s (linked)\n", x)
		}
		for _, x := range w.Setup {
			p.Printf("  setup:         %s\n", x)
		}
	}
	for _, pr := range v.Problems {
		a.P.Warnf("%s", pr)
	}
	return nil
}

func quoteArgs(args []string) []string {
	out := make([]string, len(args))
	for i, s := range args {
		if s == "" || strings.ContainsAny(s, " \t\"'\\$") {
			s = strconv.Quote(s)
		}
		out[i] = s
	}
	return out
}

// AgentValidateCmd is `agent validate`.
type AgentValidateCmd struct {
	Names []string `arg:"" optional:"" name:"name" help:"Agents to check (default: all)."`
}

// Run checks the definitions, printing every problem, and fails with exit
// code 3 (Config) when any is invalid.
func (c *AgentValidateCmd) Run(a *App) error {
	top, cfg, err := agentContext(a)
	if err != nil {
		return err
	}
	var vs []agentJSON
	if len(c.Names) == 0 {
		if vs, err = loadAgentViews(top, cfg); err != nil {
			return err
		}
		if len(vs) == 0 {
			return exitcode.New(exitcode.NotFound, fmt.Errorf("no agents defined in %s", agents.Dir), "run: git agentmine init")
		}
	} else {
		for _, n := range c.Names {
			d, err := agents.Get(top, n)
			var le *agents.LoadError
			switch {
			case err == nil:
				vs = append(vs, agentView(top, cfg, d))
			case exitcode.Of(err) == exitcode.Config:
				le = &agents.LoadError{Name: n, File: agents.Dir + "/" + n + ".toml", Err: err}
				vs = append(vs, brokenView(le))
			default:
				return err
			}
		}
	}
	bad := 0
	for _, v := range vs {
		if v.Error != "" || !v.Valid {
			bad++
		}
	}
	if a.G.JSON {
		if err := a.P.PrintJSON(vs); err != nil {
			return err
		}
	} else {
		for _, v := range vs {
			switch {
			case v.Error != "":
				a.P.Printf("%s %s\n", a.P.Paint(output.Red, "invalid"), v.Error)
			case !v.Valid:
				for _, pr := range v.Problems {
					a.P.Printf("%s %s\n", a.P.Paint(output.Red, "invalid"), pr)
				}
			case !a.G.Quiet:
				a.P.Printf("%s      %s (%s)\n", a.P.Paint(output.Green, "ok"), v.Name, v.File)
			}
		}
	}
	if bad > 0 {
		return exitcode.New(exitcode.Config, fmt.Errorf("%d of %s invalid", bad, plural(len(vs), "agent definition is", "agent definitions are")), "")
	}
	return nil
}

// firstSet returns the first non-empty string.
func firstSet(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}
