package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/git-agentmine/git-agentmine/internal/gittest"
	"github.com/git-agentmine/git-agentmine/output"
)

// configRepo makes a repository with one commit on branch main and a pinned
// environment.
func configRepo(t *testing.T) string {
	t.Helper()
	dir := gittest.NewRepo(t)
	gittest.Git(t, dir, "config", "agentmine.grace", "3")
	gittest.WriteFiles(t, dir, map[string]string{".agentmine/config.toml": "timeout = 42\ndod_timeout = 7\n"})
	return dir
}

func runConfigShow(t *testing.T, dir string, json bool, key string, env map[string]string) (string, error) {
	var out, errb bytes.Buffer
	g := &Globals{Dir: dir, JSON: json}
	a := &App{Ctx: context.Background(), G: g, P: &output.Printer{Out: &out, Err: &errb, JSON: json},
		Getenv: func(k string) string { return env[k] }}
	err := (&ConfigShowCmd{Key: key}).Run(a)
	return out.String(), err
}

func TestConfigShow(t *testing.T) {
	dir := configRepo(t)
	out, err := runConfigShow(t, dir, false, "", map[string]string{"AGENTMINE_DOD_TIMEOUT": "9"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"base           main                  detected (the main worktree's current branch)",
		"timeout        42                    config.toml (.agentmine/config.toml timeout)",
		"dod_timeout    9                     env (AGENTMINE_DOD_TIMEOUT)",
		"grace          3                     git config (git config agentmine.grace)",
		"client         claude-code           default",
	} {
		// Columns are as wide as their widest value: compare words.
		squeeze := func(s string) string { return regexp.MustCompile(` +`).ReplaceAllString(s, " ") }
		if !strings.Contains(squeeze(out), squeeze(want)+"\n") {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	out, err = runConfigShow(t, dir, false, "timeout", nil)
	if err != nil || out != "42\n" {
		t.Fatalf("config show timeout = %q, %v", out, err)
	}
	out, err = runConfigShow(t, dir, true, "", nil)
	if err != nil || !strings.Contains(out, `"key": "grace",`) || !strings.Contains(out, `"source": "git config",`) {
		t.Fatalf("json: %v\n%s", err, out)
	}
	if _, err := runConfigShow(t, dir, false, "nope", nil); err == nil || !strings.Contains(err.Error(), `unknown setting "nope"`) {
		t.Fatalf("unknown key: %v", err)
	}
	if _, err := runConfigShow(t, dir, false, "", map[string]string{"AGENTMINE_GRACE": "-1"}); err == nil || !strings.Contains(err.Error(), "AGENTMINE_GRACE: invalid grace") {
		t.Fatalf("bad env: %v", err)
	}
}
