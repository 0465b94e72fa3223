package web

import (
	"context"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/git-agentmine/git-agentmine/board"
	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/pipeline"
	"github.com/git-agentmine/git-agentmine/sessions"
	"github.com/git-agentmine/git-agentmine/status"
)

// Finding tasks on a big board. Reading and resolving 100,000 tasks takes
// seconds, so the board is read once per state of the refs and kept (a
// snapshot) with what searching and sorting need: every task's text in
// lower case, its column and when it last changed, newest first. A page
// then filters that in memory. The snapshot is taken again when the refs
// changed: the live watcher saw a ref change (an inotify event) or the
// modification times of packed-refs and of the directories under refs/
// differ from the ones it was taken under (a ref written by this very
// request's redirect, before the watcher has seen it). While work runs it
// is also taken again once it is older than maxAge, to notice a supervisor
// that died without writing a ref.

// snapshot is the board as of one state of the refs.
type snapshot struct {
	b   *board.Board
	key string
	// taken is when it was read (liveness was judged then).
	taken time.Time
	// dirs are the directories under refs/ when it was taken.
	dirs []string
	// entries are every task but none twice, the last changed first.
	entries []entry
	running map[string]sessions.Record
	kids    map[string]*progress
	labels  []string
	agents  []string
	parents []option
}

// entry is one task as the board finds and sorts it.
type entry struct {
	id string
	// text is the task's id, title and description in lower case.
	text    string
	col     string
	prio    int
	changed time.Time
	created time.Time
	title   string
	// What the filters look at, copied out of the task and its status.
	status           string
	priority         string
	labels           []string
	assignee, parent string
	running          string
	exhausted        bool
}

// snapCache holds the latest snapshot. Taking one is single-flight: the
// requests that need a new one wait for the same. On a board of
// asyncAbove tasks or more, a request finds the last snapshot even when
// the refs have changed since (taking a new one costs seconds there); a
// new one is taken in the background meanwhile, and the open pages are
// told to fetch themselves again once it is there.
type snapCache struct {
	mu       sync.Mutex
	cur      *snapshot
	building bool
	// asyncAbove is the size of board from which pages do not wait for
	// a new snapshot (defaultAsyncAbove).
	asyncAbove int
	// ctx ends with the server; wg counts the snapshots being taken in
	// the background.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// defaultAsyncAbove is the size of board from which pages do not wait
// for a new snapshot.
const defaultAsyncAbove = 5000

// generation counts the changes of the refs the watcher saw (not the
// tick's).
func (l *live) generation() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seq - l.ticks
}

// maxAge is how old a snapshot that shows running work may get: what
// changes without a ref write (a supervisor that died, see live.go) is
// seen at most this late. A big board's snapshot costs seconds to take, so
// it is taken again less often.
func (c *snapCache) maxAge(x *snapshot) time.Duration {
	if len(x.b.Tasks.IDs) >= c.asyncAbove {
		return 6 * tickEvery
	}
	return tickEvery / 2
}

// fresh reports whether x still shows the board: no ref changed since it
// was taken, and it is young enough if it shows running work.
func (s *Server) fresh(x *snapshot) bool {
	if x.key != s.snapKey(x.dirs) {
		return false
	}
	return len(x.running) == 0 || time.Since(x.taken) < s.snaps.maxAge(x)
}

// nudge tells every open page to fetch itself again, without counting a
// change of the refs.
func (l *live) nudge() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for c := range l.subs {
		select {
		case c <- l.seq:
		default:
		}
	}
}

// snapKey is the state of the refs a snapshot is taken under.
func (s *Server) snapKey(dirs []string) string {
	return strconv.FormatUint(s.live.generation(), 10) + "\n" + s.live.fingerprint(dirs)
}

// snapshot returns the board's snapshot, taking a new one when the refs
// changed since the last was taken (or, on a big board, starting to).
func (s *Server) snapshot(ctx context.Context, st *gitstore.Store) (*snapshot, error) {
	c := &s.snaps
	c.mu.Lock()
	defer c.mu.Unlock()
	cur := c.cur
	if cur != nil && s.fresh(cur) {
		return cur, nil
	}
	if cur != nil && len(cur.b.Tasks.IDs) >= c.asyncAbove {
		if !c.building {
			c.building = true
			c.wg.Add(1)
			go s.rebuild()
		}
		return cur, nil
	}
	snap, err := s.takeSnapshot(ctx, st)
	if err != nil {
		return nil, err
	}
	c.cur = snap
	return snap, nil
}

// takeSnapshot reads the board. The key is taken first: a change while
// the board is read makes the snapshot stale at once.
func (s *Server) takeSnapshot(ctx context.Context, st *gitstore.Store) (*snapshot, error) {
	dirs := s.live.walkDirs()
	key := s.snapKey(dirs)
	b, err := board.LoadStatus(ctx, st, "")
	if err != nil {
		return nil, err
	}
	now := time.Now()
	snap := newSnapshot(b, now)
	snap.key, snap.dirs, snap.taken = key, dirs, now
	return snap, nil
}

// rebuild takes a snapshot in the background and then has the open pages
// fetch themselves again. A failure leaves the last snapshot; the next
// request tries again.
func (s *Server) rebuild() {
	c := &s.snaps
	defer c.wg.Done()
	var snap *snapshot
	st, err := gitstore.Open(c.ctx, s.opts.Dir)
	if err == nil {
		snap, err = s.takeSnapshot(c.ctx, st)
	}
	c.mu.Lock()
	c.building = false
	if err == nil {
		c.cur = snap
	}
	c.mu.Unlock()
	if err != nil {
		if c.ctx.Err() == nil {
			fmt.Fprintf(s.opts.Log, "warning: reading the board: %v\n", err)
		}
		return
	}
	s.live.nudge()
}

// prioRank orders priorities, the most urgent first.
var prioRank = map[string]int{"critical": 0, "high": 1, "medium": 2, "low": 3}

func newSnapshot(b *board.Board, now time.Time) *snapshot {
	x := &snapshot{b: b, running: map[string]sessions.Record{}, kids: childProgress(b)}
	for _, r := range b.Sessions {
		if live, _ := board.Liveness(r, b.Here, now); live {
			if cur, ok := x.running[r.Session.Task]; !ok || r.Session.Started.After(cur.Session.Started) {
				x.running[r.Session.Task] = r
			}
		}
	}
	labels, agents, parents := map[string]bool{}, map[string]bool{}, map[string]bool{}
	x.entries = make([]entry, 0, len(b.Tasks.IDs))
	for _, id := range b.Tasks.IDs {
		t := b.Tasks.Tasks[id].Task
		for _, l := range t.Labels {
			labels[l] = true
		}
		if t.Assignee != "" {
			agents[t.Assignee] = true
		}
		if t.Parent != "" {
			parents[t.Parent] = true
		}
		col := "cancelled"
		if r := b.Status[id]; r.Status != status.Cancelled {
			col = columnOf(r)
		}
		e := entry{id: id, col: col, prio: prioRank[t.Priority], changed: x.changed(id),
			created: t.Created.Time, title: strings.ToLower(t.Title),
			text:   strings.ToLower(id + "\n" + t.Title + "\n" + t.Description),
			status: string(b.Status[id].Status), priority: t.Priority, labels: t.Labels, assignee: t.Assignee,
			parent: t.Parent, exhausted: t.Exhausted != nil}
		if r, ok := x.running[id]; ok {
			e.running = r.Session.Agent
		}
		x.entries = append(x.entries, e)
	}
	for _, r := range x.running {
		agents[r.Session.Agent] = true
	}
	sort.SliceStable(x.entries, func(i, j int) bool { return newer(x.entries[i], x.entries[j]) })
	x.labels, x.agents = sortedKeys(labels), sortedKeys(agents)
	for _, id := range sortedKeys(parents) {
		if e, ok := b.Tasks.Tasks[id]; ok {
			x.parents = append(x.parents, option{Value: id, Label: b.Tasks.ShortID(id) + " " + e.Task.Title})
		}
	}
	return x
}

func newer(a, b entry) bool {
	if !a.changed.Equal(b.changed) {
		return a.changed.After(b.changed)
	}
	return a.id < b.id
}

// changed is when a task last changed: its document (an edit, a cancel, a
// reopen, exhaustion), an attempt started or a session finished.
func (x *snapshot) changed(id string) time.Time {
	t := x.b.Tasks.Tasks[id].Task
	last := t.Created.Time
	later := func(c time.Time) {
		if c.After(last) {
			last = c
		}
	}
	later(t.Updated.Time)
	if t.Cancelled != nil {
		later(t.Cancelled.Time)
	}
	if t.Reopened != nil {
		later(t.Reopened.Time)
	}
	if t.Exhausted != nil {
		later(t.Exhausted.Time)
	}
	for _, a := range x.b.Facts.Attempts[id] {
		later(a.Started)
	}
	later(x.b.Finished[id])
	if r, ok := x.running[id]; ok {
		later(r.Session.Started)
	}
	return last
}

// query is what a board page asks for: its search text, filters, order
// and how many cards a column shows.
type query struct {
	Q, Status, Priority, Label, Agent, Parent, Sort string
	// N is how many cards a column shows; All shows every card.
	N   int
	All bool
}

// sorts are the board's orders, the default first.
var sorts = []option{{"changed", "last changed"}, {"priority", "priority"}, {"created", "newest"}, {"title", "title"}}

// statusFilters are the values of the status filter: a column, or one of
// the statuses the failed column holds.
var statusFilters = []option{{"ready", "ready"}, {"blocked", "blocked"}, {"in_progress", "in progress"},
	{"review", "review"}, {"failed", "failed (any)"}, {"dod_failed", "dod failed"}, {"tainted", "tainted"},
	{"exhausted", "exhausted"}, {"done", "done"}, {"cancelled", "cancelled"}}

const maxQuery = 500

func parseQuery(q url.Values) (query, error) {
	f := query{Q: strings.TrimSpace(q.Get("q")), Status: q.Get("status"), Priority: q.Get("priority"),
		Label: q.Get("label"), Agent: q.Get("agent"), Parent: q.Get("parent"), Sort: q.Get("sort"),
		N: columnLimit, All: q.Get("all") == "1"}
	if f.Agent == "" {
		f.Agent = q.Get("assignee") // the older name of the filter
	}
	if len(f.Q) > maxQuery {
		return f, fmt.Errorf("the search text is longer than %d bytes", maxQuery)
	}
	if n := q.Get("n"); n != "" {
		v, err := strconv.Atoi(n)
		if err != nil || v < 1 {
			return f, fmt.Errorf("n=%q is not a number of cards (1 or more)", n)
		}
		f.N = v
	}
	if f.Sort == "changed" {
		f.Sort = ""
	}
	if f.Sort != "" && !known(sorts, f.Sort) {
		return f, fmt.Errorf("unknown order %q (one of changed, priority, created, title)", f.Sort)
	}
	if f.Status != "" && !known(statusFilters, f.Status) {
		return f, fmt.Errorf("unknown status %q", f.Status)
	}
	if _, ok := prioRank[f.Priority]; f.Priority != "" && !ok {
		return f, fmt.Errorf("unknown priority %q (one of low, medium, high, critical)", f.Priority)
	}
	return f, nil
}

func known(opts []option, v string) bool {
	for _, o := range opts {
		if o.Value == v {
			return true
		}
	}
	return false
}

// Any reports whether the query narrows the board.
func (f query) Any() bool {
	return f.Q != "" || f.Status != "" || f.Priority != "" || f.Label != "" || f.Agent != "" || f.Parent != ""
}

// matches reports whether a task passes the query's search text and
// filters. terms are the search text's words, in lower case.
func (x *snapshot) matches(e *entry, f query, terms []string) bool {
	switch {
	case f.Status != "" && !e.statusIs(f.Status),
		f.Priority != "" && e.priority != f.Priority,
		f.Label != "" && !contains(e.labels, f.Label),
		f.Agent != "" && e.assignee != f.Agent && e.running != f.Agent,
		f.Parent != "" && e.parent != f.Parent && e.id != f.Parent:
		return false
	}
	for _, w := range terms {
		if !strings.Contains(e.text, w) {
			return false
		}
	}
	return true
}

func (e *entry) statusIs(want string) bool {
	switch want {
	case e.col, e.status:
		return true
	case "exhausted":
		return e.exhausted && e.status == string(status.Failed)
	}
	return false
}

// less is the query's order; ties, and the default, go newest change
// first.
func (f query) less(a, b *entry) bool {
	switch f.Sort {
	case "priority":
		if a.prio != b.prio {
			return a.prio < b.prio
		}
	case "created":
		if !a.created.Equal(b.created) {
			return a.created.After(b.created)
		}
	case "title":
		if a.title != b.title {
			return a.title < b.title
		}
	}
	return newer(*a, *b)
}

// with returns the board's address for f with one parameter changed.
func (f query) with(key, value string) string {
	v := url.Values{}
	set := func(k, s string) {
		if s != "" {
			v.Set(k, s)
		}
	}
	set("q", f.Q)
	set("status", f.Status)
	set("priority", f.Priority)
	set("label", f.Label)
	set("agent", f.Agent)
	set("parent", f.Parent)
	set("sort", f.Sort)
	if f.N != columnLimit {
		v.Set("n", strconv.Itoa(f.N))
	}
	if f.All {
		v.Set("all", "1")
	}
	if value == "" {
		v.Del(key)
	} else {
		v.Set(key, value)
	}
	if len(v) == 0 {
		return "/"
	}
	return "/?" + v.Encode()
}

// fill lays the snapshot's tasks that match the query out into the board's
// columns, each in the query's order and cut at its length (the rest
// counted, with a link that shows more).
func (x *snapshot) fill(bv *boardView, f query, now time.Time) {
	terms := strings.Fields(strings.ToLower(f.Q))
	cols := map[string]*column{}
	for _, c := range columns {
		bv.Columns = append(bv.Columns, column{Key: c.Key, Title: c.Title})
	}
	for i := range bv.Columns {
		cols[bv.Columns[i].Key] = &bv.Columns[i]
	}
	cancelled := &column{Key: "cancelled"}
	cols["cancelled"] = cancelled
	picked := map[string][]*entry{}
	for i := range x.entries {
		e := &x.entries[i]
		if !x.matches(e, f, terms) {
			continue
		}
		bv.Total++
		picked[e.col] = append(picked[e.col], e)
	}
	for key, es := range picked {
		if f.Sort != "" {
			sort.SliceStable(es, func(i, j int) bool { return f.less(es[i], es[j]) })
		}
		c := cols[key]
		c.Count = len(es)
		if !f.All && len(es) > f.N {
			c.Hidden = len(es) - f.N
			es = es[:f.N]
		}
		for _, e := range es {
			c.Cards = append(c.Cards, x.card(e.id, now))
		}
	}
	bv.Cancelled = cancelled.Cards
	bv.CancelledCount, bv.CancelledHidden = cancelled.Count, cancelled.Hidden
	more := strconv.Itoa(f.N + moreStep)
	for i := range bv.Columns {
		if bv.Columns[i].Hidden > 0 {
			bv.Columns[i].MoreURL = f.with("n", more)
		}
	}
	if cancelled.Hidden > 0 {
		bv.CancelledMoreURL = f.with("n", more)
	}
	bv.AllURL = f.with("all", "1")
}

// moreStep is how many more cards a column's "more" link shows.
const moreStep = 500

// card builds one task's card: what it waits on, why it failed, its
// attempt of how many, how long ago it changed and what it used.
func (x *snapshot) card(id string, now time.Time) card {
	b := x.b
	t := b.Tasks.Tasks[id].Task
	r := b.Status[id]
	attempts := len(b.Facts.Attempts[id])
	c := card{ID: id, Short: b.Tasks.ShortID(id), Title: t.Title, Status: string(r.Status), Reason: r.Reason,
		Priority: t.Priority, Type: t.Type, Labels: t.Labels, Agent: t.Assignee, Attempts: attempts,
		Progress: x.kids[id], Exhausted: t.Exhausted != nil}
	if attempts > 0 {
		c.MaxAttempts = t.MaxLoops
		if c.MaxAttempts == 0 {
			c.MaxAttempts = pipeline.DefaultMaxLoops
		}
	}
	if rec, ok := x.running[id]; ok {
		c.Running = true
		c.Agent = rec.Session.Agent
		c.Elapsed = ago(now.Sub(rec.Session.Started))
		c.Timeout = rec.Session.Timeout
	}
	changed := x.changed(id)
	c.Changed = ago(now.Sub(changed))
	c.ChangedAt = changed.Local().Format("2006-01-02 15:04:05")
	for i, w := range r.Waiting {
		if i == maxWaiting {
			c.WaitingMore = len(r.Waiting) - i
			break
		}
		c.Waiting = append(c.Waiting, link(b, w))
	}
	switch r.Status {
	case status.Failed, status.DoDFailed, status.Tainted:
		c.Why = firstLine(r.Reason)
	}
	if u := b.Usage[id]; u != nil {
		c.Usage = usageShort(*u)
		c.UsageLong = u.String()
	}
	return c
}

// maxWaiting is how many blockers a card names.
const maxWaiting = 3

// usageShort renders a task's usage for a card: tokens in and out, and the
// cost when reported.
func usageShort(u sessions.Usage) string {
	s := count(u.InputTokens) + " in · " + count(u.OutputTokens) + " out"
	if u.CostUSD > 0 {
		s += fmt.Sprintf(" · $%.2f", u.CostUSD)
	}
	return s
}

// count renders a token count: 950, 12.3k, 4.1M.
func count(n int64) string {
	switch {
	case n < 1000:
		return strconv.FormatInt(n, 10)
	case n < 1_000_000:
		return strconv.FormatFloat(float64(n)/1000, 'f', 1, 64) + "k"
	}
	return strconv.FormatFloat(float64(n)/1_000_000, 'f', 1, 64) + "M"
}
