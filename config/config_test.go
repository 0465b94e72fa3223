package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/git-agentmine/git-agentmine/exitcode"
)

// repo makes a directory with a common dir whose HEAD names branch.
func repo(t *testing.T, head, toml string) Options {
	t.Helper()
	top := t.TempDir()
	common := filepath.Join(top, ".git")
	if err := os.MkdirAll(common, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(common, "HEAD"), []byte(head), 0o644); err != nil {
		t.Fatal(err)
	}
	if toml != "" {
		p := filepath.Join(top, File)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(toml), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return Options{Top: top, CommonDir: common}
}

func TestDefaults(t *testing.T) {
	o := repo(t, "ref: refs/heads/trunk\n", "")
	c, err := Load(o)
	if err != nil {
		t.Fatal(err)
	}
	if c.Base != "trunk" || c.Sources["base"] != FromDetected {
		t.Errorf("base %q from %s", c.Base, c.Sources["base"])
	}
	if c.WorktreeRoot != DefaultWorktreeRoot || c.Timeout != DefaultTimeout || c.DoDTimeout != DefaultDoDTimeout ||
		c.Grace != DefaultGrace || c.DefaultAgent != "coder" || c.Client != "claude-code" || c.Remote != "" {
		t.Errorf("defaults: %+v", c)
	}
	if c.Sources["timeout"] != FromDefault || c.Sources["remote"] != FromDefault {
		t.Errorf("sources: %v", c.Sources)
	}
	if got := c.WorktreeDir(o.Top); got != filepath.Join(o.Top, ".agentmine", "worktrees") {
		t.Errorf("WorktreeDir = %s", got)
	}
	for _, s := range Settings {
		if c.Value(s.Key) == "" && s.Key != "remote" {
			t.Errorf("setting %s has no value", s.Key)
		}
	}
}

func TestDetachedHeadAndOrigin(t *testing.T) {
	o := repo(t, "0123456789012345678901234567890123456789\n", "")
	o.GitConfig = func(k string) (string, bool) {
		if k == "remote.origin.url" {
			return "https://example.com/x.git", true
		}
		return "", false
	}
	c, err := Load(o)
	if err != nil {
		t.Fatal(err)
	}
	if c.Base != "" || c.Remote != "origin" || c.Sources["remote"] != FromDetected {
		t.Fatalf("base %q remote %q (%s)", c.Base, c.Remote, c.Sources["remote"])
	}
}

// TestPrecedence: flags > env > git config > config.toml > defaults, key by key.
func TestPrecedence(t *testing.T) {
	o := repo(t, "ref: refs/heads/main\n", `base = "file-base"
timeout = 11
dod_timeout = 12
grace = 13
default_agent = "file-agent"
`)
	env := map[string]string{"AGENTMINE_TIMEOUT": "21", "AGENTMINE_DOD_TIMEOUT": "22"}
	git := map[string]string{"agentmine.timeout": "31", "agentmine.dodtimeout": "32", "agentmine.grace": "33", "agentmine.worktreeroot": "wt"}
	o.Getenv = func(k string) string { return env[k] }
	o.GitConfig = func(k string) (string, bool) { v, ok := git[k]; return v, ok }
	o.Flags = map[string]string{"timeout": "1", "client": ""}
	c, err := Load(o)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		key, val string
		src      Source
	}{
		{"timeout", "1", FromFlag},
		{"dod_timeout", "22", FromEnv},
		{"grace", "33", FromGitConfig},
		{"worktree_root", "wt", FromGitConfig},
		{"base", "file-base", FromFile},
		{"default_agent", "file-agent", FromFile},
		{"client", "claude-code", FromDefault},
	}
	for _, w := range want {
		if c.Value(w.key) != w.val || c.Sources[w.key] != w.src {
			t.Errorf("%s = %q from %s, want %q from %s", w.key, c.Value(w.key), c.Sources[w.key], w.val, w.src)
		}
	}
	if c.Timeout != time.Second || c.Origins["dod_timeout"] != "AGENTMINE_DOD_TIMEOUT" || c.Origins["grace"] != "git config agentmine.grace" {
		t.Errorf("origins %v", c.Origins)
	}
}

func TestBadInput(t *testing.T) {
	cases := []struct {
		name  string
		toml  string
		env   map[string]string
		flags map[string]string
		code  int
		want  string
	}{
		{"syntax", "timeout = 1\nbase = \n", nil, nil, exitcode.Config, ".agentmine/config.toml:2: "},
		{"unknown key", "timout = 1\n", nil, nil, exitcode.Config, `.agentmine/config.toml: unknown key "timout"`},
		{"type", "timeout = true\n", nil, nil, exitcode.Config, ".agentmine/config.toml:1: timeout: incompatible types"},
		{"fraction", "timeout = \"1.5s\"\n", nil, nil, exitcode.Config, `.agentmine/config.toml timeout: invalid timeout "1.5s": not whole seconds`},
		{"negative", "grace = -1\n", nil, nil, exitcode.Config, `.agentmine/config.toml grace: invalid grace "-1"`},
		{"zero timeout", "timeout = 0\n", nil, nil, exitcode.Config, "invalid timeout"},
		{"env", "", map[string]string{"AGENTMINE_TIMEOUT": "soon"}, nil, exitcode.Config, `AGENTMINE_TIMEOUT: invalid timeout "soon"`},
		{"client", "", map[string]string{"AGENTMINE_CLIENT": "cursor"}, nil, exitcode.Config, `AGENTMINE_CLIENT: unknown client "cursor"`},
		{"root escapes", "worktree_root = \"../out\"\n", nil, nil, exitcode.Config, "a relative root must be a directory inside the repository"},
		{"root is top", "worktree_root = \".\"\n", nil, nil, exitcode.Config, "inside the repository"},
		{"agent name", "default_agent = \"../x\"\n", nil, nil, exitcode.Config, "invalid default_agent"},
		{"base", "base = \"a b\"\n", nil, nil, exitcode.Config, "invalid base"},
		{"flag key", "", nil, map[string]string{"nope": "1"}, exitcode.Usage, `unknown setting "nope"`},
		{"flag value", "", nil, map[string]string{"grace": "x"}, exitcode.Config, `--grace: invalid grace "x"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := repo(t, "ref: refs/heads/main\n", c.toml)
			o.Getenv = func(k string) string { return c.env[k] }
			o.Flags = c.flags
			_, err := Load(o)
			if err == nil || exitcode.Of(err) != c.code || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("got %v (code %d), want code %d containing %q", err, exitcode.Of(err), c.code, c.want)
			}
		})
	}
}

func TestAbsoluteWorktreeRoot(t *testing.T) {
	dir := t.TempDir()
	o := repo(t, "ref: refs/heads/main\n", "")
	o.Flags = map[string]string{"worktree_root": dir}
	c, err := Load(o)
	if err != nil {
		t.Fatal(err)
	}
	if c.WorktreeDir(o.Top) != dir {
		t.Fatalf("WorktreeDir = %s, want %s", c.WorktreeDir(o.Top), dir)
	}
}

// TestDurations: every source takes the one duration grammar, and the
// integer seconds of earlier releases still work.
func TestDurations(t *testing.T) {
	o := repo(t, "ref: refs/heads/main\n", "timeout = \"5m\"\ndod_timeout = 120\n")
	o.Getenv = func(k string) string {
		if k == "AGENTMINE_GRACE" {
			return "1m30s"
		}
		return ""
	}
	c, err := Load(o)
	if err != nil {
		t.Fatal(err)
	}
	if c.Timeout != 5*time.Minute || c.DoDTimeout != 2*time.Minute || c.Grace != 90*time.Second {
		t.Errorf("timeout %v, dod_timeout %v, grace %v; want 5m, 2m, 1m30s", c.Timeout, c.DoDTimeout, c.Grace)
	}
	if c.Value("timeout") != "300" || c.Value("grace") != "90" {
		t.Errorf("values %q, %q; want seconds", c.Value("timeout"), c.Value("grace"))
	}
}
