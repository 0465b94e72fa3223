// Package agents owns agent definitions: the files .agentmine/agents/<name>.toml
// that say which AI coding client a worker runs, with which model, prompt,
// file scope, Definition-of-Done commands and timeout. Definitions are
// configuration versioned with the code, so this package reads files from
// the working tree and never touches agentmine's refs.
package agents

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/bmatcuk/doublestar/v4"

	"github.com/git-agentmine/git-agentmine/duration"
	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/scope"
)

// Dir is where agent definitions live, relative to the top of the working tree.
const Dir = ".agentmine/agents"

// PromptDir is where prompt files live by default, relative to the top of the
// working tree: an agent named N without a prompt_file key uses
// PromptDir/N.md when that file exists.
const PromptDir = ".agentmine/prompts"

// Clients lists the AI coding clients an agent may name, in the order shown
// to users. "custom" runs the agent's own command.
var Clients = []string{"claude-code", "codex", "aider", "gemini", "opencode", "custom"}

// Placeholders lists the tokens a command argument may contain; they are
// replaced when a worker is launched. {output_file} is for planners and
// reviewers only: the file their answer must be written to.
var Placeholders = []string{"{prompt_file}", "{worktree}", "{task}", "{output_file}"}

// The roles an agent can have (the `role` key; "" means RoleWorker).
// Workers change code in a scoped worktree; planners split a task into
// children and reviewers judge a finished session, both in a read-only
// worktree, answering with a JSON file.
const (
	RoleWorker   = "worker"
	RolePlanner  = "planner"
	RoleReviewer = "reviewer"
)

// Roles lists the accepted roles, in documentation order.
var Roles = []string{RoleWorker, RolePlanner, RoleReviewer}

// Scope is the [scope] table of a definition: doublestar globs matched
// against repository-relative paths, with precedence exclude > write > read.
// An empty Read means everything.
type Scope struct {
	Read    []string `toml:"read" json:"read"`
	Write   []string `toml:"write" json:"write"`
	Exclude []string `toml:"exclude" json:"exclude"`
}

// Agent is one agent definition as written in its file.
type Agent struct {
	// Name is the file name without ".toml".
	Name string `toml:"-"`
	// File is the definition's path relative to the top of the working tree.
	File        string `toml:"-"`
	Description string `toml:"description"`
	// Client is one of Clients; empty means the project's default client.
	Client string `toml:"client"`
	Model  string `toml:"model"`
	// Command overrides the client's argv (required for "custom"); its
	// arguments may hold Placeholders.
	Command []string `toml:"command"`
	// PromptFile is the agent's instructions, relative to the top of the
	// working tree. Empty means PromptDir/<name>.md if it exists, else none.
	PromptFile string `toml:"prompt_file"`
	// Role is one of Roles; empty means RoleWorker.
	Role string `toml:"role"`
	// Timeout is in seconds (written as seconds or a duration such as
	// "5m"); 0 (or absent) means the project's default.
	Timeout duration.Seconds `toml:"timeout"`
	// StallTimeout is in seconds: a worker with no output and no new commit
	// for that long is stopped and its attempt fails as "stalled". 0 (or
	// absent) means no stall detection.
	StallTimeout duration.Seconds `toml:"stall_timeout"`
	DoD          []string         `toml:"dod"`
	Scope        Scope            `toml:"scope"`
	// Isolation is the [isolation] table: how strongly the worker is kept
	// to its worktree while it runs.
	Isolation Isolation `toml:"isolation"`
	// Worktree is the [worktree] table: what makes a fresh worktree one the
	// worker can build in (worktree hooks and include lists).
	Worktree Worktree `toml:"worktree"`
}

// Worktree is the [worktree] table of a definition: files brought in from
// the main checkout and setup commands run in every new worktree (and in
// the checkout the Definition of Done runs in) before the worker starts.
type Worktree struct {
	// Setup lists shell commands run one after the other in the new
	// worktree (install dependencies, generate code); the first that fails
	// is a setup failure, never an attempt.
	Setup []string `toml:"setup" json:"setup,omitempty"`
	// SetupTimeout bounds each setup command, in seconds; 0 means the
	// project's dod_timeout.
	SetupTimeout int `toml:"setup_timeout" json:"setup_timeout,omitempty"`
	// Include lists paths of the main checkout (files or directories
	// git does not track: a local env file, say) copied into the worktree.
	Include []string `toml:"include" json:"include,omitempty"`
	// Share lists such paths linked into the worktree instead of copied (a
	// dependency directory): shared with the main checkout, read-only to a
	// worker at the levels that keep it out of the main checkout.
	Share []string `toml:"share" json:"share,omitempty"`
}

// Paths returns the included and shared paths, cleaned, in order.
func (w Worktree) Paths() []string {
	var out []string
	for _, p := range append(slices.Clone(w.Include), w.Share...) {
		out = append(out, CleanInclude(p))
	}
	return out
}

// CleanInclude returns an include path as a slash-separated path relative
// to the top of the working tree, without "./" or a trailing "/".
func CleanInclude(p string) string {
	return strings.Trim(path.Clean("/"+filepath.ToSlash(strings.TrimSpace(p))), "/")
}

// IsolationLevels lists the names an agent's [isolation] level may take;
// "auto" (or no level) is the project's setting, else the strongest level
// the machine gives without setup.
var IsolationLevels = []string{"none", "landlock", "seatbelt", "bwrap", "clone", "auto"}

// Isolation is the [isolation] table of a definition.
type Isolation struct {
	// Level is one of IsolationLevels; "" means the project's setting.
	Level string `toml:"level"`
	// Fallback lets a run use the strongest weaker level when the machine
	// cannot give Level (the level used is recorded); without it that is
	// an error.
	Fallback bool `toml:"fallback"`
	// Network keeps the network at seatbelt, bwrap and clone (nil: true,
	// since clients talk to their APIs).
	Network *bool `toml:"network"`
}

// NetworkOr returns whether the worker keeps the network.
func (i Isolation) NetworkOr(def bool) bool {
	if i.Network != nil {
		return *i.Network
	}
	return def
}

// ClientOr returns the agent's client, or def when the definition names none.
func (a Agent) ClientOr(def string) string {
	if a.Client != "" {
		return a.Client
	}
	return def
}

// RoleOr returns the agent's role: RoleWorker when the definition names none.
func (a Agent) RoleOr() string {
	if a.Role == "" {
		return RoleWorker
	}
	return a.Role
}

// TimeoutOr returns the agent's timeout, or def when it sets none.
func (a Agent) TimeoutOr(def time.Duration) time.Duration {
	if a.Timeout > 0 {
		return time.Duration(a.Timeout) * time.Second
	}
	return def
}

// PromptPath returns the prompt file the agent uses, relative to the top of
// the working tree, or "" when it has none. An explicit prompt_file is
// returned even if it is missing (Validate reports that); the default
// PromptDir/<name>.md only when it exists.
func (a Agent) PromptPath(top string) string {
	if a.PromptFile != "" {
		return path.Clean(filepath.ToSlash(a.PromptFile))
	}
	def := PromptDir + "/" + a.Name + ".md"
	if fi, err := os.Stat(filepath.Join(top, filepath.FromSlash(def))); err == nil && fi.Mode().IsRegular() {
		return def
	}
	return ""
}

// ValidName reports whether s can name an agent: letters, digits, '.', '_'
// and '-', starting with a letter or digit.
func ValidName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i, c := range s {
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || !strings.ContainsRune("._-", c)) {
			return false
		}
	}
	return true
}

// Names lists the agents defined under top, sorted, without reading them.
func Names(top string) ([]string, error) {
	ents, err := os.ReadDir(filepath.Join(top, filepath.FromSlash(Dir)))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", Dir, err)
	}
	var names []string
	for _, e := range ents {
		n, ok := strings.CutSuffix(e.Name(), ".toml")
		if ok && !e.IsDir() && ValidName(n) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names, nil
}

// Load reads every definition under top. Files that cannot be read are
// returned as problems (each a *LoadError with exit code Config, naming the
// file); the others still load.
func Load(top string) (defs []Agent, problems []error, err error) {
	names, err := Names(top)
	if err != nil {
		return nil, nil, err
	}
	for _, n := range names {
		a, err := read(top, n)
		if err != nil {
			problems = append(problems, &LoadError{Name: n, File: Dir + "/" + n + ".toml", Err: err})
			continue
		}
		defs = append(defs, a)
	}
	return defs, problems, nil
}

// LoadError is a definition file that cannot be read or decoded. Its
// message already names the file (and line, for syntax errors).
type LoadError struct {
	Name string
	File string
	Err  error
}

func (e *LoadError) Error() string { return e.Err.Error() }

// Unwrap returns the underlying error (which carries exit code Config).
func (e *LoadError) Unwrap() error { return e.Err }

// ErrUnknown matches an UnknownError.
var ErrUnknown = errors.New("unknown agent")

// UnknownError says that no definition of the named agent exists. Known
// lists the agents that do (none: the project has no agents yet).
type UnknownError struct {
	Name  string
	Known []string
}

func (e *UnknownError) Error() string { return fmt.Sprintf("unknown agent %q", e.Name) }

// Is makes errors.Is(err, ErrUnknown) true.
func (e *UnknownError) Is(target error) bool { return target == ErrUnknown }

// ExitCode is exitcode.NotFound.
func (e *UnknownError) ExitCode() int { return exitcode.NotFound }

// Get reads the definition of agent name. An unknown agent is an
// UnknownError listing the known agents.
func Get(top, name string) (Agent, error) {
	names, err := Names(top)
	if err != nil {
		return Agent{}, err
	}
	if !ValidName(name) || !slices.Contains(names, name) {
		return Agent{}, &UnknownError{Name: name, Known: names}
	}
	return read(top, name)
}

// read decodes one definition strictly: TOML syntax errors name the file and
// line, unknown keys name the key and the file.
func read(top, name string) (Agent, error) {
	rel := Dir + "/" + name + ".toml"
	data, err := os.ReadFile(filepath.Join(top, filepath.FromSlash(rel)))
	if err != nil {
		return Agent{}, exitcode.New(exitcode.Config, fmt.Errorf("reading agent %s: %w", name, err), "")
	}
	return Decode(name, data)
}

// Decode parses the definition of agent name from the content of its
// file (as read from the working tree, or from a commit), as strictly as
// Get does.
func Decode(name string, data []byte) (Agent, error) {
	rel := Dir + "/" + name + ".toml"
	a := Agent{Name: name, File: rel}
	md, err := toml.Decode(string(data), &a)
	if err != nil {
		return Agent{}, tomlError(rel, err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		return Agent{}, exitcode.New(exitcode.Config, fmt.Errorf("%s: unknown key %q", rel, und[0].String()),
			"known keys: description, client, role, model, command, prompt_file, timeout, stall_timeout, dod, [scope] read/write/exclude, [isolation] level/fallback/network, [worktree] setup/setup_timeout/include/share")
	}
	a.Name, a.File = name, rel
	return a, nil
}

// tomlError turns a decoding error into a one-line Config error naming file
// and line.
func tomlError(rel string, err error) error {
	var pe toml.ParseError
	if errors.As(err, &pe) {
		msg := firstLine(pe.Message)
		if pe.LastKey != "" && (strings.HasPrefix(msg, "incompatible types") || strings.HasPrefix(msg, "invalid duration")) {
			// A duration's own decoder refused the value.
			msg = pe.LastKey + ": " + msg
		}
		return exitcode.New(exitcode.Config, fmt.Errorf("%s:%d: %s", rel, pe.Position.Line, msg), "")
	}
	return exitcode.New(exitcode.Config, fmt.Errorf("%s%s", rel, typeError(err)), "")
}

// typeError renders a decoding error as ":line: key: message" when the
// decoder says where it happened, else ": message". The pattern matching the
// decoder's type errors (which are not ParseErrors) is compiled here, on this
// error's path, not when the package initialises: every command links this
// package.
func typeError(err error) string {
	msg := firstLine(err.Error())
	typeErrRE := regexp.MustCompile(`^toml: line (\d+) \(last key "([^"]*)"\): (.*)$`)
	if m := typeErrRE.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf(":%s: %s: %s", m[1], m[2], m[3])
	}
	return ": " + strings.TrimPrefix(msg, "toml: ")
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// Problem is one thing wrong with a definition.
type Problem struct {
	// File is the definition's path relative to the top of the working tree.
	File string `json:"file"`
	// Key names the offending key ("client", "scope.write", …).
	Key string `json:"key"`
	// Message says what is wrong, in one line.
	Message string `json:"message"`
}

func (p Problem) String() string { return fmt.Sprintf("%s: %s: %s", p.File, p.Key, p.Message) }

// Validate checks a definition beyond its syntax: the client is known, a
// custom client has a command, placeholders are known, the write scope is
// explicit, every glob is valid, the prompt file exists inside the working
// tree at top, timeout is not negative and DoD commands are not empty. It
// returns every problem found, nil when there are none.
func Validate(top string, a Agent) []Problem {
	v := &validation{a: a}
	v.names()
	v.command()
	v.scope()
	v.numbers()
	v.ps = append(v.ps, validateWorktree(a)...)
	v.promptFile(top)
	return v.ps
}

// validation collects the problems Validate finds in one agent, one part
// of the definition at a time.
type validation struct {
	a  Agent
	ps []Problem
}

// add records a problem with key.
func (v *validation) add(key, format string, args ...any) {
	v.ps = append(v.ps, Problem{File: v.a.File, Key: key, Message: fmt.Sprintf(format, args...)})
}

// names checks the client and role against the known ones.
func (v *validation) names() {
	a := v.a
	if a.Client != "" && !slices.Contains(Clients, a.Client) {
		v.add("client", "unknown client %q (known: %s)", a.Client, strings.Join(Clients, ", "))
	}
	if a.Role != "" && !slices.Contains(Roles, a.Role) {
		v.add("role", "unknown role %q (known: %s)", a.Role, strings.Join(Roles, ", "))
	}
}

// command checks the argv and its placeholders.
func (v *validation) command() {
	a := v.a
	if a.Client == "custom" && len(a.Command) == 0 {
		v.add("command", "client custom needs a command (argv array)")
	}
	if len(a.Command) > 0 && strings.TrimSpace(a.Command[0]) == "" {
		v.add("command", "the program (first element) is empty")
	}
	for _, arg := range a.Command {
		for _, tok := range placeholdersIn(arg) {
			switch {
			case !slices.Contains(Placeholders, tok):
				v.add("command", "unknown placeholder %s (known: %s)", tok, strings.Join(Placeholders, " "))
			case tok == "{output_file}" && a.RoleOr() == RoleWorker:
				v.add("command", "placeholder {output_file} is only for planner and reviewer agents (set role)")
			}
		}
	}
}

// scope checks that a worker's write scope is explicit and every pattern
// is a valid glob inside the repository.
func (v *validation) scope() {
	a := v.a
	if len(a.Scope.Write) == 0 && a.RoleOr() == RoleWorker {
		v.add("scope.write", "scope write must be explicit (list the paths the agent may change)")
	}
	for _, l := range []struct {
		key  string
		pats []string
	}{{"scope.read", a.Scope.Read}, {"scope.write", a.Scope.Write}, {"scope.exclude", a.Scope.Exclude}} {
		for _, p := range l.pats {
			switch {
			case strings.TrimSpace(p) == "":
				v.add(l.key, "empty pattern")
			case !doublestar.ValidatePattern(p):
				v.add(l.key, "invalid glob %q", p)
			case hasDotDot(p):
				v.add(l.key, "pattern %q leaves the repository (..)", p)
			}
		}
	}
}

// numbers checks the isolation level, the timeouts and the DoD commands
// (in that order, after the scope, as problems have always been listed).
func (v *validation) numbers() {
	a := v.a
	if a.Isolation.Level != "" && !slices.Contains(IsolationLevels, a.Isolation.Level) {
		v.add("isolation.level", "unknown isolation level %q (known: %s)", a.Isolation.Level, strings.Join(IsolationLevels, ", "))
	}
	if a.Timeout < 0 {
		v.add("timeout", "timeout must be >= 0 seconds, got %d", a.Timeout)
	}
	if a.StallTimeout < 0 {
		v.add("stall_timeout", "stall_timeout must be >= 0 seconds, got %d", a.StallTimeout)
	}
	for i, c := range a.DoD {
		if strings.TrimSpace(c) == "" {
			v.add("dod", "command %d is empty", i+1)
		}
	}
}

// promptFile checks that the prompt file is a regular file inside the
// repository.
func (v *validation) promptFile(top string) {
	if v.a.PromptFile == "" {
		return
	}
	p := filepath.ToSlash(v.a.PromptFile)
	switch {
	case path.IsAbs(p) || filepath.IsAbs(v.a.PromptFile) || hasDotDot(p):
		v.add("prompt_file", "%q must be a path inside the repository, relative to its top", v.a.PromptFile)
	default:
		fi, err := os.Stat(filepath.Join(top, filepath.FromSlash(path.Clean(p))))
		if err != nil || !fi.Mode().IsRegular() {
			v.add("prompt_file", "prompt file %s does not exist", path.Clean(p))
		}
	}
}

// validateWorktree checks the [worktree] table: setup commands are not
// empty, the timeout is not negative, and every included or shared path is
// a path inside the repository, named once, that the scope lets the worker
// see (an excluded path is never brought in).
func validateWorktree(a Agent) []Problem {
	var ps []Problem
	add := func(key, format string, args ...any) {
		ps = append(ps, Problem{File: a.File, Key: key, Message: fmt.Sprintf(format, args...)})
	}
	w := a.Worktree
	for i, c := range w.Setup {
		if strings.TrimSpace(c) == "" {
			add("worktree.setup", "command %d is empty", i+1)
		}
	}
	if w.SetupTimeout < 0 {
		add("worktree.setup_timeout", "setup_timeout must be >= 0 seconds, got %d", w.SetupTimeout)
	}
	if l := a.Isolation.Level; len(w.Share) > 0 && (l == "bwrap" || l == "clone") && !a.Isolation.Fallback {
		add("worktree.share", "isolation level %s hides the main checkout from the worker: include (copy) instead", l)
	}
	spec := scope.Spec{Read: a.Scope.Read, Write: a.Scope.Write, Exclude: a.Scope.Exclude}
	scopeOK := spec.Validate() == nil
	seen := map[string]bool{}
	for _, l := range []struct {
		key   string
		paths []string
	}{{"worktree.include", w.Include}, {"worktree.share", w.Share}} {
		for _, raw := range l.paths {
			p := filepath.ToSlash(strings.TrimSpace(raw))
			clean := CleanInclude(raw)
			switch {
			case p == "":
				add(l.key, "empty path")
			case path.IsAbs(p) || filepath.IsAbs(raw) || hasDotDot(p):
				add(l.key, "%q must be a path inside the repository, relative to its top", raw)
			case clean == "" || clean == ".":
				add(l.key, "%q names the whole repository", raw)
			case clean == ".git" || strings.HasPrefix(clean, ".git/") || clean == ".agentmine" || strings.HasPrefix(clean, ".agentmine/"):
				add(l.key, "%q is agentmine's or git's own", raw)
			case strings.ContainsAny(clean, "*?[{"):
				add(l.key, "%q: name a file or directory, not a glob", raw)
			case seen[clean]:
				add(l.key, "%q is named twice", raw)
			case scopeOK && spec.Classify(clean) == scope.Absent:
				add(l.key, "%q is outside what the scope lets the worker see (scope.exclude or scope.read)", raw)
			}
			seen[clean] = true
		}
	}
	return ps
}

// placeholdersIn returns every {word} token in s, read as launch.ExpandArg
// reads it: "{{" is a literal "{", never the start of a token.
func placeholdersIn(s string) []string {
	var out []string
	for {
		i := strings.IndexByte(s, '{')
		if i < 0 {
			return out
		}
		if strings.HasPrefix(s[i:], "{{") {
			s = s[i+2:]
			continue
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			return out
		}
		tok := s[i : i+j+1]
		if len(tok) <= 2 || strings.ContainsAny(tok[1:len(tok)-1], "{ ") {
			s = s[i+1:] // no token starts here; one may start inside
			continue
		}
		out = append(out, tok)
		s = s[i+j+1:]
	}
}

func hasDotDot(p string) bool {
	for _, seg := range strings.Split(filepath.ToSlash(p), "/") {
		if seg == ".." {
			return true
		}
	}
	return false
}

// InvalidError says that an agent's definition has problems; its message
// names the first and how many more there are.
type InvalidError struct {
	Name     string
	Problems []Problem // at least one
}

func (e *InvalidError) Error() string {
	msg := fmt.Sprintf("agent %s is invalid: %s", e.Name, e.Problems[0])
	if len(e.Problems) > 1 {
		msg += fmt.Sprintf(" (and %d more)", len(e.Problems)-1)
	}
	return msg
}

// ExitCode is exitcode.Config.
func (e *InvalidError) ExitCode() int { return exitcode.Config }

// ValidationError summarises problems as one InvalidError, or nil when
// there are none.
func ValidationError(name string, ps []Problem) error {
	if len(ps) == 0 {
		return nil
	}
	return &InvalidError{Name: name, Problems: ps}
}
