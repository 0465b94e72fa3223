package scaffold

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-agentmine/git-agentmine/agents"
	"github.com/git-agentmine/git-agentmine/config"
)

// TestFilesAreWhatTheirReadersAccept: the written settings and agent are
// read back by the config and agents packages without a problem.
func TestFilesAreWhatTheirReadersAccept(t *testing.T) {
	for _, base := range []string{"main", ""} {
		top := t.TempDir()
		files, err := Files(base)
		if err != nil {
			t.Fatal(err)
		}
		res, err := Write(top, files)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{config.File, agents.Dir + "/coder.toml", agents.PromptDir + "/coder.md",
			agents.Dir + "/planner.toml", agents.PromptDir + "/planner.md", agents.Dir + "/reviewer.toml", agents.PromptDir + "/reviewer.md"}
		if strings.Join(res.Created, " ") != strings.Join(want, " ") || len(res.Kept) != 0 {
			t.Fatalf("created %v kept %v, want %v", res.Created, res.Kept, want)
		}
		values, exists, err := config.ReadFile(top)
		if err != nil || !exists {
			t.Fatalf("settings: %v (exists %v)", err, exists)
		}
		if got, set := values["base"]; (base == "") == set || got != base {
			t.Errorf("base %q: settings hold base=%q (set %v)", base, got, set)
		}
		defs, problems, err := agents.Load(top)
		if err != nil || len(problems) != 0 || len(defs) != 3 || defs[0].Name != "coder" || defs[1].Role != agents.RolePlanner || defs[2].Role != agents.RoleReviewer {
			t.Fatalf("agents: %v %v %v", defs, problems, err)
		}
		for _, d := range defs {
			if ps := agents.Validate(top, d); len(ps) != 0 {
				t.Errorf("the starter agent %s does not validate: %v", d.Name, ps)
			}
		}
	}
}

// TestWriteNeverOverwrites keeps an existing file byte for byte and says so.
func TestWriteNeverOverwrites(t *testing.T) {
	top := t.TempDir()
	mine := filepath.Join(top, filepath.FromSlash(config.File))
	if err := os.MkdirAll(filepath.Dir(mine), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(mine, []byte("base = \"trunk\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	files, err := Files("main")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Write(top, files)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Created) != 6 || strings.Join(res.Kept, " ") != config.File {
		t.Errorf("created %v kept %v", res.Created, res.Kept)
	}
	if data, _ := os.ReadFile(mine); string(data) != "base = \"trunk\"\n" {
		t.Errorf("existing settings changed to %q", data)
	}
	again, err := Write(top, files)
	if err != nil || len(again.Created) != 0 || len(again.Kept) != 7 {
		t.Errorf("second write: %+v %v", again, err)
	}
}

// TestWriteLeavesNothingHalfDone: when a file cannot be created, the files
// created before it are removed again and the error names the path.
func TestWriteLeavesNothingHalfDone(t *testing.T) {
	top := t.TempDir()
	// A regular file where the agents directory must go.
	if err := os.MkdirAll(filepath.Join(top, ".agentmine"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(top, filepath.FromSlash(agents.Dir)), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	files, err := Files("main")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Write(top, files)
	if err == nil || !strings.HasPrefix(err.Error(), "creating "+agents.Dir+": ") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("err = %v, want one line naming %s", err, agents.Dir)
	}
	if _, err := os.Lstat(filepath.Join(top, filepath.FromSlash(config.File))); !os.IsNotExist(err) {
		t.Errorf("the settings file created before the failure is still there: %v", err)
	}
}

// TestExcludeWorktrees adds one anchored line, once, and nothing for a
// root outside the working tree.
func TestExcludeWorktrees(t *testing.T) {
	top := t.TempDir()
	common := filepath.Join(top, ".git")
	if err := os.MkdirAll(filepath.Join(common, "info"), 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(common, "info", "exclude")
	if err := os.WriteFile(file, []byte("*.log"), 0o644); err != nil {
		t.Fatal(err)
	}
	ex, err := ExcludeWorktrees(common, top, filepath.Join(top, ".agentmine", "worktrees"))
	if err != nil || !ex.Added || ex.Pattern != "/.agentmine/worktrees/" || ex.File != file {
		t.Fatalf("first: %+v %v", ex, err)
	}
	ex, err = ExcludeWorktrees(common, top, filepath.Join(top, ".agentmine", "worktrees"))
	if err != nil || ex.Added {
		t.Fatalf("second: %+v %v", ex, err)
	}
	data, _ := os.ReadFile(file)
	if string(data) != "*.log\n# git agentmine: worker worktrees\n/.agentmine/worktrees/\n" {
		t.Errorf("exclude file:\n%s", data)
	}
	ex, err = ExcludeWorktrees(common, top, filepath.Join(filepath.Dir(top), "elsewhere"))
	if err != nil || ex.Added || ex.Pattern != "" {
		t.Errorf("outside: %+v %v", ex, err)
	}
}
