package pipeline

import (
	"context"
	"fmt"
	"hash/fnv"
	"time"

	"github.com/git-agentmine/git-agentmine/board"
	"github.com/git-agentmine/git-agentmine/replica"
)

// A fleet of clones (design §8) shares one board through a claim remote:
// every clone's run sees the same ready tasks. Were each to take them in the
// same order, the clones would all race for the first ready task, one would
// win its claim, and the others would read the claim, give up and race for
// the next one. So a run that claims on a remote spreads its starts: among
// targets of the same priority, each clone prefers its own order, a hash of
// its identity (host and repository id) and the task id. Priority still
// comes first and blocked tasks still wait for their blockers; a run that
// claims nowhere keeps creation order.
//
// A run that claims also reads every claim on the remote with one listing
// per look that has tasks to start, instead of one listing per task: a task
// claimed by a session this clone has never seen (none of the task's
// sessions is on its board) is held by another clone that claimed it since
// this clone last synced, so it is left to that clone without reading the
// claim. A task with sessions here is started as before, and its start
// reads the claim and decides (its own ended session, or a stale one). A
// task the listing found unclaimed is claimed without reading its claim
// first: the push expects no claim, and only a push that loses reads it.

// spreadKey returns what orders a clone's ties: its host and repository
// id when its starts claim on a remote, else "" (creation order).
func spreadKey(claimRemote string, here board.Here) string {
	if claimRemote == "" {
		return ""
	}
	return here.Host + "\x00" + here.Repo
}

// spreadRank is the place of task id in the order of the clone key names.
func spreadRank(key, id string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(key))
	h.Write([]byte{0})
	h.Write([]byte(id))
	return h.Sum64()
}

// dropClaimed removes from reqs the tasks another clone claimed since this
// clone last synced, with one listing of the remote's claims, and settles
// them for the run as a lost claim race does. A listing that fails leaves
// reqs alone: each start reads its claim.
func (s *Supervisor) dropClaimed(ctx context.Context, b *board.Board, reqs []startReq) []startReq {
	if s.claimRemote == "" || len(reqs) == 0 {
		return reqs
	}
	claims, err := s.env.RemoteClaims(ctx, s.claimRemote)
	// A remote that answered the listing, or went quiet in it as a busy
	// one does, is waited for; one that refused it or is not there is
	// offline at once (the worker runs without a claim, with a warning).
	wait := err == nil || replica.Transient(err)
	for i := range reqs {
		reqs[i].waitClaim = wait && s.busyFails[reqs[i].ts.id] < maxClaimBusy
	}
	if err != nil {
		return reqs
	}
	kept := reqs[:0]
	for _, r := range reqs {
		commit, ok := claims[r.ts.id]
		if !ok || len(b.SessionsOf(r.ts.id)) > 0 {
			r.unseen = !ok
			kept = append(kept, r)
			continue
		}
		// Worded as a start's lost claim race is, which a reader (and a
		// script) already knows.
		why := fmt.Sprintf("task %s is claimed on %s by session of another clone (claim %s), not synced here yet", short(r.ts.id), s.claimRemote, short(commit))
		fmt.Fprintf(s.log, "%s %s\n", time.Now().Format("15:04:05"), why)
		s.claimed[r.ts.id] = why
	}
	return kept
}

// maxClaimBusy is how often in a row one task's claim may go unanswered
// before the run takes the remote for offline: the next start runs the
// worker locally without a claim, with the warning a worker run gives (the
// backoffs before it add up to 63 s at the default 1 s: 1, 2, 4, 8, 16, 32).
// Until then a remote that does not answer is taken for a busy one, which
// another clone may be claiming through.
const maxClaimBusy = 6

// claimBusy handles a start refused because the claim remote did not
// answer the claim: the task is looked at again after a backoff (doubling
// from the run's).
func (s *Supervisor) claimBusy(ts taskState) {
	id := ts.id
	s.busyFails[id]++
	s.notBefore[id] = time.Now().Add(s.o.Backoff << min(s.busyFails[id]-1, 5))
}
