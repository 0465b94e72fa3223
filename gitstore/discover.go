package gitstore

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/git-agentmine/git-agentmine/gitcmd"
)

// Every command opens the store, and asking git where the repository is
// (`git rev-parse`) was one process start of every command: about 9 ms of
// a 45 ms `task show` on the development machine. discoverLocal finds the
// repository as git does in the ordinary case — a working tree whose .git
// is the repository or names it, found by walking up from the directory —
// and gives up, leaving the answer to git, on anything else: a variable
// that changes discovery (GIT_DIR, GIT_CEILING_DIRECTORIES, ...), a
// configuration given on git's command line, a bare repository, a
// core.worktree or core.bare setting, includes, a repository extension
// other than the object format and per-worktree configuration (whose
// config.worktree must be as plain), a file-system boundary crossed, a
// symbolic link named .git, or a repository owned by another user (git's
// safe.directory rules decide those). The tests compare its answers with
// git's for each layout it accepts.

// discoveryVars are the environment variables that change how git finds
// a repository or reads its configuration; when one is set, git answers.
// Configuration given on git's command line (`git -c k=v agentmine`, which
// sets GIT_CONFIG_PARAMETERS) or in GIT_CONFIG_COUNT pairs is looked at
// key by key instead (plainOverrides).
var discoveryVars = []string{"GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY",
	"GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_CEILING_DIRECTORIES", "GIT_DISCOVERY_ACROSS_FILESYSTEM",
	"GIT_NAMESPACE", "GIT_CONFIG", "GIT_IMPLICIT_WORK_TREE"}

// discovered is what Open needs to know of a repository.
type discovered struct {
	loc    gitcmd.Location
	objDir string
	sha1   bool
}

// discoverLocal finds the repository containing dir in-process; ok is false
// when git must answer (see above).
func discoverLocal(dir string, getenv func(string) string) (d discovered, ok bool) {
	for _, v := range discoveryVars {
		if getenv(v) != "" {
			return d, false
		}
	}
	if !plainOverrides(getenv) {
		return d, false
	}
	if os.Geteuid() == 0 && getenv("SUDO_UID") != "" {
		return d, false // git's ownership rule has a case of its own for sudo
	}
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return d, false
		}
		dir = wd
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return d, false
	}
	// git works from the physical directory (getcwd), symbolic links
	// resolved.
	start, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return d, false
	}
	var startSt syscall.Stat_t
	if syscall.Stat(start, &startSt) != nil {
		return d, false
	}
	for cur := start; ; {
		var st syscall.Stat_t
		if syscall.Stat(cur, &st) != nil || st.Dev != startSt.Dev {
			return d, false
		}
		dotGit := filepath.Join(cur, ".git")
		fi, err := os.Lstat(dotGit)
		switch {
		case err == nil && fi.IsDir():
			return openFound(cur, dotGit)
		case err == nil && fi.Mode().IsRegular():
			gitDir, ok := readGitFile(cur, dotGit)
			if !ok {
				return d, false
			}
			return openFound(cur, gitDir)
		case err == nil || !os.IsNotExist(err):
			return d, false // a symbolic link, or something stranger
		case isGitDir(cur):
			return d, false // a bare repository, or inside a .git directory
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return d, false // git says there is no repository, in its words
		}
		cur = parent
	}
}

// readGitFile reads a .git file ("gitdir: <path>", relative to the
// directory holding it) and returns the directory it names.
func readGitFile(top, path string) (string, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", false
	}
	line, _, _ := strings.Cut(string(b), "\n")
	gd, ok := strings.CutPrefix(strings.TrimRight(line, "\r"), "gitdir: ")
	if !ok || gd == "" {
		return "", false
	}
	if !filepath.IsAbs(gd) {
		gd = filepath.Join(top, gd)
	}
	return gd, true
}

// openFound checks the repository found for the working tree top with git
// directory gitDir and reads what Open needs of it.
func openFound(top, gitDir string) (d discovered, ok bool) {
	gitDir, err := filepath.EvalSymlinks(gitDir)
	if err != nil {
		return d, false
	}
	common := gitDir
	if b, err := os.ReadFile(filepath.Join(gitDir, "commondir")); err == nil {
		c := strings.TrimSpace(string(b))
		if c == "" {
			return d, false
		}
		if !filepath.IsAbs(c) {
			c = filepath.Join(gitDir, c)
		}
		if common, err = filepath.EvalSymlinks(c); err != nil {
			return d, false
		}
	} else if !os.IsNotExist(err) {
		return d, false
	}
	if !isGitDirWith(gitDir, common) {
		return d, false
	}
	// Owned by another user: git's safe.directory rules apply.
	uid := uint32(os.Geteuid())
	for _, p := range []string{top, gitDir, common} {
		var st syscall.Stat_t
		if syscall.Stat(p, &st) != nil || st.Uid != uid {
			return d, false
		}
	}
	sha1, perWorktree, ok := plainConfig(filepath.Join(common, "config"))
	if !ok {
		return d, false
	}
	wtConfig := filepath.Join(gitDir, "config.worktree")
	if perWorktree {
		// git reads the worktree's own config.worktree too (agentmine
		// turns the extension on for its worktrees): it must be as plain,
		// and name no extension of its own.
		if _, err := os.Lstat(wtConfig); err == nil {
			if _, ext, ok := plainConfig(wtConfig); !ok || ext || hasSection(wtConfig, "extensions") {
				return d, false
			}
		} else if !os.IsNotExist(err) {
			return d, false
		}
	} else if gitDir != common {
		if _, err := os.Stat(wtConfig); err == nil {
			return d, false
		}
	}
	return discovered{loc: gitcmd.Location{Top: top, GitDir: gitDir, CommonDir: common},
		objDir: filepath.Join(common, "objects"), sha1: sha1}, true
}

// isGitDir reports whether dir looks like a git directory to git: HEAD,
// objects and refs (for a linked worktree's, the common directory's).
func isGitDir(dir string) bool {
	common := dir
	if b, err := os.ReadFile(filepath.Join(dir, "commondir")); err == nil {
		c := strings.TrimSpace(string(b))
		if !filepath.IsAbs(c) {
			c = filepath.Join(dir, c)
		}
		common = c
	}
	return isGitDirWith(dir, common)
}

// isGitDirWith is isGitDir with the common directory known.
func isGitDirWith(gitDir, common string) bool {
	head, err := os.ReadFile(filepath.Join(gitDir, "HEAD"))
	if err != nil {
		return false
	}
	h := strings.TrimSpace(string(head))
	if !strings.HasPrefix(h, "ref: refs/") && !isHexID(h, 40) && !isHexID(h, 64) {
		return false
	}
	for _, sub := range []string{"objects", "refs"} {
		fi, err := os.Stat(filepath.Join(common, sub))
		if err != nil || !fi.IsDir() {
			return false
		}
	}
	return true
}

// plainConfig reads a repository's config file for what would make git
// find or read the repository differently than discoverLocal assumes, and
// returns whether its object format is SHA-1 and whether per-worktree
// configuration (extensions.worktreeConfig) is on; ok is false when git
// must answer: includes, core.worktree, core.bare true, an extension other
// than objectFormat and worktreeConfig (refStorage, ...), a repository
// format newer than 1, a line continued with a backslash, or a file it
// cannot read.
func plainConfig(path string) (sha1, perWorktree, ok bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return false, false, false
	}
	sha1 = true
	section := ""
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if strings.HasSuffix(line, `\`) {
			return false, false, false
		}
		if line[0] == '[' {
			end := strings.IndexByte(line, ']')
			if end < 0 {
				return false, false, false
			}
			name := strings.ToLower(strings.TrimSpace(line[1:end]))
			if sub := strings.IndexAny(name, " \t\""); sub >= 0 {
				name = name[:sub]
			}
			section = name
			if section == "include" || section == "includeif" {
				return false, false, false
			}
			line = strings.TrimSpace(line[end+1:])
			if line == "" || line[0] == '#' || line[0] == ';' {
				continue
			}
		}
		key, value, _ := strings.Cut(line, "=")
		key = strings.ToLower(strings.TrimSpace(key))
		value = strings.ToLower(strings.Trim(strings.TrimSpace(value), `"`))
		if i := strings.IndexAny(value, "#;"); i >= 0 {
			value = strings.TrimSpace(value[:i])
		}
		if !plainKey(section, key, value, &sha1, &perWorktree) {
			return false, false, false
		}
	}
	if sc.Err() != nil {
		return false, false, false
	}
	return sha1, perWorktree, true
}

// plainKey reads one key of a config file for plainConfig: it reports
// false for a setting that changes where or how the repository is read,
// and notes the object format and per-worktree configuration.
func plainKey(section, key, value string, sha1, perWorktree *bool) bool {
	switch section {
	case "core":
		switch key {
		case "worktree":
			return false
		case "bare":
			if value != "false" && value != "no" && value != "off" && value != "0" {
				return false
			}
		case "repositoryformatversion":
			if value != "0" && value != "1" {
				return false
			}
		}
	case "extensions":
		if key == "worktreeconfig" {
			*perWorktree = value == "" || value == "true" || value == "yes" || value == "on" || value == "1"
			return true
		}
		if key != "objectformat" {
			return false
		}
		switch value {
		case "sha1":
			*sha1 = true
		case "sha256":
			*sha1 = false
		default:
			return false
		}
	}
	return true
}

// plainOverrides reports whether the configuration given in the
// environment (GIT_CONFIG_PARAMETERS, as `git -c` sets it, and the
// GIT_CONFIG_COUNT pairs) leaves discovery as discoverLocal assumes: every
// key reads cleanly and none is one plainConfig refuses, or could change
// where or how the repository is found and read (core.worktree, core.bare,
// the repository format, extensions, includes, safe.*). Anything it cannot
// parse leaves the answer to git.
func plainOverrides(getenv func(string) string) bool {
	keys, ok := parameterKeys(getenv("GIT_CONFIG_PARAMETERS"))
	if !ok {
		return false
	}
	if c := getenv("GIT_CONFIG_COUNT"); c != "" {
		n, err := strconv.Atoi(c)
		if err != nil || n < 0 || n > 1000 {
			return false
		}
		for i := 0; i < n; i++ {
			k := getenv("GIT_CONFIG_KEY_" + strconv.Itoa(i))
			if k == "" {
				return false // git refuses it
			}
			keys = append(keys, k)
		}
	}
	for _, k := range keys {
		if !harmlessKey(k) {
			return false
		}
	}
	return true
}

// harmlessKey reports whether the configuration key k (section[.sub].name)
// cannot change where the repository is or how it is read.
func harmlessKey(k string) bool {
	dot := strings.IndexByte(k, '.')
	last := strings.LastIndexByte(k, '.')
	if dot <= 0 || last == len(k)-1 {
		return false
	}
	section := strings.ToLower(k[:dot])
	name := strings.ToLower(k[last+1:])
	switch section {
	case "include", "includeif", "extensions", "safe", "discovery":
		return false
	case "core":
		switch name {
		case "worktree", "bare", "repositoryformatversion":
			return false
		}
	}
	return true
}

// parameterKeys returns the keys of GIT_CONFIG_PARAMETERS: entries each
// single-quoted as git's sq_quote does (a quote or ! inside is closed,
// written after a backslash, and opened again), either 'key'='value' (or
// 'key'= for a key without a value) or the older 'key=value', separated by
// spaces; ok is false when it does not parse.
func parameterKeys(v string) (keys []string, ok bool) {
	i := 0
	quoted := func() (string, bool) {
		if i >= len(v) || v[i] != '\'' {
			return "", false
		}
		var b strings.Builder
		for i++; ; {
			j := strings.IndexByte(v[i:], '\'')
			if j < 0 {
				return "", false
			}
			b.WriteString(v[i : i+j])
			i += j + 1
			if i+2 < len(v) && v[i] == '\\' && v[i+2] == '\'' {
				b.WriteByte(v[i+1])
				i += 3
				continue
			}
			return b.String(), true
		}
	}
	for {
		for i < len(v) && v[i] == ' ' {
			i++
		}
		if i == len(v) {
			return keys, true
		}
		k, ok := quoted()
		if !ok {
			return nil, false
		}
		if i < len(v) && v[i] == '=' {
			// A key without a value (`-c key`) is followed by = alone.
			if i++; i < len(v) && v[i] != ' ' {
				if _, ok := quoted(); !ok {
					return nil, false
				}
			}
		} else if eq := strings.IndexByte(k, '='); eq >= 0 {
			k = k[:eq]
		}
		if i < len(v) && v[i] != ' ' {
			return nil, false
		}
		keys = append(keys, k)
	}
}

// hasSection reports whether the config file at path has a section named
// name (in any case); true when it cannot be read.
func hasSection(path, name string) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		return true
	}
	for l := range strings.Lines(string(b)) {
		l = strings.TrimSpace(l)
		if rest, ok := strings.CutPrefix(l, "["); ok && len(rest) >= len(name) && strings.EqualFold(rest[:len(name)], name) {
			return true
		}
	}
	return false
}
