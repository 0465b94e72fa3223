package agents

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/git-agentmine/git-agentmine/exitcode"
)

func write(t *testing.T, top, rel, text string) {
	t.Helper()
	p := filepath.Join(top, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

const good = `description = "writes code"
client = "custom"
model = "m1"
command = ["sh", "-c", "run {prompt_file} in {worktree} for {task}"]
prompt_file = ".agentmine/prompts/good.md"
timeout = 42
dod = ["true", "test -f x"]

[scope]
read = ["**"]
write = ["src/**", "tests/"]
exclude = ["secrets/**"]
`

func TestLoadAndGet(t *testing.T) {
	top := t.TempDir()
	write(t, top, ".agentmine/agents/good.toml", good)
	write(t, top, ".agentmine/prompts/good.md", "be good\n")
	write(t, top, ".agentmine/agents/broken.toml", "description = \"x\"\nclient = \n")
	write(t, top, ".agentmine/agents/notes.txt", "ignored")

	defs, problems, err := Load(top)
	if err != nil {
		t.Fatal(err)
	}
	if len(defs) != 1 || defs[0].Name != "good" {
		t.Fatalf("defs = %+v", defs)
	}
	a := defs[0]
	if a.Client != "custom" || a.Model != "m1" || a.Timeout != 42 || len(a.DoD) != 2 || a.Scope.Write[1] != "tests/" || a.File != ".agentmine/agents/good.toml" {
		t.Fatalf("decoded %+v", a)
	}
	if ps := Validate(top, a); len(ps) != 0 {
		t.Fatalf("valid agent has problems: %v", ps)
	}
	if a.TimeoutOr(time.Minute) != 42*time.Second || (Agent{}).TimeoutOr(time.Minute) != time.Minute {
		t.Fatal("TimeoutOr")
	}
	if a.ClientOr("codex") != "custom" || (Agent{}).ClientOr("codex") != "codex" {
		t.Fatal("ClientOr")
	}
	if len(problems) != 1 {
		t.Fatalf("problems = %v", problems)
	}
	msg := problems[0].Error()
	if !strings.HasPrefix(msg, ".agentmine/agents/broken.toml:2: ") || strings.Contains(msg, "\n") {
		t.Fatalf("syntax error should name file and line in one line: %q", msg)
	}
	if exitcode.Of(problems[0]) != exitcode.Config {
		t.Fatalf("exit code %d", exitcode.Of(problems[0]))
	}

	if _, err := Get(top, "good"); err != nil {
		t.Fatal(err)
	}
	_, err = Get(top, "nope")
	var ue *UnknownError
	if exitcode.Of(err) != exitcode.NotFound || !errors.Is(err, ErrUnknown) || !errors.As(err, &ue) || strings.Join(ue.Known, ", ") != "broken, good" {
		t.Fatalf("unknown agent: %v (%#v)", err, ue)
	}
	for _, bad := range []string{"../good", "/etc/passwd", "", ".hidden"} {
		if _, err := Get(top, bad); exitcode.Of(err) != exitcode.NotFound {
			t.Errorf("Get(%q) = %v, want NotFound", bad, err)
		}
	}
}

func TestNoAgentsDir(t *testing.T) {
	top := t.TempDir()
	defs, problems, err := Load(top)
	if err != nil || len(defs) != 0 || len(problems) != 0 {
		t.Fatalf("Load of empty tree: %v %v %v", defs, problems, err)
	}
	_, err = Get(top, "coder")
	var ue *UnknownError
	if exitcode.Of(err) != exitcode.NotFound || !errors.As(err, &ue) || len(ue.Known) != 0 {
		t.Fatalf("got %v (%#v)", err, ue)
	}
}

func TestUnknownKeyAndTypeErrors(t *testing.T) {
	top := t.TempDir()
	write(t, top, ".agentmine/agents/a.toml", "client = \"codex\"\nmodle = \"x\"\n[scope]\nwrite = [\"**\"]\n")
	write(t, top, ".agentmine/agents/b.toml", "[scope]\nwrite = [\"**\"]\nwirte = [\"x\"]\n")
	write(t, top, ".agentmine/agents/c.toml", "timeout = \"soon\"\n[scope]\nwrite = [\"**\"]\n")
	for name, want := range map[string]string{
		"a": `.agentmine/agents/a.toml: unknown key "modle"`,
		"b": `.agentmine/agents/b.toml: unknown key "scope.wirte"`,
		"c": `.agentmine/agents/c.toml:1: `,
	} {
		_, err := Get(top, name)
		if err == nil || !strings.HasPrefix(err.Error(), want) || exitcode.Of(err) != exitcode.Config {
			t.Errorf("%s: got %v (code %d), want prefix %q", name, err, exitcode.Of(err), want)
		}
	}
}

func TestValidateProblems(t *testing.T) {
	top := t.TempDir()
	write(t, top, "p.md", "x")
	cases := []struct {
		a    Agent
		keys []string
	}{
		{Agent{Client: "cursor", Scope: Scope{Write: []string{"**"}}}, []string{"client"}},
		{Agent{Client: "custom", Scope: Scope{Write: []string{"**"}}}, []string{"command"}},
		{Agent{Command: []string{"x", "{prompt}"}, Scope: Scope{Write: []string{"**"}}}, []string{"command"}},
		// "{{" is a literal brace: no placeholder follows it.
		{Agent{Command: []string{"awk", "{{print}", "{{prompt}", "{{{{x}"}, Scope: Scope{Write: []string{"**"}}}, nil},
		{Agent{Command: []string{"x", "{{{prompt}"}, Scope: Scope{Write: []string{"**"}}}, []string{"command"}},
		{Agent{Command: []string{"x", "{a{prompt}"}, Scope: Scope{Write: []string{"**"}}}, []string{"command"}},
		{Agent{Client: "codex"}, []string{"scope.write"}},
		{Agent{Scope: Scope{Write: []string{"src/[a"}, Read: []string{""}, Exclude: []string{"../x"}}}, []string{"scope.read", "scope.write", "scope.exclude"}},
		{Agent{Timeout: -1, Scope: Scope{Write: []string{"**"}}}, []string{"timeout"}},
		{Agent{DoD: []string{"ok", " "}, Scope: Scope{Write: []string{"**"}}}, []string{"dod"}},
		{Agent{PromptFile: "missing.md", Scope: Scope{Write: []string{"**"}}}, []string{"prompt_file"}},
		{Agent{PromptFile: "../p.md", Scope: Scope{Write: []string{"**"}}}, []string{"prompt_file"}},
		{Agent{PromptFile: "/etc/hostname", Scope: Scope{Write: []string{"**"}}}, []string{"prompt_file"}},
		{Agent{PromptFile: "p.md", Client: "gemini", Scope: Scope{Write: []string{"**"}}}, nil},
		// [worktree]: includes inside the repository, visible to the
		// worker, named once; setup commands not empty.
		{Agent{Scope: Scope{Write: []string{"src/**"}}, Worktree: Worktree{Setup: []string{"npm ci"}, Include: []string{".env.local", "./conf/"}, Share: []string{"node_modules"}}}, nil},
		{Agent{Scope: Scope{Write: []string{"**"}}, Worktree: Worktree{Setup: []string{" "}, SetupTimeout: -1}}, []string{"worktree.setup", "worktree.setup_timeout"}},
		{Agent{Scope: Scope{Write: []string{"**"}}, Worktree: Worktree{Include: []string{"../x", "/etc/passwd", "", ".", ".git/config", "*.env"}}},
			[]string{"worktree.include", "worktree.include", "worktree.include", "worktree.include", "worktree.include", "worktree.include"}},
		{Agent{Scope: Scope{Write: []string{"**"}}, Worktree: Worktree{Include: []string{"a"}, Share: []string{"./a"}}}, []string{"worktree.share"}},
		{Agent{Scope: Scope{Write: []string{"src/**"}, Exclude: []string{"secrets/**"}}, Worktree: Worktree{Include: []string{"secrets/key"}}}, []string{"worktree.include"}},
		{Agent{Scope: Scope{Read: []string{"src/**"}, Write: []string{"src/**"}}, Worktree: Worktree{Share: []string{"node_modules"}}}, []string{"worktree.share"}},
		{Agent{Scope: Scope{Write: []string{"**"}}, Isolation: Isolation{Level: "clone"}, Worktree: Worktree{Share: []string{"node_modules"}}}, []string{"worktree.share"}},
	}
	for i, c := range cases {
		c.a.File = "f.toml"
		ps := Validate(top, c.a)
		var keys []string
		for _, p := range ps {
			keys = append(keys, p.Key)
			if strings.Contains(p.String(), "\n") || !strings.HasPrefix(p.String(), "f.toml: ") {
				t.Errorf("case %d: problem %q is not one line naming the file", i, p)
			}
		}
		if strings.Join(keys, ",") != strings.Join(c.keys, ",") {
			t.Errorf("case %d: problem keys %v, want %v (%v)", i, keys, c.keys, ps)
		}
	}
	err := ValidationError("x", []Problem{{File: "f", Key: "k", Message: "m"}, {File: "f", Key: "k2", Message: "m2"}})
	if exitcode.Of(err) != exitcode.Config || !strings.Contains(err.Error(), "(and 1 more)") {
		t.Fatalf("ValidationError: %v", err)
	}
	if ValidationError("x", nil) != nil {
		t.Fatal("no problems must be no error")
	}
}

func TestPromptPath(t *testing.T) {
	top := t.TempDir()
	if got := (Agent{Name: "coder"}).PromptPath(top); got != "" {
		t.Fatalf("no default prompt file: got %q", got)
	}
	write(t, top, ".agentmine/prompts/coder.md", "x")
	if got := (Agent{Name: "coder"}).PromptPath(top); got != ".agentmine/prompts/coder.md" {
		t.Fatalf("default prompt: got %q", got)
	}
	if got := (Agent{Name: "coder", PromptFile: "./docs//p.md"}).PromptPath(top); got != "docs/p.md" {
		t.Fatalf("explicit prompt: got %q", got)
	}
}

func TestValidName(t *testing.T) {
	for s, want := range map[string]bool{"coder": true, "a.b-c_d": true, "X1": true, "": false, "-x": false, ".x": false, "a/b": false, "a b": false, "..": false} {
		if ValidName(s) != want {
			t.Errorf("ValidName(%q) != %v", s, want)
		}
	}
}

// TestDurations: timeout and stall_timeout take integer seconds or a
// duration string; a string that is no duration names file, line and key.
func TestDurations(t *testing.T) {
	top := t.TempDir()
	write(t, top, ".agentmine/agents/d.toml", "client = \"custom\"\ncommand = [\"true\"]\ntimeout = \"1h30m\"\nstall_timeout = \"2m\"\n[scope]\nwrite = [\"**\"]\n")
	write(t, top, ".agentmine/agents/bad.toml", "client = \"custom\"\ncommand = [\"true\"]\nstall_timeout = \"soon\"\n")
	a, err := Get(top, "d")
	if err != nil {
		t.Fatal(err)
	}
	if a.TimeoutOr(time.Minute) != 90*time.Minute || a.StallTimeout != 120 {
		t.Errorf("timeout %v, stall_timeout %d; want 1h30m, 120", a.TimeoutOr(time.Minute), a.StallTimeout)
	}
	_, err = Get(top, "bad")
	want := `.agentmine/agents/bad.toml:3: stall_timeout: invalid duration "soon": not a duration`
	if err == nil || !strings.HasPrefix(err.Error(), want) || exitcode.Of(err) != exitcode.Config {
		t.Errorf("bad duration: %v (exit %d); want exit 3 starting %q", err, exitcode.Of(err), want)
	}
}
