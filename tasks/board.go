package tasks

import (
	"context"
	"fmt"
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
	// Short maps canonical ids to their shortest unique prefix.
	Short map[string]string
	// Problems are refs that could not be read; the other tasks still list.
	Problems []error
}

// Load reads every task with one batched read.
func Load(ctx context.Context, st *gitstore.Store) (*Board, error) {
	docs, problems, err := st.List(ctx, Kind)
	if err != nil {
		return nil, err
	}
	b := &Board{Tasks: make(map[string]Entry, len(docs)), Problems: problems}
	allIDs := make([]string, 0, len(docs)+len(problems))
	decoded := make([]Task, len(docs))
	errs := make([]error, len(docs))
	parallel.For(len(docs), func(i int) { decoded[i], errs[i] = Decode(docs[i].Data) })
	for i, d := range docs {
		allIDs = append(allIDs, d.ID)
		if errs[i] != nil {
			b.Problems = append(b.Problems, &gitstore.RefError{Ref: d.Ref, Err: errs[i]})
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
	sort.Strings(allIDs)
	b.Short = gitstore.ShortIDs(allIDs)
	return b, nil
}

// Resolve turns an id or unique prefix into a canonical id of a readable task.
func (b *Board) Resolve(prefix string) (string, error) {
	ids := make([]string, 0, len(b.Short))
	for id := range b.Short {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	id, err := gitstore.ResolveIn(Kind, ids, prefix)
	if err != nil {
		return "", err
	}
	if _, ok := b.Tasks[id]; !ok {
		return "", fmt.Errorf("task %s cannot be read: %w", b.Short[id], b.problemFor(id))
	}
	return id, nil
}

func (b *Board) problemFor(id string) error {
	for _, p := range b.Problems {
		if re, ok := p.(*gitstore.RefError); ok && re.Ref == Kind.Ref(id) {
			return re.Err
		}
	}
	return fmt.Errorf("unreadable")
}

// ShortID returns the display form of id.
func (b *Board) ShortID(id string) string {
	if s, ok := b.Short[id]; ok {
		return s
	}
	if len(id) > gitstore.MinPrefix+4 {
		return id[:gitstore.MinPrefix+4]
	}
	return id
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
