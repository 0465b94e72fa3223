package sessions

import (
	"context"
	"fmt"

	"github.com/git-agentmine/git-agentmine/gitstore"
)

// Amend records a change the supervisor itself makes to its sealed session
// while the run goes on — the worker's pid and start time once it has
// started — as a commit on top of the sealed one, and returns the Sealed
// that Check compares with at the end. The update expects the session ref
// to be exactly the sealed commit: when something else moved it (the
// worker), nothing is written and the error says so, and Check reports the
// rewrite as usual. The new document is never built on a version the
// supervisor did not write.
func (x Sealed) Amend(ctx context.Context, st *gitstore.Store, msg string, mutate func(*Session)) (Sealed, error) {
	s := x.Session
	mutate(&s)
	s.V = SchemaVersion
	c, err := st.CommitDoc(ctx, Kind, s.Encode(), []string{x.Commit}, msg)
	if err != nil {
		return x, fmt.Errorf("amending session %s: %w", short(x.Session.ID), err)
	}
	if err := st.Transact(ctx, []gitstore.RefOp{{Verb: "update", Ref: Kind.Ref(x.Session.ID), New: c, Old: x.Commit}}); err != nil {
		return x, fmt.Errorf("amending session %s: %w", short(x.Session.ID), err)
	}
	x.Session, x.Commit = s, c
	return x, nil
}
