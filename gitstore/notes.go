package gitstore

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/git-agentmine/git-agentmine/parallel"
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
		if err := Backoff(ctx, attempt); err != nil {
			return err
		}
	}
}

func (s *Store) appendNoteOnce(ctx context.Context, target string, line []byte) error {
	cf := s.catFile(ctx)
	defer cf.close()
	tip, root, err := s.readNotesRoot(cf)
	if err != nil {
		return err
	}
	at, err := s.findNote(cf, root, target)
	if err != nil {
		return err
	}
	content := append([]byte{}, at.existing...)
	if len(content) > 0 && content[len(content)-1] != '\n' {
		content = append(content, '\n')
	}
	content = append(append(content, line...), '\n')
	blob, err := s.writeObject(ctx, "blob", content)
	if err != nil {
		return err
	}
	treeID, err := s.writeNotesTree(ctx, root, at, target, blob)
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

// readNotesRoot returns the notes commit NotesRef points at ("" when it
// does not exist) and the entries of its root tree.
func (s *Store) readNotesRoot(cf *catFile) (tip string, root []treeEntry, err error) {
	head, err := cf.get(NotesRef)
	if err != nil || head.missing {
		return "", nil, err
	}
	if head.typ != "commit" {
		return "", nil, fmt.Errorf("%s points at a %s", NotesRef, head.typ)
	}
	treeID := strings.TrimPrefix(strings.SplitN(string(head.data), "\n", 2)[0], "tree ")
	t, err := cf.get(treeID)
	if err != nil {
		return "", nil, err
	}
	if root, err = parseTree(t.data, s.hashLen()); err != nil {
		return "", nil, fmt.Errorf("%s: %w", NotesRef, err)
	}
	return head.id, root, nil
}

// notePlace is where a target's note sits in the notes tree: its content
// so far (flat and fanned-out entries joined), whether the tree fans out,
// and the entries of the target's fan-out directory with that directory's
// index in the root (-1 when there is none).
type notePlace struct {
	existing []byte
	fanout   bool
	sub      []treeEntry
	subIdx   int
}

// findNote reads target's note from the notes tree whose root is root.
func (s *Store) findNote(cf *catFile, root []treeEntry, target string) (notePlace, error) {
	at := notePlace{fanout: len(root) >= 256, subIdx: -1}
	for i, e := range root {
		switch {
		case e.name == target && e.mode != "40000":
			o, err := cf.get(e.id)
			if err != nil {
				return at, err
			}
			at.existing = o.data
		case e.mode == "40000" && len(e.name) == 2:
			at.fanout = true
			if e.name != target[:2] {
				continue
			}
			at.subIdx = i
			if err := s.readFanoutNote(cf, e.id, target, &at); err != nil {
				return at, err
			}
		}
	}
	return at, nil
}

// readFanoutNote reads target's fan-out directory, tree id, into at and
// appends the note it holds for target to at.existing.
func (s *Store) readFanoutNote(cf *catFile, id, target string, at *notePlace) error {
	o, err := cf.get(id)
	if err != nil {
		return err
	}
	if at.sub, err = parseTree(o.data, s.hashLen()); err != nil {
		return fmt.Errorf("%s: %w", NotesRef, err)
	}
	for _, se := range at.sub {
		if se.name == target[2:] {
			so, err := cf.get(se.id)
			if err != nil {
				return err
			}
			at.existing = append(at.existing, so.data...)
		}
	}
	return nil
}

// writeNotesTree writes the notes tree root with target's note replaced by
// blob, placed flat or under its fan-out directory as at says, and returns
// the new root tree's id.
func (s *Store) writeNotesTree(ctx context.Context, root []treeEntry, at notePlace, target, blob string) (string, error) {
	kept := root[:0:0]
	for i, e := range root {
		if e.name == target || i == at.subIdx {
			continue
		}
		kept = append(kept, e)
	}
	if at.fanout {
		nsub := at.sub[:0:0]
		for _, se := range at.sub {
			if se.name != target[2:] {
				nsub = append(nsub, se)
			}
		}
		nsub = append(nsub, treeEntry{mode: "100644", name: target[2:], id: blob})
		data, err := encodeTree(nsub)
		if err != nil {
			return "", err
		}
		subID, err := s.writeObject(ctx, "tree", data)
		if err != nil {
			return "", err
		}
		kept = append(kept, treeEntry{mode: "40000", name: target[:2], id: subID})
	} else {
		kept = append(kept, treeEntry{mode: "100644", name: target, id: blob})
	}
	data, err := encodeTree(kept)
	if err != nil {
		return "", err
	}
	return s.writeObject(ctx, "tree", data)
}

// ReadNotes returns the note lines attached to each of targets (commit ids)
// in NotesRef. The whole notes tree is read level by level with pipelined
// requests to one cat-file process, and the result is cached locally keyed by
// the notes commit, so an unchanged notes ref costs one lookup.
func (s *Store) ReadNotes(ctx context.Context, targets []string) (map[string][]string, error) {
	out, _, err := s.ReadNotesAt(ctx, targets)
	return out, err
}

// NoNotes is the notes commit ReadNotesAt reports when NotesRef does not
// exist.
const NoNotes = "none"

// ReadNotesAt is ReadNotes, also returning the notes commit the lines were
// read from (NoNotes when there is no notes ref).
func (s *Store) ReadNotesAt(ctx context.Context, targets []string) (map[string][]string, string, error) {
	out := map[string][]string{}
	cf := s.catFile(ctx)
	defer cf.close()
	head, err := cf.get(NotesRef)
	if err != nil {
		return nil, "", err
	}
	if head.missing {
		return out, NoNotes, nil
	}
	all, ok := s.readNotesCache(head.id)
	if !ok {
		if all, err = s.readNotesTree(cf, head); err != nil {
			return nil, "", err
		}
		s.writeNotesCache(head.id, all)
	}
	return onlyTargets(all, targets), head.id, nil
}

// onlyTargets returns the notes of all (a map of its own, read for this
// call) attached to targets. With tens of thousands of targets, as many as
// there are notes, a second map of them all was a tenth of a cold status's
// live memory: the others are deleted from all instead.
func onlyTargets(all map[string][]string, targets []string) map[string][]string {
	if len(targets) < len(all)/2 {
		out := make(map[string][]string, len(targets))
		for _, t := range targets {
			if lines, ok := all[t]; ok {
				out[t] = lines
			}
		}
		return out
	}
	sorted := slices.Clone(targets)
	slices.Sort(sorted)
	for t := range all {
		if _, found := slices.BinarySearch(sorted, t); !found {
			delete(all, t)
		}
	}
	return all
}

// NotesOf returns the note lines attached to one target (a commit id) in
// NotesRef, reading only that note: the notes commit, then the note at
// each fan-out depth git uses (none, ab/…, ab/cd/…) in one batch.
func (s *Store) NotesOf(ctx context.Context, target string) ([]string, error) {
	if len(target) < 6 {
		return nil, fmt.Errorf("reading the note of %q: not a commit id", target)
	}
	cf := s.catFile(ctx)
	defer cf.close()
	head, err := cf.get(NotesRef)
	if err != nil || head.missing {
		return nil, err
	}
	all, err := notesIn(cf, head.id, []string{target})
	return all[target], err
}

// NotesAt returns the note lines attached to each of targets (commit ids)
// in the notes commit notes (not the ref: a caller that listed the ref once
// gets every note from that one commit), reading only those notes through
// this batch's cat-file process. Targets without a note are absent.
func (b *Batch) NotesAt(notes string, targets []string) (map[string][]string, error) {
	for _, t := range targets {
		if len(t) < 6 || strings.ContainsAny(t, ":/ \n") {
			return nil, fmt.Errorf("reading the note of %q: not a commit id", t)
		}
	}
	if len(targets) == 0 {
		return map[string][]string{}, nil
	}
	return notesIn(b.cf, notes, targets)
}

// notesIn reads the notes of targets in notes commit head: for each, the
// note at every fan-out depth git uses (none, ab/…, ab/cd/…), and keeps the
// lines of every depth, shallowest first, as readNotesTree does.
func notesIn(cf *catFile, head string, targets []string) (map[string][]string, error) {
	cf.st.warmNotesTrees(head, targets)
	names := make([]string, 0, 3*len(targets))
	for _, t := range targets {
		names = append(names, head+":"+t, head+":"+t[:2]+"/"+t[2:], head+":"+t[:2]+"/"+t[2:4]+"/"+t[4:])
	}
	objs, err := cf.getMany(names)
	if err != nil {
		return nil, err
	}
	out := make(map[string][]string)
	for i, o := range objs {
		if o.missing || o.typ != "blob" {
			continue
		}
		t := targets[i/3]
		for _, l := range strings.Split(string(o.data), "\n") {
			if strings.TrimSpace(l) != "" {
				out[t] = append(out[t], l)
			}
		}
	}
	return out, nil
}

// NotesChanged returns the targets (commit ids) whose notes differ between
// two notes commits, from one diff-tree of their trees: a note added,
// removed or changed, at whatever fan-out either tree uses.
func (s *Store) NotesChanged(ctx context.Context, from, to string) (map[string]bool, error) {
	out, err := s.git.Output(ctx, "diff-tree", "-r", "--no-renames", "--name-only", "-z", from+"^{tree}", to+"^{tree}")
	if err != nil {
		return nil, fmt.Errorf("comparing notes %s and %s: %w", short12(from), short12(to), err)
	}
	changed := map[string]bool{}
	for _, p := range strings.Split(out, "\x00") {
		if p = strings.ReplaceAll(p, "/", ""); p != "" {
			changed[p] = true
		}
	}
	return changed, nil
}

func short12(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// readNotesTree reads every note of the notes commit head.
func (s *Store) readNotesTree(cf *catFile, head object) (map[string][]string, error) {
	treeID := strings.TrimPrefix(strings.SplitN(string(head.data), "\n", 2)[0], "tree ")
	type dir struct{ id, prefix string }
	level := []dir{{id: treeID}}
	var noteNames, blobIDs []string
	for len(level) > 0 {
		ids := make([]string, len(level))
		for i, d := range level {
			ids[i] = d.id
		}
		objs, err := cf.getMany(ids)
		if err != nil {
			return nil, err
		}
		var next []dir
		for i, o := range objs {
			entries, err := parseTree(o.data, s.hashLen())
			if err != nil {
				return nil, fmt.Errorf("%s: %w", NotesRef, err)
			}
			for _, e := range entries {
				name := level[i].prefix + e.name
				if e.mode == "40000" {
					next = append(next, dir{id: e.id, prefix: name})
				} else {
					noteNames = append(noteNames, name)
					blobIDs = append(blobIDs, e.id)
				}
			}
		}
		level = next
	}
	// The blobs are read a chunk at a time, each chunk's bytes let go once
	// split into lines: with tens of thousands of notes, all the blobs
	// beside all their lines held every note twice. They are read in the
	// order they lie in the packs, where the notes written together are
	// chains of deltas against each other (readInPackOrder).
	if db := s.objects(); db != nil && len(blobIDs) > docChunk {
		noteNames, blobIDs = inPackOrder(db, noteNames, blobIDs)
	}
	all := make(map[string][]string, len(blobIDs))
	for start := 0; start < len(blobIDs); start += docChunk {
		end := min(start+docChunk, len(blobIDs))
		blobs, err := cf.getMany(blobIDs[start:end])
		if err != nil {
			return nil, err
		}
		for i, o := range blobs {
			name := noteNames[start+i]
			for _, l := range strings.Split(string(o.data), "\n") {
				if strings.TrimSpace(l) != "" {
					all[name] = append(all[name], l)
				}
			}
		}
	}
	return all, nil
}

// Root returns the creation (root) commit of one entity's chain.
func (s *Store) Root(ctx context.Context, k Kind, id string) (string, error) {
	if root, ok := s.rootLocal(k.Ref(id)); ok {
		return root, nil
	}
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

// Roots returns the creation commit of the entities of kind k whose current
// tips are given (id -> commit). Roots never
// change for an id, so they are cached locally; only refs missing from the
// cache are walked, with one rev-list. A chain's history may hold merge
// commits after sync; every path ends at the single root of the id.
func (s *Store) Roots(ctx context.Context, k Kind, tips map[string]string) (map[string]string, error) {
	if len(tips) <= fewRoots {
		// A handful of chains: walking them costs less than reading the
		// cache of every entity's root.
		return s.walkRoots(ctx, k, tips, map[string]string{})
	}
	cached, gen := s.readRootsCache(k)
	roots := make(map[string]string, len(tips))
	var missing []string
	tipOf := map[string]string{}
	for id, c := range tips {
		if r, ok := cached[id]; ok {
			roots[id] = r
			continue
		}
		missing = append(missing, c)
		tipOf[id] = c
	}
	if len(missing) == 0 {
		return roots, nil
	}
	roots, err := s.walkRoots(ctx, k, tipOf, roots)
	if err != nil {
		return nil, err
	}
	keep := roots
	if len(tips) < len(cached) {
		// Asked for some entities only: keep the others' roots (a root
		// never changes for an id).
		keep = make(map[string]string, len(cached)+len(tipOf))
		for id, r := range cached {
			keep[id] = r
		}
		for id, r := range roots {
			keep[id] = r
		}
	}
	s.writeRootsCache(k, keep, gen)
	return roots, nil
}

// rootLocal finds the root of the chain at ref in-process when the chain
// is a plain line of commits (no merge): it then has exactly the one root
// that `rev-list --max-parents=0` lists. ok is false when git must answer
// (a merge on the way, a ref or commit that does not read).
func (s *Store) rootLocal(ref string) (string, bool) {
	db := s.objects()
	if db == nil {
		return "", false
	}
	c, found, sure := s.lookupRef(ref)
	if !found || !sure {
		return "", false
	}
	for steps := 0; steps <= 1<<20; steps++ {
		typ, data, err := db.read(c)
		if err != nil || typ != "commit" {
			return "", false
		}
		var parents []string
		for _, line := range strings.Split(string(data), "\n") {
			if line == "" {
				break
			}
			if p, ok := strings.CutPrefix(line, "parent "); ok {
				parents = append(parents, p)
			}
		}
		switch len(parents) {
		case 0:
			return c, true
		case 1:
			c = parents[0]
		default:
			return "", false
		}
	}
	return "", false
}

// walkRootsLocal finds the root of each chain in tips in-process, following
// the smallest parent as walkRoots does; ok is false when a commit does not
// read (git walks then). The chains are walked on every core: tens of
// thousands of sessions are as many commits to inflate.
func walkRootsLocal(db *odb, tipOf map[string]string) (map[string]string, bool) {
	ids := make([]string, 0, len(tipOf))
	for id := range tipOf {
		ids = append(ids, id)
	}
	roots := make([]string, len(ids))
	failed := make([]bool, len(ids))
	parallel.For(len(ids), func(i int) {
		roots[i], failed[i] = "", true
		if r, ok := rootLocal(db, tipOf[ids[i]]); ok {
			roots[i], failed[i] = r, false
		}
	})
	if slices.Contains(failed, true) {
		return nil, false
	}
	out := make(map[string]string, len(ids))
	for i, id := range ids {
		out[id] = roots[i]
	}
	if len(ids) >= bulkRead {
		db.releasePages()
	}
	return out, true
}

// rootLocal walks from commit c to its chain's root in-process, following
// the smallest parent; ok is false when a commit does not read.
func rootLocal(db *odb, c string) (string, bool) {
	for steps := 0; ; steps++ {
		typ, data, err := db.read(c)
		if err != nil || typ != "commit" || steps > 1<<20 {
			return "", false
		}
		next := ""
		for rest := data; len(rest) > 0; {
			line := rest
			if nl := bytes.IndexByte(rest, '\n'); nl >= 0 {
				line, rest = rest[:nl], rest[nl+1:]
			} else {
				rest = nil
			}
			if len(line) == 0 {
				break
			}
			if p, ok := bytes.CutPrefix(line, []byte("parent ")); ok && (next == "" || string(p) < next) {
				next = string(p)
			}
		}
		if next == "" {
			return c, true
		}
		c = next
	}
}

// fewRoots is how many chains Roots walks without its cache.
const fewRoots = 16

// walkRoots adds to roots the root of each chain in tips (id -> commit),
// with one rev-list.
func (s *Store) walkRoots(ctx context.Context, k Kind, tipOf, roots map[string]string) (map[string]string, error) {
	if len(tipOf) == 0 {
		return roots, nil
	}
	if db := s.objects(); db != nil {
		if found, ok := walkRootsLocal(db, tipOf); ok {
			for id, r := range found {
				roots[id] = r
			}
			return roots, nil
		}
	}
	missing := make([]string, 0, len(tipOf))
	for _, c := range tipOf {
		missing = append(missing, c)
	}
	out, err := s.git.RunInput(ctx, strings.NewReader(strings.Join(missing, "\n")+"\n"), "rev-list", "--parents", "--stdin")
	if err != nil {
		return nil, fmt.Errorf("walking %s history: %w", k.Noun, err)
	}
	parents := make(map[string][]string, len(missing)*2)
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		if len(f) > 0 {
			parents[f[0]] = f[1:]
		}
	}
	for id, c := range tipOf {
		for {
			ps := parents[c]
			if len(ps) == 0 {
				break
			}
			sorted := append([]string(nil), ps...)
			sort.Strings(sorted)
			c = sorted[0]
		}
		roots[id] = c
	}
	return roots, nil
}
