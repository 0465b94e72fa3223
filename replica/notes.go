package replica

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"

	"github.com/git-agentmine/git-agentmine/gitstore"
)

// Notes hold one JSON object per line per annotated object. Two diverged
// notes refs merge like `git notes merge -s cat_sort_uniq`, computed in
// process so that the merge commit is deterministic (same tree, parents,
// identity and time on every clone): a note changed on one side only takes
// that side; a note changed on both sides becomes the sorted union of both
// sides' lines.

// planNotes decides the notes tip both sides should have; "" means leave
// both alone. action is "merge" when a merge commit was written.
func planNotes(objs *objectBatch, g *graph, local, remote string, m mode) (desired, action string, err error) {
	switch {
	case local == remote:
		return "", "", nil
	case remote == "":
		if m == modePull {
			return "", "", nil
		}
		return local, "push", nil
	case local == "":
		if m == modePush {
			return "", "", nil
		}
		return remote, "ff", nil
	}
	al := g.ancestors(local)
	if al[remote] {
		if m == modePull {
			return "", "", nil
		}
		return local, "push", nil
	}
	ar := g.ancestors(remote)
	if ar[local] {
		if m == modePush {
			return "", "", nil
		}
		return remote, "ff", nil
	}
	if m == modePush {
		return "", "", nil
	}
	base := g.mergeBase(al, ar)
	c, err := mergeNotes(objs, g, base, local, remote)
	if err != nil {
		return "", "", fmt.Errorf("merging notes: %w", err)
	}
	return c, "merge", nil
}

// notesTree maps annotated object ids to note blob ids.
func (g *graph) notesTree(commit string) (map[string]string, error) {
	notes := map[string]string{}
	if commit == "" {
		return notes, nil
	}
	type dir struct{ id, prefix string }
	level := []dir{{id: g.commits[commit].tree}}
	for len(level) > 0 {
		ids := make([]string, len(level))
		for i, d := range level {
			ids[i] = d.id
		}
		objs, err := g.readAll(ids)
		if err != nil {
			return nil, err
		}
		var next []dir
		for i, o := range objs {
			if o.Missing || o.Type != "tree" {
				return nil, fmt.Errorf("notes tree %s is missing", level[i].id)
			}
			data := o.Data
			for len(data) > 0 {
				sp := bytes.IndexByte(data, ' ')
				nul := bytes.IndexByte(data, 0)
				if sp < 0 || nul < sp || len(data) < nul+1+g.hashLen {
					return nil, fmt.Errorf("notes tree %s is corrupt", level[i].id)
				}
				mode := string(data[:sp])
				name := level[i].prefix + string(data[sp+1:nul])
				id := hex.EncodeToString(data[nul+1 : nul+1+g.hashLen])
				data = data[nul+1+g.hashLen:]
				if mode == "40000" {
					next = append(next, dir{id: id, prefix: name})
				} else {
					notes[name] = id
				}
			}
		}
		level = next
	}
	return notes, nil
}

// mergeNotes queues the merge of two notes commits against base in objs and
// returns its id.
func mergeNotes(objs *objectBatch, g *graph, base, local, remote string) (string, error) {
	bt, err := g.notesTree(base)
	if err != nil {
		return "", err
	}
	lt, err := g.notesTree(local)
	if err != nil {
		return "", err
	}
	rt, err := g.notesTree(remote)
	if err != nil {
		return "", err
	}
	result := map[string]string{}
	var both []string
	for obj := range union(lt, rt) {
		lb, rb, bb := lt[obj], rt[obj], bt[obj]
		switch {
		case lb == rb:
			result[obj] = lb
		case lb == bb:
			result[obj] = rb
		case rb == bb:
			result[obj] = lb
		default:
			both = append(both, obj)
		}
	}
	sort.Strings(both)
	var blobs []string
	for _, obj := range both {
		for _, b := range []string{lt[obj], rt[obj]} {
			if b != "" {
				blobs = append(blobs, b)
			}
		}
	}
	read, err := g.readAll(blobs)
	if err != nil {
		return "", err
	}
	text := map[string][]byte{}
	for i, o := range read {
		text[blobs[i]] = o.Data
	}
	for _, obj := range both {
		result[obj] = objs.add("blob", catSortUniq(text[lt[obj]], text[rt[obj]]))
	}
	tree, err := writeNotesTree(objs, result)
	if err != nil {
		return "", err
	}
	parents := []string{local, remote}
	sort.Strings(parents)
	when := max(g.commits[local].time, g.commits[remote].time)
	var c bytes.Buffer
	fmt.Fprintf(&c, "tree %s\n", tree)
	for _, p := range parents {
		fmt.Fprintf(&c, "parent %s\n", p)
	}
	fmt.Fprintf(&c, "author %s %d +0000\ncommitter %s %d +0000\n\nsync: merge notes\n", syncIdent, when, syncIdent, when)
	return objs.add("commit", c.Bytes()), nil
}

func union(a, b map[string]string) map[string]bool {
	u := make(map[string]bool, len(a)+len(b))
	for k, v := range a {
		if v != "" {
			u[k] = true
		}
	}
	for k, v := range b {
		if v != "" {
			u[k] = true
		}
	}
	return u
}

// catSortUniq joins the lines of both notes, sorted, without duplicates or
// empty lines.
func catSortUniq(a, b []byte) []byte {
	seen := map[string]bool{}
	var lines []string
	for _, t := range [][]byte{a, b} {
		for _, l := range strings.Split(string(t), "\n") {
			if l != "" && !seen[l] {
				seen[l] = true
				lines = append(lines, l)
			}
		}
	}
	sort.Strings(lines)
	return []byte(strings.Join(lines, "\n") + "\n")
}

// writeNotesTree queues a notes tree: flat up to 256 notes, else with one
// level of fan-out (the first two hex digits), as git itself reads either.
func writeNotesTree(objs *objectBatch, notes map[string]string) (string, error) {
	names := make([]string, 0, len(notes))
	for n, id := range notes {
		if id != "" {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	entry := func(b *bytes.Buffer, mode, name, id string) error {
		raw, err := hex.DecodeString(id)
		if err != nil {
			return fmt.Errorf("writing notes tree: bad object id %q", id)
		}
		fmt.Fprintf(b, "%s %s\x00", mode, name)
		b.Write(raw)
		return nil
	}
	if len(names) <= 256 {
		var b bytes.Buffer
		for _, n := range names {
			if err := entry(&b, "100644", n, notes[n]); err != nil {
				return "", err
			}
		}
		return objs.add("tree", b.Bytes()), nil
	}
	var root bytes.Buffer
	for i := 0; i < len(names); {
		dir := names[i][:2]
		var sub bytes.Buffer
		for ; i < len(names) && names[i][:2] == dir; i++ {
			if err := entry(&sub, "100644", names[i][2:], notes[names[i]]); err != nil {
				return "", err
			}
		}
		if err := entry(&root, "40000", dir, objs.add("tree", sub.Bytes())); err != nil {
			return "", err
		}
	}
	return objs.add("tree", root.Bytes()), nil
}

// writeTreeOf queues a tree holding one file.
func writeTreeOf(objs *objectBatch, file, blob string) (string, error) {
	tree, err := gitstore.FileTree(file, blob)
	if err != nil {
		return "", err
	}
	return objs.add("tree", tree), nil
}
