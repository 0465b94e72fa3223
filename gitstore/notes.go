package gitstore

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Run outcomes are git notes on refs/notes/agentmine (NotesRef), one JSON
// object per line, so that notes from different clones merge by taking the
// union of lines. Appends are compare-and-swap updates of the notes ref like
// every other ref write; nothing here calls `git notes`, whose own ref update
// does not check the old value and can lose a concurrent append.

type treeEntry struct {
	mode, name, id string
}

func parseTree(data []byte, hashLen int) ([]treeEntry, error) {
	var out []treeEntry
	for len(data) > 0 {
		sp := bytes.IndexByte(data, ' ')
		nul := bytes.IndexByte(data, 0)
		if sp < 0 || nul < sp || len(data) < nul+1+hashLen {
			return nil, errors.New("corrupt tree")
		}
		out = append(out, treeEntry{mode: string(data[:sp]), name: string(data[sp+1 : nul]), id: hex.EncodeToString(data[nul+1 : nul+1+hashLen])})
		data = data[nul+1+hashLen:]
	}
	return out, nil
}

// encodeTree sorts entries the way git does (a directory sorts as if its
// name ended in "/") and encodes them.
func encodeTree(entries []treeEntry) ([]byte, error) {
	key := func(e treeEntry) string {
		if e.mode == "40000" {
			return e.name + "/"
		}
		return e.name
	}
	sort.Slice(entries, func(i, j int) bool { return key(entries[i]) < key(entries[j]) })
	var b bytes.Buffer
	for _, e := range entries {
		raw, err := hex.DecodeString(e.id)
		if err != nil {
			return nil, fmt.Errorf("bad object id %q", e.id)
		}
		fmt.Fprintf(&b, "%s %s\x00", e.mode, e.name)
		b.Write(raw)
	}
	return b.Bytes(), nil
}

func (s *Store) hashLen() int {
	if s.sha1 {
		return 20
	}
	return 32
}

// AppendNote adds one line to the note on target (a commit id) in NotesRef,
// retrying on concurrent writers. line must not contain a newline.
func (s *Store) AppendNote(ctx context.Context, target string, line []byte) error {
	if bytes.ContainsAny(line, "\n") {
		return errors.New("internal error: a note line holds a newline")
	}
	for attempt := 0; ; attempt++ {
		err := s.appendNoteOnce(ctx, target, line)
		if err == nil || !errors.Is(err, ErrConflict) || attempt >= maxAttempts {
			if err != nil {
				return fmt.Errorf("recording outcome note: %w", err)
			}
			return nil
		}
		if err := backoff(ctx, attempt); err != nil {
			return err
		}
	}
}

func (s *Store) appendNoteOnce(ctx context.Context, target string, line []byte) error {
	cf, err := startCatFile(ctx, s.git)
	if err != nil {
		return err
	}
	defer cf.close()
	tip := ""
	var root []treeEntry
	head, err := cf.get(NotesRef)
	if err != nil {
		return err
	}
	if !head.missing {
		if head.typ != "commit" {
			return fmt.Errorf("%s points at a %s", NotesRef, head.typ)
		}
		tip = head.id
		treeID := strings.TrimPrefix(strings.SplitN(string(head.data), "\n", 2)[0], "tree ")
		t, err := cf.get(treeID)
		if err != nil {
			return err
		}
		if root, err = parseTree(t.data, s.hashLen()); err != nil {
			return fmt.Errorf("%s: %w", NotesRef, err)
		}
	}
	fanout := len(root) >= 256
	var existing []byte
	var sub []treeEntry
	subIdx := -1
	for i, e := range root {
		switch {
		case e.name == target && e.mode != "40000":
			o, err := cf.get(e.id)
			if err != nil {
				return err
			}
			existing = o.data
		case e.mode == "40000" && len(e.name) == 2:
			fanout = true
			if e.name == target[:2] {
				subIdx = i
				o, err := cf.get(e.id)
				if err != nil {
					return err
				}
				if sub, err = parseTree(o.data, s.hashLen()); err != nil {
					return fmt.Errorf("%s: %w", NotesRef, err)
				}
				for _, se := range sub {
					if se.name == target[2:] {
						so, err := cf.get(se.id)
						if err != nil {
							return err
						}
						existing = append(existing, so.data...)
					}
				}
			}
		}
	}
	content := append([]byte{}, existing...)
	if len(content) > 0 && content[len(content)-1] != '\n' {
		content = append(content, '\n')
	}
	content = append(append(content, line...), '\n')
	blob, err := s.writeObject(ctx, "blob", content)
	if err != nil {
		return err
	}
	// Drop the flat entry; place the note flat or under its fan-out dir.
	kept := root[:0:0]
	for i, e := range root {
		if e.name == target || i == subIdx {
			continue
		}
		kept = append(kept, e)
	}
	if fanout {
		nsub := sub[:0:0]
		for _, se := range sub {
			if se.name != target[2:] {
				nsub = append(nsub, se)
			}
		}
		nsub = append(nsub, treeEntry{mode: "100644", name: target[2:], id: blob})
		data, err := encodeTree(nsub)
		if err != nil {
			return err
		}
		subID, err := s.writeObject(ctx, "tree", data)
		if err != nil {
			return err
		}
		kept = append(kept, treeEntry{mode: "40000", name: target[:2], id: subID})
	} else {
		kept = append(kept, treeEntry{mode: "100644", name: target, id: blob})
	}
	data, err := encodeTree(kept)
	if err != nil {
		return err
	}
	treeID, err := s.writeObject(ctx, "tree", data)
	if err != nil {
		return err
	}
	var parents []string
	if tip != "" {
		parents = []string{tip}
	}
	c, err := s.writeCommit(ctx, treeID, parents, "Notes added by 'git agentmine'")
	if err != nil {
		return err
	}
	if tip == "" {
		return s.Transact(ctx, []RefOp{{Verb: "create", Ref: NotesRef, New: c}})
	}
	return s.Transact(ctx, []RefOp{{Verb: "update", Ref: NotesRef, New: c, Old: tip}})
}

// ReadNotes returns the note lines attached to each of targets (commit ids)
// in NotesRef, reading the whole notes tree with one cat-file process.
func (s *Store) ReadNotes(ctx context.Context, targets []string) (map[string][]string, error) {
	out := map[string][]string{}
	cf, err := startCatFile(ctx, s.git)
	if err != nil {
		return nil, err
	}
	defer cf.close()
	head, err := cf.get(NotesRef)
	if err != nil || head.missing {
		return out, err
	}
	treeID := strings.TrimPrefix(strings.SplitN(string(head.data), "\n", 2)[0], "tree ")
	want := make(map[string]bool, len(targets))
	for _, t := range targets {
		want[t] = true
	}
	blobs := map[string][]string{} // target -> blob ids
	type dir struct{ id, prefix string }
	queue := []dir{{id: treeID}}
	for len(queue) > 0 {
		d := queue[0]
		queue = queue[1:]
		o, err := cf.get(d.id)
		if err != nil {
			return nil, err
		}
		entries, err := parseTree(o.data, s.hashLen())
		if err != nil {
			return nil, fmt.Errorf("%s: %w", NotesRef, err)
		}
		for _, e := range entries {
			name := d.prefix + e.name
			if e.mode == "40000" {
				queue = append(queue, dir{id: e.id, prefix: name})
			} else if want[name] {
				blobs[name] = append(blobs[name], e.id)
			}
		}
	}
	for t, ids := range blobs {
		for _, id := range ids {
			o, err := cf.get(id)
			if err != nil {
				return nil, err
			}
			for _, l := range strings.Split(string(o.data), "\n") {
				if strings.TrimSpace(l) != "" {
					out[t] = append(out[t], l)
				}
			}
		}
	}
	return out, nil
}

// Root returns the creation (root) commit of one entity's chain.
func (s *Store) Root(ctx context.Context, k Kind, id string) (string, error) {
	lines, err := s.git.Lines(ctx, "rev-list", "--max-parents=0", k.Ref(id), "--")
	if err != nil {
		return "", fmt.Errorf("finding the first commit of %s %s: %w", k.Noun, id, err)
	}
	if len(lines) == 0 {
		return "", fmt.Errorf("%s %s has no root commit", k.Noun, id)
	}
	sort.Strings(lines)
	return lines[0], nil
}

// Roots returns the creation commit of every entity of kind k with one git
// process: a ref's chain may hold merge commits after sync, so the root is
// the parentless commit reachable from it. When several are (a chain merged
// from two roots cannot happen for one id, but be safe) the smallest id wins.
func (s *Store) Roots(ctx context.Context, k Kind, hint int) (map[string]string, error) {
	// Fast path: most chains are linear and short; walk all of them in one
	// rev-list that prints each commit with its parents, then follow parents
	// from each tip.
	out, err := s.git.Run(ctx, "rev-list", "--parents", "--glob="+k.RefPrefix()+"*")
	if err != nil {
		return nil, fmt.Errorf("walking %s history: %w", k.Noun, err)
	}
	parents := make(map[string][]string, hint*2)
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		if len(f) > 0 {
			parents[f[0]] = f[1:]
		}
	}
	tips, err := s.git.Lines(ctx, "for-each-ref", "--format=%(objectname) %(refname)", k.RefPrefix())
	if err != nil {
		return nil, err
	}
	roots := make(map[string]string, len(tips))
	for _, l := range tips {
		c, ref, _ := strings.Cut(l, " ")
		id := strings.TrimPrefix(ref, k.RefPrefix())
		for {
			ps := parents[c]
			if len(ps) == 0 {
				break
			}
			sorted := append([]string(nil), ps...)
			sort.Strings(sorted)
			// The first parent of a merge is deterministic only if merges are;
			// any path ends at the single root, so take the smallest.
			c = sorted[0]
		}
		roots[id] = c
	}
	return roots, nil
}
