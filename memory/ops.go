package memory

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/tasks"
)

// Entry is a memory as read from the store, with the commit it was read at.
type Entry struct {
	Memory Memory
	Commit string
}

// Bank is every memory in the repository, read in one batch.
type Bank struct {
	// Memories maps canonical id to entry.
	Memories map[string]Entry
	// IDs holds the canonical id of every readable memory, sorted.
	IDs []string
	// Index holds every listed id (readable or not), the short forms and
	// the refs that could not be read (each a *gitstore.RefError
	// naming the ref); the other memories still list.
	gitstore.Index
}

// Load reads every memory with one batched read.
func Load(ctx context.Context, st *gitstore.Store) (*Bank, error) {
	docs, problems, err := st.List(ctx, Kind)
	if err != nil {
		return nil, err
	}
	b := &Bank{Memories: make(map[string]Entry, len(docs))}
	var all []string
	for _, d := range docs {
		all = append(all, d.ID)
		if !ValidFullID(d.ID) {
			problems = append(problems, &gitstore.RefError{Ref: d.Ref, Err: fmt.Errorf("malformed memory id %q", d.ID)})
			continue
		}
		m, err := Decode(d.Data)
		if err != nil {
			problems = append(problems, &gitstore.RefError{Ref: d.Ref, Err: err})
			continue
		}
		m.ID = d.ID
		b.Memories[d.ID] = Entry{Memory: m, Commit: d.Commit}
		b.IDs = append(b.IDs, d.ID)
	}
	sort.Strings(b.IDs)
	b.Index = gitstore.NewIndex(Kind, all, problems)
	return b, nil
}

// Resolve turns an id or unique prefix into the canonical id of a readable
// memory.
func (b *Bank) Resolve(prefix string) (string, error) {
	return b.Index.Resolve(Kind, prefix, func(id string) bool { _, ok := b.Memories[id]; return ok })
}

// Active returns the bank's active memories in prompt order (see Sort).
func (b *Bank) Active() []Memory {
	var out []Memory
	for _, id := range b.IDs {
		if m := b.Memories[id].Memory; m.Status == StatusActive {
			out = append(out, m)
		}
	}
	Sort(out)
	return out
}

// Active returns the active memories of the repository in prompt order: the
// ones a worker receives. Unreadable memory refs are skipped; Load reports
// them as Problems.
func Active(ctx context.Context, st *gitstore.Store) ([]Memory, error) {
	b, err := Load(ctx, st)
	if err != nil {
		return nil, fmt.Errorf("reading the memory bank: %w", err)
	}
	return b.Active(), nil
}

// Sort orders memories by category, then title, then id.
func Sort(ms []Memory) {
	slices.SortFunc(ms, func(a, b Memory) int {
		return cmp.Or(cmp.Compare(a.Category, b.Category), cmp.Compare(a.Title, b.Title), cmp.Compare(a.ID, b.ID))
	})
}

// New holds the fields of a memory to create. Task may be an id prefix.
type New struct {
	Category string
	Title    string
	Summary  string
	Content  string
	// Status defaults to DefaultStatus.
	Status string
	Tags   []string
	Task   string
}

// Add creates a memory.
func Add(ctx context.Context, st *gitstore.Store, n New) (Memory, error) {
	cat, err := ValidateCategory(n.Category)
	if err != nil {
		return Memory{}, err
	}
	title, err := ValidateTitle(n.Title)
	if err != nil {
		return Memory{}, err
	}
	if n.Status == "" {
		n.Status = DefaultStatus
	}
	if err := ValidateStatus(n.Status); err != nil {
		return Memory{}, err
	}
	for _, t := range n.Tags {
		if err := ValidateTag(t); err != nil {
			return Memory{}, err
		}
	}
	task := ""
	if n.Task != "" {
		if task, err = st.Resolve(ctx, tasks.Kind, n.Task); err != nil {
			return Memory{}, fmt.Errorf("related task: %w", err)
		}
	}
	now := Stamp(gitstore.Stamp(st))
	m := Memory{V: SchemaVersion, ID: gitstore.NewID(), Category: cat, Title: title, Summary: NormalizeSummary(n.Summary),
		Content: NormalizeContent(n.Content), Status: n.Status, Tags: slices.Clone(n.Tags), Task: task, Created: now, Updated: now}
	m.normalize()
	if err := create(ctx, st, m, "memory add: "+m.Title); err != nil {
		return Memory{}, err
	}
	return m, nil
}

// create stores a complete new document, guarded by the related task's ref
// when that task exists here (so it cannot vanish meanwhile; an imported
// memory may name a task this clone does not have).
func create(ctx context.Context, st *gitstore.Store, m Memory, msg string) error {
	_, err := st.CreateWith(ctx, Kind, m.ID, func() (gitstore.Change, error) {
		ch := gitstore.Change{Data: m.Encode(), Message: msg}
		if m.Task != "" {
			if d, err := st.Get(ctx, tasks.Kind, m.Task); err == nil {
				ch.Verify = []gitstore.RefState{{Ref: d.Ref, Commit: d.Commit}}
			}
		}
		return ch, nil
	})
	if err != nil {
		return fmt.Errorf("adding memory: %w", err)
	}
	return nil
}

// Patch is an edit. Nil pointers and empty lists leave fields alone; it is
// re-applied to the latest state on every retry, so concurrent edits of
// different fields (or different tags) all take effect.
type Patch struct {
	Category, Title, Summary, Content, Status *string
	// Task sets the related task (an id prefix); a pointer to "" clears it.
	Task                *string
	AddTags, RemoveTags []string
}

// Empty reports whether the patch changes nothing.
func (p Patch) Empty() bool {
	return p.Category == nil && p.Title == nil && p.Summary == nil && p.Content == nil && p.Status == nil &&
		p.Task == nil && len(p.AddTags) == 0 && len(p.RemoveTags) == 0
}

func (p *Patch) validate(ctx context.Context, st *gitstore.Store) error {
	if p.Category != nil {
		c, err := ValidateCategory(*p.Category)
		if err != nil {
			return err
		}
		p.Category = &c
	}
	if p.Title != nil {
		t, err := ValidateTitle(*p.Title)
		if err != nil {
			return err
		}
		p.Title = &t
	}
	if p.Summary != nil {
		s := NormalizeSummary(*p.Summary)
		p.Summary = &s
	}
	if p.Content != nil {
		c := NormalizeContent(*p.Content)
		p.Content = &c
	}
	if p.Status != nil {
		if err := ValidateStatus(*p.Status); err != nil {
			return err
		}
	}
	for _, t := range append(slices.Clone(p.AddTags), p.RemoveTags...) {
		if err := ValidateTag(t); err != nil {
			return err
		}
	}
	if p.Task != nil && *p.Task != "" {
		id, err := st.Resolve(ctx, tasks.Kind, *p.Task)
		if err != nil {
			return fmt.Errorf("related task: %w", err)
		}
		p.Task = &id
	}
	return nil
}

// Update applies patch to memory prefix (any unique id prefix). It returns
// the memory after the update and whether anything changed.
func Update(ctx context.Context, st *gitstore.Store, prefix string, p Patch) (Memory, bool, error) {
	if err := p.validate(ctx, st); err != nil {
		return Memory{}, false, err
	}
	id, err := resolve(ctx, st, prefix)
	if err != nil {
		return Memory{}, false, err
	}
	op := "memory edit"
	if p.Status != nil && *p.Status == StatusArchived && p.Category == nil && p.Title == nil && p.Content == nil {
		op = "memory archive"
	}
	return apply(ctx, st, id, op, func(m *Memory) {
		set := func(dst *string, v *string) {
			if v != nil {
				*dst = *v
			}
		}
		set(&m.Category, p.Category)
		set(&m.Title, p.Title)
		set(&m.Summary, p.Summary)
		set(&m.Content, p.Content)
		set(&m.Status, p.Status)
		set(&m.Task, p.Task)
		m.Tags = append(m.Tags, p.AddTags...)
		m.Tags = slices.DeleteFunc(m.Tags, func(t string) bool { return slices.Contains(p.RemoveTags, t) })
	})
}

// Archive sets a memory's status to archived: it stays in the bank and its
// history but no longer reaches workers.
func Archive(ctx context.Context, st *gitstore.Store, prefix string) (Memory, bool, error) {
	s := StatusArchived
	return Update(ctx, st, prefix, Patch{Status: &s})
}

// resolve resolves an id prefix against every memory ref, readable or not.
func resolve(ctx context.Context, st *gitstore.Store, prefix string) (string, error) {
	return st.Resolve(ctx, Kind, prefix)
}

// apply runs a mutation on the latest document through the store's
// compare-and-swap loop, stamping Updated when anything changed.
func apply(ctx context.Context, st *gitstore.Store, id, op string, mutate func(m *Memory)) (Memory, bool, error) {
	now := Stamp(gitstore.Stamp(st))
	var out Memory
	doc, changed, err := st.Update(ctx, Kind, id, func(cur gitstore.Doc) (gitstore.Change, error) {
		m, err := Decode(cur.Data)
		if err != nil {
			return gitstore.Change{}, fmt.Errorf("%s: %w", cur.Ref, err)
		}
		m.ID = id
		before := string(m.Encode())
		mutate(&m)
		m.normalize()
		out = m
		if string(m.Encode()) == before {
			return gitstore.Change{}, gitstore.ErrNoChange
		}
		m.Updated = now
		out = m
		return gitstore.Change{Data: m.Encode(), Message: op + ": " + m.Title}, nil
	})
	if err != nil {
		return Memory{}, false, err
	}
	if !changed {
		if m, derr := Decode(doc.Data); derr == nil {
			m.ID = id
			out = m
		}
	}
	return out, changed, nil
}

// Remove deletes a memory's ref (its history goes with it once git collects
// garbage). It works on unreadable memories too, so a corrupt or too-new
// document can be cleared away. It returns the canonical id removed.
func Remove(ctx context.Context, st *gitstore.Store, prefix string) (string, error) {
	id, err := resolve(ctx, st, prefix)
	if err != nil {
		return "", err
	}
	obj, err := st.Git().Output(ctx, "rev-parse", "--verify", "-q", Kind.Ref(id))
	if err != nil {
		return "", exitcode.New(exitcode.NotFound, fmt.Errorf("memory %s not found", id), "")
	}
	if err := st.Delete(ctx, Kind, id, obj); err != nil {
		if errors.Is(err, gitstore.ErrConflict) {
			return "", exitcode.New(exitcode.State, fmt.Errorf("memory %s changed while it was being removed", id), "look at it again, then retry")
		}
		return "", fmt.Errorf("removing memory %s: %w", id, err)
	}
	return id, nil
}
