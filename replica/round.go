package replica

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/gitstore"
)

// A round is fetch, plan, merge, push, update, in that order; each step is
// a method below. again=true from a step means the remote or a local ref
// moved and the whole round must be repeated.

// entityPlan is what one round does with one entity ref.
type entityPlan struct {
	ref     string
	local   string // "" when absent locally
	remote  string // "" when absent on the remote
	desired string // the tip both sides should have; "" to leave alone
	action  string // up_to_date, push, create, ff, merge, pending, skip
	base    string
}

// ancPair holds the ancestor sets of a diverged entity's two tips.
type ancPair struct{ l, r map[string]bool }

// notesPlan is what one round does with the notes ref.
type notesPlan struct {
	local, remote string
	desired       string // "" to leave both alone
	action        string // push, ff, merge or ""
}

// round is the state of one sync round.
type round struct {
	st     Store
	remote string
	mode   mode
	opts   Options
	n      int
	rep    Report

	plans []*entityPlan
	notes notesPlan
	g     *graph
	anc   map[string]ancPair
}

func (r *round) progress(phase string, done, total int) {
	if r.opts.Progress != nil {
		r.opts.Progress(Progress{Phase: phase, Round: r.n, Done: done, Total: total})
	}
}

func (r *round) skip(p *entityPlan, msg string) {
	p.action = "skip"
	r.rep.Skipped = append(r.rep.Skipped, Skip{Ref: p.ref, Error: msg})
}

func (r *round) rulesFor(ref string) MergeRules {
	dir, _, _ := strings.Cut(strings.TrimPrefix(ref, gitstore.RefRoot), "/")
	if rules, ok := r.opts.Rules[dir]; ok {
		return rules
	}
	return DefaultMergeRules()
}

// run runs the round's steps.
func (r *round) run(ctx context.Context) (again bool, err error) {
	if err := r.fetch(ctx); err != nil {
		return false, err
	}
	g, err := newGraph(ctx, r.st)
	if err != nil {
		return false, err
	}
	defer g.close()
	r.g = g
	if err := r.plan(); err != nil {
		return false, err
	}
	if err := r.merge(ctx); err != nil {
		return false, err
	}
	if r.mode != modePull {
		if again, err := r.push(ctx); again || err != nil {
			return again, err
		}
	}
	if r.mode != modePush {
		if again, err := r.update(ctx); again || err != nil {
			return again, err
		}
	}
	r.count()
	return false, nil
}

// fetch copies the remote's agentmine refs into the staging namespace and
// lists both sides' tips into one plan per entity ref.
func (r *round) fetch(ctx context.Context) error {
	prefix := stagingPrefix(r.remote)
	r.progress("fetch", 0, 0)
	before, err := r.st.RefTips(ctx, prefix, stagingNotes(r.remote))
	if err != nil {
		return err
	}
	if err := fetchStaging(ctx, r.st, r.remote); err != nil {
		return err
	}
	tips, err := r.st.RefTips(ctx, gitstore.RefRoot, prefix, gitstore.NotesRef, stagingNotes(r.remote))
	if err != nil {
		return err
	}
	byRef := map[string]*entityPlan{}
	get := func(ref string) *entityPlan {
		p := byRef[ref]
		if p == nil {
			p = &entityPlan{ref: ref}
			byRef[ref] = p
		}
		return p
	}
	for ref, t := range tips {
		switch {
		case ref == gitstore.NotesRef:
			r.notes.local = t.ID
		case ref == stagingNotes(r.remote):
			r.notes.remote = t.ID
			if before[ref].ID != t.ID {
				r.rep.Fetched++
			}
		case strings.HasPrefix(ref, prefix):
			if before[ref].ID != t.ID {
				r.rep.Fetched++
			}
			p := get(gitstore.RefRoot + strings.TrimPrefix(ref, prefix))
			p.remote = t.ID
			if t.Type != "commit" {
				r.skip(p, fmt.Sprintf("on %s it points at a %s, not a commit", r.remote, t.Type))
			}
		case strings.HasPrefix(ref, gitstore.RefRoot):
			p := get(ref)
			p.local = t.ID
			if t.Type != "commit" && p.action != "skip" {
				r.skip(p, fmt.Sprintf("points at a %s, not a commit", t.Type))
			}
		}
	}
	r.plans = make([]*entityPlan, 0, len(byRef))
	for _, p := range byRef {
		r.plans = append(r.plans, p)
	}
	sort.Slice(r.plans, func(i, j int) bool { return r.plans[i].ref < r.plans[j].ref })
	return nil
}

// fetchStaging copies the remote's agentmine refs into the staging
// namespace, pruning staging refs the remote no longer has.
func fetchStaging(ctx context.Context, st Store, remote string) error {
	_, err := st.Git().Run(ctx, "fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--prune", "--no-recurse-submodules", remote,
		"+"+gitstore.RefRoot+"*:"+stagingPrefix(remote)+"*",
		// A glob, because an exact notes refspec fails when the remote has
		// no notes yet; the negative refspec keeps other notes refs out.
		"+"+gitstore.NotesRef+"*:"+stagingNotes(remote)+"*",
		"^"+gitstore.NotesRef+"-*")
	if err != nil {
		return exitcode.New(exitcode.Git, fmt.Errorf("fetching agentmine state from %s: %w", remote, err), "check that the remote exists and is reachable: git ls-remote "+remote)
	}
	return nil
}

// plan classifies every entity by ancestry (histories of diverging refs
// load in batches) and loads the documents the merge step reads.
func (r *round) plan() error {
	g := r.g
	var hist []string
	for _, p := range r.plans {
		if p.action == "" && p.local != "" && p.remote != "" && p.local != p.remote {
			hist = append(hist, p.local, p.remote)
		}
	}
	if n := r.notes; n.local != "" && n.remote != "" && n.local != n.remote {
		hist = append(hist, n.local, n.remote)
	}
	r.progress("merge", 0, len(r.plans))
	if err := g.loadHistory(hist); err != nil {
		return fmt.Errorf("reading entity histories: %w", err)
	}
	r.anc = map[string]ancPair{}
	var docCommits, created []string
	for _, p := range r.plans {
		if p.action != "" {
			continue
		}
		r.classify(p)
		docCommits = append(docCommits, r.docsToRead(p)...)
		if p.action == "create" {
			created = append(created, p.remote)
		}
	}
	// Remote-only refs have no loaded history: load their tip commits.
	if err := g.loadHistoryShallow(created); err != nil {
		return fmt.Errorf("reading remote entities: %w", err)
	}
	if err := g.loadDocs(docCommits); err != nil {
		return fmt.Errorf("reading entity documents: %w", err)
	}
	return nil
}

// classify sets an unclassified entity's action from its two tips, then
// leaves to the other half what this half (push or pull) does not do.
func (r *round) classify(p *entityPlan) {
	switch {
	case p.local == p.remote:
		p.action = "up_to_date"
	case p.remote == "":
		p.action = "push"
	case p.local == "":
		p.action = "create"
	default:
		al := r.g.ancestors(p.local)
		if al[p.remote] {
			p.action = "push"
			break
		}
		ar := r.g.ancestors(p.remote)
		if ar[p.local] {
			p.action = "ff"
			break
		}
		p.action = "merge"
		p.base = r.g.mergeBase(al, ar)
		r.anc[p.ref] = ancPair{al, ar}
	}
	if r.mode == modePush && (p.action == "create" || p.action == "ff" || p.action == "merge") {
		p.action = "pending"
	}
	if r.mode == modePull && p.action == "push" {
		p.action = "pending"
	}
}

// docsToRead lists the commits whose documents the merge step reads for p.
func (r *round) docsToRead(p *entityPlan) []string {
	switch p.action {
	case "create", "ff":
		return []string{p.remote}
	case "merge":
		out := []string{p.remote, p.local}
		if p.base != "" {
			out = append(out, p.base)
		}
		// Every commit since the merge base on either side, and their
		// parents, to find when each conflicting field last changed.
		a := r.anc[p.ref]
		for _, pair := range [][2]map[string]bool{{a.l, a.r}, {a.r, a.l}} {
			for c := range pair[0] {
				if pair[1][c] {
					continue
				}
				out = append(out, c)
				out = append(out, r.g.commits[c].parents...)
			}
		}
		return out
	}
	return nil
}

// merge decides each entity's desired tip, writing merge commits for the
// diverged ones, and the notes' desired tip.
func (r *round) merge(ctx context.Context) error {
	parsed := map[string]*jsonDoc{}
	for i, p := range r.plans {
		if i%500 == 0 && i > 0 {
			r.progress("merge", i, len(r.plans))
		}
		if err := r.mergeOne(ctx, p, parsed); err != nil {
			return err
		}
	}
	r.rep.ConflictingFields = len(r.rep.Conflicts)
	r.progress("merge", len(r.plans), len(r.plans))
	desired, action, err := planNotes(ctx, r.st, r.g, r.notes.local, r.notes.remote, r.mode)
	if err != nil {
		return err
	}
	r.notes.desired, r.notes.action = desired, action
	return nil
}

// mergeOne sets one entity's desired tip.
func (r *round) mergeOne(ctx context.Context, p *entityPlan, parsed map[string]*jsonDoc) error {
	rules := r.rulesFor(p.ref)
	switch p.action {
	case "push":
		p.desired = p.local
	case "create", "ff":
		_, data, err := r.g.doc(p.remote)
		if err == nil {
			_, err = checkDoc(data, rules)
		}
		if err != nil {
			r.skip(p, fmt.Sprintf("on %s: %v", r.remote, err))
			return nil
		}
		p.desired = p.remote
	case "merge":
		m, conflicts, err := mergeEntity(ctx, r.st, r.g, p, r.anc[p.ref], rules, parsed, r.remote)
		if err != nil {
			var se *skipError
			if errors.As(err, &se) {
				r.skip(p, se.msg)
				return nil
			}
			return err
		}
		p.desired = m
		r.rep.Conflicts = append(r.rep.Conflicts, conflicts...)
	}
	return nil
}

// push sends the desired state to the remote as fast-forwards, atomically.
// The desired tips are written into the staging refs first and pushed with
// one wildcard refspec: git matches thousands of explicit refspecs slowly
// (about 9 ms each), a wildcard in one pass. Staging refs left at the
// remote's value are up to date and cost nothing. If the push fails,
// staging is put back (and the next fetch would overwrite it anyway).
func (r *round) push(ctx context.Context) (again bool, err error) {
	sops, undo := r.stagingOps()
	pushNotes := r.notes.desired != "" && r.notes.desired != r.notes.remote
	r.progress("push", 0, len(sops))
	if len(sops) > 0 {
		if err := r.st.Transact(ctx, sops); err != nil {
			if errors.Is(err, gitstore.ErrConflict) {
				return true, nil // another sync of this repository is running
			}
			return false, fmt.Errorf("staging agentmine refs for push: %w", err)
		}
		moved, err := pushStaged(ctx, r.st, r.remote, pushNotes)
		if moved || err != nil {
			r.st.Transact(context.WithoutCancel(ctx), undo)
			return moved && err == nil, err
		}
	}
	for _, p := range r.plans {
		if p.desired != "" && p.desired != p.remote {
			r.rep.Pushed++
		}
	}
	r.rep.NotesPushed = pushNotes
	r.progress("push", len(sops), len(sops))
	return false, nil
}

// stagingOps moves the staging refs to the desired tips, and back.
func (r *round) stagingOps() (ops, undo []gitstore.RefOp) {
	move := func(sref, from, to string) {
		ops = append(ops, gitstore.RefOp{Verb: "update", Ref: sref, New: to, Old: from})
		if from == "" {
			undo = append(undo, gitstore.RefOp{Verb: "delete", Ref: sref, Old: to})
		} else {
			undo = append(undo, gitstore.RefOp{Verb: "update", Ref: sref, New: from, Old: to})
		}
	}
	prefix := stagingPrefix(r.remote)
	for _, p := range r.plans {
		if p.desired != "" && p.desired != p.remote {
			move(prefix+strings.TrimPrefix(p.ref, gitstore.RefRoot), p.remote, p.desired)
		}
	}
	if n := r.notes; n.desired != "" && n.desired != n.remote {
		move(stagingNotes(r.remote), n.remote, n.desired)
	}
	return ops, undo
}

// update moves the local refs, each only if it is still where it was.
func (r *round) update(ctx context.Context) (again bool, err error) {
	var ops []gitstore.RefOp
	for _, p := range r.plans {
		if p.desired == "" || p.desired == p.local {
			continue
		}
		if p.local == "" {
			ops = append(ops, gitstore.RefOp{Verb: "create", Ref: p.ref, New: p.desired})
		} else {
			ops = append(ops, gitstore.RefOp{Verb: "update", Ref: p.ref, New: p.desired, Old: p.local})
		}
	}
	n := r.notes
	if n.desired != "" && n.desired != n.local {
		ops = append(ops, gitstore.RefOp{Verb: "update", Ref: gitstore.NotesRef, New: n.desired, Old: n.local})
	}
	r.progress("update", 0, len(ops))
	if len(ops) > 0 {
		if err := r.st.Transact(ctx, ops); err != nil {
			if errors.Is(err, gitstore.ErrConflict) {
				return true, nil
			}
			return false, fmt.Errorf("updating local agentmine refs: %w", err)
		}
	}
	r.rep.NotesUpdated = n.desired != "" && n.desired != n.local
	r.progress("update", len(ops), len(ops))
	return false, nil
}

// count fills the report's per-action counters.
func (r *round) count() {
	r.rep.NotesMerged = r.notes.action == "merge"
	for _, p := range r.plans {
		switch p.action {
		case "up_to_date":
			r.rep.UpToDate++
		case "create":
			r.rep.Created++
		case "ff":
			r.rep.FastForwarded++
		case "merge":
			r.rep.Merged++
			if r.mode == modePull {
				r.rep.Pending++ // the merge is for the next push
			}
		case "pending":
			r.rep.Pending++
		}
	}
}
