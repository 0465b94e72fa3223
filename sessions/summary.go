package sessions

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/parallel"
)

// A summary is a session record without what status and listings never
// read: the worker's command and environment, the scope and sparse
// patterns, the generated files, the worktree setup, the DoD commands, the outcome's artifact
// lists, and the outcome's full scope and DoD verdicts when its summary
// fields (scope_valid, dod_status) already say everything passed. Status
// (verify.Summarize), liveness, usage and the running-session documents
// read the same from a summary as from the whole record.
//
// Summaries are cached locally (gitstore's summary cache) keyed by each
// session ref's tip and by the notes commit the outcomes came from, so that
// reading the board again costs one for-each-ref and the cache file instead
// of decoding every session document and every outcome line.

// Summary returns r without what status and listings never read (see the
// comment above): a record for deriving statuses, never one to print as
// the session's document.
func (r Record) Summary() Record {
	s := r.Session
	s.Command, s.CommandEnv, s.CommandStdin = nil, nil, ""
	s.Scope, s.Sparse = Scope{}, nil
	s.Generated, s.GeneratedBlobs, s.Setup = nil, nil, nil
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
	set, problems, err := OpenSummaries(ctx, st)
	if err != nil {
		return nil, nil, err
	}
	switch {
	case set.recs != nil:
		return set.recs, problems, nil
	case set.st == nil:
		if recs, ok := decodeAll(set.list); ok {
			return recs, problems, nil
		}
	default:
		recs := []Record{}
		if set.Each(func(r *Record) { recs = append(recs, *r) }) {
			return recs, problems, nil
		}
	}
	// The cache held an entry that does not decode, or did not check
	// out: read from git.
	return loadSummariesFromGit(ctx, st, set.cached, set.notesAt, set.notesAt)
}

// SummarySet is every session's summary (Record.Summary), sorted by id,
// to be walked one at a time (Each): a reader that keeps only what it
// derives from each session holds one record at a time instead of tens of
// thousands, and, when the cache is served as it is, not even the cache
// file whole.
type SummarySet struct {
	// The records come from one of: the cache file, streamed (st and key
	// set); the checked cache's entries (list); or git (recs), when the
	// cache did not serve.
	st      *gitstore.Store
	key     string
	list    []gitstore.SummaryEntry
	recs    []Record
	cached  gitstore.Summaries
	notesAt string
}

// SizeHint is about how many sessions the set holds (exactly, unless the
// cache file is streamed: then from its size), to size what a walk fills.
func (s *SummarySet) SizeHint() int {
	switch {
	case s.recs != nil:
		return len(s.recs)
	case s.st != nil:
		return int(s.cached.Size() / 300)
	}
	return len(s.list)
}

// Each calls fn with every session's summary in turn, in one record that
// it overwrites each time (fn copies what it keeps). ok is false when a
// cached summary does not decode or the cache file does not check out once
// read to its end: the caller then drops what it made of the records and
// reads them another way (LoadSummaries reads them from git).
func (s *SummarySet) Each(fn func(r *Record)) (ok bool) {
	var r Record
	switch {
	case s.recs != nil:
		for i := range s.recs {
			r = s.recs[i]
			fn(&r)
		}
		return true
	case s.st != nil:
		good := true
		ok := s.st.StreamSummaries(Kind, s.key, func(e gitstore.SummaryEntry) {
			if !good {
				return
			}
			r = Record{Commit: e.Commit}
			if decodeSummary(e.Data, e.ID, &r) != nil {
				good = false
				return
			}
			fn(&r)
		})
		return ok && good
	}
	for i := range s.list {
		r = Record{Commit: s.list[i].Commit}
		if decodeSummary(s.list[i].Data, s.list[i].ID, &r) != nil {
			return false
		}
		fn(&r)
	}
	return true
}

// OpenSummaries is LoadSummaries without decoding the cached summaries:
// the set serves them one at a time. When the cache does not serve, the
// records are read from git (and the cache refreshed) as LoadSummaries
// does.
func OpenSummaries(ctx context.Context, st *gitstore.Store) (*SummarySet, []error, error) {
	// While the session refs are as they were when the cache was written
	// (their stamp is in its key, with the notes commit), the cache is
	// served without listing the refs at all.
	stamp, settled := st.RefsStamp(Kind.RefPrefix())
	if stamp != "" {
		_, notes, err := st.TipList(ctx, gitstore.NotesRef)
		if err != nil {
			return nil, nil, err
		}
		notesAt := gitstore.NoNotes
		if len(notes) == 1 {
			notesAt = notes[0]
		}
		if head := st.SummaryHead(Kind); head.Key == stampedKey(notesAt, stamp) {
			return &SummarySet{st: st, key: head.Key, cached: head, notesAt: notesAt}, nil, nil
		}
	}
	// The cache is read while git lists the refs it is checked against.
	var cached gitstore.Summaries
	var list []gitstore.SummaryEntry
	read := make(chan struct{})
	go func() {
		defer close(read)
		cached, list = st.ReadSummaryList(Kind)
	}()
	refs, commits, err := st.TipList(ctx, Kind.RefPrefix(), gitstore.NotesRef)
	<-read
	if err != nil {
		return nil, nil, err
	}
	notesAt := gitstore.NoNotes
	if n := len(refs); n > 0 && refs[n-1] == gitstore.NotesRef {
		notesAt = commits[n-1]
		refs, commits = refs[:n-1], commits[:n-1]
	}
	// The key a cache written now gets: the notes commit, and the stamp
	// too when it is settled and no ref moved while they were listed.
	key := notesAt
	if settled {
		if again, _ := st.RefsStamp(Kind.RefPrefix()); again == stamp {
			key = stampedKey(notesAt, stamp)
		}
	}
	if cachedFor(notesOfKey(cached.Key), list, refs, commits, notesAt) {
		if key != cached.Key {
			// Right, but keyed without the stamp: key it with it.
			entries := make([]gitstore.Doc, len(list))
			for i, e := range list {
				entries[i] = gitstore.Doc{ID: e.ID, Commit: e.Commit, Data: []byte(e.Data)}
			}
			st.WriteSummaries(Kind, cached, key, entries)
		}
		return &SummarySet{list: list, cached: cached, notesAt: notesAt}, nil, nil
	}
	tips := make(map[string]string, len(refs))
	for i, ref := range refs {
		tips[ref] = commits[i]
	}
	if recs, entries, ok := refreshSummaries(ctx, st, notesOfKey(cached.Key), list, tips, notesAt); ok {
		st.WriteSummaries(Kind, cached, key, entries)
		return &SummarySet{recs: nonNilRecords(recs)}, nil, nil
	}
	if set, problems, ok, err := streamSummariesFromGit(ctx, st, cached, refs, commits, notesAt, key); ok || err != nil {
		return set, problems, err
	}
	recs, problems, err := loadSummariesFromGit(ctx, st, cached, notesAt, key)
	if err != nil {
		return nil, nil, err
	}
	return &SummarySet{recs: nonNilRecords(recs)}, problems, nil
}

// streamSummariesFromGit is loadSummariesFromGit for the session refs
// listed (refs and commits, sorted by name) without holding every session
// whole: the documents are read a chunk at a time (gitstore's EachDoc),
// each one decoded, given its outcome and review and encoded as its
// summary at once, so that what is kept is one digest per session (the
// set serves them from that list) rather than every document, every
// record and every digest side by side. It writes the cache from the
// digests unless some session did not read. ok is false when the roots of
// the listed sessions cannot be found in one walk or a summary does not
// encode: the caller then reads the whole way, which says which session is
// wrong.
func streamSummariesFromGit(ctx context.Context, st *gitstore.Store, cached gitstore.Summaries,
	refs, commits []string, notesAt, key string) (*SummarySet, []error, bool, error) {
	prefix := Kind.RefPrefix()
	tips := make(map[string]string, len(refs))
	for i, ref := range refs {
		tips[strings.TrimPrefix(ref, prefix)] = commits[i]
	}
	roots, err := st.Roots(ctx, Kind, tips)
	if err != nil {
		return nil, nil, false, nil
	}
	tips = nil
	targets := make([]string, 0, len(roots))
	for _, r := range roots {
		if r != "" {
			targets = append(targets, r)
		}
	}
	readAt := ""
	var notes map[string][]string
	if len(refs) > 0 {
		if notes, readAt, err = st.ReadNotesAt(ctx, targets); err != nil {
			return nil, nil, false, err
		}
	}
	targets = nil
	// Each note is let go once its session's summary is made (unless
	// another session has the same root), so that the notes do not stay
	// whole beside the summaries made from them.
	shared := sharedRoots(roots)
	list := make([]gitstore.SummaryEntry, 0, len(refs))
	var bad []error
	failed := false
	problems, err := st.EachDoc(ctx, Kind, refs, commits, func(docs []gitstore.Doc) {
		data := make([]string, len(docs))
		errs := make([]error, len(docs))
		parallel.For(len(docs), func(i int) {
			data[i], errs[i] = summaryOfDoc(docs[i], roots, notes)
		})
		for i, d := range docs {
			switch {
			case errors.Is(errs[i], errNoEncode):
				failed = true
			case errs[i] != nil:
				bad = append(bad, &gitstore.RefError{Ref: d.Ref, Err: errs[i]})
			default:
				list = append(list, gitstore.SummaryEntry{ID: d.ID, Commit: d.Commit, Data: data[i]})
			}
			if r := roots[d.ID]; !shared[r] {
				delete(notes, r)
			}
		}
	})
	// What the documents' deltas were resolved with is of no use to the
	// rest of the board's read.
	st.ReleaseCaches()
	if err != nil {
		return nil, nil, false, err
	}
	if failed {
		return nil, nil, false, nil
	}
	// The documents came in pack order: the set and the cache are by id.
	slices.SortFunc(list, func(a, b gitstore.SummaryEntry) int { return strings.Compare(a.ID, b.ID) })
	// So did the problems: by ref, those of reading before those of
	// decoding, as reading every session whole gives them.
	byRef := func(a, b error) int { return strings.Compare(refOf(a), refOf(b)) }
	slices.SortStableFunc(problems, byRef)
	slices.SortStableFunc(bad, byRef)
	problems = append(problems, bad...)
	if readAt == "" {
		readAt = notesAt // no session: no outcome depends on the notes
	}
	if readAt == notesAt {
		readAt = key // read at the notes commit the key names
	}
	if len(problems) == 0 {
		st.WriteSummaryList(Kind, cached, readAt, list)
	}
	return &SummarySet{list: list, cached: cached, notesAt: notesAt}, problems, true, nil
}

// sharedRoots returns the roots (by session id) that more than one session
// has.
func sharedRoots(roots map[string]string) map[string]bool {
	all := make([]string, 0, len(roots))
	for _, r := range roots {
		all = append(all, r)
	}
	slices.Sort(all)
	shared := map[string]bool{}
	for i := 1; i < len(all); i++ {
		if all[i] == all[i-1] {
			shared[all[i]] = true
		}
	}
	return shared
}

// refOf is the ref a problem is about ("" for another error).
func refOf(err error) string {
	var re *gitstore.RefError
	if errors.As(err, &re) {
		return re.Ref
	}
	return ""
}

// errNoEncode is summaryOfDoc's error for a record whose summary does not
// encode (not a problem of the session's document).
var errNoEncode = errors.New("the summary does not encode")

// summaryOfDoc decodes the session document d, gives it its outcome and
// review from the notes of its root (roots: by session id), and returns
// its encoded summary; an error for a document that does not decode, or
// errNoEncode.
func summaryOfDoc(d gitstore.Doc, roots map[string]string, notes map[string][]string) (string, error) {
	s, err := Decode(d.Data)
	if err != nil {
		return "", err
	}
	s.ID = d.ID
	r := Record{Session: s, Commit: d.Commit, Root: roots[d.ID]}
	lines := notes[r.Root] // none without a root
	r.Outcome, r.Forged = selectOutcome(s.Seal, lines)
	reviewOf(&r, lines)
	data, err := encodeSummary(r.Summary())
	if err != nil {
		return "", errNoEncode
	}
	return string(data), nil
}

// stampedKey is the summary cache's key under a stamp of the session refs:
// the notes commit, then a digest of the stamp.
func stampedKey(notesAt, stamp string) string {
	sum := sha256.Sum256([]byte(stamp))
	return notesAt + ":" + hex.EncodeToString(sum[:16])
}

// notesOfKey is the notes commit of a summary cache key (stamped or not).
func notesOfKey(key string) string {
	notes, _, _ := strings.Cut(key, ":")
	return notes
}

// nonNilRecords makes an empty result a non-nil slice, which SummarySet
// tells from "serve from the cache list".
func nonNilRecords(recs []Record) []Record {
	if recs == nil {
		return []Record{}
	}
	return recs
}

// loadSummariesFromGit reads every session from git, returns their
// summaries and writes the cache from them (unless some did not read).
func loadSummariesFromGit(ctx context.Context, st *gitstore.Store, cached gitstore.Summaries, notesAt, key string) ([]Record, []error, error) {
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
	if readAt == notesAt {
		readAt = key // read at the notes commit the key names
	}
	if len(problems) == 0 {
		entries := make([]gitstore.Doc, len(recs))
		failed := make([]bool, len(recs))
		parallel.For(len(recs), func(i int) {
			data, err := encodeSummary(recs[i])
			failed[i] = err != nil
			entries[i] = gitstore.Doc{ID: recs[i].Session.ID, Commit: recs[i].Commit, Data: data}
		})
		if !slices.Contains(failed, true) {
			// in ref order, the order cachedFor checks
			slices.SortFunc(entries, func(a, b gitstore.Doc) int { return strings.Compare(a.ID, b.ID) })
			st.WriteSummaries(Kind, cached, readAt, entries)
		}
	}
	return recs, problems, nil
}

// cachedFor reports whether the cached summaries list (the cache's
// entries, keyed key) describes exactly the session refs (sorted by name)
// pointing at commits and the notes commit notesAt.
func cachedFor(key string, list []gitstore.SummaryEntry, refs, commits []string, notesAt string) bool {
	if key != notesAt || len(list) != len(refs) {
		return false
	}
	prefix := Kind.RefPrefix()
	for i, ref := range refs {
		e := list[i]
		if e.Commit != commits[i] || len(ref) != len(prefix)+len(e.ID) || ref[len(prefix):] != e.ID || ref[:len(prefix)] != prefix {
			return false
		}
	}
	return true
}

// decodeAll decodes every cached summary, in parallel; ok is false when
// one does not decode.
func decodeAll(list []gitstore.SummaryEntry) ([]Record, bool) {
	recs := make([]Record, len(list))
	bad := make([]bool, len(list))
	parallel.For(len(list), func(i int) {
		recs[i].Commit = list[i].Commit
		bad[i] = decodeSummary(list[i].Data, list[i].ID, &recs[i]) != nil
	})
	if slices.Contains(bad, true) {
		return nil, false
	}
	return recs, true
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
func refreshSummaries(ctx context.Context, st *gitstore.Store, key string, list []gitstore.SummaryEntry,
	tips map[string]string, notesAt string) ([]Record, []gitstore.Doc, bool) {
	if key == "" || key == gitstore.NoNotes || notesAt == gitstore.NoNotes {
		return nil, nil, false
	}
	changed := map[string]bool{}
	if key != notesAt {
		var err error
		if changed, err = st.NotesChanged(ctx, key, notesAt); err != nil {
			return nil, nil, false // e.g. the old notes commit is gone
		}
	}
	cached := make(map[string]gitstore.SummaryEntry, len(list))
	for _, e := range list {
		cached[e.ID] = e
	}
	ids := make([]string, 0, len(tips))
	for ref := range tips {
		ids = append(ids, strings.TrimPrefix(ref, Kind.RefPrefix()))
	}
	sort.Strings(ids)
	recs := make([]Record, len(ids))
	stale := make([]bool, len(ids))
	parallel.For(len(ids), func(i int) {
		e, ok := cached[ids[i]]
		if !ok || e.Commit != tips[Kind.Ref(ids[i])] {
			stale[i] = true
			return
		}
		var r Record
		if err := decodeSummary(e.Data, ids[i], &r); err != nil || changed[r.Root] {
			stale[i] = true
			return
		}
		r.Commit = e.Commit
		recs[i] = r
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
			e := cached[id]
			entries[i] = gitstore.Doc{ID: id, Commit: e.Commit, Data: []byte(e.Data)}
			continue
		}
		data, err := encodeSummary(recs[i])
		if err != nil {
			return nil, nil, false
		}
		entries[i] = gitstore.Doc{ID: id, Commit: recs[i].Commit, Data: data}
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
