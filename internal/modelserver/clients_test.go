package modelserver_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/git-agentmine/git-agentmine/internal/modelserver"
	"github.com/git-agentmine/git-agentmine/launch"
	"github.com/git-agentmine/git-agentmine/sessions"
)

// clientBinDir is where .ci/run installs the pinned clients (npm install in
// internal/modelserver/clients).
const clientBinDir = "clients/node_modules/.bin"

// agentmineBin is the git-agentmine binary built for these tests.
var agentmineBin string

// TestMain builds git-agentmine once: the scenarios run it as a real
// process, as a user would (the client tests live in their own package so
// that they have their own go test time budget).
func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(func() int {
		dir, err := os.MkdirTemp("", "agentmine-clients-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		agentmineBin = filepath.Join(dir, "git-agentmine")
		if !testing.Short() && os.Getenv("AGENTMINE_SKIP_REAL_CLIENTS") == "" {
			out, err := exec.Command("go", "build", "-o", agentmineBin, "../../cmd/git-agentmine").CombinedOutput()
			if err != nil {
				fmt.Fprintf(os.Stderr, "building git-agentmine: %v\n%s", err, out)
				return 1
			}
		}
		return m.Run()
	}())
}

// realClient is how a test points one real client at the scripted server.
type realClient struct {
	name   string // agent name and subtest name
	client string // the agent's client
	binary string
	model  string
	// start is how long the client takes to reach the server on a busy
	// machine; scenario timeouts are multiples of it.
	start time.Duration
	// setup writes the client's configuration under home and returns the
	// environment that points it at url with telemetry and update checks
	// off (each client's documented switches).
	setup func(t *testing.T, home, url string) []string
}

func realClients() []realClient {
	return []realClient{
		{name: "claude", client: "claude-code", binary: "claude", start: 60 * time.Second,
			setup: func(t *testing.T, home, url string) []string {
				return []string{"ANTHROPIC_BASE_URL=" + url, "ANTHROPIC_API_KEY=" + modelserver.APIKey,
					"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1",
					"DISABLE_ERROR_REPORTING=1"}
			}},
		{name: "codex", client: "codex", binary: "codex", model: "scripted-model", start: 60 * time.Second,
			setup: func(t *testing.T, home, url string) []string {
				dir := filepath.Join(home, ".codex")
				writeFile(t, filepath.Join(dir, "config.toml"), fmt.Sprintf(`model_provider = "local"
check_for_update_on_startup = false

[model_providers.local]
name = "local"
base_url = "%s/v1"
wire_api = "responses"
env_key = "OPENAI_API_KEY"
`, url))
				return []string{"CODEX_HOME=" + dir, "OPENAI_API_KEY=" + modelserver.APIKey}
			}},
		{name: "gemini", client: "gemini", binary: "gemini", model: "scripted-model", start: 90 * time.Second,
			setup: func(t *testing.T, home, url string) []string {
				writeFile(t, filepath.Join(home, ".gemini", "settings.json"), `{
  "security": {"auth": {"selectedType": "gemini-api-key"}},
  "privacy": {"usageStatisticsEnabled": false},
  "telemetry": {"enabled": false},
  "general": {"disableAutoUpdate": true}
}
`)
				return []string{"GEMINI_API_KEY=" + modelserver.APIKey, "GOOGLE_GEMINI_BASE_URL=" + url}
			}},
		{name: "opencode", client: "opencode", binary: "opencode", model: "local/m", start: 120 * time.Second,
			setup: func(t *testing.T, home, url string) []string {
				cfg := filepath.Join(home, "opencode.json")
				writeFile(t, cfg, fmt.Sprintf(`{
  "provider": {"local": {"npm": "@ai-sdk/openai-compatible", "name": "local",
    "options": {"baseURL": "%s/v1", "apiKey": "%s", "includeUsage": true},
    "models": {"m": {"name": "m"}}}},
  "model": "local/m",
  "autoupdate": false,
  "share": "disabled"
}
`, url, modelserver.APIKey))
				return []string{"OPENCODE_CONFIG=" + cfg, "OPENCODE_DISABLE_MODELS_FETCH=1", "OPENCODE_DISABLE_AUTOUPDATE=1"}
			}},
	}
}

// clientScenario is one script and what the run must end as.
type clientScenario struct {
	script modelserver.Script
	check  func(t *testing.T, r *clientRun)
}

func clientScenarios() []clientScenario {
	return []clientScenario{
		{modelserver.Edit, checkEdit},
		{modelserver.OutOfScope, checkOutOfScope},
		{modelserver.Unauthorized, checkUnauthorized},
		{modelserver.Flaky, checkRecovered},
		{modelserver.RateLimited, checkRateLimited},
		{modelserver.Cut, checkRecovered},
		{modelserver.Endless, checkEndless},
	}
}

// realClientDirs skips t under -short or AGENTMINE_SKIP_REAL_CLIENTS and
// returns the directories of the agentmine binary and of the pinned real
// clients.
func realClientDirs(t *testing.T) (bin, clients string) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the real AI clients (minutes)")
	}
	if os.Getenv("AGENTMINE_SKIP_REAL_CLIENTS") != "" {
		t.Skip("AGENTMINE_SKIP_REAL_CLIENTS is set")
	}
	bin = filepath.Dir(agentmineBin)
	var err error
	clients, err = filepath.Abs(clientBinDir)
	if err != nil {
		t.Fatal(err)
	}
	return bin, clients
}

// TestRealClientsAgainstModelServer runs `worker run --exec` with each
// pinned real client against the scripted model server, for every script.
// A client that is not installed fails the test (CI installs them); set
// AGENTMINE_SKIP_REAL_CLIENTS=1 to skip them on a machine without npm.
func TestRealClientsAgainstModelServer(t *testing.T) {
	bin, clients := realClientDirs(t)
	only := os.Getenv("AGENTMINE_REAL_CLIENTS") // e.g. "claude,codex" while working on one adapter
	// The subtests run at once from goroutines (not t.Parallel, which
	// -parallel would cap at the core count): the clients mostly wait on
	// the server and on each other's startup.
	sem := make(chan struct{}, 4)
	var wg sync.WaitGroup
	for _, c := range realClients() {
		if only != "" && !strings.Contains(","+only+",", ","+c.name+",") {
			continue
		}
		if _, err := os.Stat(filepath.Join(clients, c.binary)); err != nil {
			t.Errorf("%s is not installed in %s: run `npm install` there (.ci/run does): %v", c.binary, clients, err)
			continue
		}
		for _, sc := range clientScenarios() {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sem <- struct{}{}
				defer func() { <-sem }()
				t.Run(c.name+"/"+string(sc.script), func(t *testing.T) {
					r := startClientRun(t, c, sc.script, bin, clients, "none")
					sc.check(t, r)
				})
			}()
		}
	}
	wg.Wait()
}

// TestRealClientsIsolated: Claude Code and Codex complete an in-scope edit
// (the Edit script, judged as TestRealClientsAgainstModelServer judges
// it) with the worker restricted by Landlock (the default where the kernel
// has it), in a bubblewrap sandbox and in a partial clone of its own, and
// the session records the level. The clients reach the scripted
// server on loopback, so the sandbox keeps the network (the default).
func TestRealClientsIsolated(t *testing.T) {
	bin, clients := realClientDirs(t)
	var wg sync.WaitGroup
	for _, c := range realClients() {
		if c.name != "claude" && c.name != "codex" {
			continue
		}
		if _, err := os.Stat(filepath.Join(clients, c.binary)); err != nil {
			t.Errorf("%s is not installed in %s: run `npm install` there (.ci/run does): %v", c.binary, clients, err)
			continue
		}
		// A client installed under /tmp or HOME (…-home: installed into
		// the run's HOME the way its installer does, Codex configured
		// through CODEX_HOME=~/.codex-alt) runs at every level: bwrap and
		// clone show its program and package tree read-only, and every
		// level copies what CODEX_HOME names into the private HOME.
		for _, level := range []string{"landlock", "bwrap", "clone", "landlock-home", "bwrap-home", "clone-home"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				t.Run(c.name+"/"+level, func(t *testing.T) {
					level, underHome := strings.CutSuffix(level, "-home")
					r := startClientRunFrom(t, c, modelserver.Edit, bin, clients, level, underHome)
					checkEdit(t, r)
					var shown struct {
						Session struct {
							Isolation sessions.Isolation `json:"isolation"`
						} `json:"latest_session"`
					}
					out := r.am("task", "show", r.task, "--json")
					if err := json.Unmarshal([]byte(out), &shown); err != nil || shown.Session.Isolation.Level != level {
						t.Fatalf("task show: isolation %+v (%v), want level %s\n%s", shown.Session.Isolation, err, level, out)
					}
				})
			}()
		}
	}
	wg.Wait()
}

// clientRun is one scenario: a repository with a task and an agent for the
// client, and the scripted server it talks to.
type clientRun struct {
	t       *testing.T
	c       realClient
	repo    string
	env     []string
	srv     *modelserver.Server
	task    string
	timeout time.Duration
	// What `worker run --exec --json` printed and how it exited.
	exit int
	run  struct {
		Status  string           `json:"status"`
		Branch  string           `json:"branch"`
		Outcome sessions.Outcome `json:"outcome"`
	}
	stderr string
	// live is the client's line seen in the session log while it ran
	// (Edit script only).
	live string
}

// newClientRepo makes a repository with agentmine initialised, and the
// environment its clients run in: a HOME of their own (returned), with the
// clients and this git-agentmine in PATH and the workers' isolation at
// level. The caller adds the agents, the tasks and the clients' setup.
func newClientRepo(t *testing.T, bin, clients, level string) (*clientRun, string) {
	t.Helper()
	root := t.TempDir()
	home := filepath.Join(root, "home")
	repo := filepath.Join(root, "repo")
	r := &clientRun{t: t, repo: repo}
	r.env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
		"XDG_DATA_HOME="+filepath.Join(home, ".local", "share"), "XDG_CACHE_HOME="+filepath.Join(home, ".cache"),
		"GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=Ada Author", "GIT_AUTHOR_EMAIL=ada@example.com",
		"GIT_COMMITTER_NAME=Ada Author", "GIT_COMMITTER_EMAIL=ada@example.com", "NO_COLOR=1", "TZ=UTC",
		"PATH="+bin+string(os.PathListSeparator)+clients+string(os.PathListSeparator)+os.Getenv("PATH"),
		"AGENTMINE_ISOLATION="+level)
	for _, k := range []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "CLAUDECODE",
		"CLAUDE_CODE_ENTRYPOINT", "CODEX_HOME", "AGENTMINE_TIMEOUT"} {
		r.env = append(r.env, k+"=")
	}
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	r.git("init", "-q", "-b", "main", repo)
	writeFile(t, filepath.Join(repo, "README.md"), "# demo\n")
	r.git("-C", repo, "add", "-A")
	r.git("-C", repo, "commit", "-q", "-m", "fixture")
	r.am("init")
	return r, home
}

// startClientRun prepares and runs one scenario with the worker at the
// isolation level given (the project's setting, AGENTMINE_ISOLATION).
func startClientRun(t *testing.T, c realClient, script modelserver.Script, bin, clients, level string) *clientRun {
	t.Helper()
	return startClientRunFrom(t, c, script, bin, clients, level, false)
}

// startClientRunFrom is startClientRun; with underHome the client runs
// from a copy installed under the run's HOME (installUnderHome), found
// through PATH there, and Codex reads its configuration from CODEX_HOME
// in HOME instead of ~/.codex.
func startClientRunFrom(t *testing.T, c realClient, script modelserver.Script, bin, clients, level string, underHome bool) *clientRun {
	t.Helper()
	r, home := newClientRepo(t, bin, clients, level)
	if underHome {
		r.env = append(r.env, "PATH="+bin+string(os.PathListSeparator)+installUnderHome(t, c, clients, home)+string(os.PathListSeparator)+os.Getenv("PATH"))
	}
	r.c = c
	repo := r.repo
	model := ""
	if c.model != "" {
		model = fmt.Sprintf("model = %q\n", c.model)
	}
	writeFile(t, filepath.Join(repo, ".agentmine", "agents", c.name+".toml"), fmt.Sprintf(`client = %q
%sdod = ["test -s notes/hello.txt"]
[scope]
write = ["notes/**"]
`, c.client, model))
	var added struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal([]byte(r.am("task", "add", "Write hello.txt and commit it", "--json")), &added); err != nil || added.ID == "" {
		t.Fatalf("task add: %v", err)
	}
	r.task = added.ID
	wt := filepath.Join(repo, ".agentmine", "worktrees", "task-"+added.ID[:8])
	// The file is in a directory of the scope: Claude Code writes through a
	// temporary file next to the target, which an exact-file scope such as
	// write = ["hello.txt"] would flag (see the report of issue #11).
	// The edit's last answer is held until the client's tool call (which
	// carries the file's content) is seen in the session log.
	var hold chan struct{}
	if script == modelserver.Edit {
		hold = make(chan struct{})
	}
	srv, err := modelserver.Start(modelserver.Options{Script: script, Dir: wt, File: "notes/hello.txt", Hold: hold})
	if err != nil {
		t.Fatal(err)
	}
	r.srv = srv
	t.Cleanup(func() {
		srv.Close()
		if t.Failed() {
			t.Logf("model server log:\n%s", srv.Log())
			if logs, err := r.cmd("git-agentmine", "-C", repo, "worker", "logs", added.ID).CombinedOutput(); err == nil {
				t.Logf("worker logs:\n%s", tailText(string(logs), 6000))
			}
		}
	})
	r.env = append(r.env, c.setup(t, home, srv.URL())...)
	if alt := filepath.Join(home, ".codex-alt"); underHome && c.name == "codex" {
		if err := os.Rename(filepath.Join(home, ".codex"), alt); err != nil {
			t.Fatal(err)
		}
		r.env = append(r.env, "CODEX_HOME="+alt)
	}

	// Generous: the clients start slowly on a loaded machine. The endless
	// turn must reach the server before its timeout to prove anything.
	r.timeout = 3 * c.start
	if script == modelserver.Endless {
		r.timeout = 2 * c.start
	}
	cmd := r.cmd("git-agentmine", "-C", repo, "worker", "run", added.ID, "--agent", c.name, "--exec", "--json",
		"--timeout", fmt.Sprint(int(r.timeout/time.Second)))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	watched := make(chan string, 1)
	go func() { watched <- watchLiveLine(repo, modelserver.DefaultContent, exited, hold) }()
	err = cmd.Wait()
	close(exited)
	r.live = <-watched
	r.stderr = stderr.String()
	if ee, ok := err.(*exec.ExitError); ok {
		r.exit = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(stdout.Bytes(), &r.run); err != nil {
		t.Fatalf("worker run --json printed no result (exit %d): %v\nstdout: %s\nstderr: %s", r.exit, err, stdout.String(), r.stderr)
	}
	t.Logf("%s %s: exit %d, status %s, reason %q, usage %+v; server answered %d, served %v",
		c.name, script, r.exit, r.run.Status, r.run.Outcome.Reason, r.run.Outcome.Usage, srv.Answers(), srv.Served())
	if r.live != "" {
		t.Logf("seen in the session log while the client ran: %.200s", r.live)
	}
	if hold != nil && r.live == "" {
		t.Fatalf("the client's tool call never reached the session log while it ran (its last answer was held until it did): "+
			"the log gets the client's output only at exit (worker run exit %d, reason %q)", r.exit, r.run.Outcome.Reason)
	}
	return r
}

// watchLiveLine polls the repository's session logs until a line of the
// client (not one of agentmine's notes) holds want, then closes release
// (when not nil) and returns the line; it returns "" if the worker exited
// first.
func watchLiveLine(repo, want string, exited <-chan struct{}, release chan<- struct{}) string {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		logs, _ := filepath.Glob(filepath.Join(repo, ".git", "agentmine", "logs", "*.log"))
		for _, l := range logs {
			data, _ := os.ReadFile(l)
			for _, line := range strings.Split(string(data), "\n") {
				if strings.Contains(line, want) && !strings.HasPrefix(line, launch.NotePrefix) {
					if release != nil {
						close(release)
					}
					return line
				}
			}
		}
		select {
		case <-exited:
			return ""
		case <-tick.C:
		}
	}
}

// installUnderHome installs the pinned client c under home the way its
// own installer puts it there, as hard links to the pinned files, and
// returns the directory PATH must name: Claude Code the native
// installer's way (~/.local/bin/claude linking to a versioned file in
// ~/.local/share/claude), the others npm's global way (~/.npm-global/bin
// linking into lib/node_modules, which holds the package and its
// dependencies).
func installUnderHome(t *testing.T, c realClient, clients, home string) string {
	t.Helper()
	real, err := filepath.EvalSymlinks(filepath.Join(clients, c.binary))
	if err != nil {
		t.Fatal(err)
	}
	link := func(old, new string) {
		if err := os.MkdirAll(filepath.Dir(new), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Link(old, new); err != nil {
			t.Skipf("cannot hard-link the pinned client into HOME (%v): run with the checkout and the temp dir on one file system", err)
		}
	}
	if c.name == "claude" {
		versions := filepath.Join(home, ".local", "share", "claude", "versions")
		link(real, filepath.Join(versions, "pinned"))
		binDir := filepath.Join(home, ".local", "bin")
		if err := os.MkdirAll(binDir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("../share/claude/versions/pinned", filepath.Join(binDir, "claude")); err != nil {
			t.Fatal(err)
		}
		return binDir
	}
	modules, err := filepath.EvalSymlinks(filepath.Dir(clients)) // node_modules
	if err != nil {
		t.Fatal(err)
	}
	prefix := filepath.Join(home, ".npm-global")
	lib := filepath.Join(prefix, "lib", "node_modules")
	err = filepath.WalkDir(modules, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(modules, path)
		target := filepath.Join(lib, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case d.Type()&os.ModeSymlink != 0:
			dest, err := os.Readlink(path)
			if err != nil {
				return err
			}
			return os.Symlink(dest, target)
		case d.Type().IsRegular():
			link(path, target)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(modules, real)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(prefix, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join("..", "lib", "node_modules", rel), filepath.Join(prefix, "bin", c.binary)); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(prefix, "bin")
}

func (r *clientRun) cmd(name string, args ...string) *exec.Cmd {
	if name == "git-agentmine" {
		// exec.Command looks names up in this process's PATH, not in Env's.
		name = agentmineBin
	}
	cmd := exec.Command(name, args...)
	cmd.Env = r.env
	return cmd
}

func (r *clientRun) git(args ...string) string {
	r.t.Helper()
	out, err := r.cmd("git", args...).CombinedOutput()
	if err != nil {
		r.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// am runs git-agentmine in the repository and returns its stdout.
func (r *clientRun) am(args ...string) string {
	r.t.Helper()
	cmd := r.cmd("git-agentmine", append([]string{"-C", r.repo}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		r.t.Fatalf("git agentmine %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.String())
	}
	return string(out)
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func tailText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// wantStatus checks the run's verdict and what `task show --json` derives.
func (r *clientRun) wantStatus(status string) {
	r.t.Helper()
	if r.run.Status != status {
		r.t.Fatalf("worker run: status %q, want %q (exit %d, reason %q)\nstderr: %s", r.run.Status, status, r.exit, r.run.Outcome.Reason, tailText(r.stderr, 3000))
	}
	var shown struct {
		Status string `json:"status"`
	}
	if err := json.Unmarshal([]byte(r.am("task", "show", r.task, "--json")), &shown); err != nil || shown.Status != status {
		r.t.Fatalf("task show: status %q (%v), want %q", shown.Status, err, status)
	}
}

// wantUsage checks that exactly the server's numbers were recorded, and
// that task show and status show them.
func (r *clientRun) wantUsage() {
	r.t.Helper()
	served := r.srv.Served()
	u := r.run.Outcome.Usage
	if u == nil {
		r.t.Fatalf("no usage recorded; the server served %v", served)
	}
	if u.InputTokens+u.CacheReadTokens != served.Input || u.OutputTokens != served.Output {
		r.t.Fatalf("usage recorded %+v, the server served %v", *u, served)
	}
	want := fmt.Sprintf("%d in, %d out", u.InputTokens, u.OutputTokens)
	if show := r.am("task", "show", r.task); !strings.Contains(show, want) {
		r.t.Errorf("task show does not show the usage %q:\n%s", want, show)
	}
	if board := r.am("status"); !strings.Contains(board, want) {
		r.t.Errorf("status does not show the usage %q:\n%s", want, board)
	}
}

// wantReason checks the failure reason a person sees: one line of the
// client's words, no escape codes, no JSON blob, short, and the same in
// task show and status.
func (r *clientRun) wantReason(words ...string) {
	r.t.Helper()
	reason := r.run.Outcome.Reason
	switch {
	case reason == "":
		r.t.Fatalf("no reason recorded")
	case strings.ContainsAny(reason, "\x1b\n"):
		r.t.Fatalf("reason has an escape code or a newline: %q", reason)
	case strings.Contains(reason, `{"`):
		r.t.Fatalf("reason holds a raw JSON blob: %q", reason)
	case len(reason) > 200:
		r.t.Fatalf("reason is %d bytes: %q", len(reason), reason)
	case strings.Contains(reason, "Write hello.txt and commit it"):
		r.t.Fatalf("reason echoes the prompt: %q", reason)
	}
	lower := strings.ToLower(reason)
	found := len(words) == 0
	for _, w := range words {
		if strings.Contains(lower, w) {
			found = true
		}
	}
	if !found {
		r.t.Fatalf("reason %q names none of %q", reason, words)
	}
	for _, args := range [][]string{{"task", "show", r.task}, {"status"}} {
		out := r.am(args...)
		if strings.Contains(out, "\x1b") {
			r.t.Errorf("%s prints escape codes:\n%q", args, out)
		}
		first := reason
		if len(first) > 60 {
			first = first[:60]
		}
		if !strings.Contains(out, first) {
			r.t.Errorf("%s does not show the reason %q:\n%s", args, reason, out)
		}
	}
}

func checkEdit(t *testing.T, r *clientRun) {
	r.wantStatus("review")
	if r.exit != 0 {
		t.Fatalf("worker run exited %d", r.exit)
	}
	if r.run.Outcome.Commits < 1 {
		t.Fatalf("no commit on the branch: %+v", r.run.Outcome)
	}
	if subject := r.git("-C", r.repo, "log", "-1", "--format=%s", r.run.Outcome.Tip); subject != "Add notes/hello.txt" {
		t.Fatalf("branch tip is %q, not the client's commit", subject)
	}
	r.wantUsage()
	r.am("merge", r.task)
	if got := r.git("-C", r.repo, "show", "main:notes/hello.txt"); got != "hello from the scripted model" {
		t.Fatalf("main:notes/hello.txt = %q after merge", got)
	}
}

func checkOutOfScope(t *testing.T, r *clientRun) {
	r.wantStatus("dod_failed")
	r.wantReason("outside/secret.txt")
}

func checkUnauthorized(t *testing.T, r *clientRun) {
	r.wantStatus("failed")
	r.wantReason("key", "401", "auth")
}

// checkRecovered accepts the client's retry (review with the commit) or a
// failure that says why.
func checkRecovered(t *testing.T, r *clientRun) {
	switch r.run.Status {
	case "review":
		if r.run.Outcome.Commits < 1 {
			t.Fatalf("review without a commit: %+v", r.run.Outcome)
		}
	case "failed":
		if r.run.Outcome.TimedOut {
			t.Fatalf("the client neither recovered nor gave up before the timeout")
		}
		r.wantReason()
	default:
		t.Fatalf("status %q, want review or failed (reason %q)", r.run.Status, r.run.Outcome.Reason)
	}
}

// checkRateLimited: a client whose every request is refused with 429
// gives up, and its session ends rate limited (not an attempt), with the
// client's words.
func checkRateLimited(t *testing.T, r *clientRun) {
	if r.run.Status != "rate_limited" || r.run.Outcome.RateLimit == nil || !strings.HasPrefix(r.run.Outcome.Reason, "rate limited: ") ||
		strings.Contains(r.run.Outcome.Reason, "\n") {
		t.Fatalf("worker run: status %q, outcome %+v: want rate_limited, its reason one line of the client's words", r.run.Status, r.run.Outcome)
	}
	var shown struct {
		Status string `json:"status"`
		Reason string `json:"status_reason"`
	}
	if err := json.Unmarshal([]byte(r.am("task", "show", r.task, "--json")), &shown); err != nil || shown.Status != "open" ||
		!strings.Contains(shown.Reason, "not an attempt") {
		t.Fatalf("task show: status %q (%q, %v), want open: not an attempt", shown.Status, shown.Reason, err)
	}
}

func checkEndless(t *testing.T, r *clientRun) {
	if r.exit != 124 || !r.run.Outcome.TimedOut {
		t.Fatalf("worker run exited %d (timed out %v), want 124", r.exit, r.run.Outcome.TimedOut)
	}
	r.wantStatus("failed")
	started := false
	for _, e := range r.srv.Entries() {
		if e.Note == "endless answer" {
			started = true
		}
	}
	if !started {
		t.Fatalf("the client never reached the endless answer within %s", r.timeout)
	}
}
