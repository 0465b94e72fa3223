package gitstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/git-agentmine/git-agentmine/exitcode"
)

// Doc is one entity as stored: its id, ref, the commit the ref points at and
// the JSON document in that commit.
type Doc struct {
	ID     string
	Ref    string
	Commit string
	Data   []byte
}

// RefState names a ref and the commit it must still point at when a
// transaction commits. Operations use it to guard the documents they read.
type RefState struct {
	Ref    string
	Commit string
}

// Change is what an update operation returns: the new document, the commit
// message naming the operation, and the other refs whose state it depended on.
type Change struct {
	Data    []byte
	Message string
	Verify  []RefState
	// Also lists other refs Create writes in the same transaction as the
	// entity's (a branch that goes with it): all are written, or none.
	// Update ignores it.
	Also []RefOp
}

// maxAttempts bounds the retries of a contended update.
const maxAttempts = 400

// Create stores a new entity with id and document data as a root commit.
// verify lists refs the creation depended on (e.g. blockers that must exist
// unchanged); if any moved, the creation is retried by the caller's loop in
// CreateWith.
func (s *Store) Create(ctx context.Context, k Kind, id string, ch Change) (Doc, error) {
	c, err := s.writeDocCommit(ctx, k.File, ch.Data, nil, ch.Message)
	if err != nil {
		return Doc{}, err
	}
	ops := append([]RefOp{{Verb: "create", Ref: k.Ref(id), New: c}}, verifyOps(k.Ref(id), ch.Verify)...)
	ops = append(ops, ch.Also...)
	if err := s.Transact(ctx, ops); err != nil {
		return Doc{}, err
	}
	s.maybePackRefs(ctx, k)
	return Doc{ID: id, Ref: k.Ref(id), Commit: c, Data: ch.Data}, nil
}

// CreateWith creates an entity whose document is computed by build, retrying
// build on the latest state when a ref it verified moved meanwhile.
func (s *Store) CreateWith(ctx context.Context, k Kind, id string, build func() (Change, error)) (Doc, error) {
	for attempt := 0; ; attempt++ {
		ch, err := build()
		if err != nil {
			return Doc{}, err
		}
		d, err := s.Create(ctx, k, id, ch)
		if err == nil || !errors.Is(err, ErrConflict) || attempt >= maxAttempts {
			return d, err
		}
		if err := Backoff(ctx, attempt); err != nil {
			return Doc{}, err
		}
	}
}

// ErrNoChange is returned by an update operation that has nothing to change;
// Update then writes no commit and returns the current document.
var ErrNoChange = errors.New("no change")

// Update applies op to the latest version of the entity and commits the
// result with the old tip as parent, through a compare-and-swap ref update.
// When another writer moved the ref (or a verified ref) first, op is applied
// again to the new latest state. op returning ErrNoChange, or a document equal
// to the current one, writes nothing. changed reports whether a commit was
// made.
func (s *Store) Update(ctx context.Context, k Kind, id string, op func(cur Doc) (Change, error)) (doc Doc, changed bool, err error) {
	for attempt := 0; ; attempt++ {
		cur, err := s.Get(ctx, k, id)
		if err != nil {
			return Doc{}, false, err
		}
		ch, err := op(cur)
		if errors.Is(err, ErrNoChange) || (err == nil && bytes.Equal(ch.Data, cur.Data)) {
			return cur, false, nil
		}
		if err != nil {
			return Doc{}, false, err
		}
		c, err := s.writeDocCommit(ctx, k.File, ch.Data, []string{cur.Commit}, ch.Message)
		if err != nil {
			return Doc{}, false, err
		}
		ops := append([]RefOp{{Verb: "update", Ref: cur.Ref, New: c, Old: cur.Commit}}, verifyOps(cur.Ref, ch.Verify)...)
		err = s.Transact(ctx, ops)
		if err == nil {
			return Doc{ID: id, Ref: cur.Ref, Commit: c, Data: ch.Data}, true, nil
		}
		if !errors.Is(err, ErrConflict) || attempt >= maxAttempts {
			return Doc{}, false, &UpdateError{Noun: k.Noun, ID: id, Err: err}
		}
		if err := Backoff(ctx, attempt); err != nil {
			return Doc{}, false, err
		}
	}
}

// verifyOps turns the refs a change depended on into verify lines of the
// transaction that writes ref. git refuses a transaction that names one ref
// twice, and a change may list one more than once (a task that is both
// parent and blocker, two blockers that share a blocker): each ref and
// expected value is verified once, and ref itself, whose old value the
// write already checks, not at all.
func verifyOps(ref string, vs []RefState) []RefOp {
	var ops []RefOp
	seen := make(map[RefState]bool, len(vs))
	for _, v := range vs {
		if v.Ref == ref || seen[v] {
			continue
		}
		seen[v] = true
		ops = append(ops, RefOp{Verb: "verify", Ref: v.Ref, Old: v.Commit})
	}
	return ops
}

// Backoff sleeps a jittered, capped, growing delay before retry number
// attempt of a compare-and-swap that lost a race; it returns early with the
// context's error.
func Backoff(ctx context.Context, attempt int) error {
	limit := time.Millisecond << min(attempt, 6) // up to 64 ms
	d := time.Duration(rand.Int64N(int64(limit))) + time.Millisecond
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Delete removes the entity's ref if it still points at commit.
func (s *Store) Delete(ctx context.Context, k Kind, id, commit string) error {
	return s.Transact(ctx, []RefOp{{Verb: "delete", Ref: k.Ref(id), Old: commit}})
}

// Get reads the latest version of one entity. An entity that does not exist
// is a NotFound error.
func (s *Store) Get(ctx context.Context, k Kind, id string) (Doc, error) {
	cf := s.catFile(ctx)
	defer cf.close()
	ref := k.Ref(id)
	head, err := cf.get(ref)
	if err != nil {
		return Doc{}, err
	}
	if head.missing {
		return Doc{}, exitcode.New(exitcode.NotFound, fmt.Errorf("%s %s not found", k.Noun, id), "")
	}
	if head.typ != "commit" {
		return Doc{}, fmt.Errorf("%s: points at a %s, not a commit", ref, head.typ)
	}
	blob, err := cf.get(head.id + ":" + k.File)
	if err != nil {
		return Doc{}, err
	}
	if blob.missing || blob.typ != "blob" {
		return Doc{}, &RefError{Ref: ref, Err: s.whyNoDoc(cf, head.id, k.File)}
	}
	return Doc{ID: id, Ref: ref, Commit: head.id, Data: blob.data}, nil
}

// RefError is a problem with one stored entity; listing reports it and goes
// on with the others.
type RefError struct {
	Ref string
	Err error
}

func (e *RefError) Error() string { return fmt.Sprintf("%s: %v", e.Ref, e.Err) }

// Unwrap returns the underlying error.
func (e *RefError) Unwrap() error { return e.Err }

// List reads every entity of kind k with one for-each-ref and one cat-file
// --batch. Entities that cannot be read are returned as RefErrors; the rest
// still list.
func (s *Store) List(ctx context.Context, k Kind) ([]Doc, []error, error) {
	// No %(objecttype): it makes for-each-ref read every object. A ref that
	// does not point at a commit shows up when its document cannot be read.
	// The cache is read while git lists the refs it is checked against.
	cache, gen, refs, commits, err := s.refsAndCache(ctx, k)
	if err != nil {
		return nil, nil, err
	}
	var wants []want
	var problems []error
	docs := make([]Doc, 0, len(refs))
	for i, ref := range refs {
		id := strings.TrimPrefix(ref, k.RefPrefix())
		if c, ok := cache[id]; ok && c.commit == commits[i] {
			docs = append(docs, Doc{ID: id, Ref: ref, Commit: commits[i], Data: c.data})
			continue
		}
		wants = append(wants, want{ref: ref, commit: commits[i]})
	}
	if len(wants) == 0 {
		if len(docs) != len(cache) {
			s.writeCache(k, docs, gen)
		}
		return docs, problems, nil
	}
	read, more, err := s.readDocs(ctx, k, wants)
	if err != nil {
		return nil, nil, err
	}
	docs = append(docs, read...)
	problems = append(problems, more...)
	sort.Slice(docs, func(i, j int) bool { return docs[i].ID < docs[j].ID })
	s.writeCache(k, docs, gen)
	return docs, problems, nil
}

// refsAndCache lists kind k's refs and reads its list cache meanwhile:
// the cache is checked against what git lists.
func (s *Store) refsAndCache(ctx context.Context, k Kind) (cache map[string]cacheEntry, gen os.FileInfo, refs, commits []string, err error) {
	cacheRead := make(chan struct{})
	go func() {
		defer close(cacheRead)
		cache, gen = s.readCache(k)
	}()
	refs, commits, err = s.listRefs(ctx, k.RefPrefix())
	<-cacheRead
	if err != nil {
		return nil, nil, nil, nil, fmt.Errorf("listing %s refs: %w", k.Noun, err)
	}
	return cache, gen, refs, commits, nil
}

// ListEach is List for a reader that keeps only what it makes of each
// document: fn is called with the number of refs listed and the documents
// a chunk at a time (those from the cache first, in id order, then the
// others in the order their blobs lie in the packs, which keeps the delta
// bases the read needs few; problems come in id order), and the documents
// read from git are written to the list cache as they come. A cold read of
// a hundred thousand documents then holds one chunk of them, not all of
// them beside what the reader builds. The documents from the cache are served as List
// serves them (the cache file is read whole). fn may keep the documents
// but not the slice, which the next chunk reuses.
func (s *Store) ListEach(ctx context.Context, k Kind, fn func(total int, docs []Doc)) ([]error, error) {
	cache, gen, refs, commits, err := s.refsAndCache(ctx, k)
	if err != nil {
		return nil, err
	}
	hit := make([]bool, len(refs))
	hits := 0
	for i, ref := range refs {
		if c, ok := cache[strings.TrimPrefix(ref, k.RefPrefix())]; ok && c.commit == commits[i] {
			hit[i] = true
			hits++
		}
	}
	if hits == len(refs) {
		// As List: every document from the cache.
		docs := make([]Doc, len(refs))
		for i, ref := range refs {
			id := strings.TrimPrefix(ref, k.RefPrefix())
			docs[i] = Doc{ID: id, Ref: ref, Commit: commits[i], Data: cache[id].data}
		}
		if len(docs) != len(cache) {
			s.writeCache(k, docs, gen)
		}
		fn(len(refs), docs)
		return nil, nil
	}
	w := newCacheWriter(s.cachePath(k), listFormat, gen)
	// The cached documents first, as listed; then the others in the
	// order their blobs lie in the packs (packorder.go).
	order := make([]int, 0, len(refs))
	var misses []int
	for i := range refs {
		if hit[i] {
			order = append(order, i)
		} else {
			misses = append(misses, i)
		}
	}
	spots := s.locateDocs(k.File, commits, misses)
	order = append(order, packOrder(misses, spots)...)
	problems, err := s.listChunks(ctx, k, refs, commits, docChunk, func(i int) (Doc, bool) {
		if !hit[i] {
			return Doc{}, false
		}
		id := strings.TrimPrefix(refs[i], k.RefPrefix())
		return Doc{ID: id, Ref: refs[i], Commit: commits[i], Data: cache[id].data}, true
	}, func(docs []Doc) {
		if w != nil {
			for _, d := range docs {
				io.WriteString(w, listEntryHead(d))
				w.Write(d.Data)
			}
		}
		fn(len(refs), docs)
	}, order, spots, true)
	if w != nil {
		if err != nil {
			w.abort()
		} else {
			w.commit()
		}
	}
	return problems, err
}

// listChunks calls fn with the documents of refs (at commits) chunk refs
// at a time, in the order listed: the ones cached gives, the others read from
// git at the listed commit (a ref whose commit holds none is a RefError,
// returned in the order listed). order, when not nil, is the order of the
// positions to go through instead (every position once), and spots, when
// not nil, where each position's document lies (locateDocs): a document
// located is read by its blob. With overlap, fn takes each chunk on a
// goroutine of its own while the next chunk is read (one call at a time,
// in order, the last one returned before listChunks returns).
func (s *Store) listChunks(ctx context.Context, k Kind, refs, commits []string, chunk int,
	cached func(i int) (Doc, bool), fn func(docs []Doc), order []int, spots []blobSpot, overlap bool) ([]error, error) {
	cf := s.catFile(ctx)
	defer cf.close()
	// While fn takes one chunk the next is read into the other buffer:
	// what fn does alone (a cold task list: inserting into the board,
	// writing the cache) is no longer a stretch where the read waits.
	var bufs [2][]Doc
	var took chan struct{} // closed when fn has taken the chunk before
	wait := func() {
		if took != nil {
			<-took
			took = nil
		}
	}
	defer wait()
	cur := 0
	if order != nil {
		// In the packs' order a document's delta base is most often one
		// of the last few read, in the memo of the core reading
		// (readInPackOrder): the few others go through a small cache of
		// this read's own, and the object reader's cache is left to the
		// other reads.
		cf.bases = &baseCache{limit: orderedBaseBytes}
	}
	var problems []error
	var wants []want
	at := func(j int) int {
		if order == nil {
			return j
		}
		return order[j]
	}
	for start := 0; start < len(refs); start += chunk {
		end := min(start+chunk, len(refs))
		wants = wants[:0]
		for j := start; j < end; j++ {
			i := at(j)
			if _, ok := cached(i); !ok {
				w := want{ref: refs[i], commit: commits[i]}
				if spots != nil {
					w.blob = spots[i].blob
				}
				wants = append(wants, w)
			}
		}
		read, more, err := s.readDocsWith(cf, k, wants)
		if err != nil {
			return nil, err
		}
		problems = append(problems, more...)
		// Merge in the order gone through: read holds the wanted refs
		// that read, in that order.
		docs := bufs[cur][:0]
		for j := start; j < end; j++ {
			i := at(j)
			if d, ok := cached(i); ok {
				docs = append(docs, d)
				continue
			}
			if len(read) > 0 && read[0].Ref == refs[i] {
				docs = append(docs, read[0])
				read = read[1:]
			}
		}
		bufs[cur] = docs
		if overlap {
			wait()
			done := make(chan struct{})
			took = done
			go func() {
				defer close(done)
				fn(docs)
			}()
			cur ^= 1
		} else {
			fn(docs)
		}
		if db := s.objects(); db != nil && end < len(refs) {
			db.releasePages()
		}
	}
	if order != nil {
		inListedOrder(problems, refs)
	}
	return problems, nil
}

// inListedOrder sorts the RefErrors among problems by where their refs are
// listed in refs, after any other problems (kept in their order).
func inListedOrder(problems []error, refs []string) {
	if len(problems) < 2 {
		return
	}
	pos := make(map[string]int, len(problems))
	for _, p := range problems {
		var re *RefError
		if errors.As(p, &re) {
			pos[re.Ref] = -1
		}
	}
	for i, r := range refs {
		if _, ok := pos[r]; ok {
			pos[r] = i
		}
	}
	rank := func(p error) int {
		var re *RefError
		if errors.As(p, &re) {
			return pos[re.Ref]
		}
		return -1
	}
	slices.SortStableFunc(problems, func(a, b error) int { return rank(a) - rank(b) })
}

// want is a ref to read a document from, at the commit it was listed at,
// and the document's blob when it was located (locateDocs).
type want struct{ ref, commit, blob string }

// readDocs reads the document of each wanted ref at its listed commit with
// one cat-file; a ref whose commit holds no document is a problem (a
// *RefError), the others are read.
func (s *Store) readDocs(ctx context.Context, k Kind, wants []want) ([]Doc, []error, error) {
	if len(wants) == 0 {
		return nil, nil, nil
	}
	cf := s.catFile(ctx)
	defer cf.close()
	return s.readDocsWith(cf, k, wants)
}

// EachDoc reads the document of kind k at each listed commit (refs and
// commits at the same positions, as TipList lists them) a chunk at a time
// and calls fn with each chunk's readable documents: a reader of tens of
// thousands of documents that keeps only what it makes of each holds one
// chunk of them, not all. The documents come in the order their blobs lie
// in the packs, not in the order listed (the caller sorts what it keeps if
// it needs to): documents written together are stored as chains of deltas
// against each other, and read in that order each chain is inflated once
// (packorder.go, readInPackOrder) instead of held in the delta base cache.
// The refs whose commit holds no document are returned as RefErrors, in
// the order listed. It neither reads nor writes the list cache, and it
// lets go of the pages the in-process object reader mapped between chunks.
// fn may keep the documents but not the slice, which the next chunk reuses.
func (s *Store) EachDoc(ctx context.Context, k Kind, refs, commits []string, fn func(docs []Doc)) ([]error, error) {
	if len(refs) != len(commits) {
		return nil, fmt.Errorf("reading %s documents: %d refs, %d commits", k.Noun, len(refs), len(commits))
	}
	all := make([]int, len(refs))
	for i := range all {
		all[i] = i
	}
	spots := s.locateDocs(k.File, commits, all)
	return s.listChunks(ctx, k, refs, commits, docChunk, func(int) (Doc, bool) { return Doc{}, false }, fn,
		packOrder(all, spots), spots, false)
}

// docChunk is how many documents EachDoc reads at a time: enough to keep
// every core inflating, few enough that a chunk is a small part of a board
// of tens of thousands.
const docChunk = 2048

// readDocsWith is readDocs through the object reader cf.
func (s *Store) readDocsWith(cf *catFile, k Kind, wants []want) ([]Doc, []error, error) {
	docs := make([]Doc, 0, len(wants))
	var problems []error
	var bad []want
	names := make([]string, len(wants))
	for i, w := range wants {
		if w.blob != "" {
			names[i] = w.blob // found at that path of that commit already
			continue
		}
		// ^{commit}: a ref at a tree holding the document is no entity.
		names[i] = w.commit + "^{commit}:" + k.File
	}
	objs, err := cf.getMany(names)
	if err != nil {
		return nil, nil, err
	}
	for i, w := range wants {
		o := objs[i]
		if o.missing || o.typ != "blob" {
			bad = append(bad, w)
			continue
		}
		docs = append(docs, Doc{ID: strings.TrimPrefix(w.ref, k.RefPrefix()), Ref: w.ref, Commit: w.commit, Data: o.data})
	}
	for _, w := range bad {
		o, err := cf.get(w.commit)
		switch {
		case err != nil:
			return nil, nil, err
		case !o.missing && o.typ != "commit":
			problems = append(problems, &RefError{Ref: w.ref, Err: fmt.Errorf("points at a %s, not a commit", o.typ)})
		case o.missing:
			problems = append(problems, &RefError{Ref: w.ref, Err: fmt.Errorf("points at commit %s, which is missing from the object store", w.commit)})
		default:
			problems = append(problems, &RefError{Ref: w.ref, Err: s.whyNoDoc(cf, w.commit, k.File)})
		}
	}
	return docs, problems, nil
}

// whyNoDoc says why the commit yields no document file: the commit, its
// tree or the file's blob missing from the object store (a ref whose
// objects were pruned), or a tree that holds no such file.
func (s *Store) whyNoDoc(cf *catFile, commit, file string) error {
	c, err := cf.get(commit)
	if err != nil || c.missing {
		return fmt.Errorf("points at commit %s, which is missing from the object store", commit)
	}
	if c.typ != "commit" {
		return fmt.Errorf("points at a %s, not a commit", c.typ)
	}
	tree, _, _ := strings.Cut(strings.TrimPrefix(string(c.data), "tree "), "\n")
	t, err := cf.get(tree)
	if err == nil && t.missing {
		return fmt.Errorf("commit %s: its tree %s is missing from the object store", commit[:12], tree)
	}
	if err == nil && t.typ == "tree" {
		if blob, found, ok := findTreeEntry(t.data, file, s.hashLen()); ok && found {
			if b, err := cf.get(blob); err != nil || !b.missing {
				return fmt.Errorf("commit %s: its %s is not a file", commit[:12], file)
			}
			return fmt.Errorf("commit %s: its %s (blob %s) is missing from the object store", commit[:12], file, blob)
		}
	}
	return fmt.Errorf("commit %s has no %s", commit[:12], file)
}

// ListNear reads the entities of kind k whose ids share their first
// MinPrefix digits with any of prefixes (each a valid id or prefix): every
// entity a prefix can resolve to, and every one that can lengthen the short
// form of such an id. It costs one for-each-ref and one cat-file whatever
// the number of entities, and neither reads nor writes the list cache.
func (s *Store) ListNear(ctx context.Context, k Kind, prefixes []string) ([]Doc, []error, error) {
	patterns, err := NearPatterns(k, prefixes)
	if err != nil || len(patterns) == 0 {
		return nil, nil, err
	}
	refs, commits, err := s.TipList(ctx, patterns...)
	if err != nil {
		return nil, nil, err
	}
	return s.ListNearIn(ctx, k, prefixes, refs, commits)
}

// NearPatterns returns the for-each-ref patterns of ListNear: one per
// distinct first MinPrefix digits of prefixes (each a valid id or prefix).
func NearPatterns(k Kind, prefixes []string) ([]string, error) {
	seen := map[string]bool{}
	var patterns []string
	for _, p := range prefixes {
		if !ValidID(p) {
			return nil, fmt.Errorf("internal error: %q is not a %s id", p, k.Noun)
		}
		if pat := k.RefPrefix() + p[:MinPrefix] + "*"; !seen[pat] {
			seen[pat] = true
			patterns = append(patterns, pat)
		}
	}
	return patterns, nil
}

// ListNearIn is ListNear reading the refs from a listing already made
// (TipList's refs and commits, which may hold other refs too), so that a
// caller can list them in the same for-each-ref as refs it needs besides.
// The listing must include NearPatterns(k, prefixes).
func (s *Store) ListNearIn(ctx context.Context, k Kind, prefixes []string, refs, commits []string) ([]Doc, []error, error) {
	patterns, err := NearPatterns(k, prefixes)
	if err != nil {
		return nil, nil, err
	}
	var wants []want
	for i, ref := range refs {
		for _, pat := range patterns {
			if strings.HasPrefix(ref, strings.TrimSuffix(pat, "*")) {
				wants = append(wants, want{ref: ref, commit: commits[i]})
				break
			}
		}
	}
	docs, problems, err := s.readDocs(ctx, k, wants)
	if err != nil {
		return nil, nil, err
	}
	sort.Slice(docs, func(i, j int) bool { return docs[i].ID < docs[j].ID })
	return docs, problems, nil
}

// maybePackRefs packs refs once many loose entity refs have piled up, so bulk
// reads stay fast (design §2: pack refs after bulk writes). git's pack-refs
// takes its own locks and is safe next to concurrent writers.
func (s *Store) maybePackRefs(ctx context.Context, k Kind) {
	f, err := os.Open(s.loc.CommonDir + "/" + k.RefPrefix())
	if err != nil {
		return
	}
	names, _ := f.Readdirnames(loosePackThreshold + 1)
	f.Close()
	if len(names) > loosePackThreshold {
		s.git.Run(ctx, "pack-refs", "--all")
	}
}

const loosePackThreshold = 256

// LogEntry is one commit in an entity's history.
type LogEntry struct {
	Commit  string
	Author  string
	Email   string
	Time    time.Time
	Message string
	Parents int
}

// Log returns the entity's history, newest first.
func (s *Store) Log(ctx context.Context, k Kind, id string) ([]LogEntry, error) {
	out, err := s.git.Run(ctx, "log", "-z", "--format=%H%x1f%P%x1f%an%x1f%ae%x1f%at%x1f%B", k.Ref(id), "--")
	if err != nil {
		return nil, fmt.Errorf("reading history of %s %s: %w", k.Noun, id, err)
	}
	var entries []LogEntry
	for _, rec := range strings.Split(string(out), "\x00") {
		if rec == "" {
			continue
		}
		f := strings.SplitN(rec, "\x1f", 6)
		if len(f) != 6 {
			continue
		}
		var sec int64
		fmt.Sscan(f[4], &sec)
		entries = append(entries, LogEntry{Commit: f[0], Parents: len(strings.Fields(f[1])), Author: f[2], Email: f[3], Time: time.Unix(sec, 0).UTC(), Message: strings.TrimSpace(f[5])})
	}
	return entries, nil
}
