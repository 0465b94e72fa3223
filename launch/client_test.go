package launch

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/git-agentmine/git-agentmine/exitcode"
)

func TestParseClient(t *testing.T) {
	for in, want := range map[string]Client{
		"claude-code": ClaudeCode, "claude": ClaudeCode, " Codex ": Codex, "aider": Aider,
		"gemini": Gemini, "opencode": OpenCode, "custom": Custom,
	} {
		got, err := ParseClient(in)
		if err != nil || got != want {
			t.Errorf("ParseClient(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	_, err := ParseClient("cursor")
	wantCode(t, err, exitcode.Config)
	if !strings.Contains(err.Error(), `"cursor"`) || !strings.Contains(err.Error(), "claude-code, codex") {
		t.Errorf("error should name the bad client and the valid ones: %v", err)
	}
}

func TestContextFileAndBinary(t *testing.T) {
	want := map[Client][2]string{
		ClaudeCode: {"CLAUDE.md", "claude"}, Codex: {"AGENTS.md", "codex"}, OpenCode: {"AGENTS.md", "opencode"},
		Gemini: {"GEMINI.md", "gemini"}, Aider: {"", "aider"}, Custom: {"", ""},
	}
	for c, w := range want {
		if got := ContextFile(c); got != w[0] {
			t.Errorf("ContextFile(%s) = %q, want %q", c, got, w[0])
		}
		if got := Binary(c); got != w[1] {
			t.Errorf("Binary(%s) = %q, want %q", c, got, w[1])
		}
	}
}

func writePrompt(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "prompt.md")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestBuildShortPrompts(t *testing.T) {
	pf := writePrompt(t, "# Task abc\nDo it.")
	const p = "# Task abc\nDo it."
	cases := []struct {
		c     Client
		model string
		argv  []string
		stdin string
		env   []string
	}{
		{ClaudeCode, "opus", []string{"claude", "-p", p, "--dangerously-skip-permissions", "--output-format", "stream-json", "--verbose", "--model", "opus"}, "", []string{"IS_SANDBOX=1"}},
		{Codex, "", []string{"codex", "exec", "--json", "--dangerously-bypass-approvals-and-sandbox", "-C", "/wt", "--add-dir", "/repo/.git", p}, "", nil},
		{Gemini, "m", []string{"gemini", "--yolo", "--skip-trust", "-o", "stream-json", "-m", "m", "--prompt=" + p}, "", nil},
		{OpenCode, "prov/m", []string{"opencode", "run", p, "--auto", "--format", "json", "--title", "agentmine task abc", "--dir", "/wt", "-m", "prov/m"}, "", nil},
		{Aider, "", []string{"aider", "--yes-always", "--no-auto-commits", "--message-file", pf}, "", nil},
	}
	for _, tc := range cases {
		inv := Invocation{Client: tc.c, Model: tc.model, PromptFile: pf, Worktree: "/wt", Task: "abc", Writable: []string{"/repo/.git"}}
		cmd, err := inv.Build()
		if err != nil {
			t.Fatalf("%s: %v", tc.c, err)
		}
		if !reflect.DeepEqual(cmd.Argv, tc.argv) || cmd.Stdin != tc.stdin || !reflect.DeepEqual(cmd.Env, tc.env) {
			t.Errorf("%s: got %q stdin=%q env=%q\nwant %q stdin=%q env=%q", tc.c, cmd.Argv, cmd.Stdin, cmd.Env, tc.argv, tc.stdin, tc.env)
		}
	}
}

func TestBuildLongPromptsNeverInline(t *testing.T) {
	big := strings.Repeat("x", 200<<10)
	boundary := strings.Repeat("y", MaxArgBytes)
	dash := "--please do not parse me as a flag"
	for _, text := range []string{big, boundary + "z", dash} {
		pf := writePrompt(t, text)
		want := map[Client]struct {
			stdin bool
			flag  string
		}{ClaudeCode: {true, ""}, Codex: {true, "-"}, Gemini: {true, "--prompt=" + longPromptNote}, OpenCode: {false, "--file"}, Aider: {false, "--message-file"}}
		for c, w := range want {
			cmd, err := Invocation{Client: c, PromptFile: pf, Worktree: "/wt"}.Build()
			if err != nil {
				t.Fatalf("%s: %v", c, err)
			}
			for _, a := range cmd.Argv {
				if len(a) > MaxArgBytes || a == text {
					t.Errorf("%s: prompt of %d bytes passed inline", c, len(text))
				}
			}
			if w.stdin != (cmd.Stdin == pf) {
				t.Errorf("%s: stdin = %q, want prompt file %v", c, cmd.Stdin, w.stdin)
			}
			if w.flag != "" && !contains(cmd.Argv, w.flag) {
				t.Errorf("%s: argv %q lacks %q", c, cmd.Argv, w.flag)
			}
			if !w.stdin && !contains(cmd.Argv, pf) {
				t.Errorf("%s: argv %q does not name the prompt file", c, cmd.Argv)
			}
		}
	}
	// Exactly at the limit still fits one argument.
	cmd, err := Invocation{Client: ClaudeCode, PromptFile: writePrompt(t, boundary)}.Build()
	if err != nil || cmd.Argv[2] != boundary || cmd.Stdin != "" {
		t.Fatalf("prompt of exactly MaxArgBytes should be inline: stdin=%q err=%v", cmd.Stdin, err)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestExpandArgEscapes: "{{" is a literal "{", known placeholders are
// replaced, anything else is kept, and a value is never expanded again.
func TestExpandArgEscapes(t *testing.T) {
	values := map[string]string{"{task}": "t1", "{worktree}": "/w{task}"}
	for _, c := range []struct{ in, want string }{
		{"plain", "plain"},
		{"{task}", "t1"},
		{"{{task}", "{task}"},
		{"{{{task}", "{t1"},
		{"{{{{task}", "{{task}"},
		{"awk '{{print $1}'", "awk '{print $1}'"},
		{"awk '{print}'", "awk '{print}'"},
		{"{ a; }", "{ a; }"},
		{"{{", "{"},
		{"{", "{"},
		{"}}", "}}"},
		{"{x{task}", "{xt1"},
		{"{worktree}", "/w{task}"},
		{"{output_file}", "{output_file}"},
		{"a{}b", "a{}b"},
	} {
		if got := ExpandArg(c.in, values); got != c.want {
			t.Errorf("ExpandArg(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	inv := Invocation{Client: Custom, PromptFile: writePrompt(t, "hi"), Task: "t1", OutputFile: "/out.json",
		Command: []string{"sh", "-c", "echo {{task}={task} > {output_file}"}}
	cmd, err := inv.Build()
	if err != nil {
		t.Fatal(err)
	}
	if want := "echo {task}=t1 > /out.json"; cmd.Argv[2] != want {
		t.Errorf("got %q, want %q", cmd.Argv[2], want)
	}
}

func TestBuildCommandOverrideAndCustom(t *testing.T) {
	pf := writePrompt(t, "hi")
	inv := Invocation{Client: Custom, PromptFile: pf, Worktree: "/wt", Task: "t1",
		Command: []string{"my-agent", "--prompt={prompt_file}", "{worktree}", "task-{task}", "{unknown}"}}
	cmd, err := inv.Build()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"my-agent", "--prompt=" + pf, "/wt", "task-t1", "{unknown}"}
	if !reflect.DeepEqual(cmd.Argv, want) || cmd.Stdin != "" || cmd.Env != nil {
		t.Fatalf("got %q, want %q", cmd.Argv, want)
	}
	// A command override on a known client replaces its adapter too.
	inv.Client = ClaudeCode
	if cmd, _ := inv.Build(); cmd.Argv[0] != "my-agent" {
		t.Fatalf("override ignored: %q", cmd.Argv)
	}

	_, err = Invocation{Client: Custom, PromptFile: pf}.Build()
	wantCode(t, err, exitcode.Config)
	_, err = Invocation{Client: ClaudeCode, PromptFile: filepath.Join(t.TempDir(), "missing.md")}.Build()
	wantCode(t, err, exitcode.NotFound)
	_, err = Invocation{Client: "cursor", PromptFile: pf}.Build()
	wantCode(t, err, exitcode.Config)
	_, err = Invocation{Client: ClaudeCode}.Build()
	if err == nil {
		t.Fatal("no prompt file accepted")
	}
}

func TestShellCommand(t *testing.T) {
	pf := writePrompt(t, "short")
	got, err := Invocation{Client: ClaudeCode, PromptFile: pf, Model: "it's"}.ShellCommand()
	if err != nil {
		t.Fatal(err)
	}
	want := "IS_SANDBOX=1 claude -p --dangerously-skip-permissions --output-format stream-json --verbose --model 'it'\\''s' < " + pf
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

// A fake client on PATH receives the whole prompt: inline when short, on
// stdin when longer than one argument may be.
func TestPromptReachesClient(t *testing.T) {
	scrubEnv(t)
	bin := t.TempDir()
	out := t.TempDir()
	writeScript(t, bin, "claude", `printf '%s' "$2" > "$OUT/arg"; cat > "$OUT/stdin"; env > "$OUT/env"`)
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	t.Setenv("OUT", out)
	t.Setenv("CLAUDECODE", "1")
	t.Setenv("CLAUDE_CODE_ENTRYPOINT", "cli")
	for _, size := range []int{100, 300 << 10} {
		text := strings.Repeat("p", size)
		inv := Invocation{Client: ClaudeCode, PromptFile: writePrompt(t, text)}
		cmd, err := inv.Build()
		if err != nil {
			t.Fatal(err)
		}
		p, err := Start(context.Background(), Spec{Argv: cmd.Argv, Stdin: cmd.Stdin, Env: cmd.Env, Timeout: 20 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if res := p.Wait(); res.ExitCode != 0 {
			t.Fatalf("fake client failed: %+v", res)
		}
		arg, _ := os.ReadFile(filepath.Join(out, "arg"))
		stdin, _ := os.ReadFile(filepath.Join(out, "stdin"))
		got := string(stdin)
		if size <= MaxArgBytes {
			got = string(arg)
		}
		if got != text {
			t.Fatalf("size %d: client got %d bytes (arg %d, stdin %d)", size, len(got), len(arg), len(stdin))
		}
		env, _ := os.ReadFile(filepath.Join(out, "env"))
		if !strings.Contains(string(env), "IS_SANDBOX=1\n") || strings.Contains(string(env), "CLAUDECODE") || strings.Contains(string(env), "CLAUDE_CODE_ENTRYPOINT") {
			t.Fatalf("worker environment wrong:\n%s", env)
		}
	}
}

func TestVersion(t *testing.T) {
	scrubEnv(t)
	bin := t.TempDir()
	fake := writeScript(t, bin, "fake", `echo; echo "  fake 1.2.3  "; echo more`)
	if got := Version(context.Background(), fake); got != "fake 1.2.3" {
		t.Fatalf("Version = %q", got)
	}
	hang := writeScript(t, bin, "hang", `sleep 1000`)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if got := Version(ctx, hang); got != "" {
		t.Fatalf("Version of a hanging program = %q", got)
	}
	if got := Version(context.Background(), filepath.Join(bin, "missing")); got != "" {
		t.Fatalf("Version of a missing program = %q", got)
	}
}
