// Package replica owns keeping this clone's copy of the agentmine state in
// step with a remote's (design §8): sync, push and pull rounds, the
// field-by-field three-way merge of entity documents, the union of run
// outcome notes, and remote claims. It is named for what it keeps, a
// replica, rather than "sync", which would shadow the standard library's
// package of that name.
//
// It works over a narrow Store (implemented by *gitstore.Store): batch
// object reads, object ids and batched object writes, ref transactions
// with expected old values, and the shared git runner, through which it
// lists the remote's refs and runs the fetches and pushes of
// refs/agentmine. Apart from the objects `git fetch` brings, every object
// and ref it writes goes through the Store (gitstore's object writer and
// `git update-ref --stdin`).
//
// A sync round is: list the remote's refs/agentmine/* and refs/notes/agentmine
// (`git ls-remote`) and the local ones; fetch by id the remote tips this
// repository lacks, writing no ref at all (never anything into
// refs/agentmine/*); compute for every entity whose sides differ the state
// both sides should have (fast-forward, or a deterministic merge commit);
// push that state to the remote as plain fast-forwards with `git push
// --atomic`; and only then move the local refs, each with a
// compare-and-swap. Pushing before updating local refs means a remote that
// refuses the refs leaves local state untouched, and a sync killed at any
// point leaves nothing half-done that the next sync does not repair: the
// remote never loses commits (pushes are fast-forwards only) and local refs
// only ever move to commits that contain them.
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
// copied to the other side.
//
// The staging namespace (refs/agentmine-remote/<remote>/… and
// refs/notes/agentmine-remote/<remote>/agentmine) holds the tips to push
// when there are many: they are written just before the push, which sends
// them with one wildcard refspec (far faster than thousands of explicit
// refspecs), and deleted with the local update (or right after a push):
// between syncs it is empty. A few tips are named in the push itself and
// never staged. The remote's state is never stored there, nor in any other
// ref: a clone that meets 10,000 remote entities for the first time does
// not write, read back and pack 10,000 refs, only the objects it lacks
// arrive, and a local ref moves only to a tip that contains it or to a
// merge of both sides. Remote names containing "/" share a staging prefix
// with a shorter remote name and should be avoided.
package replica

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/gitcmd"
	"github.com/git-agentmine/git-agentmine/gitstore"
)

// Store is what replica needs of the state store; *gitstore.Store has it.
type Store interface {
	// Git returns the runner every git process is started through.
	Git() gitcmd.Runner
	// Config returns a git config value and whether it is set.
	Config(key string) (string, bool)
	// SetConfig sets a git config value in the repository.
	SetConfig(ctx context.Context, key, value string) error
	// OpenBatch starts a batch object reader.
	OpenBatch(ctx context.Context) (*gitstore.Batch, error)
	// HashLen is the byte length of object ids in raw trees.
	HashLen() int
	// ObjectID returns the id an object would have, without writing it.
	ObjectID(typ string, data []byte) string
	// WriteObjects stores objects, in one pack when there are many.
	WriteObjects(ctx context.Context, objs []gitstore.Object) error
	// Transact applies ref updates atomically, each with its expected old
	// value; a ref that moved fails the whole transaction with
	// gitstore.ErrConflict.
	Transact(ctx context.Context, ops []gitstore.RefOp) error
	// PackRefs packs loose refs.
	PackRefs(ctx context.Context) error
	// TipList lists the refs matching for-each-ref patterns, sorted by
	// name, with the object each points at: in-process where it can.
	TipList(ctx context.Context, patterns ...string) (refs, ids []string, err error)
	// ReleaseCaches drops the object reader's caches and the pack pages it
	// holds: merge calls it between chunks.
	ReleaseCaches()
}

var _ Store = (*gitstore.Store)(nil)

// Options configure Sync, Push and Pull.
type Options struct {
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
	Progress func(Progress)
	// Only, when set, limits the entities synced to those whose ref it
	// accepts (the notes are always synced): a worker shares its own
	// session and outcome without taking in the rest of the remote's
	// board (another clone's run of the same name, say).
	Only func(ref string) bool
}

// Progress tells how far a sync is.
type Progress struct {
	// Phase is "fetch", "merge", "push" or "update".
	Phase string
	// Round counts from 1.
	Round int
	// Done and Total count entities in the merge phase, refs in the push and
	// update phases; both are zero when unknown.
	Done  int
	Total int
}

// Report says what a sync, push or pull did. It is part of the --json
// contract: field names are stable.
type Report struct {
	// Remote is the remote synced with.
	Remote string `json:"remote"`
	// Rounds is how many rounds ran (more than 1 when the remote moved).
	Rounds int `json:"rounds"`
	// Fetched counts entity and notes refs whose remote tip this clone
	// lacked and fetched in the last round (0 for Push, which fetches
	// nothing). A tip found only in an alternate object store counts as
	// fetched.
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
	Conflicts []Conflict `json:"conflicts"`
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
	Skipped []Skip `json:"skipped"`
}

// Conflict is one field changed differently on both sides. The value
// that lost stays in history (it is in one parent of the merge commit).
type Conflict struct {
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

// Skip is an entity that was not synced, and why.
type Skip struct {
	Ref   string `json:"ref"`
	Error string `json:"error"`
}

// ErrSkipped is wrapped by the error Sync and Pull return when some entities
// were skipped; the report lists them and everything else synced.
var ErrSkipped = errors.New("some entities were not synced")

// ErrRemoteMoved is wrapped by the error returned when the remote kept
// changing for every round.
var ErrRemoteMoved = errors.New("the remote kept changing during sync")

type mode int

const (
	modeSync mode = iota
	modePull
	modePush
)

// loosePackThreshold is how many local entity refs a sync may create
// before it packs refs, so that bulk reads stay fast (design §2): a clone
// taking in a board for the first time. Refs a sync moves (fast-forwards,
// merges) are left loose: rewriting packed-refs with every ref (and
// deleting the loose ones) cost a sync pulling 1,500 changed entities of
// 10,000 about a fifth of its time, more than reading the loose refs costs
// the commands that follow, and the next entity write packs them once more
// than 256 of a kind are loose (gitstore). The staging refs a sync writes
// are deleted before it ends, and the remote's refs are never written
// locally, so they do not count.
const loosePackThreshold = 256

// GCPercent is the garbage collection target (debug.SetGCPercent) for a
// process running Sync, Pull or Push. A sync keeps little alive (1-2 MB at
// 10,000 entities, 1,500 of them changed: the plans of the changed
// entities, the merge objects waiting to be written and one chunk of
// histories) but allocates 20-30 KB per changed entity as it goes, so
// its heap runs up to the runtime's minimum goal between collections
// whatever it keeps. At 50 that floor is half of the default's:
// BenchmarkSync10k's peak, one run of three syncs each, was 4568 B per
// changed entity at 100 and 3374 B at 50, for about 25 more collections of
// a heap of a few MB per such sync, a few milliseconds in all.
const GCPercent = 50

// Sync fetches the remote's agentmine state, merges it entity by entity with
// the local state, pushes the result back atomically and updates the local
// refs, repeating (bounded) when the remote moved meanwhile.
func Sync(ctx context.Context, st Store, opts Options) (Report, error) {
	return loop(ctx, st, opts, modeSync)
}

// Pull fetches the remote's agentmine state and merges it into the local
// refs. It pushes nothing.
func Pull(ctx context.Context, st Store, opts Options) (Report, error) {
	return loop(ctx, st, opts, modePull)
}

// Push sends local changes that fast-forward the remote (entities the remote
// lacks or that only changed locally) and the notes if they fast-forward.
// Diverged entities are counted as pending: sync merges them.
func Push(ctx context.Context, st Store, opts Options) (Report, error) {
	return loop(ctx, st, opts, modePush)
}

func newReport(remote string, round int) Report {
	return Report{Remote: remote, Rounds: round, Conflicts: []Conflict{}, Skipped: []Skip{}}
}

func loop(ctx context.Context, st Store, opts Options, m mode) (Report, error) {
	remote := opts.Remote
	defaulted := remote == ""
	if defaulted {
		remote = DefaultRemote(st)
	}
	rep := newReport(remote, 0)
	if err := checkRemote(ctx, st, remote); err != nil {
		if _, set := st.Config("agentmine.remote"); defaulted && !set && exitcode.Of(err) == exitcode.NotFound {
			return rep, exitcode.New(exitcode.Config,
				fmt.Errorf("%w: agentmine.remote is not set and there is no remote named %s", ErrNoRemote, remote), "")
		}
		return rep, err
	}
	maxRounds := opts.MaxRounds
	if maxRounds <= 0 {
		maxRounds = 10
	}
	for n := 1; ; n++ {
		r := &round{st: st, remote: remote, mode: m, opts: opts, n: n, rep: newReport(remote, n), objs: newObjectBatch(st)}
		again, err := r.run(ctx)
		rep = r.rep
		if err != nil {
			return rep, err
		}
		if !again {
			break
		}
		if n >= maxRounds {
			return rep, exitcode.New(exitcode.State, fmt.Errorf("syncing with %s: %w (gave up after %d rounds)", remote, ErrRemoteMoved, n), "other clones are pushing right now: run sync again")
		}
		if err := gitstore.Backoff(ctx, n+2); err != nil {
			return rep, err
		}
	}
	if m != modePush && rep.Created > loosePackThreshold {
		st.PackRefs(ctx)
	}
	return rep, skippedError(rep)
}

// skippedError is the error of a sync that skipped entities, or nil.
func skippedError(rep Report) error {
	if len(rep.Skipped) == 0 {
		return nil
	}
	first := rep.Skipped[0]
	more := ""
	if len(rep.Skipped) > 1 {
		more = fmt.Sprintf(" (and %d more)", len(rep.Skipped)-1)
	}
	return exitcode.New(exitcode.Failed, fmt.Errorf("%w: %s: %s%s", ErrSkipped, first.Ref, first.Error, more), "")
}

// ConfigureRemote makes remote the default for sync, push and pull by
// setting the git config value agentmine.remote in this repository. Sync
// passes explicit refspecs to fetch and push, so no fetch refspec is added
// to the remote's configuration: a fresh clone gets the whole state with one
// sync (defaulting to "origin") even without this setting. The remote must
// exist.
func ConfigureRemote(ctx context.Context, st Store, remote string) error {
	if err := checkRemote(ctx, st, remote); err != nil {
		return err
	}
	return st.SetConfig(ctx, "agentmine.remote", remote)
}

// ErrNoRemote: no remote was named, none is configured and the default one
// does not exist.
var ErrNoRemote = errors.New("no sync remote")

// DefaultRemote returns the remote Sync uses when none is given.
func DefaultRemote(st Store) string {
	if r, ok := st.Config("agentmine.remote"); ok && r != "" {
		return r
	}
	return "origin"
}

// HasRemote reports whether the repository has a remote of that name with a
// URL. It runs no network operation.
func HasRemote(ctx context.Context, st Store, remote string) bool {
	if remote == "" {
		return false
	}
	_, err := st.Git().Run(ctx, "config", "--get", "remote."+remote+".url")
	return err == nil
}

func checkRemote(ctx context.Context, st Store, remote string) error {
	if remote == "" || strings.HasPrefix(remote, "-") || strings.ContainsAny(remote, " \t\n*?[\\:^~") {
		return exitcode.New(exitcode.Usage, fmt.Errorf("invalid remote name %q", remote), "")
	}
	// The store read the configuration when it opened: a remote found
	// there needs no git process. Config keys are matched without case, so
	// only a remote name in lower case is taken from it.
	if url, ok := st.Config("remote." + remote + ".url"); ok && url != "" && remote == strings.ToLower(remote) {
		return nil
	}
	if _, err := st.Git().Run(ctx, "config", "--get", "remote."+remote+".url"); err != nil {
		if gitcmd.IsExit(err, 1) {
			return exitcode.New(exitcode.NotFound, fmt.Errorf("remote %s does not exist", remote), "add it with: git remote add "+remote+" <url>")
		}
		return fmt.Errorf("reading remote %s: %w", remote, err)
	}
	return nil
}

// stagingPrefix is where the entity tips to push to remote are staged.
func stagingPrefix(remote string) string { return "refs/agentmine-remote/" + remote + "/" }

// stagingNotes is where the notes tip to push to remote is staged.
func stagingNotes(remote string) string {
	return "refs/notes/agentmine-remote/" + remote + "/agentmine"
}
