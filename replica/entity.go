package replica

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/git-agentmine/git-agentmine/gitstore"
)

// loadHistoryShallow reads just the given commits (not their ancestors).
func (g *graph) loadHistoryShallow(ids []string) error {
	var want []string
	for _, id := range ids {
		if g.commits[id] == nil {
			want = append(want, id)
		}
	}
	objs, err := g.readAll(want)
	if err != nil {
		return err
	}
	for i, o := range objs {
		if o.Missing || o.Type != "commit" {
			return fmt.Errorf("reading commit %s: object missing or not a commit", want[i])
		}
		c, err := parseCommit(o.Data)
		if err != nil {
			return fmt.Errorf("reading commit %s: %w", want[i], err)
		}
		g.commits[want[i]] = c
	}
	return nil
}

// skipError is an entity-level problem: the entity is skipped and reported.
type skipError struct{ msg string }

func (e *skipError) Error() string { return e.msg }

// syncIdent is the identity of merge commits written by sync: fixed, so that
// every clone writes the same commit for the same merge.
const syncIdent = "git-agentmine <git-agentmine@localhost>"

// mergeEntity queues the merge commit of a diverged entity in objs and
// returns it with the conflicting fields.
func mergeEntity(objs *objectBatch, g *graph, p *entityPlan, anc ancPair, rules MergeRules, remote string) (string, []Conflict, error) {
	file, ld, rd, err := sideDocs(g, p, rules, remote)
	if err != nil {
		return "", nil, err
	}
	var base *jsonDoc
	if p.base != "" {
		if _, bdata, err := g.doc(p.base); err == nil {
			base, _ = parseDoc(bdata) // a corrupt base merges as if unrelated
		}
	}
	parsed := map[string]*jsonDoc{}
	docAt := func(c string) *jsonDoc {
		if d, ok := parsed[c]; ok {
			return d
		}
		var d *jsonDoc
		if _, data, err := g.doc(c); err == nil {
			d, _ = parseDoc(data)
		}
		parsed[c] = d
		return d
	}
	mkSide := func(tip string, doc *jsonDoc, own, other map[string]bool) side {
		return side{doc: doc, commit: tip, time: g.commits[tip].time, changed: func(field string) (int64, string) {
			return g.fieldChanged(tip, field, own, other, docAt)
		}}
	}
	a := mkSide(p.local, ld, anc.l, anc.r)
	b := mkSide(p.remote, rd, anc.r, anc.l)
	merged, fcs := mergeDocs(base, a, b, rules)

	parents := []string{p.local, p.remote}
	sort.Strings(parents)
	dir, id, _ := strings.Cut(strings.TrimPrefix(p.ref, gitstore.RefRoot), "/")
	commit, err := writeMergeCommit(objs, file, merged, parents, max(a.time, b.time), mergeMessage(dir, id, fcs))
	if err != nil {
		return "", nil, err
	}
	return commit, conflictsOf(p.ref, dir, id, commit, fcs), nil
}

// sideDocs reads and checks both sides' documents of a diverged entity.
func sideDocs(g *graph, p *entityPlan, rules MergeRules, remote string) (file string, local, other *jsonDoc, err error) {
	file, ldata, err := g.doc(p.local)
	if err != nil {
		return "", nil, nil, &skipError{msg: err.Error()}
	}
	local, err = checkDoc(ldata, rules)
	if err != nil {
		return "", nil, nil, &skipError{msg: "local document: " + err.Error()}
	}
	rfile, rdata, err := g.doc(p.remote)
	if err != nil {
		return "", nil, nil, &skipError{msg: fmt.Sprintf("on %s: %v", remote, err)}
	}
	other, err = checkDoc(rdata, rules)
	if err != nil {
		return "", nil, nil, &skipError{msg: fmt.Sprintf("on %s: %v", remote, err)}
	}
	if rfile != file {
		return "", nil, nil, &skipError{msg: fmt.Sprintf("document is %s locally but %s on %s", file, rfile, remote)}
	}
	return file, local, other, nil
}

// mergeMessage is the merge commit's message. It must not depend on which
// side is local: conflicts are listed by field, commits by role (winner,
// loser) only.
func mergeMessage(dir, id string, fcs []fieldConflict) string {
	var msg strings.Builder
	fmt.Fprintf(&msg, "sync: merge concurrent changes to %s %s\n", dir, id)
	if len(fcs) > 0 {
		msg.WriteString("\n")
		for _, c := range fcs {
			win, lose := c.aCommit, c.bCommit
			if !c.aWins {
				win, lose = lose, win
			}
			fmt.Fprintf(&msg, "conflict: %s: kept the change of %s, overrode %s\n", c.field, short(win), short(lose))
		}
	}
	return msg.String()
}

// conflictsOf reports the field conflicts of one merge, local side first.
func conflictsOf(ref, dir, id, commit string, fcs []fieldConflict) []Conflict {
	var out []Conflict
	for _, c := range fcs {
		if c.unreported {
			continue
		}
		winner := "remote"
		if c.aWins {
			winner = "local"
		}
		out = append(out, Conflict{
			Ref: ref, Kind: dir, ID: id, Field: c.field,
			Local: c.a, Remote: c.b, Winner: winner,
			LocalCommit: c.aCommit, RemoteCommit: c.bCommit,
			LocalTime: time.Unix(c.aTime, 0).UTC(), RemoteTime: time.Unix(c.bTime, 0).UTC(),
			MergeCommit: commit,
		})
	}
	return out
}

// fieldChanged returns the committer time and id of the latest commit on one
// side (tip and its ancestors not shared with the other side) that gave field
// a value different from every parent's: the time of that side's change.
// When no such commit is found (criss-cross histories), the tip's time.
func (g *graph) fieldChanged(tip, field string, own, other map[string]bool, docAt func(string) *jsonDoc) (int64, string) {
	val := func(c string) (string, bool) {
		d := docAt(c)
		if d == nil {
			return "", false
		}
		v, ok := d.vals[field]
		return string(v), ok
	}
	bestT, best := int64(0), ""
	for c := range own {
		if other[c] {
			continue
		}
		ci := g.commits[c]
		cv, cok := val(c)
		changed := true
		for _, p := range ci.parents {
			pv, pok := val(p)
			if pv == cv && pok == cok {
				changed = false
				break
			}
		}
		if changed && (best == "" || later(ci.time, c, bestT, best)) {
			bestT, best = ci.time, c
		}
	}
	if best == "" {
		return g.commits[tip].time, tip
	}
	return bestT, best
}

// writeMergeCommit queues the document, its one-file tree and a commit with
// the fixed sync identity at time when, and returns the commit's id.
func writeMergeCommit(objs *objectBatch, file string, doc []byte, parents []string, when int64, message string) (string, error) {
	tree, err := writeTreeOf(objs, file, objs.add("blob", doc))
	if err != nil {
		return "", err
	}
	var c bytes.Buffer
	fmt.Fprintf(&c, "tree %s\n", tree)
	for _, p := range parents {
		fmt.Fprintf(&c, "parent %s\n", p)
	}
	fmt.Fprintf(&c, "author %s %d +0000\ncommitter %s %d +0000\n\n", syncIdent, when, syncIdent, when)
	c.WriteString(strings.TrimRight(message, "\n"))
	c.WriteString("\n")
	return objs.add("commit", c.Bytes()), nil
}
