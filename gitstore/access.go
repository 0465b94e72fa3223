package gitstore

import (
	"context"
	"fmt"
	"strings"

	"github.com/git-agentmine/git-agentmine/gitcmd"
	"github.com/git-agentmine/git-agentmine/parallel"
)

// The primitives below let other packages that own part of the state (sync
// in replica, landing a task in merge, removing a worker's branch) build
// on the store without writing objects or refs themselves: every object
// write goes through WriteObject, WriteObjects or CommitTree and every ref
// write through Transact (`git update-ref --stdin` with expected old
// values).

// WriteObject stores an object of type typ ("blob", "tree", "commit") and
// returns its id.
func (s *Store) WriteObject(ctx context.Context, typ string, data []byte) (string, error) {
	return s.writeObject(ctx, typ, data)
}

// HashLen returns the length in bytes of the repository's object ids (20 for
// SHA-1, 32 for SHA-256), as they appear in raw tree entries.
func (s *Store) HashLen() int { return s.hashLen() }

// PackRefs packs loose refs (design §2: pack refs after bulk writes). git's
// pack-refs takes its own locks and is safe next to concurrent writers.
func (s *Store) PackRefs(ctx context.Context) error {
	if _, err := s.git.Run(ctx, "pack-refs", "--all"); err != nil {
		return fmt.Errorf("packing refs: %w", err)
	}
	return nil
}

// SetConfig sets a git config value in this repository and in the store's
// view of the configuration.
func (s *Store) SetConfig(ctx context.Context, key, value string) error {
	if _, err := s.git.Run(ctx, "config", key, value); err != nil {
		return fmt.Errorf("setting %s: %w", key, err)
	}
	s.NoteConfig(key, value)
	return nil
}

// Object is one object read by a Batch.
type Object struct {
	// Type is "commit", "tree", "blob" or "tag".
	Type string
	// Data is the object's raw content.
	Data []byte
	// Missing is true when no such object exists.
	Missing bool
}

// Batch reads objects through one long-lived `git cat-file --batch`
// process. It is not safe for concurrent use; Close it when done.
type Batch struct{ cf *catFile }

// OpenBatch starts a batch object reader.
func (s *Store) OpenBatch(ctx context.Context) (*Batch, error) {
	cf := s.catFile(ctx)
	return &Batch{cf: cf}, nil
}

// ReadMany reads the named objects (ids or any name cat-file accepts) in
// one pipelined round trip and returns them in order.
func (b *Batch) ReadMany(names []string) ([]Object, error) {
	if len(names) == 0 {
		return nil, nil
	}
	objs, err := b.cf.getMany(names)
	if err != nil {
		return nil, err
	}
	out := make([]Object, len(objs))
	for i, o := range objs {
		out[i] = Object{Type: o.typ, Data: o.data, Missing: o.missing}
	}
	return out, nil
}

// ReadOwn reads the named objects (full ids) from this repository's own
// object directory, in-process, and never asks git: an object it does not
// find there is answered Missing, though it may still be in an alternate,
// in a pack written meanwhile, or in a form the in-process reader does not
// read. It answers "which of these must be fetched" without starting
// `git cat-file` to be told, one object at a time, that each new tip is
// absent (git looks at the pack directory again for every miss): a fetch
// of an object that turns out to be there costs nothing, and what the
// fetch left is then read with ReadMany, which asks git about the rest.
// Where every read goes to git (AGENTMINE_GIT_READS=1), it is ReadMany.
func (b *Batch) ReadOwn(ids []string) ([]Object, error) {
	if b.cf.st.objects() == nil {
		return b.ReadMany(ids)
	}
	out := make([]Object, len(ids))
	parallel.For(len(ids), func(i int) {
		o, ok := b.cf.st.readLocal(ids[i])
		out[i] = Object{Type: o.typ, Data: o.data, Missing: !ok || o.missing}
	})
	return out, nil
}

// HaveOwn reports for each full id whether this repository's own object
// directory holds it (a pack index lists it, or its loose file is there),
// in-process and without reading it. As with ReadOwn, false means "not
// found here", not "absent": sync asks it which tips to fetch, and which
// arrived, without inflating each one to be told. Where every read goes to
// git (AGENTMINE_GIT_READS=1), it asks ReadMany.
func (b *Batch) HaveOwn(ids []string) ([]bool, error) {
	out := make([]bool, len(ids))
	db := b.cf.st.objects()
	if db == nil {
		objs, err := b.ReadMany(ids)
		if err != nil {
			return nil, err
		}
		for i, o := range objs {
			out[i] = !o.Missing
		}
		return out, nil
	}
	for i, id := range ids {
		out[i] = db.haveHex(id)
	}
	return out, nil
}

// Close ends the cat-file process.
func (b *Batch) Close() { b.cf.close() }

// CommitTree writes a commit of tree with the given parents and message,
// with the repository's author and committer identities (as `git
// commit-tree` would), and returns its id.
func (s *Store) CommitTree(ctx context.Context, tree string, parents []string, message string) (string, error) {
	return s.writeCommit(ctx, tree, parents, message)
}

// CommitDoc writes the blob, tree and commit of one entity document of
// kind k with the given parents, without moving any ref, and returns the
// commit id: for a caller that must choose the parent itself (restoring a
// document whose ref was moved to a foreign history) and then moves the ref
// with Transact.
func (s *Store) CommitDoc(ctx context.Context, k Kind, data []byte, parents []string, message string) (string, error) {
	return s.writeDocCommit(ctx, k.File, data, parents, message)
}

// MergeTrees computes the merge of two commits with `git merge-tree
// --write-tree`, which writes the merged tree's objects. It returns the
// tree, or the conflicting paths (and no tree) when the merge conflicts.
func (s *Store) MergeTrees(ctx context.Context, base, tip string) (tree string, conflicts []string, err error) {
	out, err := s.git.Run(ctx, "merge-tree", "--write-tree", "--name-only", "--no-messages", base, tip)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if err != nil {
		// git exits 1 both for a conflict (printing the tree first) and
		// for a name it cannot resolve (printing nothing).
		if gitcmd.IsExit(err, 1) && lines[0] != "" {
			return "", lines[1:], nil
		}
		return "", nil, fmt.Errorf("computing the merge: %w", err)
	}
	return strings.TrimSpace(lines[0]), nil, nil
}

// DeleteRef deletes ref if it exists, expecting it at the value it has
// when read; a ref that does not exist is not an error.
func (s *Store) DeleteRef(ctx context.Context, ref string) error {
	tip, err := s.git.Output(ctx, "rev-parse", "--verify", "-q", ref)
	if err != nil {
		return nil
	}
	return s.Transact(ctx, []RefOp{{Verb: "delete", Ref: ref, Old: tip}})
}
