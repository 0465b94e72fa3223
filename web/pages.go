package web

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/git-agentmine/git-agentmine/bestof"
	"github.com/git-agentmine/git-agentmine/board"
	"github.com/git-agentmine/git-agentmine/config"
	"github.com/git-agentmine/git-agentmine/contract"
	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/memory"
	"github.com/git-agentmine/git-agentmine/pipeline"
	"github.com/git-agentmine/git-agentmine/sessions"
	"github.com/git-agentmine/git-agentmine/status"
	"github.com/git-agentmine/git-agentmine/tasknote"
	"github.com/git-agentmine/git-agentmine/tasks"
	"github.com/git-agentmine/git-agentmine/verify"
	"github.com/git-agentmine/git-agentmine/worker"
)

//go:embed assets
var assets embed.FS

// pages holds the parsed templates, one set per page (each page defines
// the layout's "main" block).
type pages struct {
	t      map[string]*template.Template
	static fs.FS
}

func newPages() (*pages, error) {
	md := newMarkdown()
	funcs := template.FuncMap{
		"markdown": func(src string) template.HTML { return markdown(md, src) },
		"since":    func(t time.Time) string { return ago(time.Since(t)) },
		"when":     func(t time.Time) string { return t.Local().Format("2006-01-02 15:04:05") },
		"join":     strings.Join,
		"short": func(id string) string {
			if len(id) > 8 {
				return id[:8]
			}
			return id
		},
		"dur": func(secs float64) string { return (time.Duration(secs) * time.Second).String() },
		"ms":  func(ms int64) string { return (time.Duration(ms) * time.Millisecond).String() },
		"inc": func(i int) int { return i + 1 },
	}
	p := &pages{t: map[string]*template.Template{}}
	for _, name := range []string{"board", "task", "memory", "runs", "error"} {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(assets, "assets/layout.html", "assets/"+name+".html", "assets/steer.html")
		if err != nil {
			return nil, fmt.Errorf("parsing the %s page: %w", name, err)
		}
		p.t[name] = t
	}
	sub, err := fs.Sub(assets, "assets/static")
	if err != nil {
		return nil, err
	}
	p.static = sub
	return p, nil
}

// ago renders a duration the way the board shows elapsed times.
func ago(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

// page is what every page's layout needs.
type page struct {
	Title    string
	Nav      string
	ReadOnly bool
	CSRF     string
	// Notice is a success message (fixed texts only: see notices), Error
	// the one-line message of a refused action.
	Notice string
	Error  string
	// Warnings name refs that could not be read; the rest is whole.
	Warnings []string
	// Hint says how to share the board with other clones, on the pages
	// that start work, when the repository has a remote but no sync
	// remote (Options.ShareHint).
	Hint string
}

// shareHint sets p.Hint from the repository's settings; settings that do
// not read leave it empty (the pages that use them say why).
func (v *view) shareHint(p *page) {
	if v.s.opts.ShareHint == nil {
		return
	}
	if env, err := v.env(); err == nil {
		if r := env.UnsharedRemote(); r != "" {
			p.Hint = v.s.opts.ShareHint(r)
		}
	}
}

// notices are the messages a redirect after an action may show: a fixed
// set, so a crafted link cannot put words on the board.
var notices = map[string]string{
	"created":   "task created",
	"run":       "worker started",
	"stop":      "worker stopped",
	"cancel":    "task cancelled",
	"merge":     "merged into the base",
	"merged-ok": "already merged",
	// review and steering (review.go, edit.go, runctl.go)
	"approved":        "approved",
	"approved-merged": "approved and merged into the base",
	"changes":         "changes requested: a new attempt started with the comments",
	"edited":          "task updated",
	"unchanged":       "nothing changed",
	"reopen":          "task reopened",
	"unblock":         "blocker removed",
	"run-started":     "run started",
	"run-stopped":     "run asked to stop",
}

func (s *Server) page(r *http.Request, title, nav string) page {
	return page{Title: title, Nav: nav, ReadOnly: s.opts.ReadOnly, CSRF: s.csrf, Notice: notices[r.URL.Query().Get("did")]}
}

// view is one request's way into the repository: a store opened afresh
// (settings and the clock are read per request, as every command reads
// them), and the board read once.
type view struct {
	ctx context.Context
	s   *Server
	st  *gitstore.Store
	b   *board.Board
}

func (s *Server) open(ctx context.Context) (*view, error) {
	st, err := gitstore.Open(ctx, s.opts.Dir)
	if err != nil {
		return nil, err
	}
	return &view{ctx: ctx, s: s, st: st}, nil
}

// board reads every task and session and derives statuses (as task list
// and status do).
func (v *view) board(p *page) (*board.Board, error) {
	if v.b != nil {
		return v.b, nil
	}
	b, err := board.Load(v.ctx, v.st, "")
	if err != nil {
		return nil, err
	}
	for _, e := range b.TaskProblems {
		p.Warnings = append(p.Warnings, "skipping unreadable task: "+e.Error())
	}
	for _, e := range b.SessionProblems {
		p.Warnings = append(p.Warnings, "skipping unreadable session: "+e.Error())
	}
	v.b = b
	return b, nil
}

func (v *view) env() (*worker.Env, error) { return worker.NewEnv(v.st, nil, v.s.opts.Getenv) }

// render writes a page with the given status code.
func (s *Server) render(w http.ResponseWriter, code int, name string, data any) {
	var buf strings.Builder
	if err := s.pages.t[name].Execute(&buf, data); err != nil {
		http.Error(w, "500 internal error: rendering the "+name+" page: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Referrer-Policy", "no-referrer")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
	w.WriteHeader(code)
	fmt.Fprint(w, buf.String())
}

// fail renders the error page for err with the HTTP status its exit code
// maps to.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	p := s.page(r, "error", "")
	p.Error = firstLine(err.Error())
	s.render(w, httpStatus(err), "error", struct{ page }{p})
}

// httpStatus maps an error's exit code (docs/exit-codes.md) to an HTTP
// status: usage 400, not found 404, a refusal by state or verdict 409,
// configuration 500, anything else 500.
func httpStatus(err error) int {
	switch exitcode.Of(err) {
	case exitcode.Usage:
		return http.StatusBadRequest
	case exitcode.NotFound:
		return http.StatusNotFound
	case exitcode.State, exitcode.Failed:
		return http.StatusConflict
	}
	return http.StatusInternalServerError
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func (s *Server) static(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("file")
	data, err := fs.ReadFile(s.pages.static, name)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	switch {
	case strings.HasSuffix(name, ".js"):
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	case strings.HasSuffix(name, ".css"):
		w.Header().Set("Content-Type", "text/css; charset=utf-8")
	}
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Write(data)
}

// The board.

// columns are the board's columns in order: each derived status has one,
// except that failed, dod_failed and tainted share "failed", planning is
// shown in progress and reviewing in review, and open is
// split into ready and blocked. Cancelled tasks are folded away below.
var columns = []struct{ Key, Title string }{
	{"ready", "Ready"}, {"blocked", "Blocked"}, {"in_progress", "In progress"},
	{"review", "Review"}, {"failed", "Failed"}, {"done", "Done"},
}

// columnOf names the board column of a resolved status.
func columnOf(r status.Result) string {
	switch r.Status {
	case status.Open:
		if r.Blocked {
			return "blocked"
		}
		return "ready"
	case status.Failed, status.DoDFailed, status.Tainted:
		return "failed"
	case status.Planning:
		return "in_progress"
	case status.Reviewing:
		return "review"
	}
	return string(r.Status)
}

// columnLimit is how many cards a column shows unless more are asked
// for: a board of a hundred thousand tasks stays quick to render and to
// scroll. Columns are in the order of the last change, newest first, by
// default, so no cap hides a task that just changed.
const columnLimit = 100

type boardView struct {
	page
	Columns   []column
	Cancelled []card
	// CancelledCount is how many cancelled tasks match, CancelledHidden
	// how many of them are not shown.
	CancelledCount, CancelledHidden int
	CancelledMoreURL                string
	Filter                          query
	Labels                          []string
	Agents                          []string
	Parents                         []option
	Sorts                           []option
	Priorities                      []string
	Statuses                        []option
	// Runs are the runs shown on the Runs page, for the page's
	// notifications (a run that ended).
	Runs  []runRow
	Total int
	// AllURL is this board with every card shown.
	AllURL string
	// Empty says why the board has no task at all: "uninitialised" (no
	// project settings file yet) or "no tasks"; "" when it has tasks.
	Empty string
}

type option struct{ Value, Label string }

type column struct {
	Key, Title string
	Count      int
	Cards      []card
	Hidden     int
	// MoreURL shows more cards of every column.
	MoreURL string
}

type card struct {
	ID, Short, Title, Status, Reason, Priority, Type string
	Labels                                           []string
	Agent                                            string
	// Attempts is how many attempts the task had, MaxAttempts how many it
	// gets (its own max_loops, else run's default).
	Attempts, MaxAttempts int
	Exhausted             bool
	Running               bool
	Elapsed               string
	Timeout               int
	Progress              *progress
	// Changed is how long ago the task last changed, ChangedAt when.
	Changed, ChangedAt string
	// Waiting are the blockers the task waits on (the first few), and
	// WaitingMore how many more.
	Waiting     []taskLink
	WaitingMore int
	// Why is the one line that says why a failed task failed.
	Why string
	// Usage is what its sessions reported, short and in full.
	Usage, UsageLong string
}

// progress is a parent's children done out of all (cancelled children
// left out), drawn as seed 003 draws it: ████████░░ 2/3.
type progress struct {
	Done, Total int
	Percent     int
	Bar         string
}

func newProgress(done, total int) *progress {
	if total == 0 {
		return nil
	}
	const width = 10
	full := done * width / total
	return &progress{Done: done, Total: total, Percent: done * 100 / total,
		Bar: strings.Repeat("█", full) + strings.Repeat("░", width-full)}
}

// childProgress counts every parent's children, done and all (cancelled
// ones left out), in one pass over the board.
func childProgress(b *board.Board) map[string]*progress {
	done, total := map[string]int{}, map[string]int{}
	for _, id := range b.Tasks.IDs {
		t := b.Tasks.Tasks[id].Task
		if t.Parent == "" {
			continue
		}
		r := b.Status[id]
		if r.Status == status.Cancelled {
			continue
		}
		total[t.Parent]++
		if r.Status == status.Done {
			done[t.Parent]++
		}
	}
	out := make(map[string]*progress, len(total))
	for id, n := range total {
		out[id] = newProgress(done[id], n)
	}
	return out
}

// sessionIndex is every task's sessions, latest last, and the running
// ones, from one pass over the board's sessions.
type sessionIndex struct {
	byTask  map[string][]sessions.Record
	running map[string]sessions.Record
}

func indexSessions(b *board.Board, now time.Time) sessionIndex {
	x := sessionIndex{byTask: map[string][]sessions.Record{}, running: map[string]sessions.Record{}}
	for _, r := range b.Sessions {
		x.byTask[r.Session.Task] = append(x.byTask[r.Session.Task], r)
		if live, _ := board.Liveness(r, b.Here, now); live {
			if cur, ok := x.running[r.Session.Task]; !ok || r.Session.Started.After(cur.Session.Started) {
				x.running[r.Session.Task] = r
			}
		}
	}
	for _, rs := range x.byTask {
		sort.SliceStable(rs, func(i, j int) bool { return rs[i].Session.Started.Before(rs[j].Session.Started) })
	}
	return x
}

func (s *Server) boardPage(w http.ResponseWriter, r *http.Request) {
	s.boardWith(w, r, http.StatusOK, "")
}

// boardWith renders the board, with an error banner when an action from
// it was refused.
func (s *Server) boardWith(w http.ResponseWriter, r *http.Request, code int, errText string) {
	p := s.page(r, "Board", "board")
	p.Error = errText
	v, err := s.open(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	v.shareHint(&p)
	x, err := s.snapshot(v.ctx, v.st)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	b := x.b
	for _, e := range b.TaskProblems {
		p.Warnings = append(p.Warnings, "skipping unreadable task: "+e.Error())
	}
	for _, e := range b.SessionProblems {
		p.Warnings = append(p.Warnings, "skipping unreadable session: "+e.Error())
	}
	f, err := parseQuery(r.URL.Query())
	if err != nil {
		s.fail(w, r, exitcode.New(exitcode.Usage, err, ""))
		return
	}
	if f.Parent != "" {
		id, err := b.Tasks.Resolve(f.Parent)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		f.Parent = id
	}
	now := time.Now()
	bv := boardView{page: p, Filter: f, Labels: x.labels, Agents: x.agents, Parents: x.parents, Sorts: sorts,
		Statuses: statusFilters, Priorities: []string{"critical", "high", "medium", "low"}}
	x.fill(&bv, f, now)
	bv.Empty = emptyState(v, len(b.Tasks.IDs))
	if recs, err := pipeline.List(v.ctx, v.st); err == nil {
		for _, run := range shownRuns(recs, v.st.Location().CommonDir, now) {
			bv.Runs = append(bv.Runs, newRunRow(run, b))
		}
	}
	s.live.seen(len(x.running))
	s.render(w, code, "board", bv)
}

// emptyState says why a board shows no task: the repository was never set
// up (git agentmine init writes the project settings file) or has no task
// yet; "" when it has tasks.
func emptyState(v *view, tasks int) string {
	if tasks > 0 {
		return ""
	}
	if top := v.st.Location().Top; top != "" {
		if _, err := os.Stat(filepath.Join(top, config.File)); err != nil {
			return "uninitialised"
		}
	}
	return "no tasks"
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// The task page.

type taskView struct {
	page
	T        contract.TaskJSON
	Parent   *taskLink
	Blockers []taskLink
	// CancelledBlockers are the blockers that are cancelled: the task
	// waits on them forever until unblocked.
	CancelledBlockers []taskLink
	Children          []taskLink
	Progress          *progress
	Sessions          []sessionView
	History           []gitstore.LogEntry
	// Note is the task's Task Note in Markdown, "" when none was written.
	Note string
	// Rounds are the task's best-of rounds (run --best-of), oldest first.
	Rounds []bestof.Round
	// What the action buttons may offer.
	CanRun, CanStop, CanCancel, CanMerge bool
	// Steer holds the review, merge and edit controls (edit.go).
	Steer steerView
}

type taskLink struct {
	ID, Short, Title, Status string
	// Missing: the id names no readable task.
	Missing bool
}

func link(b *board.Board, id string) taskLink {
	e, ok := b.Tasks.Tasks[id]
	if !ok {
		return taskLink{ID: id, Short: b.Tasks.ShortID(id), Missing: true}
	}
	return taskLink{ID: id, Short: b.Tasks.ShortID(id), Title: e.Task.Title, Status: string(b.Status[id].Status)}
}

// sessionView is one session with the facts that decided what it means.
type sessionView struct {
	contract.SessionJSON
	Verdict  string
	Running  bool
	HasDoD   bool
	DoD      verify.DoDResult
	HasScope bool
	Scope    verify.Verdict
	Diff     *diffView
	// DiffNote says why there is no diff (no tip recorded, too many
	// sessions), "" when Diff is set.
	DiffNote string
}

// diffSessions is how many of a task's latest sessions show their diff.
const diffSessions = 5

func (s *Server) taskPage(w http.ResponseWriter, r *http.Request) {
	s.taskWith(w, r, http.StatusOK, "")
}

// taskWith renders a task's page, with an error banner when an action on
// it was refused.
func (s *Server) taskWith(w http.ResponseWriter, r *http.Request, code int, errText string) {
	p := s.page(r, "Task", "board")
	p.Error = errText
	v, err := s.open(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	b, err := v.board(&p)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	id, err := b.Tasks.Resolve(r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	now := time.Now()
	tv := taskView{page: p, T: contract.NewTaskDetail(b, id, now)}
	tv.Title = tv.T.ShortID + " " + tv.T.Title
	t := b.Tasks.Tasks[id].Task
	if t.Parent != "" {
		l := link(b, t.Parent)
		tv.Parent = &l
	}
	for _, bl := range t.BlockedBy {
		tv.Blockers = append(tv.Blockers, link(b, bl))
	}
	for _, bl := range b.CancelledBlockers(id) {
		tv.CancelledBlockers = append(tv.CancelledBlockers, link(b, bl))
	}
	done, total := 0, 0
	for _, c := range b.Tasks.Children(id) {
		l := link(b, c)
		tv.Children = append(tv.Children, l)
		if l.Status != string(status.Cancelled) {
			total++
			if l.Status == string(status.Done) {
				done++
			}
		}
	}
	tv.Progress = newProgress(done, total)
	recs := b.SessionsOf(id)
	anyRunning := false
	for i := len(recs) - 1; i >= 0; i-- {
		rec := recs[i]
		sj := contract.NewSession(rec, b.Here, now, 0)
		sv := sessionView{SessionJSON: sj, Running: sj.State == "running",
			Verdict: contract.Verdict(rec, sj.State, b.Merged(rec))}
		if sv.Running {
			anyRunning = true
		}
		if rec.Outcome != nil {
			vd := verify.ParseVerdicts(rec.Outcome)
			sv.HasScope, sv.Scope = vd.HasScope, vd.Scope
			sv.HasDoD, sv.DoD = vd.DoD.Status != "", vd.DoD
		}
		if len(tv.Sessions) < diffSessions {
			sv.Diff, sv.DiffNote = v.diff(rec)
		} else {
			sv.DiffNote = "only the latest sessions show their diff"
		}
		tv.Sessions = append(tv.Sessions, sv)
	}
	tv.History, err = v.st.Log(v.ctx, tasks.Kind, id)
	if err != nil {
		p.Warnings = append(p.Warnings, err.Error())
	}
	if rec, _, err := bestof.Get(v.ctx, v.st, id); err == nil {
		tv.Rounds = rec.Rounds
	} else {
		p.Warnings = append(p.Warnings, err.Error())
	}
	if n, err := tasknote.Read(v.ctx, v.st, id); err == nil {
		tv.Note = n.Markdown()
	} else if !errors.Is(err, tasknote.ErrNone) {
		p.Warnings = append(p.Warnings, err.Error())
	}
	st := b.Status[id].Status
	tv.CanRun = !anyRunning && st != status.Done && st != status.Cancelled
	tv.CanStop = anyRunning
	tv.CanCancel = st != status.Cancelled && st != status.Done
	tv.Steer = steer(b, id, anyRunning)
	tv.CanMerge = tv.Steer.Merge.Offer != ""
	s.live.seen(len(indexSessions(b, now).running))
	s.render(w, code, "task", tv)
}

// The Memory Bank.

type memoryView struct {
	page
	Groups []memoryGroup
}

type memoryGroup struct {
	Category string
	Memories []contract.MemoryJSON
}

func (s *Server) memoryPage(w http.ResponseWriter, r *http.Request) {
	p := s.page(r, "Memory Bank", "memory")
	v, err := s.open(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	bank, err := memory.Load(v.ctx, v.st)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	for _, e := range bank.Problems {
		p.Warnings = append(p.Warnings, "skipping unreadable memory: "+e.Error())
	}
	var ms []memory.Memory
	for _, id := range bank.IDs {
		ms = append(ms, bank.Memories[id].Memory)
	}
	memory.Sort(ms)
	mv := memoryView{page: p}
	for _, m := range ms {
		if len(mv.Groups) == 0 || mv.Groups[len(mv.Groups)-1].Category != m.Category {
			mv.Groups = append(mv.Groups, memoryGroup{Category: m.Category})
		}
		g := &mv.Groups[len(mv.Groups)-1]
		g.Memories = append(g.Memories, contract.NewMemory(bank, m.ID))
	}
	s.render(w, http.StatusOK, "memory", mv)
}

// Runs.

type runsView struct {
	page
	// Runs are the supervisors shown: running, or ended recently.
	Runs []runRow
	// Tabs hold one log per supervisor shown and per running worker: each
	// run's tab, then its workers', then the workers of no run shown.
	Tabs []tab
	// Workers counts the worker tabs.
	Workers int
	// Start is the form that starts a run (runctl.go), nil when the board
	// cannot start one.
	Start *runForm
}

// tab is one live log on the Runs page.
type tab struct {
	// Kind is "supervisor" (a run's own log) or "worker" (a session's).
	Kind string
	// ID is the element id of the tab's log pane.
	ID     string
	Name   string
	TaskID string
	Task   string
	// Session is a worker tab's session; Run a supervisor tab's run.
	Session contract.SessionJSON
	Run     *runRow
	// Log is the key of the tab's log in the page's stream (see
	// stream.go): "s:" and a session id, or "r:" and a run's name.
	Log string
}

func (s *Server) runsPage(w http.ResponseWriter, r *http.Request) {
	s.runsWith(w, r, http.StatusOK, "")
}

// runsWith renders the Runs page, with an error banner when an action on
// it was refused.
func (s *Server) runsWith(w http.ResponseWriter, r *http.Request, code int, errText string) {
	p := s.page(r, "Runs", "runs")
	p.Error = errText
	v, err := s.open(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	v.shareHint(&p)
	b, err := v.board(&p)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	recs, err := pipeline.List(v.ctx, v.st)
	if err != nil {
		// The workers are still worth showing.
		p.Warnings = append(p.Warnings, "skipping the runs: "+err.Error())
	}
	now := time.Now()
	runs := shownRuns(recs, v.st.Location().CommonDir, now)
	rv := runsView{page: p}
	// Each running worker goes after the run that started it, if that run
	// is shown (the latest to start before it, should two claim it).
	groups := make([][]tab, len(runs)+1)
	for _, rec := range b.Sessions {
		if live, _ := board.Liveness(rec, b.Here, now); !live {
			continue
		}
		sj := contract.NewSession(rec, b.Here, now, 0)
		title := ""
		if e, ok := b.Tasks.Tasks[rec.Session.Task]; ok {
			title = e.Task.Title
		}
		g := len(runs)
		for i, run := range runs {
			if owns(run, rec) {
				g = i
			}
		}
		groups[g] = append(groups[g], tab{Kind: "worker", ID: "log-" + rec.Session.ID, Name: sj.ShortID, TaskID: rec.Session.Task,
			Task: title, Session: sj, Log: "s:" + rec.Session.ID})
		rv.Workers++
	}
	running := rv.Workers
	for i, g := range groups {
		sort.SliceStable(g, func(i, j int) bool { return g[i].Session.Started.Before(g[j].Session.Started) })
		if i < len(runs) {
			row := newRunRow(runs[i], b)
			rv.Runs = append(rv.Runs, row)
			rv.Tabs = append(rv.Tabs, runTab(row))
			if row.State == "running" {
				running++
			}
		}
		rv.Tabs = append(rv.Tabs, g...)
	}
	if !s.opts.ReadOnly && s.opts.Command != nil {
		rv.Start = runStartForm(b)
	}
	s.live.seen(running)
	s.render(w, code, "runs", rv)
}
