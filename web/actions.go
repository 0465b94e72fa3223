package web

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/git-agentmine/git-agentmine/board"
	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/merge"
	"github.com/git-agentmine/git-agentmine/tasks"
	"github.com/git-agentmine/git-agentmine/worker"
)

// The actions. Each is a POST from the board's own pages (the CSRF value
// and the origin are checked before it runs) and calls what the matching
// command calls: tasks.Add (task add), worker.Env.Prepare and StartDetached
// (worker run --exec --detach), worker.Env.Stop (worker stop),
// tasks.Cancel (task cancel) and merge.Task (merge, gated on the facts). A
// success redirects to the task's page; a refusal shows that page again
// with the refusal's one-line message, with the HTTP status its exit code
// maps to, and changes nothing (the called code guarantees that).

func (s *Server) createTask(w http.ResponseWriter, r *http.Request) {
	v, err := s.open(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	f := r.PostForm
	n := tasks.New{Title: f.Get("title"), Description: f.Get("description"), Type: f.Get("type"),
		Priority: f.Get("priority"), Parent: f.Get("parent"), Assignee: f.Get("assignee"),
		Labels: fields(f.Get("labels")), BlockedBy: fields(f.Get("blocked_by")), Acceptance: lines(f.Get("acceptance"))}
	t, err := tasks.Add(v.ctx, v.st, n)
	if err != nil {
		s.boardWith(w, r, httpStatus(err), "creating the task: "+firstLine(err.Error()))
		return
	}
	http.Redirect(w, r, "/tasks/"+url.PathEscape(t.ID)+"?did=created", http.StatusSeeOther)
}

// fields splits a list typed as words separated by commas or spaces.
func fields(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' || r == '\r' })
}

// lines splits a textarea into its non-empty lines.
func lines(s string) []string {
	var out []string
	for _, l := range strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

func (s *Server) taskAction(w http.ResponseWriter, r *http.Request) {
	action := r.PathValue("action")
	var run func(*view, string) error
	switch action {
	case "run":
		run = func(v *view, id string) error { return s.startWorkerForm(v, id, r) }
	case "stop":
		run = s.stopWorker
	case "cancel":
		run = func(v *view, id string) error {
			_, _, err := tasks.Cancel(v.ctx, v.st, id, r.PostFormValue("reason"))
			return err
		}
	case "merge":
		run = func(v *view, id string) error {
			env, err := v.env()
			if err != nil {
				return err
			}
			res, err := merge.Task(v.ctx, env.St, env.Cfg.Base, id, merge.Options{AllowSkipped: r.PostFormValue("allow_skipped") == "1"})
			if err == nil && res.Already {
				action = "merged-ok"
			}
			return err
		}
	default:
		if run = s.steerAction(&action, r); run == nil {
			http.NotFound(w, r)
			return
		}
	}
	v, err := s.open(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	id := r.PathValue("id")
	if err := run(v, id); err != nil {
		s.taskWith(w, r, httpStatus(err), action+" refused: "+firstLine(err.Error()))
		return
	}
	if tid, err := tasks.Load(v.ctx, v.st); err == nil {
		if full, err := tid.Resolve(id); err == nil {
			id = full
		}
	}
	http.Redirect(w, r, "/tasks/"+url.PathEscape(id)+"?did="+action, http.StatusSeeOther)
}

// startWorkerForm starts a detached worker with the form's agent and
// timeout, as worker run --exec --detach does.
func (s *Server) startWorkerForm(v *view, id string, r *http.Request) error {
	timeout := 0
	if t := strings.TrimSpace(r.PostFormValue("timeout")); t != "" {
		n, err := strconv.Atoi(t)
		if err != nil || n <= 0 {
			return exitcode.New(exitcode.Usage, fmt.Errorf("timeout %q must be a positive number of seconds", t), "")
		}
		timeout = n
	}
	env, err := v.env()
	if err != nil {
		return err
	}
	p, err := env.Prepare(v.ctx, worker.RunOptions{Task: id, Agent: strings.TrimSpace(r.PostFormValue("agent")), Exec: true,
		Detach: true, Timeout: time.Duration(timeout) * time.Second, SkipDoD: r.PostFormValue("skip_dod") == "1",
		Replace: r.PostFormValue("replace") == "1"})
	if err != nil {
		return err
	}
	if p.ClaimNote != "" {
		fmt.Fprintf(s.opts.Log, "warning: %s\n", p.ClaimNote)
	}
	_, err = env.StartDetached(v.ctx, p, s.opts.Supervisor(env.Top, p.Rec.Session.ID))
	return err
}

// stopWorker stops the task's running sessions through worker.Env.Stop,
// the code worker stop runs, and does not wait for their outcome: the page
// updates when the supervisor records it.
func (s *Server) stopWorker(v *view, id string) error {
	env, err := v.env()
	if err != nil {
		return err
	}
	b, err := board.Load(v.ctx, v.st, env.Cfg.Base)
	if err != nil {
		return err
	}
	tid, err := b.Tasks.Resolve(id)
	if err != nil {
		return err
	}
	stopped := 0
	for _, rec := range b.SessionsOf(tid) {
		if live, _ := board.Liveness(rec, b.Here, time.Now()); !live {
			continue
		}
		if _, err := env.Stop(v.ctx, rec, b.Here); err != nil {
			return err
		}
		stopped++
	}
	if stopped == 0 {
		return exitcode.New(exitcode.State, fmt.Errorf("task %s has no running worker", b.Tasks.ShortID(tid)), "")
	}
	return nil
}
