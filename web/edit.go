package web

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/git-agentmine/git-agentmine/board"
	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/status"
	"github.com/git-agentmine/git-agentmine/tasks"
)

// Steering a task from its page: edit any field (tasks.Update, the code of
// task update), reopen (tasks.Reopen, task reopen) and unblock (remove a
// blocker, task update --remove-blocked-by). The edit form sends every
// field; only the fields that differ from the task as the board read it
// go into the patch, so an edit of one field does not overwrite another
// field someone changed meanwhile; the form names the version of the task
// it shows, and an edit of a task that changed since is refused.

// editForm is the task's fields as the edit form shows them.
type editForm struct {
	Title, Description, Type, Priority, Assignee, Parent, Base string
	Labels, BlockedBy                                          string
	Acceptance, DoD                                            string
	MaxLoops                                                   string
	Types, Priorities                                          []string
	// Key changes whenever the task document does: the form is drawn
	// again (a live update) only then.
	Key string
}

// steerView is what the task page offers beyond the fixed actions: the
// review form, the merge control, the edit form, reopen.
type steerView struct {
	Review    *reviewControl
	Merge     mergeControl
	Edit      editForm
	CanReopen bool
}

// steer builds the task page's review, merge and edit controls.
func steer(b *board.Board, id string, running bool) steerView {
	e := b.Tasks.Tasks[id]
	t := e.Task
	short := make([]string, 0, len(t.BlockedBy))
	for _, bl := range t.BlockedBy {
		short = append(short, b.Tasks.ShortID(bl))
	}
	parent := ""
	if t.Parent != "" {
		parent = b.Tasks.ShortID(t.Parent)
	}
	loops := ""
	if t.MaxLoops > 0 {
		loops = strconv.Itoa(t.MaxLoops)
	}
	sv := steerView{Review: reviewOffer(b, id, running), Merge: mergeOffer(b, id, running),
		Edit: editForm{Title: t.Title, Description: t.Description, Type: t.Type, Priority: t.Priority, Assignee: t.Assignee,
			Parent: parent, Base: t.Base, Labels: strings.Join(t.Labels, " "), BlockedBy: strings.Join(short, " "),
			Acceptance: strings.Join(t.Acceptance, "\n"), DoD: strings.Join(t.DoD, "\n"), MaxLoops: loops,
			Types: tasks.Types, Priorities: tasks.Priorities, Key: e.Commit}}
	switch b.Status[id].Status {
	case status.Cancelled, status.Failed, status.DoDFailed, status.Tainted:
		sv.CanReopen = !running
	}
	if t.Exhausted != nil && !running {
		sv.CanReopen = true
	}
	return sv
}

// editTask applies the edit form: the fields that changed, through
// tasks.Update.
func (s *Server) editTask(v *view, id string, r *http.Request) (string, error) {
	_, b, tid, err := v.loadFor(id)
	if err != nil {
		return "", err
	}
	if ver := r.PostFormValue("version"); ver != "" && ver != b.Tasks.Tasks[tid].Commit {
		return "", exitcode.New(exitcode.State, fmt.Errorf("task %s changed since this form was drawn: reload the page and edit it again", b.Tasks.ShortID(tid)), "")
	}
	p, err := patchOf(b, tid, r)
	if err != nil {
		return "", err
	}
	_, changed, err := tasks.Update(v.ctx, v.st, tid, p)
	if err != nil {
		return "", err
	}
	if !changed {
		return "unchanged", nil
	}
	return "edited", nil
}

// patchOf compares the edit form with the task and returns the patch of
// what differs. A field the form does not send is left alone.
func patchOf(b *board.Board, id string, r *http.Request) (tasks.Patch, error) {
	t := b.Tasks.Tasks[id].Task
	f := r.PostForm
	var p tasks.Patch
	str := func(name, cur string, dst **string) {
		if _, ok := f[name]; !ok {
			return
		}
		v := strings.ReplaceAll(f.Get(name), "\r\n", "\n")
		if name != "description" {
			v = strings.TrimSpace(v)
		}
		if v != cur {
			*dst = &v
		}
	}
	str("title", t.Title, &p.Title)
	str("description", t.Description, &p.Description)
	str("type", t.Type, &p.Type)
	str("priority", t.Priority, &p.Priority)
	str("assignee", t.Assignee, &p.Assignee)
	str("base", t.Base, &p.Base)
	if _, ok := f["parent"]; ok {
		want := strings.TrimSpace(f.Get("parent"))
		cur := ""
		if t.Parent != "" {
			cur = b.Tasks.ShortID(t.Parent)
		}
		if want != cur && want != t.Parent {
			p.Parent = &want
		}
	}
	if _, ok := f["labels"]; ok {
		want := fields(f.Get("labels"))
		for _, l := range want {
			if !slices.Contains(t.Labels, l) && !slices.Contains(p.AddLabels, l) {
				p.AddLabels = append(p.AddLabels, l)
			}
		}
		for _, l := range t.Labels {
			if !slices.Contains(want, l) {
				p.RemoveLabels = append(p.RemoveLabels, l)
			}
		}
	}
	if _, ok := f["blocked_by"]; ok {
		if err := blockersPatch(b, t, fields(f.Get("blocked_by")), &p); err != nil {
			return p, err
		}
	}
	list := func(name string, cur []string, dst **[]string) {
		if _, ok := f[name]; !ok {
			return
		}
		want := lines(f.Get(name))
		if want == nil {
			want = []string{}
		}
		if !slices.Equal(want, cur) {
			*dst = &want
		}
	}
	list("acceptance", t.Acceptance, &p.Acceptance)
	list("dod", t.DoD, &p.DoD)
	if _, ok := f["max_loops"]; ok {
		n := 0
		if s := strings.TrimSpace(f.Get("max_loops")); s != "" {
			var err error
			if n, err = strconv.Atoi(s); err != nil {
				return p, exitcode.New(exitcode.Usage, fmt.Errorf("max loops %q is not a number", s), "leave it empty for the run's --max-loops")
			}
		}
		if n != t.MaxLoops {
			p.MaxLoops = &n
		}
	}
	return p, nil
}

// blockersPatch adds to p the blockers typed (id prefixes) that the task
// lacks and removes those it has that were not typed.
func blockersPatch(b *board.Board, t tasks.Task, typed []string, p *tasks.Patch) error {
	want := map[string]bool{}
	for _, w := range typed {
		id, err := b.Tasks.Resolve(w)
		if err != nil {
			return fmt.Errorf("blocker: %w", err)
		}
		want[id] = true
		if !slices.Contains(t.BlockedBy, id) {
			p.AddBlockedBy = append(p.AddBlockedBy, id)
		}
	}
	for _, bl := range t.BlockedBy {
		if !want[bl] {
			p.RemoveBlockedBy = append(p.RemoveBlockedBy, bl)
		}
	}
	return nil
}

// unblock removes one blocker from the task (task update
// --remove-blocked-by): a task waiting on a cancelled task is ready again.
func (s *Server) unblock(v *view, id string, r *http.Request) error {
	_, b, tid, err := v.loadFor(id)
	if err != nil {
		return err
	}
	t := b.Tasks.Tasks[tid].Task
	typed := strings.TrimSpace(r.PostFormValue("blocker"))
	if typed == "" {
		return exitcode.New(exitcode.Usage, fmt.Errorf("unblocking task %s needs the blocker to remove", b.Tasks.ShortID(tid)), "")
	}
	bl := ""
	for _, x := range t.BlockedBy {
		if x == typed || len(typed) >= 4 && strings.HasPrefix(x, typed) {
			bl = x
		}
	}
	if bl == "" {
		return exitcode.New(exitcode.State, fmt.Errorf("task %s is not blocked by %s", b.Tasks.ShortID(tid), typed), "")
	}
	_, _, err = tasks.Update(v.ctx, v.st, tid, tasks.Patch{RemoveBlockedBy: []string{bl}})
	return err
}

// reopen reopens the task (task reopen): a cancel and an exhausted fact
// are undone and earlier sessions no longer decide its status.
func (s *Server) reopen(v *view, id string, r *http.Request) error {
	_, b, tid, err := v.loadFor(id)
	if err != nil {
		return err
	}
	if taskRunning(b, tid, time.Now()) {
		return exitcode.New(exitcode.State, fmt.Errorf("task %s has a running worker: stop it first", b.Tasks.ShortID(tid)), "")
	}
	_, _, err = tasks.Reopen(v.ctx, v.st, tid, strings.TrimSpace(r.PostFormValue("reason")))
	return err
}
