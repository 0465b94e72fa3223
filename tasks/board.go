package tasks

import (
	"context"
	"sort"

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
	docs, problems, err := st.List(ctx, Kind)
	if err != nil {
		return nil, err
	}
	b := &Board{Tasks: make(map[string]Entry, len(docs))}
	allIDs := make([]string, 0, len(docs)+len(problems))
	decoded := make([]Task, len(docs))
	errs := make([]error, len(docs))
	parallel.For(len(docs), func(i int) { decoded[i], errs[i] = Decode(docs[i].Data) })
	for i, d := range docs {
		allIDs = append(allIDs, d.ID)
		if errs[i] != nil {
			problems = append(problems, &gitstore.RefError{Ref: d.Ref, Err: errs[i]})
			continue
		}
		t := decoded[i]
		t.ID = d.ID
		b.Tasks[d.ID] = Entry{Task: t, Commit: d.Commit}
	}
	for id := range b.Tasks {
		b.IDs = append(b.IDs, id)
	}
	sort.Strings(b.IDs)
	b.Index = gitstore.NewIndex(Kind, allIDs, problems)
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
