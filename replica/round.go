package replica

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/gitcmd"
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
	action  string // push, create, ff, merge, pending, skip
	base    string
	// remoteMissing: the remote's tip is not in this repository (push
	// fetches nothing, so the remote has changes this clone lacks).
	remoteMissing bool
}

// ancPair holds the ancestor sets of a diverged entity's two tips.
type ancPair struct{ l, r map[string]bool }

// notesPlan is what one round does with the notes ref.
type notesPlan struct {
	local, remote string
	// remoteMissing: as for entityPlan.
	remoteMissing bool
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

	// plans has one plan per entity whose two sides differ; upToDate counts
	// the others.
	plans    []*entityPlan
	upToDate int
	notes    notesPlan
	// staging is the staging namespace as this round knows it: the refs a
	// previous sync left there when listed, then the ones this round wrote.
	staging map[string]string
	g       *graph
	objs    *objectBatch
	anc     map[string]ancPair
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
	g := newGraph(ctx, r.st)
	defer g.close()
	r.g = g
	if again, err := r.fetch(ctx); again || err != nil {
		return again, err
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
	} else if err := r.clearStaging(ctx); err != nil {
		return false, err
	}
	r.count()
	return false, nil
}

// fetch lists both sides' tips into one plan per entity whose sides differ,
// and fetches the remote tips this repository lacks (push fetches nothing).
// The remote's refs are listed with `git ls-remote` and its objects fetched
// by id: no ref is written for them, so a clone that never synced does not
// write (and later pack) a staging ref for every entity, only the objects
// it lacks arrive, and the local refs are read in-process. A fetched
// object is unreferenced until the update step points a local ref at it;
// like the objects sync writes, it is in the repository from the moment it
// arrives and only a prune with no expiry could drop it.
func (r *round) fetch(ctx context.Context) (again bool, err error) {
	r.progress("fetch", 0, 0)
	if err := r.list(ctx); err != nil {
		return false, err
	}

	// The remote tips to look for: every one that differs from the local
	// tip. Those this repository lacks are fetched.
	var tips []string
	for _, p := range r.plans {
		if p.remote != "" && p.action != "skip" {
			tips = append(tips, p.remote)
		}
	}
	if n := r.notes; n.remote != "" && n.remote != n.local {
		tips = append(tips, n.remote)
	}
	// Sync and pull fetch whatever this repository's own object directory
	// lacks, looked up in-process without reading the objects: an object
	// that is there after all (in an alternate, say) costs the fetch
	// nothing, and what is still missing after it is asked of git below.
	// The tips' types are checked where the plan reads them. Push fetches
	// nothing and counts a missing tip as the remote's change, so it asks
	// git at once and checks the types here.
	if r.mode == modePush {
		return false, r.probeForPush(tips)
	}
	missing, err := r.g.absent(tips)
	if err != nil {
		return false, fmt.Errorf("reading remote tips: %w", err)
	}
	if len(missing) > 0 {
		ids := make([]string, 0, len(missing))
		for id := range missing {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		if moved, err := fetchObjects(ctx, r.st, r.remote, ids); moved || err != nil {
			return moved, err
		}
		if err := r.checkArrived(ids); err != nil {
			return false, err
		}
	}
	for _, p := range r.plans {
		if p.remote != "" && p.action != "skip" && missing[p.remote] {
			r.rep.Fetched++
		}
	}
	if n := r.notes; n.remote != "" && n.remote != n.local && missing[n.remote] {
		r.rep.Fetched++
	}
	return false, nil
}

// checkArrived checks that the fetched objects are all in the repository:
// in its own object directory as read in-process, else as git reads them.
func (r *round) checkArrived(ids []string) error {
	still, err := r.g.absent(ids)
	if err != nil {
		return fmt.Errorf("reading fetched tips: %w", err)
	}
	if len(still) > 0 {
		ids := make([]string, 0, len(still))
		for id := range still {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		if still, err = r.g.probe(ids); err != nil {
			return fmt.Errorf("reading fetched tips: %w", err)
		}
	}
	r.g.forget()
	if len(still) > 0 {
		return exitcode.New(exitcode.Git, fmt.Errorf("fetching agentmine state from %s: %d objects were not sent", r.remote, len(still)), "")
	}
	return nil
}

// probeForPush looks the remote tips up as git reads them: one missing is
// the remote's change this clone lacks (push fetches nothing), one present
// must be a commit.
func (r *round) probeForPush(tips []string) error {
	missing, err := r.g.probe(tips)
	if err != nil {
		return fmt.Errorf("reading remote tips: %w", err)
	}
	for _, p := range r.plans {
		if p.remote == "" || p.action == "skip" {
			continue
		}
		if missing[p.remote] {
			p.remoteMissing = true
			continue
		}
		if typ := r.g.types[p.remote]; typ != "commit" {
			r.skip(p, fmt.Sprintf("on %s it points at a %s, not a commit", r.remote, typ))
		}
	}
	if n := r.notes; n.remote != "" && n.remote != n.local && missing[n.remote] {
		r.notes.remoteMissing = true
	}
	// What was read to learn the tips' types is not needed again.
	r.g.forget()
	r.st.ReleaseCaches()
	return nil
}

// list compares both sides' tips and sets r.plans to one plan per entity
// whose sides differ (sorted by ref), r.upToDate to the number of the
// others, the notes tips, and r.staging. The local refs are listed
// in-process (gitstore's TipList, no git process) while `git ls-remote`
// runs, and the two, both in ref order, are joined ref by ref: the
// remote's listing is never held whole, the local one only while it is
// joined (about 100 bytes a ref), and only the plans of the entities that
// differ outlive the listing. Git servers list refs in order; should one
// not, the listing is read again, the remote's held and sorted.
func (r *round) list(ctx context.Context) error {
	err := r.listWith(ctx, func(ctx context.Context) (tipSource, func() error, error) {
		ls, err := startStream(ctx, r.st, "ls-remote", "--refs", r.remote)
		if err != nil {
			return nil, nil, err
		}
		src := &streamTips{s: ls}
		return src, func() error {
			if err := ls.wait(); err != nil {
				return err
			}
			if src.unsorted {
				return errUnsorted
			}
			return nil
		}, nil
	})
	if !errors.Is(err, errUnsorted) {
		return err
	}
	return r.listWith(ctx, func(ctx context.Context) (tipSource, func() error, error) {
		tips, notes, err := listRemote(ctx, r.st, r.remote)
		if err != nil {
			return nil, nil, err
		}
		return &sliceTips{tips: tips, notes: notes}, func() error { return nil }, nil
	})
}

// errUnsorted: the remote listed its refs out of order.
var errUnsorted = errors.New("the remote listed its refs out of order")

// tipSource yields the remote's entity refs in ref order, each with the
// object it points at.
type tipSource interface {
	next() (ref, id string, ok bool)
	// notesTip is the remote's notes tip, once every ref was read.
	notesTip() string
}

// listWith is list with the remote's refs from open, which also returns
// the function that ends the listing. The local refs are listed
// in-process (gitstore's TipList) while the remote's listing runs; what
// each differing local tip points at is checked when the plan reads it.
func (r *round) listWith(ctx context.Context, open func(context.Context) (tipSource, func() error, error)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	remote, end, err := open(ctx)
	if err != nil {
		return remoteError(r.remote, err)
	}
	names, ids, lerr := r.st.TipList(ctx, gitstore.RefRoot, gitstore.NotesRef, stagingPrefix(r.remote), stagingNotes(r.remote))
	if lerr != nil {
		cancel()
		end()
		return fmt.Errorf("listing agentmine refs: %w", lerr)
	}
	r.staging = map[string]string{}
	r.plans = nil
	r.upToDate = 0
	rref, rid, rok := remote.next()
	// remoteOnly adds the plans of the remote's entities sorting before ref
	// (all of the rest when all is set).
	remoteOnly := func(ref string, all bool) {
		for ; rok && (all || rref < ref); rref, rid, rok = remote.next() {
			r.plans = append(r.plans, &entityPlan{ref: rref, remote: rid})
		}
	}
	staging, stagingN := stagingPrefix(r.remote), stagingNotes(r.remote)
	for i, name := range names {
		id := ids[i]
		switch {
		case name == gitstore.NotesRef:
			r.notes.local = id
		case name == stagingN || strings.HasPrefix(name, staging):
			r.staging[name] = id
		case strings.HasPrefix(name, gitstore.RefRoot):
			remoteOnly(name, false)
			remoteID := ""
			if rok && rref == name {
				remoteID = rid
				rref, rid, rok = remote.next()
			}
			if remoteID == id {
				r.upToDate++
				continue
			}
			r.plans = append(r.plans, &entityPlan{ref: name, local: id, remote: remoteID})
		}
	}
	remoteOnly("", true)
	if err := end(); err != nil {
		if errors.Is(err, errUnsorted) {
			return err
		}
		return remoteError(r.remote, err)
	}
	r.notes.remote = remote.notesTip()
	if r.opts.Only != nil {
		kept := r.plans[:0]
		for _, p := range r.plans {
			if r.opts.Only(p.ref) {
				kept = append(kept, p)
			}
		}
		r.plans = kept
	}
	return nil
}

// remoteError is the error of a remote that could not be listed or
// fetched from.
func remoteError(remote string, err error) error {
	return exitcode.New(exitcode.Git, fmt.Errorf("fetching agentmine state from %s: %w", remote, err), "check that the remote exists and is reachable: git ls-remote "+remote)
}

// streamTips reads the remote's refs from `git ls-remote` as they come,
// noting whether they come in order.
type streamTips struct {
	s        *gitStream
	notes    string
	last     string
	unsorted bool
}

func (t *streamTips) next() (ref, id string, ok bool) {
	for {
		line, ok := t.s.next()
		if !ok {
			return "", "", false
		}
		bid, bref, ok := bytes.Cut(line, []byte("\t"))
		switch {
		case !ok:
		case string(bref) == gitstore.NotesRef:
			t.notes = string(bid)
		case bytes.HasPrefix(bref, []byte(gitstore.RefRoot)):
			if t.last != "" && string(bref) <= t.last {
				t.unsorted = true
			}
			// One string a line, the id and the ref slices of it: the
			// stream's buffer is reused for the next line.
			l := string(line)
			t.last = l[len(bid)+1:]
			return t.last, l[:len(bid)], true
		}
	}
}

func (t *streamTips) notesTip() string { return t.notes }

// sliceTips yields tips held in a sorted slice.
type sliceTips struct {
	tips  []remoteTip
	notes string
}

func (t *sliceTips) next() (ref, id string, ok bool) {
	if len(t.tips) == 0 {
		return "", "", false
	}
	tip := t.tips[0]
	t.tips = t.tips[1:]
	return tip.ref, tip.id, true
}

func (t *sliceTips) notesTip() string { return t.notes }

// remoteTip is one of the remote's entity refs and the object it points at.
type remoteTip struct{ ref, id string }

// sortTips sorts tips by ref, keeping the first of a ref listed twice.
func sortTips(tips []remoteTip) []remoteTip {
	sort.SliceStable(tips, func(i, j int) bool { return tips[i].ref < tips[j].ref })
	return slices.CompactFunc(tips, func(a, b remoteTip) bool { return a.ref == b.ref })
}

// listRemote returns the remote's entity refs with the objects they point
// at, sorted by ref, and the tip of its notes ref ("" when it has none).
func listRemote(ctx context.Context, st Store, remote string) (tips []remoteTip, notes string, err error) {
	ls, err := startStream(ctx, st, "ls-remote", "--refs", remote)
	if err != nil {
		return nil, "", err
	}
	src := &streamTips{s: ls}
	for ref, id, ok := src.next(); ok; ref, id, ok = src.next() {
		tips = append(tips, remoteTip{ref: ref, id: id})
	}
	if err := ls.wait(); err != nil {
		return nil, "", err
	}
	return sortTips(tips), src.notesTip(), nil
}

// fetchObjects fetches the named objects (and what they need) from the
// remote, writing no ref and starting no `git maintenance --auto` (the
// pack it brings is small, and git's own commands that write, commit and
// merge among them, run `gc --auto` when packs pile up). It reports moved=true when the remote no longer
// has one: it moved since it was listed.
func fetchObjects(ctx context.Context, st Store, remote string, ids []string) (moved bool, err error) {
	in := strings.Join(ids, "\n") + "\n"
	_, err = st.Git().RunInput(ctx, strings.NewReader(in), "fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--no-recurse-submodules", "--no-auto-maintenance", "--stdin", remote)
	if err == nil {
		return false, nil
	}
	var ge *gitcmd.Error
	if errors.As(err, &ge) && !ge.Canceled {
		for _, w := range []string{"not our ref", "unadvertised object", "no such remote ref"} {
			if strings.Contains(ge.Stderr, w) {
				return true, nil
			}
		}
	}
	return false, remoteError(remote, err)
}

// mergeChunk is how many entities are planned and merged at a time: the
// histories, documents and parsed fields read for one chunk are dropped
// before the next chunk is read, so that what a sync holds follows the
// chunk, not the number of changed entities, at the cost of a few more
// round trips to cat-file. Between chunks the store also drops its delta
// bases and the pack pages read (ReleaseCaches). BenchmarkSync10k's peak
// per changed entity, one run of three syncs each: 3986 B at 256, 3696 B
// at 128, 3425-3450 B at 64, 3370 B at 32, with no change in time beyond
// the noise.
const mergeChunk = 64

// merge decides the desired tip of every entity whose sides differ, a
// chunk at a time (plan, then mergeOne), writing merge commits for the
// diverged ones, then the notes' desired tip, and stores the objects it
// wrote.
func (r *round) merge(ctx context.Context) error {
	r.progress("merge", 0, len(r.plans))
	for start := 0; start < len(r.plans); start += mergeChunk {
		part := r.plans[start:min(start+mergeChunk, len(r.plans))]
		if err := r.plan(part); err != nil {
			return err
		}
		for _, p := range part {
			if err := r.mergeOne(p); err != nil {
				return err
			}
		}
		r.g.forget()
		r.st.ReleaseCaches()
		r.progress("merge", start+len(part), len(r.plans))
	}
	r.rep.ConflictingFields = len(r.rep.Conflicts)
	if n := r.notes; n.local != "" && n.remote != "" && n.local != n.remote && !n.remoteMissing {
		if err := r.g.loadHistory([]string{n.local, n.remote}); err != nil {
			return fmt.Errorf("reading notes histories: %w", err)
		}
	}
	desired, action, err := planNotes(r.objs, r.g, r.notes.local, r.notes.remote, r.mode)
	if err != nil {
		return err
	}
	r.notes.desired, r.notes.action = desired, action
	r.g.forget()
	if err := r.objs.write(ctx); err != nil {
		return fmt.Errorf("writing merge commits: %w", err)
	}
	return nil
}

// plan classifies the entities of one chunk by ancestry (histories of
// diverging refs load in batches) and loads the documents mergeOne reads.
func (r *round) plan(part []*entityPlan) error {
	g := r.g
	if err := r.readTips(part); err != nil {
		return err
	}
	var hist []string
	for _, p := range part {
		if p.action == "" && p.local != "" && p.remote != "" && p.local != p.remote && !p.remoteMissing {
			hist = append(hist, p.local, p.remote)
		}
	}
	if err := g.loadHistory(hist); err != nil {
		return fmt.Errorf("reading entity histories: %w", err)
	}
	r.anc = map[string]ancPair{}
	var docCommits, created []string
	for _, p := range part {
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

// readTips reads both tips of the chunk's unclassified entities into the
// graph, with the read their histories need anyway, and skips an entity
// whose ref points at something other than a commit on either side: the
// refs were listed, and the fetched tips looked up, without reading any
// object, so this is where what they point at is checked.
func (r *round) readTips(part []*entityPlan) error {
	var want []string
	var plans []*entityPlan
	for _, p := range part {
		if p.action != "" {
			continue
		}
		if p.local != "" && r.g.commits[p.local] == nil {
			want, plans = append(want, p.local), append(plans, p)
		}
		if p.remote != "" && !p.remoteMissing && r.g.commits[p.remote] == nil {
			want, plans = append(want, p.remote), append(plans, p)
		}
	}
	objs, err := r.g.readAll(want)
	if err != nil {
		return fmt.Errorf("reading entity tips: %w", err)
	}
	for i, o := range objs {
		p, id := plans[i], want[i]
		where := ""
		if id != p.local {
			where = "on " + r.remote + " it "
		}
		switch {
		case p.action == "skip" || r.g.commits[id] != nil: // skipped already, or the same tip twice
		case o.Missing:
			r.skip(p, where+"points at a missing object")
		case o.Type != "commit":
			r.skip(p, fmt.Sprintf("%spoints at a %s, not a commit", where, o.Type))
		default:
			c, err := parseCommit(o.Data)
			if err != nil {
				return fmt.Errorf("reading commit %s: %w", id, err)
			}
			r.g.commits[id] = c
		}
	}
	return nil
}

// classify sets an unclassified entity's action from its two tips, then
// leaves to the other half what this half (push or pull) does not do.
func (r *round) classify(p *entityPlan) {
	switch {
	case p.remoteMissing:
		// Push fetched nothing: the remote has changes this clone lacks.
		p.action = "pending"
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

// mergeOne sets one entity's desired tip.
func (r *round) mergeOne(p *entityPlan) error {
	rules := r.rulesFor(p.ref)
	switch p.action {
	case "push":
		p.desired = p.local
	case "create", "ff":
		_, data, err := r.g.doc(p.remote)
		if err == nil {
			err = checkTip(data, rules)
		}
		if err != nil {
			r.skip(p, fmt.Sprintf("on %s: %v", r.remote, err))
			return nil
		}
		p.desired = p.remote
	case "merge":
		m, conflicts, err := mergeEntity(r.objs, r.g, p, r.anc[p.ref], rules, r.remote)
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

// explicitPairs bounds pushed refs times local refs for a push that names
// each ref: git matches every explicit refspec against every local ref,
// about 0.45 µs a pair (10,000 refs: 4.5 ms a refspec), while the staging
// refs cost a transaction (a process, about 10 ms here) and about 1.3 ms a
// ref to write and delete again. Below 20,000 pairs naming them is cheaper.
// A variable so that tests can send a few refs through the staging refs.
var explicitPairs = 20000

// push sends the desired state to the remote as fast-forwards, atomically.
// A few refs are named in the push itself (tip:ref). Many are written into
// the staging refs first and pushed with one wildcard refspec, which git
// matches in one pass where thousands of explicit refspecs take seconds.
// The staging namespace then holds exactly the refs to push, so the
// staging refs an earlier sync left are deleted in the same transaction;
// the update step (for push, clearStaging) deletes the rest. A push that
// fails leaves them for the next sync, which replaces them.
func (r *round) push(ctx context.Context) (again bool, err error) {
	pushNotes := r.notes.desired != "" && r.notes.desired != r.notes.remote
	var named []string
	for _, p := range r.plans {
		if p.desired != "" && p.desired != p.remote {
			named = append(named, p.desired+":"+p.ref)
		}
	}
	pushed := len(named)
	if pushNotes {
		named = append(named, r.notes.desired+":"+gitstore.NotesRef)
	}
	r.progress("push", 0, pushed)
	// The local refs git matches refspecs against: the listed ones, and a
	// few branches and tags.
	local := r.upToDate + len(r.plans) + len(r.staging) + 16
	switch {
	case len(named) == 0:
	case len(named)*local <= explicitPairs:
		if moved, err := pushRefs(ctx, r.st, r.remote, named); moved || err != nil {
			return moved && err == nil, err
		}
	default:
		sops, staged := r.stagingOps()
		if err := r.st.Transact(ctx, sops); err != nil {
			if errors.Is(err, gitstore.ErrConflict) {
				return true, nil // another sync of this repository is running
			}
			return false, fmt.Errorf("staging agentmine refs for push: %w", err)
		}
		r.staging = staged
		refspecs := []string{stagingPrefix(r.remote) + "*:" + gitstore.RefRoot + "*"}
		if pushNotes {
			refspecs = append(refspecs, stagingNotes(r.remote)+":"+gitstore.NotesRef)
		}
		if moved, err := pushRefs(ctx, r.st, r.remote, refspecs); moved || err != nil {
			return moved && err == nil, err
		}
	}
	r.rep.Pushed = pushed
	r.rep.NotesPushed = pushNotes
	r.progress("push", pushed, pushed)
	return false, nil
}

// stagingOps sets the staging refs to the desired tips to push and deletes
// the other staging refs, each expected where it was listed. It returns the
// staging namespace as the transaction leaves it.
func (r *round) stagingOps() (ops []gitstore.RefOp, staged map[string]string) {
	staged = map[string]string{}
	set := func(sref, to string) {
		ops = append(ops, gitstore.RefOp{Verb: "update", Ref: sref, New: to, Old: r.staging[sref]})
		staged[sref] = to
	}
	prefix := stagingPrefix(r.remote)
	for _, p := range r.plans {
		if p.desired != "" && p.desired != p.remote {
			set(prefix+strings.TrimPrefix(p.ref, gitstore.RefRoot), p.desired)
		}
	}
	if n := r.notes; n.desired != "" && n.desired != n.remote {
		set(stagingNotes(r.remote), n.desired)
	}
	return append(ops, r.stagingDeletes(staged)...), staged
}

// stagingDeletes deletes every staging ref the round knows of, except those
// in keep.
func (r *round) stagingDeletes(keep map[string]string) []gitstore.RefOp {
	var refs []string
	for sref := range r.staging {
		if _, ok := keep[sref]; !ok {
			refs = append(refs, sref)
		}
	}
	sort.Strings(refs)
	ops := make([]gitstore.RefOp, 0, len(refs))
	for _, sref := range refs {
		ops = append(ops, gitstore.RefOp{Verb: "delete", Ref: sref, Old: r.staging[sref]})
	}
	return ops
}

// update moves the local refs, each only if it is still where it was, and
// empties the staging namespace in the same transaction.
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
	local := len(ops)
	r.progress("update", 0, local)
	ops = append(ops, r.stagingDeletes(nil)...)
	if len(ops) > 0 {
		if err := r.st.Transact(ctx, ops); err != nil {
			if errors.Is(err, gitstore.ErrConflict) {
				return true, nil
			}
			return false, fmt.Errorf("updating local agentmine refs: %w", err)
		}
	}
	r.rep.NotesUpdated = n.desired != "" && n.desired != n.local
	r.progress("update", local, local)
	return false, nil
}

// clearStaging empties the staging namespace after a push, which has no
// local update to do it with. A staging ref that moved meanwhile belongs to
// another sync of this repository, which deletes it itself.
func (r *round) clearStaging(ctx context.Context) error {
	ops := r.stagingDeletes(nil)
	if len(ops) == 0 {
		return nil
	}
	if err := r.st.Transact(ctx, ops); err != nil && !errors.Is(err, gitstore.ErrConflict) {
		return fmt.Errorf("deleting staging refs: %w", err)
	}
	return nil
}

// count fills the report's per-action counters.
func (r *round) count() {
	r.rep.NotesMerged = r.notes.action == "merge"
	r.rep.UpToDate = r.upToDate
	for _, p := range r.plans {
		switch p.action {
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
