package gitstore

// Sharing state across clones (design §8).
//
// A sync round is: fetch the remote's refs/agentmine/* and refs/notes/agentmine
// into a staging namespace (refs/agentmine-remote/<remote>/… and
// refs/notes/agentmine-remote/<remote>/agentmine, never straight into
// refs/agentmine/*); compute for every entity the state both sides should
// have (fast-forward, or a deterministic merge commit); push that state to the
// remote as plain fast-forwards with `git push --atomic`; and only then move
// the local refs, each with a compare-and-swap. Pushing before updating local
// refs means a remote that refuses the refs leaves local state untouched, and
// a sync killed at any point leaves nothing half-done that the next sync does
// not repair: the remote never loses commits (pushes are fast-forwards only)
// and local refs only ever move to commits that contain them.
//
// If the push is rejected because the remote moved meanwhile (or a local ref
// moved before the local update), the round is repeated, a bounded number of
// times.
//
// Merge commits are deterministic: parents sorted by id, a fixed identity
// ("git-agentmine"), the later of the two parents' committer times, and a
// document computed symmetrically from the two sides. Two clones merging the
// same pair of tips write byte-identical commits, so rounds converge without
// merging merges.
//
// Per-field merge: against the merge base (the best common ancestor; with
// several, the latest by committer time, then the larger id), a field changed
// on one side only takes that change; a set field (MergeRules.SetFields)
// changed on both sides merges as a set; any other field changed differently
// on both sides goes to the side whose change is later. The time of a side's
// change is the committer time of the latest commit on that side (not shared
// with the other side) that gave the field a value different from all its
// parents' values; ties are broken by the larger commit id. This is computed
// from history alone, so every clone picks the same winner.
//
// Deletions do not propagate: an entity ref that exists on one side only is
// copied to the other side. Likewise the staging refs are written with the
// tips to push just before the push (a wildcard push is far faster than
// thousands of explicit refspecs); the next fetch overwrites them anyway.
// Remote names containing "/" share a staging prefix with a shorter remote
// name and should be avoided.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/gitcmd"
)

// NotesRef is the notes ref holding run outcomes, one JSON object per line.
const NotesRef = "refs/notes/agentmine"

// SyncOptions configure Sync, Push and Pull.
type SyncOptions struct {
	// Remote is the git remote to share state with. Empty means the git
	// config value agentmine.remote, else "origin".
	Remote string
	// Rules maps a kind's ref directory (Kind.Dir, e.g. "tasks") to its merge
	// rules. Kinds not named use DefaultMergeRules.
	Rules map[string]MergeRules
	// MaxRounds bounds how often a round is repeated when the remote (or a
	// local ref) moved meanwhile. Zero means 10.
	MaxRounds int
	// Progress, when set, is called as the sync advances (for a progress
	// line on a terminal). It is called from the syncing goroutine.
	Progress func(SyncProgress)
}

// SyncProgress tells how far a sync is.
type SyncProgress struct {
	// Phase is "fetch", "merge", "push" or "update".
	Phase string
	// Round counts from 1.
	Round int
	// Done and Total count entities in the merge phase, refs in the push and
	// update phases; both are zero when unknown.
	Done  int
	Total int
}

// SyncReport says what a sync, push or pull did. It is part of the --json
// contract: field names are stable.
type SyncReport struct {
	// Remote is the remote synced with.
	Remote string `json:"remote"`
	// Rounds is how many rounds ran (more than 1 when the remote moved).
	Rounds int `json:"rounds"`
	// Fetched counts staging refs that the last fetch created or moved.
	Fetched int `json:"fetched"`
	// Created counts entities that existed only on the remote, now copied.
	Created int `json:"created"`
	// FastForwarded counts local entities moved forward to the remote's tip.
	FastForwarded int `json:"fast_forwarded"`
	// Merged counts entities whose two sides diverged and were merged.
	Merged int `json:"merged"`
	// ConflictingFields counts fields changed differently on both sides.
	ConflictingFields int `json:"conflicting_fields"`
	// Conflicts lists them, with both values and the winner.
	Conflicts []SyncConflict `json:"conflicts"`
	// Pushed counts entity refs created or moved on the remote.
	Pushed int `json:"pushed"`
	// UpToDate counts entities already identical on both sides.
	UpToDate int `json:"up_to_date"`
	// Pending counts entities this half left for the other one: local
	// changes not pushed by pull, remote changes not taken by push, and
	// diverged entities push cannot fast-forward.
	Pending int `json:"pending"`
	// NotesMerged is true when the two sides' notes were merged.
	NotesMerged bool `json:"notes_merged"`
	// NotesUpdated is true when the local notes ref moved.
	NotesUpdated bool `json:"notes_updated"`
	// NotesPushed is true when the remote notes ref moved.
	NotesPushed bool `json:"notes_pushed"`
	// Skipped lists entities left alone because of an error (a newer schema
	// version, corrupt JSON); the rest synced.
	Skipped []SyncSkip `json:"skipped"`
}

// SyncConflict is one field changed differently on both sides. The value
// that lost stays in history (it is in one parent of the merge commit).
type SyncConflict struct {
	Ref   string `json:"ref"`
	Kind  string `json:"kind"`
	ID    string `json:"id"`
	Field string `json:"field"`
	// Local and Remote are the two values (null when that side removed the
	// field).
	Local  json.RawMessage `json:"local"`
	Remote json.RawMessage `json:"remote"`
	// Winner is "local" or "remote": the side whose change was later
	// (committer time of the commit that last changed the field, ties
	// broken by the larger commit id).
	Winner       string    `json:"winner"`
	LocalCommit  string    `json:"local_commit"`
	RemoteCommit string    `json:"remote_commit"`
	LocalTime    time.Time `json:"local_time"`
	RemoteTime   time.Time `json:"remote_time"`
	// MergeCommit is the merge commit holding the result.
	MergeCommit string `json:"merge_commit"`
}

// SyncSkip is an entity that was not synced, and why.
type SyncSkip struct {
	Ref   string `json:"ref"`
	Error string `json:"error"`
}

// ErrSkipped is wrapped by the error Sync and Pull return when some entities
// were skipped; the report lists them and everything else synced.
var ErrSkipped = errors.New("some entities were not synced")

// ErrRemoteMoved is wrapped by the error returned when the remote kept
// changing for every round.
var ErrRemoteMoved = errors.New("the remote kept changing during sync")

type syncMode int

const (
	modeSync syncMode = iota
	modePull
	modePush
)

// Sync fetches the remote's agentmine state, merges it entity by entity with
// the local state, pushes the result back atomically and updates the local
// refs, repeating (bounded) when the remote moved meanwhile.
func (s *Store) Sync(ctx context.Context, opts SyncOptions) (SyncReport, error) {
	return s.syncLoop(ctx, opts, modeSync)
}

// Pull fetches the remote's agentmine state and merges it into the local
// refs. It pushes nothing.
func (s *Store) Pull(ctx context.Context, opts SyncOptions) (SyncReport, error) {
	return s.syncLoop(ctx, opts, modePull)
}

// Push sends local changes that fast-forward the remote (entities the remote
// lacks or that only changed locally) and the notes if they fast-forward.
// Diverged entities are counted as pending: sync merges them.
func (s *Store) Push(ctx context.Context, opts SyncOptions) (SyncReport, error) {
	return s.syncLoop(ctx, opts, modePush)
}

// ConfigureRemote makes remote the default for sync, push and pull by
// setting the git config value agentmine.remote in this repository. Sync
// passes explicit refspecs to fetch and push, so no fetch refspec is added
// to the remote's configuration: a fresh clone gets the whole state with one
// sync (defaulting to "origin") even without this setting. The remote must
// exist.
func (s *Store) ConfigureRemote(ctx context.Context, remote string) error {
	if err := s.checkRemote(ctx, remote); err != nil {
		return err
	}
	if _, err := s.git.Run(ctx, "config", "agentmine.remote", remote); err != nil {
		return fmt.Errorf("setting agentmine.remote: %w", err)
	}
	s.config["agentmine.remote"] = remote
	return nil
}

// SyncRemote returns the remote Sync uses when none is given.
func (s *Store) SyncRemote() string {
	if r, ok := s.Config("agentmine.remote"); ok && r != "" {
		return r
	}
	return "origin"
}

func (s *Store) checkRemote(ctx context.Context, remote string) error {
	if remote == "" || strings.HasPrefix(remote, "-") || strings.ContainsAny(remote, " \t\n*?[\\:^~") {
		return exitcode.New(exitcode.Usage, fmt.Errorf("invalid remote name %q", remote), "")
	}
	if _, err := s.git.Run(ctx, "config", "--get", "remote."+remote+".url"); err != nil {
		if gitcmd.IsExit(err, 1) {
			return exitcode.New(exitcode.NotFound, fmt.Errorf("remote %s does not exist", remote), "add it with: git remote add "+remote+" <url>")
		}
		return fmt.Errorf("reading remote %s: %w", remote, err)
	}
	return nil
}

// stagingPrefix is where the remote's entity refs are fetched to.
func stagingPrefix(remote string) string { return "refs/agentmine-remote/" + remote + "/" }

// stagingNotes is where the remote's notes ref is fetched to.
func stagingNotes(remote string) string {
	return "refs/notes/agentmine-remote/" + remote + "/agentmine"
}

func (s *Store) syncLoop(ctx context.Context, opts SyncOptions, mode syncMode) (SyncReport, error) {
	remote := opts.Remote
	if remote == "" {
		remote = s.SyncRemote()
	}
	rep := SyncReport{Remote: remote, Conflicts: []SyncConflict{}, Skipped: []SyncSkip{}}
	if err := s.checkRemote(ctx, remote); err != nil {
		return rep, err
	}
	maxRounds := opts.MaxRounds
	if maxRounds <= 0 {
		maxRounds = 10
	}
	for round := 1; ; round++ {
		r := SyncReport{Remote: remote, Rounds: round, Conflicts: []SyncConflict{}, Skipped: []SyncSkip{}}
		again, err := s.syncRound(ctx, remote, mode, opts, round, &r)
		rep = r
		if err != nil {
			return rep, err
		}
		if !again {
			break
		}
		if round >= maxRounds {
			return rep, exitcode.New(exitcode.State, fmt.Errorf("syncing with %s: %w (gave up after %d rounds)", remote, ErrRemoteMoved, round), "other clones are pushing right now: run sync again")
		}
		if err := backoff(ctx, round+2); err != nil {
			return rep, err
		}
	}
	if mode != modePush && rep.Pushed+rep.Created+rep.FastForwarded+rep.Merged+rep.Fetched > loosePackThreshold {
		s.git.Run(ctx, "pack-refs", "--all")
	}
	if len(rep.Skipped) > 0 {
		first := rep.Skipped[0]
		more := ""
		if len(rep.Skipped) > 1 {
			more = fmt.Sprintf(" (and %d more)", len(rep.Skipped)-1)
		}
		return rep, exitcode.New(exitcode.Failed, fmt.Errorf("%w: %s: %s%s", ErrSkipped, first.Ref, first.Error, more), "")
	}
	return rep, nil
}

// refTip is one ref as for-each-ref reports it.
type refTip struct {
	id  string
	typ string
}

func (s *Store) refTips(ctx context.Context, patterns ...string) (map[string]refTip, error) {
	args := append([]string{"for-each-ref", "--format=%(objectname) %(objecttype) %(refname)"}, patterns...)
	lines, err := s.git.Lines(ctx, args...)
	if err != nil {
		return nil, fmt.Errorf("listing agentmine refs: %w", err)
	}
	m := make(map[string]refTip, len(lines))
	for _, l := range lines {
		f := strings.SplitN(l, " ", 3)
		if len(f) == 3 {
			m[f[2]] = refTip{id: f[0], typ: f[1]}
		}
	}
	return m, nil
}

// fetch copies the remote's agentmine refs into the staging namespace,
// pruning staging refs the remote no longer has.
func (s *Store) fetch(ctx context.Context, remote string) error {
	_, err := s.git.Run(ctx, "fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--prune", "--no-recurse-submodules", remote,
		"+"+RefRoot+"*:"+stagingPrefix(remote)+"*",
		// A glob, because an exact notes refspec fails when the remote has
		// no notes yet; the negative refspec keeps other notes refs out.
		"+"+NotesRef+"*:"+stagingNotes(remote)+"*",
		"^"+NotesRef+"-*")
	if err != nil {
		return exitcode.New(exitcode.Git, fmt.Errorf("fetching agentmine state from %s: %w", remote, err), "check that the remote exists and is reachable: git ls-remote "+remote)
	}
	return nil
}

// entityPlan is what one round does with one entity ref.
type entityPlan struct {
	ref     string
	local   string // "" when absent locally
	remote  string // "" when absent on the remote
	desired string // the tip both sides should have; "" to leave alone
	action  string // up_to_date, push, create, ff, merge, pending, skip
	base    string
}

func (s *Store) progress(opts SyncOptions, p SyncProgress) {
	if opts.Progress != nil {
		opts.Progress(p)
	}
}

func (s *Store) rulesFor(opts SyncOptions, ref string) MergeRules {
	dir, _, _ := strings.Cut(strings.TrimPrefix(ref, RefRoot), "/")
	if r, ok := opts.Rules[dir]; ok {
		return r
	}
	return DefaultMergeRules()
}

// syncRound runs one fetch-merge-push-update round. It reports again=true
// when the remote or a local ref moved and the round must be repeated.
func (s *Store) syncRound(ctx context.Context, remote string, mode syncMode, opts SyncOptions, round int, rep *SyncReport) (again bool, err error) {
	prefix := stagingPrefix(remote)
	s.progress(opts, SyncProgress{Phase: "fetch", Round: round})
	before, err := s.refTips(ctx, prefix, stagingNotes(remote))
	if err != nil {
		return false, err
	}
	if err := s.fetch(ctx, remote); err != nil {
		return false, err
	}
	tips, err := s.refTips(ctx, RefRoot, prefix, NotesRef, stagingNotes(remote))
	if err != nil {
		return false, err
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
	var notesLocal, notesRemote string
	for ref, t := range tips {
		switch {
		case ref == NotesRef:
			notesLocal = t.id
		case ref == stagingNotes(remote):
			notesRemote = t.id
			if before[ref].id != t.id {
				rep.Fetched++
			}
		case strings.HasPrefix(ref, prefix):
			if before[ref].id != t.id {
				rep.Fetched++
			}
			p := get(RefRoot + strings.TrimPrefix(ref, prefix))
			p.remote = t.id
			if t.typ != "commit" {
				p.action = "skip"
				rep.Skipped = append(rep.Skipped, SyncSkip{Ref: p.ref, Error: fmt.Sprintf("on %s it points at a %s, not a commit", remote, t.typ)})
			}
		case strings.HasPrefix(ref, RefRoot):
			p := get(ref)
			p.local = t.id
			if t.typ != "commit" && p.action != "skip" {
				p.action = "skip"
				rep.Skipped = append(rep.Skipped, SyncSkip{Ref: p.ref, Error: fmt.Sprintf("points at a %s, not a commit", t.typ)})
			}
		}
	}
	plans := make([]*entityPlan, 0, len(byRef))
	for _, p := range byRef {
		plans = append(plans, p)
	}
	sort.Slice(plans, func(i, j int) bool { return plans[i].ref < plans[j].ref })

	g, err := s.newGraph(ctx)
	if err != nil {
		return false, err
	}
	defer g.close()

	// Classify by ancestry; histories of diverging refs load in batches.
	var hist []string
	for _, p := range plans {
		if p.action == "" && p.local != "" && p.remote != "" && p.local != p.remote {
			hist = append(hist, p.local, p.remote)
		}
	}
	if notesLocal != "" && notesRemote != "" && notesLocal != notesRemote {
		hist = append(hist, notesLocal, notesRemote)
	}
	s.progress(opts, SyncProgress{Phase: "merge", Round: round, Total: len(plans)})
	if err := g.loadHistory(hist); err != nil {
		return false, fmt.Errorf("reading entity histories: %w", err)
	}
	type ancPair struct{ l, r map[string]bool }
	anc := map[string]ancPair{}
	var docCommits []string
	for _, p := range plans {
		if p.action != "" {
			continue
		}
		switch {
		case p.local == p.remote:
			p.action = "up_to_date"
		case p.remote == "":
			p.action = "push"
		case p.local == "":
			p.action = "create"
		default:
			al := g.ancestors(p.local)
			if al[p.remote] {
				p.action = "push"
				break
			}
			ar := g.ancestors(p.remote)
			if ar[p.local] {
				p.action = "ff"
				break
			}
			p.action = "merge"
			p.base = g.mergeBase(al, ar)
			anc[p.ref] = ancPair{al, ar}
		}
		if mode == modePush && (p.action == "create" || p.action == "ff" || p.action == "merge") {
			p.action = "pending"
		}
		if mode == modePull && p.action == "push" {
			p.action = "pending"
		}
		switch p.action {
		case "create", "ff":
			docCommits = append(docCommits, p.remote)
		case "merge":
			docCommits = append(docCommits, p.remote, p.local)
			if p.base != "" {
				docCommits = append(docCommits, p.base)
			}
			// Every commit since the merge base on either side, and their
			// parents, to find when each conflicting field last changed.
			a := anc[p.ref]
			for _, pair := range [][2]map[string]bool{{a.l, a.r}, {a.r, a.l}} {
				for c := range pair[0] {
					if pair[1][c] {
						continue
					}
					docCommits = append(docCommits, c)
					docCommits = append(docCommits, g.commits[c].parents...)
				}
			}
		}
	}
	// Remote-only refs have no loaded history: load their tip commits.
	var created []string
	for _, p := range plans {
		if p.action == "create" {
			created = append(created, p.remote)
		}
	}
	if err := g.loadHistoryShallow(created); err != nil {
		return false, fmt.Errorf("reading remote entities: %w", err)
	}
	if err := g.loadDocs(docCommits); err != nil {
		return false, fmt.Errorf("reading entity documents: %w", err)
	}

	// Decide each entity's desired tip; merge the diverged ones.
	parsed := map[string]*jsonDoc{}
	for i, p := range plans {
		if i%500 == 0 && i > 0 {
			s.progress(opts, SyncProgress{Phase: "merge", Round: round, Done: i, Total: len(plans)})
		}
		rules := s.rulesFor(opts, p.ref)
		switch p.action {
		case "push":
			p.desired = p.local
		case "create", "ff":
			_, data, err := g.doc(p.remote)
			if err == nil {
				_, err = checkDoc(data, rules)
			}
			if err != nil {
				p.action = "skip"
				rep.Skipped = append(rep.Skipped, SyncSkip{Ref: p.ref, Error: fmt.Sprintf("on %s: %v", remote, err)})
				continue
			}
			p.desired = p.remote
		case "merge":
			m, conflicts, err := s.mergeEntity(ctx, g, p, anc[p.ref].l, anc[p.ref].r, rules, parsed, remote)
			if err != nil {
				var se *skipError
				if errors.As(err, &se) {
					p.action = "skip"
					rep.Skipped = append(rep.Skipped, SyncSkip{Ref: p.ref, Error: se.msg})
					continue
				}
				return false, err
			}
			p.desired = m
			rep.Conflicts = append(rep.Conflicts, conflicts...)
		}
	}
	rep.ConflictingFields = len(rep.Conflicts)
	s.progress(opts, SyncProgress{Phase: "merge", Round: round, Done: len(plans), Total: len(plans)})

	// Notes.
	notesDesired, notesAction, err := s.planNotes(ctx, g, notesLocal, notesRemote, mode)
	if err != nil {
		return false, err
	}

	// Push the desired state as fast-forwards, atomically. The desired tips
	// are written into the staging refs first and pushed with one wildcard
	// refspec: git matches thousands of explicit refspecs slowly (about 9 ms
	// each), a wildcard in one pass. Staging refs left at the remote's value
	// are up to date and cost nothing. If the push fails, staging is put
	// back (and the next fetch would overwrite it anyway).
	if mode != modePull {
		var sops, undo []RefOp
		for _, p := range plans {
			if p.desired != "" && p.desired != p.remote {
				sref := prefix + strings.TrimPrefix(p.ref, RefRoot)
				sops = append(sops, RefOp{Verb: "update", Ref: sref, New: p.desired, Old: p.remote})
				if p.remote == "" {
					undo = append(undo, RefOp{Verb: "delete", Ref: sref, Old: p.desired})
				} else {
					undo = append(undo, RefOp{Verb: "update", Ref: sref, New: p.remote, Old: p.desired})
				}
			}
		}
		pushNotes := notesDesired != "" && notesDesired != notesRemote
		if pushNotes {
			sops = append(sops, RefOp{Verb: "update", Ref: stagingNotes(remote), New: notesDesired, Old: notesRemote})
			if notesRemote == "" {
				undo = append(undo, RefOp{Verb: "delete", Ref: stagingNotes(remote), Old: notesDesired})
			} else {
				undo = append(undo, RefOp{Verb: "update", Ref: stagingNotes(remote), New: notesRemote, Old: notesDesired})
			}
		}
		s.progress(opts, SyncProgress{Phase: "push", Round: round, Total: len(sops)})
		if len(sops) > 0 {
			if err := s.Transact(ctx, sops); err != nil {
				if errors.Is(err, ErrConflict) {
					return true, nil // another sync of this repository is running
				}
				return false, fmt.Errorf("staging agentmine refs for push: %w", err)
			}
			moved, err := s.pushStaged(ctx, remote, pushNotes)
			if moved || err != nil {
				s.Transact(context.WithoutCancel(ctx), undo)
				return moved && err == nil, err
			}
		}
		for _, p := range plans {
			if p.desired != "" && p.desired != p.remote {
				rep.Pushed++
			}
		}
		rep.NotesPushed = pushNotes
		s.progress(opts, SyncProgress{Phase: "push", Round: round, Done: len(sops), Total: len(sops)})
	}

	// Move the local refs, each only if it is still where it was.
	if mode != modePush {
		var ops []RefOp
		for _, p := range plans {
			if p.desired == "" || p.desired == p.local {
				continue
			}
			if p.local == "" {
				ops = append(ops, RefOp{Verb: "create", Ref: p.ref, New: p.desired})
			} else {
				ops = append(ops, RefOp{Verb: "update", Ref: p.ref, New: p.desired, Old: p.local})
			}
		}
		if notesDesired != "" && notesDesired != notesLocal {
			ops = append(ops, RefOp{Verb: "update", Ref: NotesRef, New: notesDesired, Old: notesLocal})
		}
		s.progress(opts, SyncProgress{Phase: "update", Round: round, Total: len(ops)})
		if len(ops) > 0 {
			if err := s.Transact(ctx, ops); err != nil {
				if errors.Is(err, ErrConflict) {
					return true, nil
				}
				return false, fmt.Errorf("updating local agentmine refs: %w", err)
			}
		}
		rep.NotesUpdated = notesDesired != "" && notesDesired != notesLocal
		s.progress(opts, SyncProgress{Phase: "update", Round: round, Done: len(ops), Total: len(ops)})
	}
	rep.NotesMerged = notesAction == "merge"
	for _, p := range plans {
		switch p.action {
		case "up_to_date":
			rep.UpToDate++
		case "create":
			rep.Created++
		case "ff":
			rep.FastForwarded++
		case "merge":
			rep.Merged++
			if mode == modePull {
				rep.Pending++ // the merge is for the next push
			}
		case "pending":
			rep.Pending++
		}
	}
	return false, nil
}

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
		if o.missing || o.typ != "commit" {
			return fmt.Errorf("reading commit %s: object missing or not a commit", want[i])
		}
		c, err := parseCommit(o.data)
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

// mergeEntity writes the merge commit of a diverged entity and returns it
// with the conflicting fields.
func (s *Store) mergeEntity(ctx context.Context, g *graph, p *entityPlan, ancL, ancR map[string]bool, rules MergeRules, parsed map[string]*jsonDoc, remote string) (string, []SyncConflict, error) {
	file, ldata, err := g.doc(p.local)
	if err != nil {
		return "", nil, &skipError{msg: err.Error()}
	}
	ld, err := checkDoc(ldata, rules)
	if err != nil {
		return "", nil, &skipError{msg: "local document: " + err.Error()}
	}
	rfile, rdata, err := g.doc(p.remote)
	if err != nil {
		return "", nil, &skipError{msg: fmt.Sprintf("on %s: %v", remote, err)}
	}
	rd, err := checkDoc(rdata, rules)
	if err != nil {
		return "", nil, &skipError{msg: fmt.Sprintf("on %s: %v", remote, err)}
	}
	if rfile != file {
		return "", nil, &skipError{msg: fmt.Sprintf("document is %s locally but %s on %s", file, rfile, remote)}
	}
	var base *jsonDoc
	if p.base != "" {
		if _, bdata, err := g.doc(p.base); err == nil {
			base, _ = parseDoc(bdata) // a corrupt base merges as if unrelated
		}
	}
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
	a := mkSide(p.local, ld, ancL, ancR)
	b := mkSide(p.remote, rd, ancR, ancL)
	merged, fcs := mergeDocs(base, a, b, rules)

	parents := []string{p.local, p.remote}
	sort.Strings(parents)
	when := max(a.time, b.time)
	dir, id, _ := strings.Cut(strings.TrimPrefix(p.ref, RefRoot), "/")
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
	// The message must not depend on which side is local: conflicts are
	// listed by field, commits by role (winner, loser) only.
	commit, err := s.writeMergeCommit(ctx, file, merged, parents, when, msg.String())
	if err != nil {
		return "", nil, err
	}
	var out []SyncConflict
	for _, c := range fcs {
		if c.unreported {
			continue
		}
		winner := "remote"
		if c.aWins {
			winner = "local"
		}
		out = append(out, SyncConflict{
			Ref: p.ref, Kind: dir, ID: id, Field: c.field,
			Local: c.a, Remote: c.b, Winner: winner,
			LocalCommit: c.aCommit, RemoteCommit: c.bCommit,
			LocalTime: time.Unix(c.aTime, 0).UTC(), RemoteTime: time.Unix(c.bTime, 0).UTC(),
			MergeCommit: commit,
		})
	}
	return commit, out, nil
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

// writeMergeCommit writes the document, its one-file tree and a commit with
// the fixed sync identity at time when.
func (s *Store) writeMergeCommit(ctx context.Context, file string, doc []byte, parents []string, when int64, message string) (string, error) {
	blob, err := s.writeObject(ctx, "blob", doc)
	if err != nil {
		return "", err
	}
	tree, err := s.writeTreeOf(ctx, file, blob)
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
	return s.writeObject(ctx, "commit", c.Bytes())
}

// pushStaged pushes the staging refs (and, if notes, the staged notes) to
// the remote's agentmine refs as fast-forwards with --atomic. It reports
// moved=true when the remote rejected them because it moved meanwhile; any
// other refusal is an error.
func (s *Store) pushStaged(ctx context.Context, remote string, notes bool) (moved bool, err error) {
	args := []string{"push", "--atomic", "--porcelain", "--no-recurse-submodules", remote, stagingPrefix(remote) + "*:" + RefRoot + "*"}
	if notes {
		args = append(args, stagingNotes(remote)+":"+NotesRef)
	}
	out, err := s.git.Run(ctx, args...)
	if err == nil {
		return false, nil
	}
	rejected, reason, moved := parsePushRejections(string(out))
	if moved || rejected == "" && pushLostLockRace(err) {
		return true, nil
	}
	if rejected != "" {
		return false, exitcode.New(exitcode.State, fmt.Errorf("pushing agentmine state to %s: the remote refused %s (%s)", remote, rejected, reason), "the remote must accept "+RefRoot+"* and "+NotesRef+" (check its hooks and receive settings); local state is unchanged")
	}
	return false, exitcode.New(exitcode.Git, fmt.Errorf("pushing agentmine state to %s: %w", remote, err), "")
}

// pushLostLockRace recognises a push that failed on the remote because
// another push held or moved a ref at the same moment (an atomic push then
// reports every ref as "atomic transaction failed").
func pushLostLockRace(err error) bool {
	var ge *gitcmd.Error
	if !errors.As(err, &ge) {
		return false
	}
	for _, w := range []string{"cannot lock ref", "Unable to create", "but expected", "is at "} {
		if strings.Contains(ge.Stderr, w) {
			return true
		}
	}
	return false
}

// parsePushRejections reads `git push --porcelain` output. It returns the
// first ref refused for a reason other than "the remote moved", or
// moved=true when every rejection says the remote moved.
func parsePushRejections(out string) (ref, reason string, moved bool) {
	for _, l := range strings.Split(out, "\n") {
		if !strings.HasPrefix(l, "!\t") {
			continue
		}
		f := strings.SplitN(l, "\t", 3)
		if len(f) < 3 {
			continue
		}
		_, dst, _ := strings.Cut(f[1], ":")
		why := f[2]
		if i := strings.Index(why, "("); i >= 0 {
			why = strings.TrimSuffix(why[i+1:], ")")
		}
		switch {
		case strings.Contains(why, "atomic"):
			continue
		case strings.Contains(f[2], "[rejected]") && (why == "fetch first" || why == "non-fast-forward" || why == "stale info" || why == "already exists"),
			strings.Contains(why, "failed to update ref"), strings.Contains(why, "cannot lock ref"), strings.Contains(why, "incorrect old value"):
			moved = true
		default:
			if ref == "" {
				ref, reason = dst, why
			}
		}
	}
	if ref != "" {
		return ref, reason, false
	}
	return "", "", moved
}
