// Package sessions owns the session entity (one attempt at a task) and its
// outcome: the session document under refs/agentmine/sessions/<id>, the
// outcome notes attached to the session's creation commit, and liveness
// (is the recorded process still the one that was started?).
package sessions

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/parallel"
)

// SchemaVersion is the version of session documents and outcome lines.
const SchemaVersion = 1

// Kind is where sessions live.
var Kind = gitstore.Kind{Dir: "sessions", File: "session.json", Noun: "session", Version: SchemaVersion}

// Modes of a session.
const (
	// ModeManual: prepared without --exec (or `session start`); the worker is
	// run by someone else and `session end` records the outcome.
	ModeManual = "manual"
	// ModeExec: run in the foreground by the CLI that created it.
	ModeExec = "exec"
	// ModeDetach: run by a detached supervisor process.
	ModeDetach = "detach"
)

// Scope is the scope a session was prepared with.
type Scope struct {
	Read    []string `json:"read"`
	Write   []string `json:"write"`
	Exclude []string `json:"exclude"`
}

// Session is the stored session document.
type Session struct {
	V             int      `json:"v"`
	ID            string   `json:"id"`
	Task          string   `json:"task"`
	Agent         string   `json:"agent"`
	Client        string   `json:"client"`
	ClientVersion string   `json:"client_version,omitempty"`
	Command       []string `json:"command,omitempty"`
	// CommandEnv holds KEY=VALUE pairs the client's adapter adds to the
	// worker's environment; CommandStdin is a file fed as its stdin.
	CommandEnv   []string `json:"command_env,omitempty"`
	CommandStdin string   `json:"command_stdin,omitempty"`
	Mode         string   `json:"mode"`
	Branch       string   `json:"branch"`
	BaseRef      string   `json:"base_ref"`
	BaseCommit   string   `json:"base_commit"`
	Worktree     string   `json:"worktree"`
	Host         string   `json:"host"`
	Pid          int      `json:"pid,omitempty"`
	PidStart     uint64   `json:"pid_start,omitempty"`
	Timeout      int      `json:"timeout"`
	// StallTimeout (seconds, the agent's stall_timeout): no output and no
	// new commit for that long stops the worker as stalled; 0 is none.
	StallTimeout int       `json:"stall_timeout,omitempty"`
	Grace        int       `json:"grace"`
	Started      time.Time `json:"started"`
	Scope        Scope     `json:"scope"`
	Sparse       []string  `json:"sparse,omitempty"`
	Generated    []string  `json:"generated,omitempty"`
	// GeneratedBlobs holds the git blob id of each file agentmine wrote
	// into the worktree (prompt, memory snapshot, context file), by path,
	// as written: verification exempts a generated path only while its
	// content is still this.
	GeneratedBlobs map[string]string `json:"generated_blobs,omitempty"`
	DoD            []string          `json:"dod,omitempty"`
	DoDTimeout     int               `json:"dod_timeout,omitempty"`
	SkipDoD        bool              `json:"skip_dod,omitempty"`
	Strict         bool              `json:"strict,omitempty"`
	Log            string            `json:"log,omitempty"`
	// ClaimRemote is the remote the task was claimed on, if any.
	ClaimRemote string `json:"claim_remote,omitempty"`
	// Repo is the identity (RepoID) of the repository whose process
	// supervises the session; empty in sessions recorded before it existed.
	Repo string `json:"repo,omitempty"`
	// Seal is the supervisor's commitment (seal.go), recorded before the
	// worker starts; nil in manual sessions and in sessions recorded before
	// seals existed, whose outcome lines are taken as they are.
	Seal *Seal `json:"seal,omitempty"`
	// WorkerPid and WorkerStart identify the worker's own process (the
	// client), which leads its own session and process group: recorded by
	// the supervisor when it starts the worker, so that whoever finds the
	// session lost can end what is left of it.
	WorkerPid   int    `json:"worker_pid,omitempty"`
	WorkerStart uint64 `json:"worker_start,omitempty"`
	// Isolation is the isolation the worker runs under, decided when the
	// session is prepared for --exec; nil in manual sessions (agentmine
	// does not run their worker) and in sessions recorded before it.
	Isolation *Isolation `json:"isolation,omitempty"`
	// Role is the role of the agent the session ran (RolePlanner,
	// RoleReviewer); "" is a worker. Planner and reviewer sessions are
	// never attempts at their task: they never decide its status.
	Role string `json:"role,omitempty"`
	// Reviews is the session a reviewer session reviewed, or the attempt
	// whose review NG or failures a planner's replan answered.
	Reviews string `json:"reviews,omitempty"`
	// Setup is how the worktree was made one the worker can build in (the
	// agent's [worktree] table); nil when the agent asks for nothing.
	Setup *Setup `json:"setup,omitempty"`
}

// Setup is the worktree preparation of a session: paths brought in from
// the main checkout and commands run before the worker started.
type Setup struct {
	Commands []string `json:"commands,omitempty"`
	// Timeout bounds each command, in seconds.
	Timeout int `json:"timeout,omitempty"`
	// Include lists paths copied from the main checkout, Share paths
	// linked to it.
	Include []string `json:"include,omitempty"`
	Share   []string `json:"share,omitempty"`
	// Prepared lists what the worktree held once they were brought in and
	// the commands had run, beyond the base's files (slash-separated paths
	// relative to the worktree's top; a directory ends in "/"): never the
	// worker's changes while left uncommitted.
	Prepared []string `json:"prepared,omitempty"`
}

// Isolation is the isolation level of a session's worker, as a fact.
type Isolation struct {
	// Requested is what the agent or the project asked for: a level, or
	// "auto" for the strongest level the machine gives without setup.
	Requested string `json:"requested"`
	// Level is the level used: none, landlock, seatbelt, bwrap or clone.
	Level string `json:"level"`
	// Network is whether the worker kept the network (bwrap, clone).
	Network bool `json:"network"`
	// Note says why Level is weaker than Requested (a fallback).
	Note string `json:"note,omitempty"`
}

// Roles a session can have besides a worker's.
const (
	RolePlanner  = "planner"
	RoleReviewer = "reviewer"
)

// IsAttempt reports whether the session is a worker's attempt at its task
// (not a planner's or reviewer's run): only attempts decide a task's status.
func (s Session) IsAttempt() bool { return s.Role == "" || s.Role == "worker" }

// Outcome is one line of a session's outcome note.
type Outcome struct {
	V         int       `json:"v"`
	Session   string    `json:"session"`
	ExitCode  int       `json:"exit_code"`
	Signal    string    `json:"signal,omitempty"`
	TimedOut  bool      `json:"timed_out"`
	Finished  time.Time `json:"finished"`
	Tip       string    `json:"tip,omitempty"`
	Reason    string    `json:"reason,omitempty"`
	Artifacts []string  `json:"artifacts"`
	// Claimed lists the artifacts an orchestrator reported with `session
	// end`; Artifacts are what verification observed.
	Claimed []string `json:"claimed_artifacts,omitempty"`
	By      string   `json:"recorded_by"`
	// ScopeValid and DoDStatus summarise Scope and DoD so that status can
	// be derived without decoding the full verdicts.
	ScopeValid *bool           `json:"scope_valid,omitempty"`
	DoDStatus  string          `json:"dod_status,omitempty"`
	Scope      json.RawMessage `json:"scope,omitempty"`
	DoD        json.RawMessage `json:"dod,omitempty"`
	Commits    int             `json:"commits"`
	// Usage is what the client reported about tokens and cost in its
	// machine-readable output; nil when it reported nothing.
	Usage *Usage `json:"usage,omitempty"`
	// RateLimit is set when the client reported that a rate or usage
	// limit refused its requests (its words are the Reason): the session
	// did no work for a reason that is not the task's, so it is not an
	// attempt. nil otherwise.
	RateLimit *RateLimit `json:"rate_limited,omitempty"`
	// Supervisor proves that the sealing supervisor wrote the line; nil in
	// lines written by anyone else (session end, worker done).
	Supervisor *Supervisor `json:"supervisor,omitempty"`
}

// Stopped reports whether the outcome records a stop (worker stop, run
// stop, Ctrl-C or SIGTERM on a run or a foreground worker) rather than
// anything the worker did: IsStop of its signal, reason and timeout.
func (o *Outcome) Stopped() bool {
	return o != nil && IsStop(o.Signal, o.Reason, o.TimedOut)
}

// IsStop reports whether an outcome's signal, reason and timeout say the
// session was stopped from outside (SIGTERM with the reason "stopped",
// "stopped before the worker started", or one starting "interrupted"): an
// interruption, never a verdict on the work. A timeout or a stall is not a
// stop.
func IsStop(signal, reason string, timedOut bool) bool {
	if timedOut || signal != "SIGTERM" {
		return false
	}
	return reason == "stopped" || reason == "stopped before the worker started" || strings.HasPrefix(reason, "interrupted")
}

// RateLimit is a client's report that a limit refused it.
type RateLimit struct {
	// Until is when the client said the limit resets; nil when it did not
	// say.
	Until *time.Time `json:"until,omitempty"`
}

// RateLimited reports whether the outcome records a rate limit.
func (o *Outcome) RateLimited() bool { return o != nil && o.RateLimit != nil }

// Usage is the tokens and cost a client reported for one run.
type Usage struct {
	InputTokens      int64   `json:"input_tokens"`
	OutputTokens     int64   `json:"output_tokens"`
	CacheReadTokens  int64   `json:"cache_read_tokens,omitempty"`
	CacheWriteTokens int64   `json:"cache_write_tokens,omitempty"`
	CostUSD          float64 `json:"cost_usd,omitempty"`
}

// Add sums two usages.
func (u Usage) Add(o Usage) Usage {
	return Usage{InputTokens: u.InputTokens + o.InputTokens, OutputTokens: u.OutputTokens + o.OutputTokens,
		CacheReadTokens: u.CacheReadTokens + o.CacheReadTokens, CacheWriteTokens: u.CacheWriteTokens + o.CacheWriteTokens,
		CostUSD: u.CostUSD + o.CostUSD}
}

// AddTo adds what add reports (nothing when nil) to the running sum and
// returns it, allocating the sum on the first report: a total stays nil
// while no session reported usage.
func AddTo(sum, add *Usage) *Usage {
	if add == nil {
		return sum
	}
	if sum == nil {
		sum = &Usage{}
	}
	*sum = sum.Add(*add)
	return sum
}

// String renders a usage for people: "3321 in, 69 out, $0.0147".
func (u Usage) String() string {
	s := fmt.Sprintf("%d in, %d out", u.InputTokens, u.OutputTokens)
	if u.CacheReadTokens > 0 || u.CacheWriteTokens > 0 {
		s += fmt.Sprintf(" (cache %d read, %d written)", u.CacheReadTokens, u.CacheWriteTokens)
	}
	if u.CostUSD > 0 {
		s += fmt.Sprintf(", $%.4f", u.CostUSD)
	}
	return s
}

// Decode parses a stored session document, refusing versions this binary
// does not know.
func Decode(data []byte) (Session, error) {
	return gitstore.Decode[Session](Kind, data)
}

// DocVersion reports the schema version the document was stored with.
func (s *Session) DocVersion() int { return s.V }

// Encode renders the stored document.
func (s Session) Encode() []byte {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		panic("encoding session: " + err.Error())
	}
	return append(b, '\n')
}

// Branch returns the branch name for a session: task-<task>-s<session> with
// short forms of both ids (8 digits: unique across clones in practice, and
// the full session id is in the session record).
func Branch(taskID, sessionID string) string {
	return "task-" + taskID[:8] + "-s" + sessionID[:8]
}

// Host identifies this machine: the hostname plus a prefix of the machine id
// when there is one, so two machines with the same hostname differ.
func Host() string {
	h, _ := os.Hostname()
	if h == "" {
		h = "unknown"
	}
	if id, err := os.ReadFile("/etc/machine-id"); err == nil && len(strings.TrimSpace(string(id))) >= 8 {
		h += "/" + strings.TrimSpace(string(id))[:8]
	}
	return h
}

// Create records a new session. id must be fresh (gitstore.NewID). The
// returned commit is the creation commit outcomes are attached to. also
// are other refs written in the same transaction (the session's branch,
// made at its base): all are written, or none.
func Create(ctx context.Context, st *gitstore.Store, s Session, also ...gitstore.RefOp) (Session, string, error) {
	s.V = SchemaVersion
	doc, err := st.Create(ctx, Kind, s.ID, gitstore.Change{Data: s.Encode(), Message: "session start: task " + s.Task[:8] + " agent " + s.Agent, Also: also})
	if err != nil {
		return Session{}, "", fmt.Errorf("recording session: %w", err)
	}
	return s, doc.Commit, nil
}

// Update changes a session document (pid after launch, for example).
func Update(ctx context.Context, st *gitstore.Store, id, msg string, mutate func(s *Session)) (Session, error) {
	var out Session
	_, _, err := st.Update(ctx, Kind, id, func(cur gitstore.Doc) (gitstore.Change, error) {
		s, err := Decode(cur.Data)
		if err != nil {
			return gitstore.Change{}, err
		}
		mutate(&s)
		out = s
		return gitstore.Change{Data: s.Encode(), Message: msg}, nil
	})
	return out, err
}

// UpdateAt is Update for a caller that holds the session as it is at its
// tip commit (as Create returned them): the change is written on top of
// that commit without reading the document again. When the ref has moved
// since, it is Update, which reads the session as it is now.
func UpdateAt(ctx context.Context, st *gitstore.Store, cur Session, commit, msg string, mutate func(s *Session)) (Session, error) {
	before := cur.Encode()
	s := cur
	mutate(&s)
	data := s.Encode()
	if bytes.Equal(data, before) {
		return s, nil
	}
	c, err := st.CommitDoc(ctx, Kind, data, []string{commit}, msg)
	if err != nil {
		return Session{}, err
	}
	err = st.Transact(ctx, []gitstore.RefOp{{Verb: "update", Ref: Kind.Ref(cur.ID), New: c, Old: commit}})
	if errors.Is(err, gitstore.ErrConflict) {
		return Update(ctx, st, cur.ID, msg, mutate)
	}
	if err != nil {
		return Session{}, &gitstore.UpdateError{Noun: Kind.Noun, ID: cur.ID, Err: err}
	}
	return s, nil
}

// Delete removes a session record (used only to roll back a failed
// preparation before anything ran).
func Delete(ctx context.Context, st *gitstore.Store, id string) error {
	doc, err := st.Get(ctx, Kind, id)
	if err != nil {
		return err
	}
	return st.Delete(ctx, Kind, id, doc.Commit)
}

// Record is a session with its creation commit and outcome, as read in batch.
type Record struct {
	Session Session
	// Root is the session's creation commit (where notes attach).
	Root string
	// Commit is the current tip of the session ref.
	Commit string
	// Outcome is the session's verdict, nil if none (selectOutcome): for a
	// sealed session the line its supervisor wrote, marked with a
	// forged-outcome violation when other lines claim otherwise; else the
	// latest line.
	Outcome *Outcome
	// Forged lists the outcome lines rejected as forged; they are named in
	// Outcome's violations too when there is an Outcome.
	Forged []Forgery
	// Review is the session's review (SelectReview), nil if none.
	Review *Review
	// ForgedReviews lists review lines rejected as unproven.
	ForgedReviews []Forgery
	// Judged, Live and Lost hold whether the session still ran when the
	// record was read (board.Settle), so that everything derived from one
	// read agrees on it; a record never judged is judged afresh each time.
	Judged, Live, Lost bool
}

// LoadAll reads every session and its outcome with batched git calls.
func LoadAll(ctx context.Context, st *gitstore.Store) ([]Record, []error, error) {
	recs, problems, _, err := loadAll(ctx, st)
	return recs, problems, err
}

// loadAll is LoadAll, also returning the notes commit the outcomes were
// read from ("" when no session was read, so no note either).
func loadAll(ctx context.Context, st *gitstore.Store) ([]Record, []error, string, error) {
	docs, problems, err := st.List(ctx, Kind)
	if err != nil {
		return nil, nil, "", err
	}
	recs := make([]Record, len(docs))
	errs := make([]error, len(docs))
	parallel.For(len(docs), func(i int) {
		s, err := Decode(docs[i].Data)
		if err != nil {
			errs[i] = &gitstore.RefError{Ref: docs[i].Ref, Err: err}
			return
		}
		s.ID = docs[i].ID
		recs[i] = Record{Session: s, Commit: docs[i].Commit}
	})
	// Compact in place: a Record is large, and growing a second slice
	// record by record copied the whole board several times over.
	out := recs[:0]
	for i := range recs {
		if errs[i] != nil {
			problems = append(problems, errs[i])
			continue
		}
		out = append(out, recs[i])
	}
	notesAt, err := attachOutcomes(ctx, st, out)
	if err != nil {
		return nil, nil, "", err
	}
	return out, problems, notesAt, nil
}

// attachOutcomes finds each session's creation commit and reads its notes;
// it returns the notes commit read ("" when recs is empty).
func attachOutcomes(ctx context.Context, st *gitstore.Store, recs []Record) (string, error) {
	if len(recs) == 0 {
		return "", nil
	}
	tips := make(map[string]string, len(recs))
	for _, r := range recs {
		tips[r.Session.ID] = r.Commit
	}
	roots, err := st.Roots(ctx, Kind, tips)
	if err != nil {
		return "", err
	}
	var targets []string
	for i := range recs {
		recs[i].Root = roots[recs[i].Session.ID]
		if recs[i].Root != "" {
			targets = append(targets, recs[i].Root)
		}
	}
	notes, notesAt, err := st.ReadNotesAt(ctx, targets)
	if err != nil {
		return "", err
	}
	parallel.For(len(recs), func(i int) {
		recs[i].Outcome, recs[i].Forged = selectOutcome(recs[i].Session.Seal, notes[recs[i].Root])
		reviewOf(&recs[i], notes[recs[i].Root])
	})
	return notesAt, nil
}

// Reread reads the notes of recs again and selects their outcomes and
// reviews anew, in one batch. A record read before its supervisor recorded
// the outcome and exited looks lost once the process is gone; reading its
// note after seeing the process gone tells the two apart. A record without
// a creation commit has no note to read, as when it was first read.
func Reread(ctx context.Context, st *gitstore.Store, recs []*Record) error {
	targets := make([]string, 0, len(recs))
	for _, r := range recs {
		if r.Root != "" {
			targets = append(targets, r.Root)
		}
	}
	if len(targets) == 0 {
		return nil
	}
	notes, err := st.ReadNotes(ctx, targets)
	if err != nil {
		return fmt.Errorf("reading outcomes again: %w", err)
	}
	for _, r := range recs {
		if r.Root != "" {
			r.Outcome, r.Forged = selectOutcome(r.Session.Seal, notes[r.Root])
			reviewOf(r, notes[r.Root])
		}
	}
	return nil
}

// Get reads one session (any unique id prefix) with its outcome.
func Get(ctx context.Context, st *gitstore.Store, prefix string) (Record, error) {
	id, err := st.Resolve(ctx, Kind, prefix)
	if err != nil {
		return Record{}, err
	}
	doc, err := st.Get(ctx, Kind, id)
	if err != nil {
		return Record{}, err
	}
	s, err := Decode(doc.Data)
	if err != nil {
		return Record{}, fmt.Errorf("%s: %w", doc.Ref, err)
	}
	s.ID = id
	recs := []Record{{Session: s, Commit: doc.Commit}}
	if _, err := attachOutcomes(ctx, st, recs); err != nil {
		return Record{}, err
	}
	return recs[0], nil
}

// RecordOutcome completes o (schema version, session id, non-nil lists)
// and appends it as one line to the session's note.
func RecordOutcome(ctx context.Context, st *gitstore.Store, rec Record, o *Outcome) error {
	o.V = SchemaVersion
	o.Session = rec.Session.ID
	if o.Artifacts == nil {
		o.Artifacts = []string{}
	}
	line, err := json.Marshal(o)
	if err != nil {
		return err
	}
	root := rec.Root
	if root == "" {
		r, err := st.Root(ctx, Kind, rec.Session.ID)
		if err != nil {
			return err
		}
		root = r
	}
	return st.AppendNote(ctx, root, line)
}
