package gitstore

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-agentmine/git-agentmine/internal/gittest"
)

// gitLocation is what git answers for dir: git dir, common dir, object
// format, objects directory and top, as Open asks it.
func gitLocation(t *testing.T, dir string) (discovered, bool) {
	t.Helper()
	cmd := exec.Command("git", "rev-parse", "--path-format=absolute", "--git-dir", "--git-common-dir",
		"--show-object-format", "--git-path", "objects", "--show-toplevel")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return discovered{}, false
	}
	l := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(l) != 5 {
		t.Fatalf("git rev-parse in %s: %q", dir, l)
	}
	d := discovered{sha1: l[2] == "sha1", objDir: l[3]}
	d.loc.GitDir, d.loc.CommonDir, d.loc.Top = l[0], l[1], l[4]
	return d, true
}

// repoWithWorktree makes, in a scrubbed environment, a temporary directory
// holding repo (branch main, one commit adding file) and wt, a linked
// worktree of it on branch wt; it returns the directory and the repository.
func repoWithWorktree(t *testing.T, file string) (root, repo string) {
	t.Helper()
	gittest.Scrub(t)
	root = t.TempDir()
	repo = filepath.Join(root, "repo")
	gittest.Git(t, root, "init", "-q", "-b", "main", "repo")
	gittest.CommitFiles(t, repo, "init", map[string]string{file: "x\n"})
	gittest.Git(t, repo, "worktree", "add", "-q", filepath.Join(root, "wt"), "-b", "wt")
	return root, repo
}

// TestDiscoverLocalMatchesGit: wherever discoverLocal answers, it answers
// what git does; the layouts it must leave to git, it does.
func TestDiscoverLocalMatchesGit(t *testing.T) {
	root, repo := repoWithWorktree(t, "a/b/c.txt")
	os.MkdirAll(filepath.Join(root, "wt", "deep", "er"), 0o755)
	// A symbolic link to the repository: git works from the physical path.
	if err := os.Symlink(repo, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	gittest.Git(t, root, "init", "-q", "--object-format=sha256", "sha256")
	// A submodule-style .git file with a relative path.
	gittest.Git(t, root, "init", "-q", "sep")
	os.MkdirAll(filepath.Join(root, "store"), 0o755)
	if err := os.Rename(filepath.Join(root, "sep", ".git"), filepath.Join(root, "store", "sep.git")); err != nil {
		t.Fatal(err)
	}
	gittest.WriteFiles(t, filepath.Join(root, "sep"), map[string]string{".git": "gitdir: ../store/sep.git\n"})
	gittest.Git(t, root, "init", "-q", "--bare", "bare.git")
	gittest.Git(t, root, "init", "-q", "cw")
	gittest.Git(t, filepath.Join(root, "cw"), "config", "core.worktree", filepath.Join(root, "repo"))
	gittest.Git(t, root, "init", "-q", "inc")
	gittest.Git(t, filepath.Join(root, "inc"), "config", "include.path", "/dev/null")
	gittest.Git(t, root, "init", "-q", "ext")
	gittest.Git(t, filepath.Join(root, "ext"), "config", "extensions.somethingNew", "true")
	gittest.Git(t, filepath.Join(root, "ext"), "config", "core.repositoryformatversion", "1")
	// Per-worktree configuration (agentmine turns it on for its
	// worktrees): read in-process while config.worktree is plain.
	gittest.Git(t, repo, "config", "extensions.worktreeConfig", "true")
	gittest.Git(t, repo, "config", "--worktree", "user.name", "main checkout")
	gittest.Git(t, filepath.Join(root, "wt"), "config", "--worktree", "user.name", "linked")
	gittest.Git(t, repo, "worktree", "add", "-q", filepath.Join(root, "wtinc"), "-b", "wtinc")
	gittest.Git(t, filepath.Join(root, "wtinc"), "config", "--worktree", "include.path", "/dev/null")
	os.MkdirAll(filepath.Join(root, "nogit"), 0o755)
	os.MkdirAll(filepath.Join(root, "dotlink"), 0o755)
	if err := os.Symlink(filepath.Join(repo, ".git"), filepath.Join(root, "dotlink", ".git")); err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		dir   string
		local bool // discoverLocal answers
	}{
		{"repo", true},
		{"repo/a/b", true},
		{"wt", true},
		{"wt/deep/er", true},
		{"link/a", true},
		{"sha256", true},
		{"sep", true},
		{"repo/.git", false},
		{"repo/.git/refs", false},
		{"bare.git", false},
		{"cw", false},
		{"inc", false},
		{"ext", false},
		{"dotlink", false},
		{"wtinc", false},
	} {
		dir := filepath.Join(root, c.dir)
		got, ok := discoverLocal(dir, os.Getenv)
		if ok != c.local {
			t.Errorf("%s: discoverLocal answered %v, want %v", c.dir, ok, c.local)
			continue
		}
		if !ok {
			continue
		}
		want, _ := gitLocation(t, dir)
		if got != want {
			t.Errorf("%s:\n in-process %+v\n git        %+v", c.dir, got, want)
		}
	}
	// No repository at all (as far as the temporary directory goes, a
	// parent may be one): discoverLocal never claims one git does not see.
	if got, ok := discoverLocal(filepath.Join(root, "nogit"), os.Getenv); ok {
		if want, gitOK := gitLocation(t, filepath.Join(root, "nogit")); !gitOK || got != want {
			t.Errorf("nogit: in-process %+v, git %+v (found %v)", got, want, gitOK)
		}
	}
	// A variable that changes discovery sends it to git.
	for _, v := range []string{"GIT_DIR", "GIT_WORK_TREE", "GIT_CEILING_DIRECTORIES", "GIT_CONFIG_PARAMETERS"} {
		env := func(k string) string {
			if k == v {
				return "x"
			}
			return os.Getenv(k)
		}
		if _, ok := discoverLocal(repo, env); ok {
			t.Errorf("with %s set, discoverLocal answered", v)
		}
	}
}

// TestOpenInProcessMatchesGit opens the store both ways in a linked
// worktree's subdirectory: the same location either way.
func TestOpenInProcessMatchesGit(t *testing.T) {
	root, _ := repoWithWorktree(t, "a/b.txt")
	dir := filepath.Join(root, "wt", "a")
	local, err := Open(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("AGENTMINE_GIT_READS", "1")
	viaGit, err := Open(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if local.loc != viaGit.loc || local.objDir != viaGit.objDir || local.sha1 != viaGit.sha1 {
		t.Errorf("in-process %+v %s %v, git %+v %s %v", local.loc, local.objDir, local.sha1, viaGit.loc, viaGit.objDir, viaGit.sha1)
	}
}

// gitConfigEnv returns GIT_CONFIG_PARAMETERS as git itself sets it for
// `git -c arg ...` with args (read back through a shell alias).
func gitConfigEnv(t *testing.T, dir string, args ...string) string {
	t.Helper()
	var cmdArgs []string
	for _, a := range args {
		cmdArgs = append(cmdArgs, "-c", a)
	}
	cmdArgs = append(cmdArgs, "-c", "alias.params=!printenv GIT_CONFIG_PARAMETERS", "params")
	cmd := exec.Command("git", cmdArgs...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %q: %v", cmdArgs, err)
	}
	return strings.TrimSuffix(string(out), "\n")
}

// TestDiscoverLocalWithConfigOverrides: configuration given on git's command
// line (`git -c k=v agentmine`, GIT_CONFIG_PARAMETERS as git writes it, odd
// quoting included) or as GIT_CONFIG_COUNT pairs leaves discovery
// in-process, with git's answer, unless a key could change where the
// repository is (core.worktree, core.bare, includes, extensions, safe.*),
// or the variables do not parse.
func TestDiscoverLocalWithConfigOverrides(t *testing.T) {
	root, repo := repoWithWorktree(t, "a.txt")
	dir := filepath.Join(root, "wt")
	want, _ := gitLocation(t, dir)
	for _, c := range []struct {
		args  []string
		local bool
	}{
		{[]string{"user.name=it's me!"}, true},
		{[]string{"color.ui=never", "flag.only", "sec.it's!.z=x y", "alias.x=!echo 'hi'"}, true},
		{[]string{"user.email=a@b", "core.worktree=" + repo}, false},
		{[]string{"Core.Bare=true"}, false},
		{[]string{"include.path=/dev/null"}, false},
		{[]string{"includeIf.gitdir:/x/.path=/dev/null"}, false},
		{[]string{"extensions.refStorage=reftable"}, false},
		{[]string{"safe.directory=*"}, false},
	} {
		params := gitConfigEnv(t, dir, c.args...)
		env := func(k string) string {
			if k == "GIT_CONFIG_PARAMETERS" {
				return params
			}
			return os.Getenv(k)
		}
		keys, ok := parameterKeys(params)
		if !ok || len(keys) != len(c.args)+1 {
			t.Errorf("%q: keys %q of %s", c.args, keys, params)
		}
		got, ok := discoverLocal(dir, env)
		if ok != c.local {
			t.Errorf("%q: discoverLocal answered %v, want %v", c.args, ok, c.local)
		} else if ok && got != want {
			t.Errorf("%q:\n in-process %+v\n git        %+v", c.args, got, want)
		}
	}
	for _, c := range []struct {
		env   map[string]string
		local bool
	}{
		{map[string]string{"GIT_CONFIG_COUNT": "2", "GIT_CONFIG_KEY_0": "gc.auto", "GIT_CONFIG_VALUE_0": "0",
			"GIT_CONFIG_KEY_1": "maintenance.auto", "GIT_CONFIG_VALUE_1": "false"}, true},
		{map[string]string{"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "core.worktree", "GIT_CONFIG_VALUE_0": repo}, false},
		{map[string]string{"GIT_CONFIG_COUNT": "2", "GIT_CONFIG_KEY_0": "gc.auto"}, false},
		{map[string]string{"GIT_CONFIG_COUNT": "x"}, false},
		{map[string]string{"GIT_CONFIG_PARAMETERS": "'unclosed"}, false},
		{map[string]string{"GIT_CONFIG_PARAMETERS": "'a.b'='c'x"}, false},
		{map[string]string{"GIT_CONFIG_PARAMETERS": "'a.b=c' 'core.bare=true'"}, false},
		{map[string]string{"GIT_CONFIG_PARAMETERS": "'a.b=c' 'd.e'"}, true},
	} {
		env := func(k string) string {
			if v, ok := c.env[k]; ok {
				return v
			}
			return os.Getenv(k)
		}
		if _, ok := discoverLocal(dir, env); ok != c.local {
			t.Errorf("%v: discoverLocal answered %v, want %v", c.env, ok, c.local)
		}
	}
}
