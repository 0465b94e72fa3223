package main

import (
	"errors"

	"github.com/git-agentmine/git-agentmine/config"
	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/output"
)

// loadConfig computes the project settings for the repository of st.
// flags maps setting keys (config.Settings) to values given on the command
// line; empty values are ignored.
func loadConfig(a *App, st *gitstore.Store, flags map[string]string) (config.Config, error) {
	top, err := repoTop(a, st)
	if err != nil {
		return config.Config{}, err
	}
	return config.Load(config.Options{Top: top, CommonDir: st.Location().CommonDir, Flags: flags,
		Getenv: a.Getenv, GitConfig: st.Config})
}

// repoTop returns the top of the working tree, refusing bare repositories.
func repoTop(a *App, st *gitstore.Store) (string, error) {
	top := st.Location().Top
	if top == "" {
		// Ask git directly: the location may have been read without it.
		top, _ = st.Git().Output(a.Ctx, "rev-parse", "--path-format=absolute", "--show-toplevel")
	}
	if top == "" {
		return "", exitcode.New(exitcode.State, errors.New("this command needs a working tree, and the repository is bare"), "run it in a checkout of the repository")
	}
	return top, nil
}

// ConfigCmd groups the project settings commands.
type ConfigCmd struct {
	Show ConfigShowCmd `cmd:"" default:"withargs" help:"Print every setting with its value and where it came from."`
}

// ConfigShowCmd is `config show`.
type ConfigShowCmd struct {
	Key string `arg:"" optional:"" help:"Only this setting (e.g. timeout, worktree_root)."`
}

// Run prints the settings.
func (c *ConfigShowCmd) Run(a *App) error {
	st, err := a.Store()
	if err != nil {
		return err
	}
	if _, err := repoTop(a, st); err != nil {
		return err
	}
	cfg, err := loadConfig(a, st, nil)
	if err != nil {
		return err
	}
	var rows []settingJSON
	for _, s := range config.Settings {
		if c.Key != "" && c.Key != s.Key {
			continue
		}
		rows = append(rows, settingJSON{Key: s.Key, Value: cfg.Value(s.Key), Source: string(cfg.Sources[s.Key]),
			Origin: cfg.Origins[s.Key], Env: s.Env, Git: s.Git})
	}
	if c.Key != "" && len(rows) == 0 {
		var keys []string
		for _, s := range config.Settings {
			keys = append(keys, s.Key)
		}
		return exitcode.New(exitcode.NotFound, errors.New("unknown setting "+quote(c.Key)), "known settings: "+joinComma(keys))
	}
	if a.G.JSON {
		if c.Key != "" {
			return a.P.PrintJSON(settingOneJSON{output.SchemaVersion, rows[0]})
		}
		return a.P.PrintJSON(settingsJSON{output.SchemaVersion, rows})
	}
	if c.Key != "" || a.G.Quiet {
		for _, r := range rows {
			a.P.Printf("%s\n", r.Value)
		}
		return nil
	}
	tb := a.P.NewTable("KEY", "VALUE", "SOURCE")
	for _, r := range rows {
		src := r.Source
		if r.Origin != "" && r.Origin != "default" {
			src += " (" + r.Origin + ")"
		}
		tb.ColorRow([]string{output.Cyan, "", output.Gray}, r.Key, r.Value, src)
	}
	tb.Flush()
	return nil
}

func quote(s string) string { return `"` + s + `"` }

func joinComma(xs []string) string {
	out := ""
	for i, x := range xs {
		if i > 0 {
			out += ", "
		}
		out += x
	}
	return out
}
