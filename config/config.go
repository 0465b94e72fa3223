// Package config owns the project settings of git agentmine and where each
// value comes from. Precedence, highest first: command-line flags, AGENTMINE_*
// environment variables, `git config agentmine.*`, .agentmine/config.toml,
// built-in defaults (docs/config.md). Loading never writes anything.
package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/git-agentmine/git-agentmine/agents"
	"github.com/git-agentmine/git-agentmine/duration"
	"github.com/git-agentmine/git-agentmine/exitcode"
)

// File is the project settings file, relative to the top of the working tree.
const File = ".agentmine/config.toml"

// Source says where a setting's value came from.
type Source string

// The sources, in precedence order (highest first).
const (
	FromFlag      Source = "flag"
	FromEnv       Source = "env"
	FromGitConfig Source = "git config"
	FromFile      Source = "config.toml"
	// FromDetected is a default computed from the repository (the current
	// branch, an existing "origin" remote).
	FromDetected Source = "detected"
	FromDefault  Source = "default"
)

// Setting describes one key: its name in config.toml (and in flags maps),
// its environment variable and its git config key.
type Setting struct {
	Key    string // config.toml key, e.g. "worktree_root"
	Env    string // e.g. "AGENTMINE_WORKTREE_ROOT"
	Git    string // e.g. "agentmine.worktreeRoot"
	Help   string
	Detail string // default, in words
}

// Settings lists every setting in display order.
var Settings = []Setting{
	{"base", "AGENTMINE_BASE", "agentmine.base", "branch that task branches start from and merge into", "the branch recorded by init, else the main worktree's current branch"},
	{"worktree_root", "AGENTMINE_WORKTREE_ROOT", "agentmine.worktreeRoot", "directory holding worker worktrees (relative to the top of the repository, or absolute)", ".agentmine/worktrees"},
	{"timeout", "AGENTMINE_TIMEOUT", "agentmine.timeout", "worker timeout, for agents that set none (seconds, or a duration such as 5m)", "300"},
	{"dod_timeout", "AGENTMINE_DOD_TIMEOUT", "agentmine.dodTimeout", "timeout of each Definition-of-Done command (seconds, or a duration such as 10m)", "600"},
	{"grace", "AGENTMINE_GRACE", "agentmine.grace", "time between SIGTERM and SIGKILL when a worker is stopped (seconds, or a duration)", "10"},
	{"default_agent", "AGENTMINE_DEFAULT_AGENT", "agentmine.defaultAgent", "agent used when neither --agent nor the task's assignee names one", "coder"},
	{"client", "AGENTMINE_CLIENT", "agentmine.client", "client for agents that name none", "claude-code"},
	{"remote", "AGENTMINE_REMOTE", "agentmine.remote", "remote used by sync", `"origin" if it exists, else none`},
	{"isolation", "AGENTMINE_ISOLATION", "agentmine.isolation", "isolation level of workers whose agent sets none: none, landlock, seatbelt, bwrap, clone or auto", "auto (seatbelt on macOS, landlock where the kernel has it, else none)"},
	{"max_workers", "AGENTMINE_MAX_WORKERS", "agentmine.maxWorkers", "workers `run` keeps running at once when --parallel is not given", "2"},
	{"replan_after", "AGENTMINE_REPLAN_AFTER", "agentmine.replanAfter", "failed attempts of a task in a row after which `run` asks the planner before the next one, when --replan-after is not given (0: never)", "2"},
	{"memory_categories", "AGENTMINE_MEMORY_CATEGORIES", "agentmine.memoryCategories", "memory categories a memory may take (comma-separated); others only when asked for, or once a memory uses them", DefaultMemoryCategories},
}

// Defaults of the settings that have fixed ones.
const (
	DefaultWorktreeRoot = ".agentmine/worktrees"
	DefaultTimeout      = 300 * time.Second
	DefaultDoDTimeout   = 600 * time.Second
	DefaultGrace        = 10 * time.Second
	DefaultAgent        = "coder"
	DefaultClient       = "claude-code"
	DefaultIsolation    = "auto"
	DefaultMaxWorkers   = 2
	DefaultReplanAfter  = 2
	// DefaultMemoryCategories is the memory_categories setting's default.
	DefaultMemoryCategories = "architecture,tooling,convention,rule,domain,decision"
)

// Config is the effective project settings.
type Config struct {
	// Base is a branch name (or any ref) task branches start from; "" when
	// HEAD is detached and nothing is configured.
	Base string
	// WorktreeRoot is as configured: relative to the top of the working
	// tree, or absolute. See WorktreeDir.
	WorktreeRoot string
	Timeout      time.Duration
	DoDTimeout   time.Duration
	Grace        time.Duration
	DefaultAgent string
	Client       string
	// Remote is the sync remote, "" when there is none.
	Remote string
	// Isolation is the isolation level of workers whose agent names none
	// (one of agents.IsolationLevels).
	Isolation string
	// MaxWorkers is how many workers `run` keeps running at once by
	// default (at least 1).
	MaxWorkers int
	// ReplanAfter is how many failed attempts of a task in a row make `run`
	// ask the planner before the next one (0: never).
	ReplanAfter int
	// MemoryCategories are the memory categories a memory may take
	// without starting a new one (lower case, each one word).
	MemoryCategories []string
	// Sources maps each setting key to where its value came from.
	Sources map[string]Source
	// Origins maps each setting key to a precise origin for messages, e.g.
	// "AGENTMINE_TIMEOUT" or ".agentmine/config.toml".
	Origins map[string]string
}

// WorktreeDir returns the absolute worktree root for a repository whose
// working tree top is top.
func (c Config) WorktreeDir(top string) string {
	if filepath.IsAbs(c.WorktreeRoot) {
		return filepath.Clean(c.WorktreeRoot)
	}
	return filepath.Join(top, filepath.FromSlash(c.WorktreeRoot))
}

// Value returns the setting key rendered as text (durations in whole seconds).
func (c Config) Value(key string) string {
	switch key {
	case "base":
		return c.Base
	case "worktree_root":
		return c.WorktreeRoot
	case "timeout":
		return strconv.Itoa(int(c.Timeout / time.Second))
	case "dod_timeout":
		return strconv.Itoa(int(c.DoDTimeout / time.Second))
	case "grace":
		return strconv.Itoa(int(c.Grace / time.Second))
	case "default_agent":
		return c.DefaultAgent
	case "client":
		return c.Client
	case "remote":
		return c.Remote
	case "isolation":
		return c.Isolation
	case "max_workers":
		return strconv.Itoa(c.MaxWorkers)
	case "replan_after":
		return strconv.Itoa(c.ReplanAfter)
	case "memory_categories":
		return strings.Join(c.MemoryCategories, ",")
	}
	return ""
}

// Options is what Load reads from.
type Options struct {
	// Top is the top of the working tree holding .agentmine/config.toml.
	Top string
	// CommonDir is the repository's common git dir; its HEAD names the main
	// worktree's current branch (the fallback base).
	CommonDir string
	// Flags holds values given on the command line, by setting key; empty
	// values are ignored.
	Flags map[string]string
	// Getenv reads the environment (nil: none).
	Getenv func(string) string
	// GitConfig reads git's configuration by lower-case key (nil: none).
	GitConfig func(key string) (string, bool)
}

// fileConfig is config.toml. Pointers tell "absent" from zero.
type fileConfig struct {
	Base         *string       `toml:"base"`
	WorktreeRoot *string       `toml:"worktree_root"`
	Timeout      *durationText `toml:"timeout"`
	DoDTimeout   *durationText `toml:"dod_timeout"`
	Grace        *durationText `toml:"grace"`
	DefaultAgent *string       `toml:"default_agent"`
	Client       *string       `toml:"client"`
	Remote       *string       `toml:"remote"`
	Isolation    *string       `toml:"isolation"`
	MaxWorkers   *int64        `toml:"max_workers"`
	ReplanAfter  *int64        `toml:"replan_after"`
	// MemoryCategories is an array of names or one comma-separated string.
	MemoryCategories *listText `toml:"memory_categories"`
}

func (f fileConfig) get(key string) (string, bool) {
	s := func(p *string) (string, bool) {
		if p == nil {
			return "", false
		}
		return *p, true
	}
	n := func(p *int64) (string, bool) {
		if p == nil {
			return "", false
		}
		return strconv.FormatInt(*p, 10), true
	}
	d := func(p *durationText) (string, bool) {
		if p == nil {
			return "", false
		}
		return string(*p), true
	}
	switch key {
	case "base":
		return s(f.Base)
	case "worktree_root":
		return s(f.WorktreeRoot)
	case "timeout":
		return d(f.Timeout)
	case "dod_timeout":
		return d(f.DoDTimeout)
	case "grace":
		return d(f.Grace)
	case "default_agent":
		return s(f.DefaultAgent)
	case "client":
		return s(f.Client)
	case "remote":
		return s(f.Remote)
	case "isolation":
		return s(f.Isolation)
	case "max_workers":
		return n(f.MaxWorkers)
	case "replan_after":
		return n(f.ReplanAfter)
	case "memory_categories":
		if f.MemoryCategories == nil {
			return "", false
		}
		return string(*f.MemoryCategories), true
	}
	return "", false
}

// durationText is a duration as written in config.toml: an integer
// (seconds) or a string, kept as text for set to check like any other
// source's value.
type durationText string

// UnmarshalTOML keeps an integer or a string.
func (d *durationText) UnmarshalTOML(v any) error {
	switch x := v.(type) {
	case int64:
		*d = durationText(strconv.FormatInt(x, 10))
	case string:
		*d = durationText(x)
	default:
		return fmt.Errorf("incompatible types: TOML value %v (%T) is not a duration: want %s", v, v, duration.Form)
	}
	return nil
}

// listText is a list as written in config.toml: an array of strings or
// one comma-separated string, kept as comma-separated text.
type listText string

// UnmarshalTOML keeps a string or an array of strings.
func (l *listText) UnmarshalTOML(v any) error {
	switch x := v.(type) {
	case string:
		*l = listText(x)
		return nil
	case []any:
		parts := make([]string, 0, len(x))
		for _, e := range x {
			s, ok := e.(string)
			if !ok {
				return fmt.Errorf("incompatible types: TOML value %v (%T) in a list of names", e, e)
			}
			parts = append(parts, s)
		}
		*l = listText(strings.Join(parts, ","))
		return nil
	}
	return fmt.Errorf("incompatible types: TOML value %v (%T) is not a list of names", v, v)
}

// ReadFile reads and strictly decodes config.toml under top: a syntax error
// names the file and line, an unknown key names the key and the file. A
// missing file is no error (exists is false).
func ReadFile(top string) (values map[string]string, exists bool, err error) {
	data, err := os.ReadFile(filepath.Join(top, filepath.FromSlash(File)))
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]string{}, false, nil
	}
	if err != nil {
		return nil, false, exitcode.New(exitcode.Config, fmt.Errorf("reading %s: %w", File, err), "")
	}
	var f fileConfig
	md, err := toml.Decode(string(data), &f)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			msg := firstLine(pe.Message)
			if strings.HasPrefix(msg, "incompatible types") && pe.LastKey != "" {
				// A duration's own decoder refused the value's type.
				msg = pe.LastKey + ": " + msg
			}
			return nil, true, exitcode.New(exitcode.Config, fmt.Errorf("%s:%d: %s", File, pe.Position.Line, msg), "")
		}
		return nil, true, exitcode.New(exitcode.Config, fmt.Errorf("%s%s", File, typeError(err)), "")
	}
	if und := md.Undecoded(); len(und) > 0 {
		return nil, true, exitcode.New(exitcode.Config, fmt.Errorf("%s: unknown key %q", File, und[0].String()), "known keys: "+strings.Join(keys(), ", "))
	}
	values = map[string]string{}
	for _, s := range Settings {
		if v, ok := f.get(s.Key); ok {
			values[s.Key] = v
		}
	}
	return values, true, nil
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

func keys() []string {
	var out []string
	for _, s := range Settings {
		out = append(out, s.Key)
	}
	return out
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// Load computes the effective settings. Invalid values are Config errors
// naming where the value came from; unknown flag keys are Usage errors.
func Load(o Options) (Config, error) {
	file, _, err := ReadFile(o.Top)
	if err != nil {
		return Config{}, err
	}
	for k := range o.Flags {
		if !slices.Contains(keys(), k) {
			return Config{}, exitcode.New(exitcode.Usage, fmt.Errorf("unknown setting %q", k), "known settings: "+strings.Join(keys(), ", "))
		}
	}
	c := Config{Sources: map[string]Source{}, Origins: map[string]string{}}
	for _, s := range Settings {
		raw, src, origin := lookup(o, file, s)
		if src == "" {
			raw, src, origin = fallback(o, s.Key)
		}
		if err := c.set(s.Key, raw); err != nil {
			return Config{}, exitcode.New(exitcode.Config, fmt.Errorf("%s: %w", origin, err), "")
		}
		c.Sources[s.Key] = src
		c.Origins[s.Key] = origin
	}
	return c, nil
}

// lookup finds a setting's value in the explicit sources, highest first.
func lookup(o Options, file map[string]string, s Setting) (raw string, src Source, origin string) {
	if v := o.Flags[s.Key]; v != "" {
		return v, FromFlag, "--" + strings.ReplaceAll(s.Key, "_", "-")
	}
	if o.Getenv != nil {
		if v := o.Getenv(s.Env); v != "" {
			return v, FromEnv, s.Env
		}
	}
	if o.GitConfig != nil {
		if v, ok := o.GitConfig(strings.ToLower(s.Git)); ok {
			return v, FromGitConfig, "git config " + s.Git
		}
	}
	if v, ok := file[s.Key]; ok {
		return v, FromFile, File + " " + s.Key
	}
	return "", "", ""
}

// fallback returns the default of a setting, detected from the repository
// where there is no fixed one.
func fallback(o Options, key string) (raw string, src Source, origin string) {
	switch key {
	case "base":
		if b := mainBranch(o.CommonDir); b != "" {
			return b, FromDetected, "the main worktree's current branch"
		}
		return "", FromDefault, "default"
	case "remote":
		if o.GitConfig != nil {
			if _, ok := o.GitConfig("remote.origin.url"); ok {
				return "origin", FromDetected, "the existing origin remote"
			}
		}
		return "", FromDefault, "default"
	case "worktree_root":
		return DefaultWorktreeRoot, FromDefault, "default"
	case "timeout":
		return secs(DefaultTimeout), FromDefault, "default"
	case "dod_timeout":
		return secs(DefaultDoDTimeout), FromDefault, "default"
	case "grace":
		return secs(DefaultGrace), FromDefault, "default"
	case "default_agent":
		return DefaultAgent, FromDefault, "default"
	case "client":
		return DefaultClient, FromDefault, "default"
	case "isolation":
		return DefaultIsolation, FromDefault, "default"
	case "max_workers":
		return strconv.Itoa(DefaultMaxWorkers), FromDefault, "default"
	case "replan_after":
		return strconv.Itoa(DefaultReplanAfter), FromDefault, "default"
	case "memory_categories":
		return DefaultMemoryCategories, FromDefault, "default"
	}
	return "", FromDefault, "default"
}

func secs(d time.Duration) string { return strconv.Itoa(int(d / time.Second)) }

// mainBranch reads the branch the main worktree's HEAD points at, "" when
// detached or unknown.
func mainBranch(commonDir string) string {
	if commonDir == "" {
		return ""
	}
	data, err := os.ReadFile(filepath.Join(commonDir, "HEAD"))
	if err != nil {
		return ""
	}
	ref, ok := strings.CutPrefix(strings.TrimSpace(string(data)), "ref: refs/heads/")
	if !ok {
		return ""
	}
	return ref
}

// set parses and validates one raw value.
func (c *Config) set(key, raw string) error {
	raw = strings.TrimSpace(raw)
	switch key {
	case "base":
		if strings.ContainsAny(raw, " \t\r\n~^:?*[\\") || strings.HasPrefix(raw, "-") {
			return fmt.Errorf("invalid base %q: want a branch name", raw)
		}
		c.Base = raw
	case "worktree_root":
		p, err := worktreeRoot(raw)
		if err != nil {
			return err
		}
		c.WorktreeRoot = p
	case "timeout", "dod_timeout", "grace":
		return c.setDuration(key, raw)
	case "default_agent":
		if !agents.ValidName(raw) {
			return fmt.Errorf("invalid default_agent %q", raw)
		}
		c.DefaultAgent = raw
	case "client":
		if !slices.Contains(agents.Clients, raw) {
			return fmt.Errorf("unknown client %q (known: %s)", raw, strings.Join(agents.Clients, ", "))
		}
		c.Client = raw
	case "max_workers":
		n, err := strconv.Atoi(raw)
		if err != nil || n < 1 {
			return fmt.Errorf("invalid max_workers %q: want a whole number, at least 1", raw)
		}
		c.MaxWorkers = n
	case "replan_after":
		n, err := strconv.Atoi(raw)
		if err != nil || n < 0 {
			return fmt.Errorf("invalid replan_after %q: want a whole number, 0 (never) or more", raw)
		}
		c.ReplanAfter = n
	case "remote":
		if strings.ContainsAny(raw, " \t\r\n") {
			return fmt.Errorf("invalid remote %q", raw)
		}
		c.Remote = raw
	case "memory_categories":
		cats, err := categoryList(raw)
		if err != nil {
			return err
		}
		c.MemoryCategories = cats
	case "isolation":
		if !slices.Contains(agents.IsolationLevels, raw) {
			return fmt.Errorf("unknown isolation level %q (known: %s)", raw, strings.Join(agents.IsolationLevels, ", "))
		}
		c.Isolation = raw
	}
	return nil
}

// worktreeRoot checks a worktree_root: absolute, or a directory inside
// the repository (cleaned, slash-separated).
func worktreeRoot(raw string) (string, error) {
	if raw == "" {
		return "", errors.New("worktree_root is empty")
	}
	p := filepath.ToSlash(raw)
	if filepath.IsAbs(raw) {
		return p, nil
	}
	p = path.Clean(p)
	if p == "." || p == ".." || strings.HasPrefix(p, "../") {
		return "", fmt.Errorf("invalid worktree_root %q: a relative root must be a directory inside the repository", raw)
	}
	return p, nil
}

// setDuration sets timeout, dod_timeout or grace (only grace may be 0).
func (c *Config) setDuration(key, raw string) error {
	d, err := duration.Parse(raw)
	if err != nil {
		return fmt.Errorf("invalid %s %q: %w", key, raw, err)
	}
	if d == 0 && key != "grace" {
		return fmt.Errorf("invalid %s %q: want at least 1s", key, raw)
	}
	switch key {
	case "timeout":
		c.Timeout = d
	case "dod_timeout":
		c.DoDTimeout = d
	default:
		c.Grace = d
	}
	return nil
}

// categoryList reads a comma-separated list of memory categories: each one
// word of letters, digits, '-' and '_', lower-cased, at least one.
func categoryList(raw string) ([]string, error) {
	var out []string
	for _, f := range strings.Split(raw, ",") {
		c := strings.ToLower(strings.TrimSpace(f))
		if c == "" {
			continue
		}
		for i, r := range c {
			alnum := r >= 'a' && r <= 'z' || r >= '0' && r <= '9'
			if !alnum && (i == 0 || (r != '-' && r != '_')) {
				return nil, fmt.Errorf("invalid memory_categories %q: %q is not one word of letters, digits, '-' and '_'", raw, f)
			}
		}
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("invalid memory_categories %q: name at least one category", raw)
	}
	return out, nil
}
