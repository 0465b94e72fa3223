package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/git-agentmine/git-agentmine/contract"
	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/memory"
	"github.com/git-agentmine/git-agentmine/output"
	"github.com/git-agentmine/git-agentmine/safefile"
)

// MemoryCmd groups the Memory Bank commands.
type MemoryCmd struct {
	Add     MemoryAddCmd     `cmd:"" help:"Record a project decision in the Memory Bank (active by default)."`
	List    MemoryListCmd    `cmd:"" aliases:"ls" help:"List memories (archived ones only with --all or --status)."`
	Show    MemoryShowCmd    `cmd:"" help:"Show one memory with its full content."`
	Edit    MemoryEditCmd    `cmd:"" help:"Change fields of a memory."`
	Archive MemoryArchiveCmd `cmd:"" help:"Archive memories: kept, but no longer given to workers."`
	Remove  MemoryRemoveCmd  `cmd:"" aliases:"rm" help:"Delete memories (also clears unreadable ones)."`
	Preview MemoryPreviewCmd `cmd:"" help:"Print the Memory Bank section a worker's prompt will carry."`
	Export  MemoryExportCmd  `cmd:"" help:"Write memories as <dir>/<category>/<id>.md files with front matter."`
	Import  MemoryImportCmd  `cmd:"" help:"Read memories back from files written by export."`
}

func memJSON(b *memory.Bank, id string) memoryJSON { return contract.NewMemory(b, id) }

// loadBank reads the Memory Bank, warning about refs that cannot be read.
func loadBank(a *App) (*gitstore.Store, *memory.Bank, error) {
	st, err := a.Store()
	if err != nil {
		return nil, nil, err
	}
	b, err := memory.Load(a.Ctx, st)
	if err != nil {
		return nil, nil, err
	}
	for _, p := range b.Problems {
		a.P.Warnf("skipping unreadable memory: %v", p)
	}
	return st, b, nil
}

// readContent returns the content given by --content or --file (a path, or
// "-" for stdin); set is false when neither was given.
func readContent(a *App, content *string, file string) (text string, set bool, err error) {
	if content != nil && file != "" {
		return "", false, exitcode.New(exitcode.Usage, errors.New("give the content with --content or --file, not both"), "")
	}
	if content != nil {
		return *content, true, nil
	}
	if file == "" {
		return "", false, nil
	}
	var data []byte
	if file == "-" {
		data, err = io.ReadAll(a.In)
	} else {
		data, err = safefile.ReadFile(file, maxContentFile)
	}
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", false, exitcode.New(exitcode.NotFound, fmt.Errorf("content file %s does not exist", file), "")
		}
		return "", false, exitcode.New(exitcode.Usage, fmt.Errorf("reading content: %w", err), "")
	}
	return string(data), true, nil
}

// maxContentFile bounds a memory's content file; it is opened without
// blocking and must be a regular file.
const maxContentFile = 16 << 20

// MemoryAddCmd is `memory add`.
type MemoryAddCmd struct {
	Category string   `short:"c" required:"" help:"Category: one of the memory_categories setting (architecture, tooling, convention, rule, domain, decision by default) or one a memory already uses."`
	NewCat   bool     `name:"new-category" help:"Start a category outside the memory_categories setting."`
	Title    string   `short:"t" required:"" help:"One-line title."`
	Summary  string   `short:"s" help:"Short summary: what workers see in their prompt (default: the content's first line)."`
	Content  *string  `help:"Content (Markdown)."`
	File     string   `short:"f" placeholder:"FILE|-" help:"Read the content from FILE, or stdin with '-'."`
	Status   string   `default:"active" enum:"draft,active,archived" help:"draft, active or archived. Active (the default) memories reach every worker; use draft to stage one."`
	Tag      []string `sep:"none" help:"Tag (repeatable)."`
	Task     string   `help:"Related task id."`
}

// Run records the memory.
func (c *MemoryAddCmd) Run(a *App) error {
	content, _, err := readContent(a, c.Content, c.File)
	if err != nil {
		return err
	}
	st, err := a.Store()
	if err != nil {
		return err
	}
	if err := checkCategory(a, st, c.Category, c.NewCat); err != nil {
		return err
	}
	m, err := memory.Add(a.Ctx, st, memory.New{Category: c.Category, Title: c.Title, Summary: c.Summary,
		Content: content, Status: c.Status, Tags: c.Tag, Task: c.Task})
	if err != nil {
		return err
	}
	return showMemory(a, m.ID, "created")
}

// MemoryListCmd is `memory list`.
type MemoryListCmd struct {
	Category string `short:"c" help:"Only this category."`
	Status   string `short:"s" help:"Only this status (draft, active, archived)."`
	Tag      string `help:"Only memories with this tag."`
	All      bool   `short:"a" help:"Include archived memories."`
}

// Run lists memories.
func (c *MemoryListCmd) Run(a *App) error {
	if c.Status != "" {
		if err := memory.ValidateStatus(c.Status); err != nil {
			return err
		}
	}
	_, b, err := loadBank(a)
	if err != nil {
		return err
	}
	var ms []memory.Memory
	for _, id := range b.IDs {
		m := b.Memories[id].Memory
		switch {
		case c.Category != "" && m.Category != strings.ToLower(c.Category),
			c.Status != "" && m.Status != c.Status,
			c.Status == "" && !c.All && !a.G.JSON && m.Status == memory.StatusArchived,
			c.Tag != "" && !slices.Contains(m.Tags, c.Tag):
			continue
		}
		ms = append(ms, m)
	}
	memory.Sort(ms)
	if a.G.JSON {
		out := make([]memoryJSON, 0, len(ms))
		for _, m := range ms {
			out = append(out, memJSON(b, m.ID))
		}
		return a.P.PrintJSON(out)
	}
	if a.G.Quiet {
		for _, m := range ms {
			a.P.Printf("%s\n", m.ID)
		}
		return nil
	}
	if len(ms) == 0 {
		a.P.Notef("no memories\n")
		return nil
	}
	tb := a.P.NewTable("ID", "STATUS", "CATEGORY", "TITLE", "TAGS")
	for _, m := range ms {
		tb.ColorRow([]string{output.Yellow, memStatusColor(m.Status), output.Cyan, "", output.Gray},
			b.ShortID(m.ID), m.Status, m.Category, m.Title, strings.Join(m.Tags, ","))
	}
	tb.Flush()
	return nil
}

func memStatusColor(s string) string {
	switch s {
	case memory.StatusActive:
		return output.Green
	case memory.StatusArchived:
		return output.Gray
	}
	return ""
}

// showMemory prints one memory after reading the bank again. verb, when
// set, is printed to stderr and only the short id goes to stdout.
func showMemory(a *App, prefix, verb string) error {
	_, b, err := loadBank(a)
	if err != nil {
		return err
	}
	id, err := b.Resolve(prefix)
	if err != nil {
		return err
	}
	if a.G.JSON {
		return a.P.PrintJSON(memJSON(b, id))
	}
	if a.G.Quiet {
		a.P.Printf("%s\n", id)
		return nil
	}
	if verb != "" {
		a.P.Notef("%s memory %s\n", verb, b.ShortID(id))
		a.P.Printf("%s\n", b.ShortID(id))
		return nil
	}
	j := memJSON(b, id)
	p := a.P
	p.Printf("%s %s\n", p.Paint(output.Yellow, j.ShortID), p.Paint(output.Bold, j.Title))
	p.Printf("  id:        %s\n", j.ID)
	p.Printf("  status:    %s\n", p.Paint(memStatusColor(j.Status), j.Status))
	p.Printf("  category:  %s\n", j.Category)
	if len(j.Tags) > 0 {
		p.Printf("  tags:      %s\n", strings.Join(j.Tags, ", "))
	}
	if j.Task != "" {
		p.Printf("  task:      %s\n", j.Task)
	}
	p.Printf("  file:      %s\n", j.Path)
	p.Printf("  created:   %s by %s\n", j.Created.Time.Format(time.RFC3339), j.Created.Author)
	p.Printf("  updated:   %s by %s\n", j.Updated.Time.Format(time.RFC3339), j.Updated.Author)
	if j.Summary != "" {
		p.Printf("  summary:   %s\n", strings.ReplaceAll(j.Summary, "\n", "\n             "))
	}
	if j.Content != "" {
		p.Printf("\n%s", j.Content)
	}
	return nil
}

// MemoryShowCmd is `memory show`.
type MemoryShowCmd struct {
	ID string `arg:"" help:"Memory id (any unique prefix)."`
}

// Run shows the memory.
func (c *MemoryShowCmd) Run(a *App) error { return showMemory(a, c.ID, "") }

// MemoryEditCmd is `memory edit`.
type MemoryEditCmd struct {
	ID        string   `arg:"" help:"Memory id."`
	Category  *string  `short:"c" help:"New category (as memory add takes it)."`
	NewCat    bool     `name:"new-category" help:"Start a category outside the memory_categories setting."`
	Title     *string  `short:"t" help:"New title."`
	Summary   *string  `short:"s" help:"New summary (empty to clear)."`
	Content   *string  `help:"New content."`
	File      string   `short:"f" placeholder:"FILE|-" help:"Read the new content from FILE, or stdin with '-'."`
	Status    *string  `help:"New status: draft, active or archived."`
	AddTag    []string `name:"add-tag" sep:"none" help:"Add a tag (repeatable)."`
	RemoveTag []string `name:"remove-tag" sep:"none" help:"Remove a tag (repeatable)."`
	Task      *string  `help:"New related task id (empty to clear)."`
}

// Run applies the edit.
func (c *MemoryEditCmd) Run(a *App) error {
	content, set, err := readContent(a, c.Content, c.File)
	if err != nil {
		return err
	}
	p := memory.Patch{Category: c.Category, Title: c.Title, Summary: c.Summary, Status: c.Status, Task: c.Task,
		AddTags: c.AddTag, RemoveTags: c.RemoveTag}
	if set {
		p.Content = &content
	}
	if p.Empty() {
		return exitcode.New(exitcode.Usage, errors.New("nothing to change"), "give at least one of --title, --summary, --content, --file, --category, --status, --add-tag, --remove-tag, --task")
	}
	st, err := a.Store()
	if err != nil {
		return err
	}
	if c.Category != nil {
		if err := checkCategory(a, st, *c.Category, c.NewCat); err != nil {
			return err
		}
	}
	m, changed, err := memory.Update(a.Ctx, st, c.ID, p)
	if err != nil {
		return err
	}
	verb := "updated"
	if !changed {
		verb = "unchanged"
	}
	return showMemory(a, m.ID, verb)
}

// MemoryArchiveCmd is `memory archive`.
type MemoryArchiveCmd struct {
	IDs []string `arg:"" name:"id" help:"Memory ids."`
}

// Run archives each memory. Every id is resolved before anything changes.
func (c *MemoryArchiveCmd) Run(a *App) error {
	st, b, err := loadBank(a)
	if err != nil {
		return err
	}
	ids, err := resolveAll(b, c.IDs)
	if err != nil {
		return err
	}
	for _, id := range ids {
		_, changed, err := memory.Archive(a.Ctx, st, id)
		if err != nil {
			return err
		}
		verb := "archived"
		if !changed {
			verb = "already archived"
		}
		a.P.Notef("%s memory %s\n", verb, b.ShortID(id))
		switch {
		case a.G.Quiet:
			a.P.Printf("%s\n", id)
		case !a.G.JSON:
			a.P.Printf("%s\n", b.ShortID(id))
		}
	}
	if a.G.JSON {
		return printMemIDs(a, ids)
	}
	return nil
}

// resolveAll resolves every prefix or returns the first error.
func resolveAll(b *memory.Bank, prefixes []string) ([]string, error) {
	var ids []string
	for _, p := range prefixes {
		id, err := b.Resolve(p)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

func printMemIDs(a *App, ids []string) error {
	_, b, err := loadBank(a)
	if err != nil {
		return err
	}
	out := make([]memoryJSON, 0, len(ids))
	for _, id := range ids {
		out = append(out, memJSON(b, id))
	}
	return a.P.PrintJSON(out)
}

// MemoryRemoveCmd is `memory remove`.
type MemoryRemoveCmd struct {
	IDs []string `arg:"" name:"id" help:"Memory ids."`
}

// Run deletes each memory's ref. Every id is resolved before anything is
// removed; unreadable memories can be removed too.
func (c *MemoryRemoveCmd) Run(a *App) error {
	st, err := a.Store()
	if err != nil {
		return err
	}
	var ids []string
	for _, p := range c.IDs {
		id, err := st.Resolve(a.Ctx, memory.Kind, p)
		if err != nil {
			return err
		}
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	out := []memoryRemovedJSON{}
	for _, id := range ids {
		if _, err := memory.Remove(a.Ctx, st, id); err != nil {
			return err
		}
		out = append(out, memoryRemovedJSON{V: output.SchemaVersion, ID: id})
		a.P.Notef("removed memory %s\n", id)
		if !a.G.JSON {
			a.P.Printf("%s\n", id)
		}
	}
	if a.G.JSON {
		return a.P.PrintJSON(out)
	}
	return nil
}

// MemoryPreviewCmd is `memory preview`.
type MemoryPreviewCmd struct{}

// Run prints the prompt section built from the active memories.
func (c *MemoryPreviewCmd) Run(a *App) error {
	_, b, err := loadBank(a)
	if err != nil {
		return err
	}
	mems := b.Active()
	text := memory.PromptSection(mems)
	if a.G.JSON {
		out := memoryPreviewJSON{V: output.SchemaVersion, Text: text, Memories: []memoryPreviewEntryJSON{}}
		for _, m := range mems {
			name, _ := memory.FileName(m)
			out.Memories = append(out.Memories, memoryPreviewEntryJSON{ID: m.ID, Category: m.Category, Title: m.Title, Path: memory.SnapshotDir + "/" + name})
		}
		return a.P.PrintJSON(out)
	}
	if a.G.Quiet {
		for _, m := range mems {
			a.P.Printf("%s\n", m.ID)
		}
		return nil
	}
	if text == "" {
		a.P.Notef("no active memories: workers get no Memory Bank section\n")
		return nil
	}
	a.P.Printf("%s", text)
	return nil
}

// MemoryExportCmd is `memory export`.
type MemoryExportCmd struct {
	Dir    string `arg:"" help:"Directory to write <category>/<id>.md files into (created if missing)."`
	Status string `short:"s" help:"Only memories with this status (default: all)."`
}

// Run exports the memories.
func (c *MemoryExportCmd) Run(a *App) error {
	if c.Status != "" {
		if err := memory.ValidateStatus(c.Status); err != nil {
			return err
		}
	}
	_, b, err := loadBank(a)
	if err != nil {
		return err
	}
	var ms []memory.Memory
	for _, id := range b.IDs {
		if m := b.Memories[id].Memory; c.Status == "" || m.Status == c.Status {
			ms = append(ms, m)
		}
	}
	memory.Sort(ms)
	paths, err := memory.Export(c.Dir, ms)
	if err != nil {
		return exitcode.New(exitcode.Failed, err, "")
	}
	if a.G.JSON {
		out := memoryExportJSON{V: output.SchemaVersion, Dir: c.Dir, Files: []memoryExportEntryJSON{}}
		for i, p := range paths {
			out.Files = append(out.Files, memoryExportEntryJSON{ID: ms[i].ID, Path: p})
		}
		return a.P.PrintJSON(out)
	}
	for _, p := range paths {
		a.P.Printf("%s\n", p)
	}
	a.P.Notef("exported %s to %s\n", plural(len(paths), "memory", "memories"), c.Dir)
	return nil
}

// MemoryImportCmd is `memory import`.
type MemoryImportCmd struct {
	Dir string `arg:"" help:"Directory of <category>/<id>.md files (as written by export)."`
}

// Run imports the files.
func (c *MemoryImportCmd) Run(a *App) error {
	st, err := a.Store()
	if err != nil {
		return err
	}
	res, err := memory.Import(a.Ctx, st, c.Dir)
	if err != nil {
		return err
	}
	if a.G.JSON {
		out := memoryImportJSON{V: output.SchemaVersion, Files: res}
		if out.Files == nil {
			out.Files = []memory.ImportResult{}
		}
		return a.P.PrintJSON(out)
	}
	counts := map[string]int{}
	for _, r := range res {
		counts[r.Action]++
		if a.G.Quiet {
			a.P.Printf("%s\n", r.ID)
			continue
		}
		a.P.Printf("%-9s %s %s\n", r.Action, r.ID, r.Path)
	}
	a.P.Notef("imported %s: %d created, %d updated, %d unchanged\n", plural(len(res), "file", "files"), counts["created"], counts["updated"], counts["unchanged"])
	return nil
}

// checkCategory refuses a memory category outside the memory_categories
// setting that no memory uses yet, naming the ones it takes, unless
// newCategory asks to start it (memory.CheckCategory).
func checkCategory(a *App, st *gitstore.Store, category string, newCategory bool) error {
	if _, err := memory.ValidateCategory(category); err != nil || newCategory {
		return err
	}
	cfg, err := loadConfig(a, st, nil)
	if err != nil {
		return err
	}
	return memory.CheckCategory(a.Ctx, st, category, cfg.MemoryCategories, false)
}
