package worker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/git-agentmine/git-agentmine/agents"
	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/launch"
	"github.com/git-agentmine/git-agentmine/memory"
	"github.com/git-agentmine/git-agentmine/scope"
	"github.com/git-agentmine/git-agentmine/tasks"
	"github.com/git-agentmine/git-agentmine/worktree"
)

// BuildPrompt renders the worker's prompt (design §6, seed 002): task
// header, description, acceptance criteria, the agent's instructions, the
// scope, the Memory Bank section (summaries and file paths, not the full
// text) and the fixed working rules.
func BuildPrompt(top string, t tasks.Task, short string, ag agents.Agent, spec scope.Spec, mems []memory.Memory, dod []string) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "# Task %s: %s\n\n", short, t.Title)
	fmt.Fprintf(&b, "- id: %s\n- type: %s\n- priority: %s\n", t.ID, t.Type, t.Priority)
	if len(t.Labels) > 0 {
		fmt.Fprintf(&b, "- labels: %s\n", strings.Join(t.Labels, ", "))
	}
	b.WriteString("\n")
	if strings.TrimSpace(t.Description) != "" {
		fmt.Fprintf(&b, "## Description\n\n%s\n\n", strings.TrimSpace(t.Description))
	}
	if len(t.Acceptance) > 0 {
		b.WriteString("## Acceptance criteria\n\n")
		for i, c := range t.Acceptance {
			fmt.Fprintf(&b, "- [ ] %s: %s\n", tasks.CriterionID(i), c)
		}
		b.WriteString("\n")
	}
	if pf := ag.PromptPath(top); pf != "" {
		data, err := os.ReadFile(filepath.Join(top, pf))
		if err != nil {
			return "", fmt.Errorf("agent %s: reading its prompt file: %w", ag.Name, err)
		}
		if s := strings.TrimSpace(string(data)); s != "" {
			fmt.Fprintf(&b, "## Instructions for the %s agent\n\n%s\n\n", ag.Name, s)
		}
	}
	b.WriteString("## Scope\n\n")
	b.WriteString("You may change only files matching the write patterns. Files you can read but not\n")
	b.WriteString("write are read-only; excluded files are absent. Every change is checked against this\n")
	b.WriteString("scope after you finish, including changes you undo before the end.\n\n")
	read := spec.Read
	if len(read) == 0 {
		read = []string{"**"}
	}
	fmt.Fprintf(&b, "- write: %s\n- read: %s\n", quoteList(spec.Write), quoteList(read))
	if len(spec.Exclude) > 0 {
		fmt.Fprintf(&b, "- exclude: %s\n", quoteList(spec.Exclude))
	}
	b.WriteString("\n")
	if s := memory.PromptSection(mems); s != "" {
		b.WriteString(strings.TrimRight(s, "\n"))
		b.WriteString("\n\n")
	}
	if len(dod) > 0 {
		b.WriteString("## Definition of Done\n\nThese commands must pass on your final commit:\n\n")
		for _, c := range dod {
			fmt.Fprintf(&b, "- `%s`\n", c)
		}
		b.WriteString("\n")
	}
	b.WriteString(`## Rules

- Read the existing code before you change it; follow its conventions.
- No mock data, no stubs standing in for real behaviour, no hard-coded results.
- Make the tests pass; add tests for what you build.
- Commit your work on the current branch when you are done (git add + git commit).
  Only committed work counts: uncommitted changes are reported as leftovers.
- Do not touch files outside your write scope, .git, or anything outside this directory.
`)
	return b.String(), nil
}

func quoteList(ps []string) string {
	q := make([]string, len(ps))
	for i, p := range ps {
		q[i] = "`" + p + "`"
	}
	return strings.Join(q, ", ")
}

// writeContextFiles writes the client's context file (CLAUDE.md, AGENTS.md,
// GEMINI.md) pointing at the prompt. An untracked one is simply written (and
// ignored through the worktree's own exclude file); a tracked one gets the
// pointer appended and is marked assume-unchanged, so neither git status nor
// a `git commit -a` by the worker carries it, and verification does not blame
// the worker for it. It returns the generated paths.
func writeContextFiles(ctx context.Context, st *gitstore.Store, wt string, c launch.Client, prompt string) ([]string, error) {
	name := launch.ContextFile(c)
	if name == "" {
		return nil, nil
	}
	note := "\n\n<!-- added by git agentmine for this worker session; not part of the repository -->\n" +
		"Your task, scope and rules are in `" + PromptRel + "`. Read it first and follow it.\n"
	g := st.Git().In(wt)
	path := filepath.Join(wt, name)
	if _, err := g.Run(ctx, "ls-files", "--error-unmatch", "--", name); err == nil {
		old, err := os.ReadFile(path)
		if err != nil {
			// Tracked but absent (outside the scope): leave it alone.
			return nil, nil
		}
		fi, _ := os.Stat(path)
		if err := worktree.WriteFile(wt, name, append(old, []byte(note)...), fi.Mode().Perm()&0o200 == 0); err != nil {
			return nil, fmt.Errorf("writing %s: %w", name, err)
		}
		if _, err := g.Run(ctx, "update-index", "--assume-unchanged", "--", name); err != nil {
			return nil, fmt.Errorf("marking %s unchanged: %w", name, err)
		}
		return []string{name}, nil
	}
	body := "# Worker instructions\n" + note
	if err := worktree.WriteFile(wt, name, []byte(body), true); err != nil {
		return nil, fmt.Errorf("writing %s: %w", name, err)
	}
	return []string{name}, nil
}

// excludeRel is the worktree's own excludes file, under its git
// directory: worktree.Create makes the worktree's configuration name it as
// core.excludesFile (the worktree already has extensions.worktreeConfig
// for its sparse-checkout), and ignoreGenerated writes it.
const excludeRel = "info/agentmine-exclude"

// ignoreGenerated makes git ignore agentmine's generated files in this
// worktree only, by writing the worktree's excludes file (excludeRel):
// the generated files, plus the user's global excludes file so that is
// not lost.
func ignoreGenerated(st *gitstore.Store, gitDir string, generated []string) error {
	var b strings.Builder
	b.WriteString("# generated by git agentmine: files it wrote into this worktree\n")
	if global, ok := st.Config("core.excludesfile"); ok {
		if data, err := os.ReadFile(expandHome(global)); err == nil {
			b.Write(data)
			b.WriteString("\n")
		}
	}
	for _, g := range generated {
		b.WriteString("/" + g + "\n")
	}
	p := filepath.Join(gitDir, filepath.FromSlash(excludeRel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("writing the worktree's exclude file: %w", err)
	}
	return nil
}

func expandHome(p string) string {
	if strings.HasPrefix(p, "~/") {
		if h, err := os.UserHomeDir(); err == nil {
			return filepath.Join(h, p[2:])
		}
	}
	return p
}
