package isolation

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/git-agentmine/git-agentmine/exitcode"
)

// configVar is an environment variable that names client configuration
// somewhere else than its default place in HOME.
type configVar struct {
	name string
	// files are the files under the directory the variable names that the
	// client needs to start and authenticate (the same ones clientConfig
	// copies from the default place); nil when the variable names a file.
	files []string
}

// ConfigVars lists the environment variables that name client
// configuration and that a worker's private HOME honours: what each names
// (a file, or the listed files of a directory) is copied into the private
// HOME, and the variable points at the copy. docs/config.md lists them.
func ConfigVars() []string {
	var out []string
	for _, v := range configVars() {
		out = append(out, v.name)
	}
	return out
}

func configVars() []configVar {
	return []configVar{
		{name: "GIT_CONFIG_GLOBAL"},
		{name: "XDG_CONFIG_HOME", files: []string{"git/config", "git/ignore",
			"opencode/opencode.json", "opencode/opencode.jsonc", "opencode/config.json"}},
		{name: "XDG_DATA_HOME", files: []string{"opencode/auth.json"}},
		{name: "CLAUDE_CONFIG_DIR", files: []string{".claude.json", "settings.json", ".credentials.json"}},
		{name: "CODEX_HOME", files: []string{"config.toml", "auth.json"}},
		{name: "GEMINI_CLI_HOME", files: []string{".gemini/settings.json", ".gemini/oauth_creds.json", ".gemini/google_accounts.json"}},
		{name: "OPENCODE_CONFIG"},
		{name: "OPENCODE_CONFIG_DIR", files: []string{"opencode.json", "opencode.jsonc", "config.json"}},
	}
}

// scratchVars name directories a client or the tools it runs write and
// never need back (caches, state, module downloads): one under HOME points
// at an empty directory at the same place in the private HOME, which the
// worker can write. Every other variable keeps its value.
func scratchVars() []string {
	return []string{"XDG_CACHE_HOME", "XDG_STATE_HOME", "GOCACHE", "GOMODCACHE", "GOPATH", "npm_config_cache", "PIP_CACHE_DIR"}
}

// maxConfigBytes bounds one copied configuration file: configuration is
// small, and a copy must not fill the disk.
const maxConfigBytes = 16 << 20

// envDir is where, in the private HOME, the configuration a variable names
// outside HOME is copied (.agentmine-env/<NAME>).
const envDir = ".agentmine-env"

// Check refuses, before anything of a session exists, what the level of p
// cannot honour: at bwrap and clone a program of p.Programs inside the
// main checkout or the repository's git dir (both hidden from the
// worker), and at every level but none a configuration variable of
// p.Environ (ConfigVars) that names what cannot be copied (not a regular
// file, a file where a directory is expected, too large). Errors carry
// exit code Config and say what to change.
func Check(p Plan) error {
	if p.Level == None || p.Level == Auto || p.Level == "" {
		return nil
	}
	if p.Level == Bwrap || p.Level == Clone {
		for _, path := range p.Programs {
			if within(path, p.Worktree) && p.Worktree != "" {
				continue
			}
			for _, hidden := range []string{p.MainTop, p.CommonDir} {
				if hidden != "" && within(path, hidden) {
					return exitcode.New(exitcode.Config, fmt.Errorf("the client %s lies in %s, which isolation level %s hides from the worker", path, hidden, p.Level),
						"install the client outside the repository, or use isolation level landlock")
				}
			}
		}
	}
	for _, v := range configVars() {
		val := envValue(p.Environ, v.name)
		if val == "" {
			continue
		}
		if err := checkConfigVar(v, val); err != nil {
			return exitcode.New(exitcode.Config, fmt.Errorf("environment variable %s=%s: %w; isolation level %s copies what it names into the worker's private HOME", v.name, val, err, p.Level),
				"point it at an existing configuration, unset it, or use isolation level none")
		}
	}
	return nil
}

// checkConfigVar says why what val names cannot be copied (nil when it
// can, or when it does not exist: the client then says so, as at none; or
// when val is relative: it names a path in the worktree, the worker's
// working directory at every level, and is passed on unchanged).
func checkConfigVar(v configVar, val string) error {
	if !filepath.IsAbs(val) {
		return nil
	}
	if v.files == nil {
		return checkConfigFile(val, "")
	}
	st, err := os.Stat(val)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case !st.IsDir():
		return errors.New("not a directory")
	}
	for _, f := range v.files {
		if err := checkConfigFile(filepath.Join(val, filepath.FromSlash(f)), f); err != nil {
			return err
		}
	}
	return nil
}

// checkConfigFile says why the file at path cannot be copied; rel names
// it within the variable's directory ("" for the variable's own file).
func checkConfigFile(path, rel string) error {
	what := "it"
	if rel != "" {
		what = rel
	}
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case !st.Mode().IsRegular():
		return fmt.Errorf("%s is not a regular file", what)
	case st.Size() > maxConfigBytes:
		return fmt.Errorf("%s is larger than %d MiB", what, maxConfigBytes>>20)
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	return f.Close()
}

// copyConfigVars copies what the configuration variables of the worker's
// environment name into the private HOME and makes the scratch variables'
// directories there. It returns the variables as the worker sees them
// (its HOME at sandboxHome) and as this process sees them (the private
// HOME's real path), each as KEY=VALUE.
func (b *Box) copyConfigVars(sandboxHome string) (worker, host []string, err error) {
	set := func(name, rel string) {
		worker = append(worker, name+"="+filepath.Join(sandboxHome, rel))
		host = append(host, name+"="+filepath.Join(b.home, rel))
	}
	for _, v := range configVars() {
		val := envValue(b.p.Environ, v.name)
		if val == "" || !filepath.IsAbs(val) {
			continue
		}
		if err := checkConfigVar(v, val); err != nil {
			return nil, nil, fmt.Errorf("%s=%s: %w", v.name, val, err)
		}
		rel, ok := b.underHome(val)
		if !ok {
			rel = filepath.Join(envDir, v.name)
			if v.files == nil {
				rel = filepath.Join(rel, filepath.Base(val))
			}
		}
		files := [][2]string{{val, rel}}
		if v.files != nil {
			files = files[:0]
			for _, f := range v.files {
				files = append(files, [2]string{filepath.Join(val, filepath.FromSlash(f)), filepath.Join(rel, filepath.FromSlash(f))})
			}
		}
		for _, f := range files {
			st, err := os.Stat(f[0])
			if err != nil || !st.Mode().IsRegular() {
				continue
			}
			if err := copyFile(f[0], filepath.Join(b.home, f[1]), st.Mode().Perm()); err != nil {
				return nil, nil, fmt.Errorf("copying %s (%s): %w", f[0], v.name, err)
			}
		}
		set(v.name, rel)
	}
	for _, name := range scratchVars() {
		val := envValue(b.p.Environ, name)
		rel, ok := b.underHome(val)
		if val == "" || !filepath.IsAbs(val) || !ok {
			continue
		}
		if err := os.MkdirAll(filepath.Join(b.home, rel), 0o700); err != nil {
			return nil, nil, err
		}
		set(name, rel)
	}
	return worker, host, nil
}

// underHome returns path relative to the user's HOME when it lies inside
// it ("." for HOME itself).
func (b *Box) underHome(path string) (string, bool) {
	home := filepath.Clean(b.p.Home)
	if b.p.Home == "" || home == "/" || !filepath.IsAbs(path) {
		return "", false
	}
	rel, err := filepath.Rel(home, filepath.Clean(path))
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", false
	}
	return rel, true
}

// envValue returns the last value of key in env (KEY=VALUE pairs).
func envValue(env []string, key string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == key {
			return v
		}
	}
	return ""
}
