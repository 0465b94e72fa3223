// Package scaffold owns the files `init` writes: the project settings
// (.agentmine/config.toml), a starter agent (.agentmine/agents/coder.toml)
// and its prompt (.agentmine/prompts/coder.md), and the worktree root's
// line in the repository's common info/exclude. It creates what is missing
// and never overwrites, commits or stages anything.
package scaffold

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/template"

	"github.com/git-agentmine/git-agentmine/agents"
	"github.com/git-agentmine/git-agentmine/config"
)

// The templates are real files, so that they read (and can be checked) as
// the TOML and Markdown they become.
//
//go:embed templates/config.toml templates/coder.toml templates/coder.md templates/planner.toml templates/planner.md templates/reviewer.toml templates/reviewer.md
var templates embed.FS

// File is one file to create: its path relative to the top of the working
// tree (slash-separated) and its text.
type File struct {
	Rel  string
	Text string
}

// Files returns the project files, in the order they are written. base is
// the branch recorded in the settings; "" leaves the setting commented out
// (HEAD is detached, there is no branch to name).
func Files(base string) ([]File, error) {
	baseLine := "base = " + strconv.Quote(base)
	if base == "" {
		baseLine = `# base = "main"`
	}
	cfg, err := template.ParseFS(templates, "templates/config.toml")
	if err != nil {
		return nil, fmt.Errorf("reading the settings template: %w", err)
	}
	var b bytes.Buffer
	if err := cfg.Execute(&b, struct{ BaseLine string }{baseLine}); err != nil {
		return nil, fmt.Errorf("filling the settings template: %w", err)
	}
	out := []File{{Rel: config.File, Text: b.String()}}
	for _, f := range []struct{ rel, tmpl string }{
		{agents.Dir + "/coder.toml", "templates/coder.toml"},
		{agents.PromptDir + "/coder.md", "templates/coder.md"},
		{agents.Dir + "/planner.toml", "templates/planner.toml"},
		{agents.PromptDir + "/planner.md", "templates/planner.md"},
		{agents.Dir + "/reviewer.toml", "templates/reviewer.toml"},
		{agents.PromptDir + "/reviewer.md", "templates/reviewer.md"},
	} {
		data, err := templates.ReadFile(f.tmpl)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", f.tmpl, err)
		}
		out = append(out, File{Rel: f.rel, Text: string(data)})
	}
	return out, nil
}

// Result says which files were created and which existed already (and were
// kept as they are).
type Result struct {
	Created []string
	Kept    []string
}

// Write creates each file under top that does not exist yet. On a failure
// it removes the files it created, so that nothing is left half-written.
func Write(top string, files []File) (Result, error) {
	res := Result{Created: []string{}, Kept: []string{}}
	for _, f := range files {
		created, err := create(top, f.Rel, f.Text)
		if err != nil {
			for _, rel := range res.Created {
				os.Remove(filepath.Join(top, filepath.FromSlash(rel)))
			}
			return Result{}, err
		}
		if created {
			res.Created = append(res.Created, f.Rel)
		} else {
			res.Kept = append(res.Kept, f.Rel)
		}
	}
	return res, nil
}

// create writes top/rel with text unless it exists; it reports whether it
// created the file.
func create(top, rel, text string) (bool, error) {
	p := filepath.Join(top, filepath.FromSlash(rel))
	if _, err := os.Lstat(p); err == nil {
		return false, nil
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return false, fmt.Errorf("creating %s: %w", filepath.Dir(rel), err)
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("creating %s: %w", rel, err)
	}
	_, werr := f.WriteString(text)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		os.Remove(p)
		return false, fmt.Errorf("writing %s: %w", rel, werr)
	}
	return true, nil
}

// Exclude describes the worktree root's line in the common info/exclude.
// Pattern is "" when the root is outside the working tree (nothing to
// ignore); Added says whether the line was added now.
type Exclude struct {
	File    string
	Pattern string
	Added   bool
}

// ExcludeWorktrees adds the worktree root, anchored, to the common
// info/exclude (shared by every worktree of the repository) unless an
// equivalent line is there already. commonDir is git's common directory,
// top the top of the working tree and worktreeDir the absolute worktree
// root.
func ExcludeWorktrees(commonDir, top, worktreeDir string) (Exclude, error) {
	file := filepath.Join(commonDir, "info", "exclude")
	res := Exclude{File: file}
	rel, err := filepath.Rel(top, worktreeDir)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return res, nil
	}
	rel = filepath.ToSlash(rel)
	res.Pattern = "/" + rel + "/"
	data, err := os.ReadFile(file)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return res, fmt.Errorf("reading %s: %w", file, err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		l = strings.TrimSpace(l)
		if l == res.Pattern || l == rel+"/" || l == rel || l == "/"+rel {
			return res, nil
		}
	}
	text := string(data)
	if text != "" && !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	text += "# git agentmine: worker worktrees\n" + res.Pattern + "\n"
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return res, fmt.Errorf("creating %s: %w", filepath.Dir(file), err)
	}
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		return res, fmt.Errorf("writing %s: %w", file, err)
	}
	res.Added = true
	return res, nil
}
