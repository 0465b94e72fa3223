package memory

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/tasks"
)

// SnapshotDir is where a worker's worktree holds the Memory Bank snapshot,
// relative to the top of the worktree.
const SnapshotDir = ".agentmine/memory"

// WriteSnapshot writes every memory in mems as a read-only file (mode 0444)
// <dir>/.agentmine/memory/<category>/<id>.md, in the same form as export.
// dir is the top of a worker's worktree. It returns the written paths,
// relative to dir and slash-separated, in the order of mems.
//
// The worktree's scope has usually made .agentmine read-only already (the
// worker may not write there): a read-only directory on the way is given
// its owner's write permission for the write and has its mode restored
// afterwards, and a directory created beneath a read-only one is read-only
// too, so the snapshot does not open a writable hole in a read-only tree.
// Directories beneath writable ones are created writable (0755). Root
// ignores mode bits, so only a normal user sees the difference. It refuses
// to write through a symbolic link (a repository could commit .agentmine as
// a link pointing elsewhere) and overwrites earlier snapshot files of the
// same memories.
func WriteSnapshot(dir string, mems []Memory) (paths []string, err error) {
	for _, m := range mems {
		name, err := FileName(m)
		if err != nil {
			return nil, fmt.Errorf("writing memory snapshot: %w", err)
		}
		rel := SnapshotDir + "/" + name
		if err := writeFileNoLinks(dir, rel, Render(m), 0o444, true); err != nil {
			return nil, fmt.Errorf("writing memory snapshot: %w", err)
		}
		paths = append(paths, rel)
	}
	return paths, nil
}

// writeFileNoLinks writes root/rel with the given mode, creating parent
// directories (0755), refusing symbolic links on the way and replacing an
// existing file even when it is read-only. With unlock, a read-only
// directory it must write in (to create a directory or the file) is made
// writable by its owner for the write and gets its mode back afterwards,
// and the directories it creates beneath a read-only one end read-only;
// without it, a read-only directory fails the write as usual.
func writeFileNoLinks(root, rel string, data []byte, mode fs.FileMode, unlock bool) (err error) {
	if !cleanRel(rel) {
		return fmt.Errorf("refusing path %q outside %s", rel, root)
	}
	// relock holds the directories to make read-only again, with the mode
	// each gets back, in the order they were opened; they are closed in
	// reverse (deepest first), also after a failure.
	type lock struct {
		dir  string
		mode fs.FileMode
	}
	var relock []lock
	defer func() {
		for i := len(relock) - 1; i >= 0; i-- {
			if cerr := os.Chmod(relock[i].dir, relock[i].mode); cerr != nil && err == nil {
				err = cerr
			}
		}
	}()
	// open makes dir writable for the write when unlock allows it, and
	// reports whether it was read-only.
	open := func(dir string) (bool, error) {
		fi, err := os.Lstat(dir)
		if err != nil {
			return false, err
		}
		perm := fi.Mode().Perm()
		if !unlock || perm&0o200 != 0 {
			return false, nil
		}
		if err := os.Chmod(dir, perm|0o200); err != nil {
			return false, err
		}
		relock = append(relock, lock{dir, perm})
		return true, nil
	}
	segs := strings.Split(rel, "/")
	cur := root
	// locked is true when the directory cur is read-only as found, or was
	// created beneath one that is.
	locked := false
	if fi, err := os.Stat(root); err == nil {
		locked = fi.Mode().Perm()&0o200 == 0
	}
	for i, s := range segs {
		parent := cur
		cur = filepath.Join(cur, s)
		fi, err := os.Lstat(cur)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if i < len(segs)-1 {
				if _, err := open(parent); err != nil {
					return err
				}
				if err := os.Mkdir(cur, 0o755); err != nil {
					return err
				}
				if locked && unlock {
					// A new directory beneath a read-only one ends
					// read-only, as the scope made its parent.
					relock = append(relock, lock{cur, 0o555})
				}
			}
		case err != nil:
			return err
		case fi.Mode()&fs.ModeSymlink != 0:
			return fmt.Errorf("refusing to write through symbolic link %s", cur)
		case i < len(segs)-1 && !fi.IsDir():
			return fmt.Errorf("%s is not a directory", cur)
		case i == len(segs)-1 && !fi.Mode().IsRegular():
			return fmt.Errorf("%s is not a regular file", cur)
		case i < len(segs)-1:
			locked = fi.Mode().Perm()&0o200 == 0
		}
	}
	if _, err := open(filepath.Dir(cur)); err != nil {
		return err
	}
	// Write a temporary file and rename it over the old one, so a read-only
	// earlier copy is replaced without changing its mode first.
	tmp, err := os.CreateTemp(filepath.Dir(cur), ".tmp-memory-*")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(data)
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Chmod(tmp.Name(), mode)
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), cur)
	}
	if werr != nil {
		os.Remove(tmp.Name())
		return werr
	}
	return nil
}

// PromptSection returns the Memory Bank section of a worker's prompt: a
// heading, one line per memory with its category, title and snapshot file
// path (relative to the top of the worktree, as WriteSnapshot writes it)
// and its summary indented below — never the full text, which the worker
// reads from the file when it needs it. A memory without a summary shows
// the first line of its content. mems are listed in Sort order; no
// memories give "". `git agentmine memory preview` prints exactly this.
func PromptSection(mems []Memory) string {
	if len(mems) == 0 {
		return ""
	}
	ms := slices.Clone(mems)
	Sort(ms)
	var b strings.Builder
	b.WriteString("## Memory Bank\n\n")
	b.WriteString("Project decisions you must follow. Each entry is a summary; the full text is in the\n")
	b.WriteString("read-only file named after it (paths relative to the top of this worktree). Read the\n")
	b.WriteString("file before you act on a decision it covers.\n\n")
	for _, m := range ms {
		name, err := FileName(m)
		if err != nil {
			continue
		}
		fmt.Fprintf(&b, "- [%s] %s (%s/%s)\n", m.Category, m.Title, SnapshotDir, name)
		sum := m.Summary
		if sum == "" {
			sum = firstContentLine(m.Content)
		}
		for _, l := range strings.Split(sum, "\n") {
			if l = strings.TrimRight(l, " \t"); l != "" {
				fmt.Fprintf(&b, "  %s\n", l)
			}
		}
	}
	return b.String()
}

// firstContentLine returns the first non-empty line of Markdown content,
// without heading marks, cut to 200 characters.
func firstContentLine(c string) string {
	for _, l := range strings.Split(c, "\n") {
		l = strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(l), "#"))
		if l == "" {
			continue
		}
		if r := []rune(l); len(r) > 200 {
			l = string(r[:200]) + "…"
		}
		return l
	}
	return ""
}

// Export writes each memory to <dir>/<category>/<id>.md (mode 0644),
// creating directories, replacing files of the same name and leaving other
// files alone. It returns the written paths relative to dir.
func Export(dir string, mems []Memory) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("exporting memories: %w", err)
	}
	var paths []string
	for _, m := range mems {
		name, err := FileName(m)
		if err != nil {
			return paths, fmt.Errorf("exporting memory %s: %w", m.ID, err)
		}
		if err := writeFileNoLinks(dir, name, Render(m), 0o644, false); err != nil {
			return paths, fmt.Errorf("exporting memory %s: %w", m.ID, err)
		}
		paths = append(paths, name)
	}
	return paths, nil
}

// ImportResult is what happened to one imported file.
type ImportResult struct {
	// Path is the file, relative to the import directory.
	Path string `json:"path"`
	ID   string `json:"id"`
	// Action is "created", "updated" or "unchanged".
	Action string `json:"action"`
}

type planned struct {
	path   string
	m      Memory
	has    map[string]bool
	exists bool
}

// Import reads every *.md file under dir (recursively) in the export format
// and stores it. Everything is parsed and checked before anything is
// written, so bad input changes nothing. A file with an id creates that
// memory if it is new here, or replaces its fields (stamping the update) if
// they differ; a file without an id creates a new memory. A missing
// category is taken from the file's directory; a missing status is
// DefaultStatus; missing stamps are now. A related task given as a full id
// is kept even if this clone lacks the task; a prefix must resolve.
func Import(ctx context.Context, st *gitstore.Store, dir string) ([]ImportResult, error) {
	files, err := markdownFiles(dir)
	if err != nil {
		return nil, err
	}
	bank, err := Load(ctx, st)
	if err != nil {
		return nil, err
	}
	im := importer{ctx: ctx, st: st, bank: bank, seen: map[string]string{}}
	var plan []planned
	for _, rel := range files {
		pl, err := im.plan(dir, rel)
		if err != nil {
			return nil, err
		}
		plan = append(plan, pl)
	}
	now := Stamp(gitstore.Stamp(st))
	var out []ImportResult
	for _, pl := range plan {
		res, err := importOne(ctx, st, pl, now)
		if err != nil {
			return out, fmt.Errorf("importing %s: %w", pl.path, err)
		}
		out = append(out, res)
	}
	return out, nil
}

// markdownFiles lists the .md files under dir, slash-separated and
// relative to dir, in order.
func markdownFiles(dir string) ([]string, error) {
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() {
		return nil, exitcode.New(exitcode.NotFound, fmt.Errorf("import directory %s does not exist", dir), "")
	}
	var files []string
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() && strings.HasSuffix(d.Name(), ".md") {
			rel, err := filepath.Rel(dir, p)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading import directory: %w", err)
	}
	sort.Strings(files)
	return files, nil
}

// importer checks the files of one import before any is written.
type importer struct {
	ctx  context.Context
	st   *gitstore.Store
	bank *Bank
	// seen maps each id given in a file to that file.
	seen map[string]string
	// taskIDs are the task ids, read once when a file names a short one.
	taskIDs []string
}

// plan reads and checks the file rel of dir.
func (im *importer) plan(dir, rel string) (planned, error) {
	data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
	if err != nil {
		return planned{}, fmt.Errorf("reading %s: %w", rel, err)
	}
	p, err := Parse(rel, data)
	if err != nil {
		return planned{}, err
	}
	m := p.Memory
	bad := func(format string, a ...any) error {
		return exitcode.New(exitcode.Usage, fmt.Errorf("%s: %s", rel, fmt.Sprintf(format, a...)), "")
	}
	if !p.Has["category"] {
		d := path.Dir(rel)
		if d == "." || strings.Contains(d, "/") {
			return planned{}, bad("no category (give one in the front matter, or put the file in a <category>/ directory)")
		}
		if m.Category, err = ValidateCategory(d); err != nil {
			return planned{}, bad("%v", err)
		}
	}
	if err := validateImported(&m); err != nil {
		return planned{}, bad("%v", err)
	}
	if m.Task != "" && !ValidFullID(m.Task) {
		if im.taskIDs == nil {
			if im.taskIDs, err = im.st.IDs(im.ctx, tasks.Kind); err != nil {
				return planned{}, err
			}
		}
		id, err := gitstore.ResolveIn(tasks.Kind, im.taskIDs, m.Task)
		if err != nil {
			return planned{}, bad("related task: %v", err)
		}
		m.Task = id
	}
	exists := false
	if m.ID != "" {
		if other, dup := im.seen[m.ID]; dup {
			return planned{}, bad("id %s is also used by %s", m.ID, other)
		}
		im.seen[m.ID] = rel
		if im.bank.Has(m.ID) {
			if _, readable := im.bank.Memories[m.ID]; !readable {
				return planned{}, exitcode.New(exitcode.State, fmt.Errorf("%s: %w", rel, &gitstore.UnreadableError{Noun: Kind.Noun, ID: m.ID, Err: im.bank.ProblemFor(Kind, m.ID)}), "")
			}
			exists = true
		}
	}
	m.V = SchemaVersion
	m.normalize()
	return planned{path: rel, m: m, has: p.Has, exists: exists}, nil
}

// validateImported checks and normalises the title, summary, status and
// tags of an imported memory.
func validateImported(m *Memory) error {
	var err error
	if m.Title, err = ValidateTitle(m.Title); err != nil {
		return err
	}
	m.Summary = NormalizeSummary(m.Summary)
	if m.Status == "" {
		m.Status = DefaultStatus
	}
	if err := ValidateStatus(m.Status); err != nil {
		return err
	}
	for _, t := range m.Tags {
		if err := ValidateTag(t); err != nil {
			return err
		}
	}
	return nil
}

// importOne writes one checked file: an update of the memory with its id,
// or a new memory stamped now where the file gives no times.
func importOne(ctx context.Context, st *gitstore.Store, pl planned, now Stamp) (ImportResult, error) {
	m := pl.m
	if pl.exists {
		mm, changed, err := apply(ctx, st, m.ID, "memory import", func(cur *Memory) {
			created, updated := cur.Created, cur.Updated
			*cur = m
			cur.Created, cur.Updated = created, updated
		})
		if err != nil {
			return ImportResult{}, err
		}
		action := "unchanged"
		if changed {
			action = "updated"
		}
		return ImportResult{Path: pl.path, ID: mm.ID, Action: action}, nil
	}
	if m.ID == "" {
		m.ID = gitstore.NewID()
	}
	if !pl.has["created"] {
		m.Created.Time = now.Time
	}
	if !pl.has["created_by"] {
		m.Created.Author = now.Author
	}
	if !pl.has["updated"] {
		m.Updated.Time = now.Time
	}
	if !pl.has["updated_by"] {
		m.Updated.Author = now.Author
	}
	if err := create(ctx, st, m, "memory import: "+m.Title); err != nil {
		return ImportResult{}, err
	}
	return ImportResult{Path: pl.path, ID: m.ID, Action: "created"}, nil
}
