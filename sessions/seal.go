package sessions

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/gitstore"
)

// The seal makes a supervised session's verdict attributable. Before the
// worker starts, its supervisor (the process that runs the worker and
// judges it) draws a random nonce that it keeps in memory only, and records
// the nonce's SHA-256 (the seal) in the session document with its own
// identity. The outcome line it writes at the end carries the nonce itself.
// A reader accepts a line as the session's verdict only when the nonce in
// it hashes to the recorded seal: the worker never saw the nonce, so a line
// it wrote cannot carry it. Once the verdict is written the nonce is
// public, so a second line carrying it is a copy and is rejected too (see
// selectOutcome).
//
// Readers take the seal from the session document as it is now, not from
// the session's creation commit: the seal is written by the process that
// holds the nonce, which for a detached run is not the process that
// created the session; a creation commit is no safer (the worker can move
// the ref to a new root and attach its notes there); and reading every
// creation commit would add one object read per session to every status.
// What keeps the document honest is its supervisor: at the end of the run
// it compares the document with the one it sealed and restores it
// (Sealed.Check). A supervisor killed before that restores nothing.

// ForgedOutcome is the violation type of an outcome line the supervisor
// did not write (and of a session document rewritten during its run).
const ForgedOutcome = "forged-outcome"

// NonceLen is the size of a supervisor's nonce in bytes.
const NonceLen = 32

// Seal is a supervisor's commitment, recorded in the session document
// before the worker starts: the SHA-256 of its secret nonce, and who holds
// the nonce.
type Seal struct {
	// SHA256 is the hex SHA-256 of the nonce.
	SHA256 string `json:"sha256"`
	// Host, Pid and PidStart identify the supervisor process.
	Host     string `json:"host"`
	Pid      int    `json:"pid"`
	PidStart uint64 `json:"pid_start"`
}

// Supervisor is the proof in an outcome line that the sealing supervisor
// wrote it: its identity and the nonce whose hash is the session's seal.
type Supervisor struct {
	Host     string `json:"host"`
	Pid      int    `json:"pid"`
	PidStart uint64 `json:"pid_start"`
	// Nonce is the hex nonce; it is secret until this line is written.
	Nonce string `json:"nonce"`
	// ReviewKey (hex) is drawn as this line is made, after every process
	// of the worker and of its DoD has ended: a review of the session
	// must carry it (Review.Proof). The nonce lives in the supervisor's
	// memory during the run, where a worker running as root can read it;
	// no process of the worker was alive while the review key existed.
	ReviewKey string `json:"review_key,omitempty"`
}

// Nonce is a supervisor's secret. It has no String method and no JSON
// form: the only way out of the process is Proof, at the end of the run.
type Nonce struct {
	b [NonceLen]byte
}

// NewSeal draws a fresh nonce from crypto/rand and returns the seal that
// commits to it for the supervisor host/pid/pidStart.
func NewSeal(host string, pid int, pidStart uint64) (Seal, *Nonce, error) {
	n := new(Nonce)
	if _, err := rand.Read(n.b[:]); err != nil {
		return Seal{}, nil, fmt.Errorf("drawing the session's nonce: %w", err)
	}
	sum := sha256.Sum256(n.b[:])
	return Seal{SHA256: hex.EncodeToString(sum[:]), Host: host, Pid: pid, PidStart: pidStart}, n, nil
}

// Proof is what the supervisor writes into its outcome line, with a fresh
// review key: call it only once the worker's processes have all ended.
func (n *Nonce) Proof(s Seal) *Supervisor {
	var key [16]byte
	sup := &Supervisor{Host: s.Host, Pid: s.Pid, PidStart: s.PidStart, Nonce: hex.EncodeToString(n.b[:])}
	if _, err := rand.Read(key[:]); err == nil {
		sup.ReviewKey = hex.EncodeToString(key[:])
	}
	return sup
}

// Authenticates reports whether sup proves that the sealing supervisor
// wrote the line: same identity, and a nonce whose SHA-256 is the seal.
func (s *Seal) Authenticates(sup *Supervisor) bool {
	if s == nil || sup == nil || len(sup.Nonce) != 2*NonceLen || sup.Host != s.Host || sup.Pid != s.Pid || sup.PidStart != s.PidStart {
		return false
	}
	var raw [NonceLen]byte
	if _, err := hex.Decode(raw[:], []byte(sup.Nonce)); err != nil {
		return false
	}
	sum := sha256.Sum256(raw[:])
	var got [2 * sha256.Size]byte
	hex.Encode(got[:], sum[:])
	return subtle.ConstantTimeCompare(got[:], []byte(s.SHA256)) == 1
}

// Sealed is what a supervisor remembers of the session it sealed, to check
// at the end of the run that nobody rewrote it meanwhile.
type Sealed struct {
	// Session is the sealed document.
	Session Session
	// Commit is the session commit that recorded the seal.
	Commit string
	// Root is the session's creation commit (where outcome notes attach),
	// read from git rather than from a cache.
	Root string
}

// ErrAlreadySealed means another supervisor sealed the session first.
var ErrAlreadySealed = errors.New("the session is already sealed by another supervisor")

// SealSession records seal in the session document before its worker
// starts, and the supervisor's pid and start time with it (a detached
// supervisor says it is ready only after this, so the process that
// detached it records nothing more: worker.StartDetached).
// A session that already carries a seal is refused: it has a supervisor.
func SealSession(ctx context.Context, st *gitstore.Store, id string, seal Seal) (Sealed, error) {
	var out Session
	doc, _, err := st.Update(ctx, Kind, id, func(cur gitstore.Doc) (gitstore.Change, error) {
		s, err := Decode(cur.Data)
		if err != nil {
			return gitstore.Change{}, err
		}
		if s.Seal != nil {
			return gitstore.Change{}, ErrAlreadySealed
		}
		sc := seal
		s.Seal = &sc
		s.Pid, s.PidStart = seal.Pid, seal.PidStart
		out = s
		return gitstore.Change{Data: s.Encode(), Message: "session sealed: supervisor pid " + fmt.Sprint(seal.Pid)}, nil
	})
	if err != nil {
		return Sealed{}, fmt.Errorf("sealing session %s: %w", short(id), err)
	}
	root, err := st.Root(ctx, Kind, id)
	if err != nil {
		return Sealed{}, fmt.Errorf("sealing session %s: %w", short(id), err)
	}
	out.ID = id
	return Sealed{Session: out, Commit: doc.Commit, Root: root}, nil
}

// Check compares the session document with what the supervisor sealed, at
// the end of the run, after the worker (and its DoD) can no longer write.
// The worker runs as the same user and can move its session ref: to remove
// the seal, to replace it with one of its own, or to point the ref at a
// new chain whose creation commit carries notes it wrote. Any such change
// is restored (a new commit holding the sealed document: on top of the
// rewritten one when the sealed commit is still in its history, else on top
// of the sealed commit, leaving the foreign chain out) and reported: each
// returned string is the reason of a forged-outcome violation. An error
// means the check itself could not be done.
func (x Sealed) Check(ctx context.Context, st *gitstore.Store) ([]string, error) {
	want := x.Session
	want.V = SchemaVersion
	wantData := want.Encode()
	ref := Kind.Ref(x.Session.ID)
	for attempt := 0; ; attempt++ {
		var findings []string
		cur, err := st.Get(ctx, Kind, x.Session.ID)
		missing := err != nil && exitcode.Of(err) == exitcode.NotFound
		if err != nil && !missing {
			return nil, fmt.Errorf("checking session %s: %w", short(x.Session.ID), err)
		}
		var op gitstore.RefOp
		switch {
		case missing:
			findings = append(findings, "session document deleted during the run (restored by the supervisor)")
			op = gitstore.RefOp{Verb: "create", Ref: ref, New: x.Commit}
		default:
			inChain := cur.Commit == x.Commit
			if !inChain {
				_, aerr := st.Git().Run(ctx, "merge-base", "--is-ancestor", x.Commit, cur.Commit)
				inChain = aerr == nil
			}
			same := false
			if s, err := Decode(cur.Data); err == nil {
				s.ID = x.Session.ID
				s.V = SchemaVersion
				same = string(s.Encode()) == string(wantData)
			}
			if inChain && same {
				return nil, nil
			}
			parent := cur.Commit
			if !inChain {
				parent = x.Commit
				findings = append(findings, fmt.Sprintf("session document rewritten during the run: its ref was moved to %s, a history without the sealed commit %s (restored by the supervisor)", short12(cur.Commit), short12(x.Commit)))
			} else {
				findings = append(findings, fmt.Sprintf("session document rewritten during the run: commit %s changed the sealed document (restored by the supervisor)", short12(cur.Commit)))
			}
			c, err := st.CommitDoc(ctx, Kind, wantData, []string{parent}, "session restored by its supervisor: the document was rewritten during the run")
			if err != nil {
				return nil, fmt.Errorf("restoring session %s: %w", short(x.Session.ID), err)
			}
			op = gitstore.RefOp{Verb: "update", Ref: ref, New: c, Old: cur.Commit}
		}
		err = st.Transact(ctx, []gitstore.RefOp{op})
		if err == nil {
			return findings, nil
		}
		if !errors.Is(err, gitstore.ErrConflict) || attempt >= 20 {
			return findings, fmt.Errorf("restoring session %s: %w", short(x.Session.ID), err)
		}
		if err := gitstore.Backoff(ctx, attempt); err != nil {
			return findings, err
		}
	}
}

// ForeignLines returns the outcome lines already attached to the session's
// creation commit when its supervisor is about to write its own: every one
// of them was written during the run by someone else. It reads the one note
// from the notes commit (at every fan-out depth: a line anywhere is
// foreign), not through the notes cache.
func (x Sealed) ForeignLines(ctx context.Context, st *gitstore.Store) ([]string, error) {
	lines, err := st.NotesOf(ctx, x.Root)
	if err != nil {
		return nil, fmt.Errorf("reading the outcome note of session %s: %w", short(x.Session.ID), err)
	}
	return lines, nil
}

func short(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

func short12(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
}
