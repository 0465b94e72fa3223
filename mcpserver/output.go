package mcpserver

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/git-agentmine/git-agentmine/board"
	"github.com/git-agentmine/git-agentmine/contract"
	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/launch"
	"github.com/git-agentmine/git-agentmine/output"
	"github.com/git-agentmine/git-agentmine/worker"
)

// sessionOutput reads a session's log from a cursor: a byte offset into the
// log file. The session's state is read before the log, so that once it
// says ended, the text read after it holds everything the run wrote. When
// the log was rotated since the cursor was handed out (the file is now
// shorter than the cursor), the text continues from the rotated file
// ("<log>.1") into the new one.
func (s *Server) sessionOutput(c *call, in SessionOutputArgs) (contract.SessionOutputJSON, error) {
	max := in.MaxBytes
	switch {
	case in.Cursor < 0:
		return contract.SessionOutputJSON{}, usagef("session_output: cursor must not be negative")
	case max < 0 || max > maxOutputMax:
		return contract.SessionOutputJSON{}, usagef("session_output: max_bytes must be between 1 and %d", maxOutputMax)
	case in.WaitSeconds < 0 || in.WaitSeconds > maxOutputWaitSecs:
		return contract.SessionOutputJSON{}, usagef("session_output: wait_seconds must be between 0 and %d", maxOutputWaitSecs)
	case max == 0:
		max = defaultOutputMax
	}
	env, err := c.worker()
	if err != nil {
		return contract.SessionOutputJSON{}, err
	}
	rec, err := board.Session(c.ctx, env.St, in.Session)
	if err != nil {
		return contract.SessionOutputJSON{}, err
	}
	path, err := launch.SessionLogPath(env.St.Location().CommonDir, rec.Session.ID, rec.Session.Log)
	if err != nil {
		return contract.SessionOutputJSON{}, err
	}
	here := board.HereOf(env.St)
	state := contract.SessionState(rec, here, time.Now())
	chunk, err := launch.ReadLog(path, in.Cursor, max)
	if err != nil {
		return contract.SessionOutputJSON{}, err
	}
	if len(chunk.Text) == 0 && !chunk.More && state == "running" && in.WaitSeconds > 0 {
		waitForOutput(c.ctx, env, rec.Session.ID, path, in.Cursor, time.Duration(in.WaitSeconds)*time.Second)
		if rec, err = board.Session(c.ctx, env.St, rec.Session.ID); err != nil {
			return contract.SessionOutputJSON{}, err
		}
		state = contract.SessionState(rec, here, time.Now())
		if chunk, err = launch.ReadLog(path, in.Cursor, max); err != nil {
			return contract.SessionOutputJSON{}, err
		}
	}
	return contract.SessionOutputJSON{V: output.SchemaVersion, Session: rec.Session.ID, Text: string(chunk.Text),
		Cursor: chunk.Next, More: chunk.More, Ended: state != "running", State: state, Rotated: chunk.Rotated}, nil
}

func usagef(format string, a ...any) error {
	return exitcode.New(exitcode.Usage, fmt.Errorf(format, a...), "")
}

// waitForOutput returns when the log at path changes size from size, when
// the session ends, or after d, whichever comes first. It sleeps on
// file-system events and on the session's end, never polling.
func waitForOutput(ctx context.Context, env *worker.Env, session, path string, size int64, d time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var events <-chan fsnotify.Event
	if w, err := fsnotify.NewWatcher(); err == nil {
		defer w.Close()
		if w.Add(filepath.Dir(path)) == nil {
			events = w.Events
		}
	}
	ended := make(chan struct{})
	go func() {
		env.Wait(ctx, []string{session})
		close(ended)
	}()
	for {
		if n, err := launch.LogSize(path); err != nil || n != size {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-ended:
			return
		case <-events:
		}
	}
}
