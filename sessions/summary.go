package sessions

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	fastjson "github.com/goccy/go-json"

	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/parallel"
)

// A summary is a session record without what status and listings never
// read: the worker's command and environment, the scope and sparse
// patterns, the generated files, the DoD commands, the outcome's artifact
// lists, and the outcome's full scope and DoD verdicts when its summary
// fields (scope_valid, dod_status) already say everything passed. Status
// (verify.Summarize), liveness, usage and the running-session documents
// read the same from a summary as from the whole record.
//
// Summaries are cached locally (gitstore's summary cache) keyed by each
// session ref's tip and by the notes commit the outcomes came from, so that
// reading the board again costs one for-each-ref and the cache file instead
// of decoding every session document and every outcome line.

// summaryDoc is one cached summary.
type summaryDoc struct {
	Session Session   `json:"s"`
	Root    string    `json:"r"`
	Outcome *Outcome  `json:"o,omitempty"`
	Forged  []Forgery `json:"f,omitempty"`
	// Review and ForgedReviews decide a reviewed session's status.
	Review        *Review   `json:"rv,omitempty"`
	ForgedReviews []Forgery `json:"fr,omitempty"`
}

// Summary returns r without what status and listings never read (see the
// comment above): a record for deriving statuses, never one to print as
// the session's document.
func (r Record) Summary() Record {
	s := r.Session
	s.Command, s.CommandEnv, s.CommandStdin = nil, nil, ""
	s.Scope, s.Sparse = Scope{}, nil
	s.Generated, s.GeneratedBlobs = nil, nil
	s.DoD, s.DoDTimeout = nil, 0
	out := Record{Session: s, Root: r.Root, Commit: r.Commit, Forged: r.Forged, Review: r.Review, ForgedReviews: r.ForgedReviews}
	if r.Outcome != nil {
		o := *r.Outcome
		o.Artifacts, o.Claimed = nil, nil
		if o.ScopeValid != nil && *o.ScopeValid && (o.DoDStatus == "passed" || o.DoDStatus == "skipped") {
			o.Scope, o.DoD = nil, nil
		}
		out.Outcome = &o
	}
	return out
}

// LoadSummaries is LoadAll returning summaries (Record.Summary): from the
// local summary cache when it matches every session ref and the notes ref
// exactly, else from git, refreshing the cache. A stale, corrupt or
// missing cache gives the same answers as none.
func LoadSummaries(ctx context.Context, st *gitstore.Store) ([]Record, []error, error) {
	cached := st.ReadSummaries(Kind)
	tips, err := st.Tips(ctx, Kind.RefPrefix(), gitstore.NotesRef)
	if err != nil {
		return nil, nil, err
	}
	notesAt := tips[gitstore.NotesRef]
	if notesAt == "" {
		notesAt = gitstore.NoNotes
	}
	delete(tips, gitstore.NotesRef)
	if recs, ok := fromSummaries(cached, tips, notesAt); ok {
		return recs, nil, nil
	}
	if recs, entries, ok := refreshSummaries(ctx, st, cached, tips, notesAt); ok {
		st.WriteSummaries(Kind, cached, notesAt, entries)
		return recs, nil, nil
	}
	recs, problems, readAt, err := loadAll(ctx, st)
	if err != nil {
		return nil, nil, err
	}
	for i := range recs {
		recs[i] = recs[i].Summary()
	}
	if readAt == "" {
		readAt = notesAt // no session: no outcome depends on the notes
	}
	if len(problems) == 0 {
		entries := make([]gitstore.Doc, len(recs))
		failed := make([]bool, len(recs))
		parallel.For(len(recs), func(i int) {
			r := recs[i]
			data, err := json.Marshal(summaryDoc{Session: r.Session, Root: r.Root, Outcome: r.Outcome, Forged: r.Forged,
				Review: r.Review, ForgedReviews: r.ForgedReviews})
			failed[i] = err != nil
			entries[i] = gitstore.Doc{ID: r.Session.ID, Commit: r.Commit, Data: data}
		})
		if !slices.Contains(failed, true) {
			st.WriteSummaries(Kind, cached, readAt, entries)
		}
	}
	return recs, problems, nil
}

// fromSummaries returns the cached summaries when they describe exactly
// the session refs tips (full ref name -> commit) and the notes commit
// notesAt, sorted by id.
func fromSummaries(c gitstore.Summaries, tips map[string]string, notesAt string) ([]Record, bool) {
	if c.Key != notesAt || len(c.Entries) != len(tips) {
		return nil, false
	}
	ids := make([]string, 0, len(tips))
	for ref, commit := range tips {
		id := strings.TrimPrefix(ref, Kind.RefPrefix())
		if e, ok := c.Entries[id]; !ok || e.Commit != commit {
			return nil, false
		}
		ids = append(ids, id)
	}
	sort.Strings(ids)
	recs := make([]Record, len(ids))
	bad := make([]bool, len(ids))
	parallel.For(len(ids), func(i int) {
		e := c.Entries[ids[i]]
		var d summaryDoc
		// The file passed its checksum, so it is the JSON this package
		// wrote: the fast decoder may read it (it must never see broken
		// JSON, see gitstore.Decode).
		if err := fastjson.Unmarshal(e.Data, &d); err != nil || d.Session.ID != ids[i] {
			bad[i] = true
			return
		}
		recs[i] = Record{Session: d.Session, Root: d.Root, Commit: e.Commit, Outcome: d.Outcome, Forged: d.Forged,
			Review: d.Review, ForgedReviews: d.ForgedReviews}
	})
	if slices.Contains(bad, true) {
		return nil, false
	}
	return recs, true
}

// Whole returns the whole record of the session a summary stands for: its
// document as its ref holds it now and the outcome from its own note,
// read without loading any other session.
func Whole(ctx context.Context, st *gitstore.Store, sum Record) (Record, error) {
	doc, err := st.Get(ctx, Kind, sum.Session.ID)
	if err != nil {
		return Record{}, err
	}
	s, err := Decode(doc.Data)
	if err != nil {
		return Record{}, fmt.Errorf("%s: %w", doc.Ref, err)
	}
	s.ID = sum.Session.ID
	lines, err := st.NotesOf(ctx, sum.Root)
	if err != nil {
		return Record{}, err
	}
	r := Record{Session: s, Root: sum.Root, Commit: doc.Commit}
	r.Outcome, r.Forged = selectOutcome(s.Seal, lines)
	reviewOf(&r, lines)
	return r, nil
}

// refreshSummaries brings a cache that no longer matches up to date one
// session at a time: a session whose ref moved, a new session, and a
// session whose note changed between the cache's notes commit and notesAt
// (one diff-tree) are read from git (their documents at the listed tips and
// their notes at notesAt, in one batch); every other summary is reused as
// cached. It reports false when the cache is unusable (missing, keyed by a
// notes commit git no longer has, a session that does not read cleanly, or
// most of a large board changed, when reading everything is cheaper), and
// the caller reads everything.
// It returns the records sorted by id and the cache entries to write.
func refreshSummaries(ctx context.Context, st *gitstore.Store, c gitstore.Summaries, tips map[string]string,
	notesAt string) ([]Record, []gitstore.Doc, bool) {
	if c.Key == "" || c.Key == gitstore.NoNotes || notesAt == gitstore.NoNotes {
		return nil, nil, false
	}
	changed := map[string]bool{}
	if c.Key != notesAt {
		var err error
		if changed, err = st.NotesChanged(ctx, c.Key, notesAt); err != nil {
			return nil, nil, false // e.g. the old notes commit is gone
		}
	}
	ids := make([]string, 0, len(tips))
	for ref := range tips {
		ids = append(ids, strings.TrimPrefix(ref, Kind.RefPrefix()))
	}
	sort.Strings(ids)
	recs := make([]Record, len(ids))
	stale := make([]bool, len(ids))
	parallel.For(len(ids), func(i int) {
		e, ok := c.Entries[ids[i]]
		if !ok || e.Commit != tips[Kind.Ref(ids[i])] {
			stale[i] = true
			return
		}
		var d summaryDoc
		if err := fastjson.Unmarshal(e.Data, &d); err != nil || d.Session.ID != ids[i] || changed[d.Root] {
			stale[i] = true
			return
		}
		recs[i] = Record{Session: d.Session, Root: d.Root, Commit: e.Commit, Outcome: d.Outcome, Forged: d.Forged,
			Review: d.Review, ForgedReviews: d.ForgedReviews}
	})
	var todo []int
	for i := range ids {
		if stale[i] {
			todo = append(todo, i)
		}
	}
	if len(todo) > 1000 && len(todo) > len(ids)/2 {
		return nil, nil, false
	}
	if err := readStale(ctx, st, ids, tips, notesAt, recs, todo, false); err != nil {
		return nil, nil, false
	}
	entries := make([]gitstore.Doc, len(ids))
	fresh := make(map[int]bool, len(todo))
	for _, i := range todo {
		fresh[i] = true
	}
	for i, id := range ids {
		if !fresh[i] {
			entries[i] = c.Entries[id]
			continue
		}
		r := recs[i]
		data, err := json.Marshal(summaryDoc{Session: r.Session, Root: r.Root, Outcome: r.Outcome, Forged: r.Forged,
			Review: r.Review, ForgedReviews: r.ForgedReviews})
		if err != nil {
			return nil, nil, false
		}
		entries[i] = gitstore.Doc{ID: id, Commit: r.Commit, Data: data}
	}
	return recs, entries, true
}

// readStale reads the sessions at positions todo of ids whole, as of their
// listed tips and the notes commit notesAt (NoNotes: none), and stores them
// in recs: their summaries, or with whole the records themselves. Any
// session that does not read cleanly is an error: the caller then reads
// everything, which reports it as a problem.
func readStale(ctx context.Context, st *gitstore.Store, ids []string, tips map[string]string, notesAt string,
	recs []Record, todo []int, whole bool) error {
	if len(todo) == 0 {
		return nil
	}
	at := make(map[string]string, len(todo))
	names := make([]string, len(todo))
	for j, i := range todo {
		tip := tips[Kind.Ref(ids[i])]
		at[ids[i]] = tip
		names[j] = tip + ":" + Kind.File
	}
	roots, err := st.Roots(ctx, Kind, at)
	if err != nil {
		return err
	}
	targets := make([]string, 0, len(todo))
	for _, i := range todo {
		if r := roots[ids[i]]; r != "" {
			targets = append(targets, r)
		}
	}
	b, err := st.OpenBatch(ctx)
	if err != nil {
		return err
	}
	defer b.Close()
	objs, err := b.ReadMany(names)
	if err != nil {
		return err
	}
	notes := map[string][]string{}
	if notesAt != gitstore.NoNotes {
		if notes, err = b.NotesAt(notesAt, targets); err != nil {
			return err
		}
	}
	for j, i := range todo {
		o := objs[j]
		if o.Missing || o.Type != "blob" || roots[ids[i]] == "" {
			return fmt.Errorf("%s: no %s at %s", Kind.Ref(ids[i]), Kind.File, at[ids[i]])
		}
		s, err := Decode(o.Data)
		if err != nil {
			return err
		}
		s.ID = ids[i]
		r := Record{Session: s, Root: roots[ids[i]], Commit: at[ids[i]]}
		lines := notes[r.Root]
		r.Outcome, r.Forged = selectOutcome(s.Seal, lines)
		reviewOf(&r, lines)
		if !whole {
			r = r.Summary()
		}
		recs[i] = r
	}
	return nil
}
