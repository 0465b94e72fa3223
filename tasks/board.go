package tasks

import (
	"context"
	"errors"
	"slices"
	"sort"
	"strings"

	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/parallel"
)

// Entry is a task as read from the store, with the commit it was read at.
type Entry struct {
	Task   Task
	Commit string
}

// Board is every task in the repository, read in one batch.
type Board struct {
	// Tasks maps canonical id to entry.
	Tasks map[string]Entry
	// IDs holds every canonical id, sorted.
	IDs []string
	// Index holds every listed id (readable or not), the short forms and
	// the refs that could not be read.
	gitstore.Index
}

// Load reads every task with one batched read.
func Load(ctx context.Context, st *gitstore.Store) (*Board, error) {
	// The documents come a chunk at a time (gitstore's ListEach), each
	// chunk decoded on every core and let go: a cold read of a hundred
	// thousand tasks holds one chunk of documents beside the board, not
	// all of them.
	var b *Board
	var bad []error
	var decoded []Task
	var errs []error
	var strs compacter
	problems, err := st.ListEach(ctx, Kind, func(total int, docs []gitstore.Doc) {
		if b == nil {
			b = &Board{Tasks: make(map[string]Entry, total), IDs: make([]string, 0, total)}
		}
		decoded = slices.Grow(decoded[:0], len(docs))[:len(docs)]
		errs = slices.Grow(errs[:0], len(docs))[:len(docs)]
		parallel.For(len(docs), func(i int) { errs[i] = decodeTo(&decoded[i], docs[i].Data) })
		strs.compact(decoded)
		for i, d := range docs {
			if errs[i] != nil {
				bad = append(bad, &gitstore.RefError{Ref: d.Ref, Err: errs[i]})
				continue
			}
			t := decoded[i]
			t.ID = d.ID
			b.Tasks[d.ID] = Entry{Task: t, Commit: d.Commit}
			b.IDs = append(b.IDs, d.ID)
		}
	})
	if err != nil {
		return nil, err
	}
	if b == nil {
		b = &Board{Tasks: map[string]Entry{}}
	}
	if len(b.IDs) == 0 {
		b.IDs = nil
	}
	problems = append(problems, bad...)
	// The documents come in the packs' order: sorted once here, and the
	// index lists the same ids (a task that could not be decoded is a
	// RefError among problems, which the index adds), so it need not sort
	// them again.
	slices.Sort(b.IDs)
	b.Index = gitstore.NewIndex(Kind, b.IDs, problems)
	return b, nil
}

// Resolve turns an id or unique prefix into a canonical id of a readable task.
func (b *Board) Resolve(prefix string) (string, error) {
	return b.Index.Resolve(Kind, prefix, func(id string) bool { _, ok := b.Tasks[id]; return ok })
}

// Children returns the ids of the tasks whose parent is id, sorted.
func (b *Board) Children(id string) []string {
	var out []string
	for _, cid := range b.IDs {
		if b.Tasks[cid].Task.Parent == id {
			out = append(out, cid)
		}
	}
	return out
}

// NearPatterns returns the for-each-ref patterns LoadNear lists first for
// prefix, or nil when prefix is no valid id or prefix.
func NearPatterns(prefix string) []string {
	p := strings.ToLower(strings.TrimSpace(prefix))
	if !gitstore.ValidID(p) {
		return nil
	}
	patterns, _ := gitstore.NearPatterns(Kind, []string{p})
	return patterns
}

// LoadNear reads the one task prefix names (any unique prefix), its
// blockers and its parent, without reading the rest of the board: the
// documents whose ids share their first digits with any of those (the only
// ids that can make a prefix ambiguous or lengthen a short form). refs and
// commits are the refs near prefix as gitstore's TipList lists them (a
// listing holding at least NearPatterns(prefix); other refs are ignored),
// so that a caller lists them in the same for-each-ref as other refs it
// needs. Blockers and a parent elsewhere cost one more for-each-ref; the
// documents cost one or two cat-file calls, whatever the number of tasks.
// The board's Tasks hold the task, its blockers and its parent (those that
// exist and read); its Index holds every id read, so Resolve and ShortID
// answer as on the whole board for those tasks. It returns the task's id.
func LoadNear(ctx context.Context, st *gitstore.Store, prefix string, refs, commits []string) (*Board, string, error) {
	p := strings.ToLower(strings.TrimSpace(prefix))
	if !gitstore.ValidID(p) {
		// the whole board's answer to a malformed id
		_, err := gitstore.ResolveIn(Kind, nil, prefix)
		return nil, "", err
	}
	docs, problems, err := st.ListNearIn(ctx, Kind, []string{p}, refs, commits)
	if err != nil {
		return nil, "", err
	}
	all := map[string]Entry{}
	var ids []string
	decode := func(docs []gitstore.Doc) {
		for _, d := range docs {
			ids = append(ids, d.ID)
			t, err := Decode(d.Data)
			if err != nil {
				problems = append(problems, &gitstore.RefError{Ref: d.Ref, Err: err})
				continue
			}
			t.ID = d.ID
			all[d.ID] = Entry{Task: t, Commit: d.Commit}
		}
	}
	decode(docs)
	b := &Board{Index: gitstore.NewIndex(Kind, ids, problems)}
	id, err := b.Index.Resolve(Kind, p, func(id string) bool { _, ok := all[id]; return ok })
	if err != nil {
		return nil, "", err
	}
	t := all[id].Task
	related := append([]string{id}, t.BlockedBy...)
	if t.Parent != "" {
		related = append(related, t.Parent)
	}
	var more []string
	for _, r := range related[1:] {
		if _, ok := all[r]; !ok && gitstore.ValidID(r) {
			more = append(more, r)
		}
	}
	if len(more) > 0 {
		docs, extra, err := st.ListNear(ctx, Kind, more)
		if err != nil {
			return nil, "", err
		}
		problems = append(problems, extra...)
		var fresh []gitstore.Doc
		for _, d := range docs {
			if _, ok := all[d.ID]; !ok {
				fresh = append(fresh, d)
			}
		}
		decode(fresh)
	}
	b.Tasks = map[string]Entry{}
	for _, r := range related {
		if e, ok := all[r]; ok {
			b.Tasks[r] = e
		}
	}
	for r := range b.Tasks {
		b.IDs = append(b.IDs, r)
	}
	sort.Strings(b.IDs)
	b.Index = gitstore.NewIndex(Kind, ids, dedupProblems(problems))
	return b, id, nil
}

// dedupProblems drops problems naming a ref already named (a document read
// twice when two prefixes share their first digits).
func dedupProblems(ps []error) []error {
	seen := map[string]bool{}
	var out []error
	for _, p := range ps {
		var re *gitstore.RefError
		if errors.As(p, &re) {
			if seen[re.Ref] {
				continue
			}
			seen[re.Ref] = true
		}
		out = append(out, p)
	}
	return out
}
