package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/git-agentmine/git-agentmine/gitstore"
	"github.com/git-agentmine/git-agentmine/launch"
	"github.com/git-agentmine/git-agentmine/memory"
	"github.com/git-agentmine/git-agentmine/sessions"
	"github.com/git-agentmine/git-agentmine/tasks"
	"github.com/git-agentmine/git-agentmine/verify"
)

// sealRun makes this process the session's only possible author of a
// verdict (sessions.Seal): it turns its memory unreadable to same-user
// processes, draws a nonce that never leaves its memory until the outcome
// line is written, and records the nonce's hash in the session before the
// worker starts.
func (e *Env) sealRun(ctx context.Context, rec sessions.Record, say func(string, ...any)) (*sessions.Nonce, sessions.Sealed, error) {
	if err := protectMemory(); err != nil {
		say("warning: %v", err)
	}
	pid := os.Getpid()
	start, err := launch.StartTime(pid)
	if err != nil {
		return nil, sessions.Sealed{}, fmt.Errorf("sealing session %s: reading this process's start time: %w", rec.Session.ID[:8], err)
	}
	seal, nonce, err := sessions.NewSeal(sessions.Host(), pid, start)
	if err != nil {
		return nil, sessions.Sealed{}, err
	}
	sealed, err := sessions.SealSession(ctx, e.St, rec.Session.ID, seal)
	if err != nil {
		return nil, sessions.Sealed{}, err
	}
	return nonce, sealed, nil
}

// checkSeal runs at the end of a sealed run, after the worker and its DoD
// ended and before the verdict is written. It restores the session
// document if it was rewritten, drops the local caches the worker could
// have planted entries in (unless they are byte for byte what they were
// before it started, caches), and turns every finding into a forged-outcome
// violation of the verdict: a rewritten or deleted session document, and
// every outcome line already on the session (written during the run, so
// not by this supervisor) that records a failure. Lines that claim success
// need no finding here: every reader rejects them as forged
// (sessions.Record.Forged), and readerVerdict shows them to the caller.
// It returns the lines it found, for readerVerdict.
func (e *Env) checkSeal(ctx context.Context, sealed sessions.Sealed, caches gitstore.CacheSnapshot, out *sessions.Outcome, say func(string, ...any)) []string {
	var findings []string
	rewritten, err := sealed.Check(ctx, e.St)
	findings = append(findings, rewritten...)
	if err != nil {
		findings = append(findings, "the session document could not be checked: "+err.Error())
	}
	lines, err := sealed.ForeignLines(ctx, e.St)
	if err != nil {
		say("warning: %v", err)
	}
	// Check and ForeignLines read git, not the caches; the caches go once
	// the session document is restored, so that no reader caches the
	// history the worker had put in its place. Cache files that are byte
	// for byte what they were before the worker started (caches) hold
	// nothing it planted: a kind whose files are all such stays, and
	// nothing is dropped when no file changed (gitstore.CacheSnapshot).
	kinds := []gitstore.Kind{tasks.Kind, sessions.Kind, memory.Kind}
	drop, changed := caches.ChangedKinds(e.St.SnapshotCaches(), kinds)
	if len(findings) > 0 || len(lines) > 0 {
		drop, changed = kinds, true
	}
	if changed {
		if err := e.St.DropCaches(drop...); err != nil {
			say("warning: %v", err)
		}
	}
	for _, raw := range lines {
		if l, ok := sessions.ParseLine(raw); ok && !l.ClaimsSuccess() {
			findings = append(findings, fmt.Sprintf("outcome line recorded_by %q, finished %s was written during the run by someone other than the supervisor",
				l.By, l.Finished.UTC().Format("2006-01-02T15:04:05Z07:00")))
		}
	}
	if len(findings) == 0 {
		return lines
	}
	v := verify.ParseVerdicts(out)
	v.HasScope = true
	v.Scope.Valid = false
	for _, f := range findings {
		v.Scope.Violations = append(v.Scope.Violations, verify.Violation{Type: sessions.ForgedOutcome, Reason: f})
	}
	v.Record(out)
	reason := "forged outcome: " + findings[0]
	if out.Reason != "" {
		reason += "; " + out.Reason
	}
	out.Reason = reason
	say("forged outcome: %s", findings[0])
	return lines
}

// readerVerdict is the verdict every reader will see once out, the
// supervisor's own line, is recorded next to the foreign lines: out itself
// unless some of them claimed success (then marked as forged).
func readerVerdict(seal *sessions.Seal, foreign []string, out sessions.Outcome) sessions.Outcome {
	if len(foreign) == 0 {
		return out
	}
	own, err := json.Marshal(out)
	if err != nil {
		return out
	}
	if v, _ := sessions.Verdict(seal, append(foreign, string(own))); v != nil {
		return *v
	}
	return out
}
