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
