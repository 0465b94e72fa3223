package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/git-agentmine/git-agentmine/board"
	"github.com/git-agentmine/git-agentmine/output"
	"github.com/git-agentmine/git-agentmine/sessions"
)

// waitProgress shows, on a terminal, one line on stderr that says what
// worker wait waits for and for how long, redrawn every second; stop
// clears it. Off a terminal, and with --json or -q, it shows nothing.
func waitProgress(a *App, b *board.Board, recs []sessions.Record) (stop func()) {
	if a.G.JSON || a.G.Quiet || !output.IsTerminal(a.P.Err) {
		return func() {}
	}
	width := output.Width(a.P.Err, a.Getenv)
	began := time.Now()
	draw := func() {
		line := waitLine(b, recs, time.Since(began))
		if width > 1 {
			line = output.Shorten(line, width-1)
		}
		fmt.Fprintf(a.P.Err, "\r\x1b[K%s", line)
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			draw()
			select {
			case <-done:
				fmt.Fprint(a.P.Err, "\r\x1b[K")
				return
			case <-t.C:
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

// waitLine is the progress line: how long the wait has lasted and each
// session waited for, with its task and how long it has run.
func waitLine(b *board.Board, recs []sessions.Record, waited time.Duration) string {
	parts := make([]string, 0, len(recs))
	for _, r := range recs {
		ran := time.Since(r.Session.Started).Round(time.Second)
		parts = append(parts, fmt.Sprintf("%s (task %s, %s)", r.Session.ID[:8], b.Tasks.ShortID(r.Session.Task), ran))
	}
	return fmt.Sprintf("waiting %s for %s: %s", waited.Round(time.Second), plural(len(recs), "session", "sessions"), strings.Join(parts, ", "))
}
