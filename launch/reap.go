package launch

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"sort"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// MarkerKey is the environment variable Start sets to a fresh random value
// when Spec.Marker is empty.
const MarkerKey = "AGENTMINE_RUN"

// killLimit bounds how long ending processes keeps sending SIGKILL before
// it gives up on the survivors (a process in uninterruptible sleep).
const killLimit = 10 * time.Second

// Reaper makes the process that supervises workers their child subreaper
// (Linux prctl PR_SET_CHILD_SUBREAPER) while they run: a descendant of a
// worker whose parent ends — a double fork, a daemon started with setsid —
// is adopted by this process instead of init, so it stays a descendant and
// is found and ended when its worker ends. The setting is the whole
// process's: a process keeps one Reaper for all its workers.
//
// A Reaper also keeps track of the runs it supervises, so that ending one
// run's processes never touches another's. Processes are told apart by
// their session (every worker leads its own), their environment marker
// and their descent; a process that left its worker's session and
// dropped its marker can only be attributed to some run of this Reaper,
// so a process that supervises several workers at once gives them all one
// Reaper (Spec.Reaper) and accepts that such a process may be ended with
// the first of them to end. A process with a Reaper starts no other
// children in sessions of their own besides its workers: their zombies
// would be reaped from under them.
type Reaper struct {
	mu   sync.Mutex
	runs map[*Process]struct{}
	// holds counts the Contain calls under way.
	holds int
	err   error
}

// NewReaper returns a Reaper with no runs. While it has runs, this process
// is a child subreaper; when its last run has ended, it no longer is, so
// that a long-lived process does not collect the zombies of orphans that
// are none of its business.
func NewReaper() *Reaper {
	return &Reaper{runs: map[*Process]struct{}{}}
}

// Err is why this process could not become a child subreaper (not Linux,
// a seccomp filter) when the last run started, or nil. Runs are then still
// ended by their sessions and markers, but not the orphans that left both
// behind.
func (r *Reaper) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// add registers p; the caller holds r.mu.
func (r *Reaper) add(p *Process) {
	r.runs[p] = struct{}{}
}

func (r *Reaper) remove(p *Process) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.runs, p)
	r.unsubreap()
}

// Contain runs fn while this process is a child subreaper, then ends the
// processes that fn's commands left running outside this process's own
// process group — a daemon a test suite started with setsid, a double fork
// or a job of its own — and returns them. fn runs its commands to their
// end (they are in the past when it returns); what runs in this process's
// group is this process's own (its other goroutines' commands), as are
// the processes that were there before fn began and those of the Reaper's
// runs: none of them is touched.
func (r *Reaper) Contain(grace time.Duration, fn func()) []Proc {
	self := os.Getpid()
	r.mu.Lock()
	r.subreap()
	r.holds++
	before := map[int]uint64{}
	for pid, st := range family(self) {
		before[pid] = st.startTime
	}
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.holds--
		r.unsubreap()
		r.mu.Unlock()
	}()
	fn()
	find := func() []Proc {
		procs := family(self)
		selfPgrp := procs[self].pgrp
		r.mu.Lock()
		defer r.mu.Unlock()
		var out []Proc
		for pid, st := range procs {
			if start, ok := before[pid]; ok && start == st.startTime || pid == self || st.pgrp == selfPgrp || r.owned(pid, st) {
				continue
			}
			if !descends(procs, pid, self) {
				continue
			}
			if st.dead() {
				if st.ppid == self {
					var ws unix.WaitStatus
					_, _ = unix.Wait4(pid, &ws, unix.WNOHANG, nil)
				}
				continue
			}
			out = append(out, procOf(pid, st))
		}
		sortProcs(out)
		return out
	}
	ended, _ := endAll(find, grace, nil)
	return ended
}

// owned reports whether process pid belongs to one of the Reaper's runs by
// its session, its group or its marker; the caller holds r.mu.
func (r *Reaper) owned(pid int, st procStat) bool {
	for q := range r.runs {
		if pid == q.pid || st.session == q.pid || st.pgrp == q.pid || environHas(pid, q.marker) {
			return true
		}
	}
	return false
}

// newMarker returns a fresh MarkerKey=<random> entry.
func newMarker() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return MarkerKey + "=" + hex.EncodeToString(b[:])
}

// members returns the live processes that belong to run p, and reaps the
// zombies of p's processes that this process adopted. A process belongs
// to p when it started no earlier than p's worker and
//
//   - it is in the worker's session or process group and descends from
//     this process (a group outlives its leader; descent rules out an
//     unrelated process that got the leader's recycled pid), or
//   - its environment holds p's marker, or
//   - it descends from this process, is not in this process's own
//     session (where this process's own commands run, git among them: no
//     process can join a session it was not born in, so nothing of a
//     worker can be there) and belongs to no other run of the Reaper.
func (r *Reaper) members(p *Process) []Proc {
	self := os.Getpid()
	// This process's family holds every process of the run while it is
	// their subreaper; only when it could not become one is the whole
	// table read, for the marker.
	procs := family(self)
	if r.Err() != nil {
		all, err := scanProcs()
		if err != nil {
			return nil
		}
		procs = all
	}
	selfSid := procs[self].session
	if selfSid == 0 {
		selfSid, _ = unix.Getsid(0)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	other := func(pid int, st procStat) bool {
		for q := range r.runs {
			if q != p && (pid == q.pid || st.session == q.pid || st.pgrp == q.pid || environHas(pid, q.marker)) {
				return true
			}
		}
		return false
	}
	var out []Proc
	for pid, st := range procs {
		if pid == self || st.startTime < p.start {
			continue
		}
		var mine bool
		switch {
		case (st.session == p.pid || st.pgrp == p.pid) && descends(procs, pid, self):
			mine = true
		case st.dead():
			// A zombie's environment cannot be read: it is p's to reap
			// when it would have been p's to end.
			mine = st.session != selfSid && st.ppid == self && !other(pid, st)
		case environHas(pid, p.marker):
			mine = true
		case st.session != selfSid && descends(procs, pid, self):
			mine = !other(pid, st)
		}
		if !mine {
			continue
		}
		if st.dead() {
			if st.ppid == self && pid != p.pid {
				var ws unix.WaitStatus
				_, _ = unix.Wait4(pid, &ws, unix.WNOHANG, nil)
			}
			continue
		}
		out = append(out, procOf(pid, st))
	}
	sortProcs(out)
	return out
}

func sortProcs(ps []Proc) {
	sort.Slice(ps, func(i, j int) bool { return ps[i].Pid < ps[j].Pid })
}

// endAll ends the processes find returns, again and again until it
// returns none: SIGTERM to each (and to each new one that appears), up to
// grace for them to end, then SIGKILL to whatever is left, every round,
// for at most killLimit. It returns the processes it signalled (each was
// alive then) and those still alive when it gave up.
func endAll(find func() []Proc, grace time.Duration, note func(string, ...any)) (ended, survivors []Proc) {
	type key struct {
		pid   int
		start uint64
	}
	sent := map[key]Proc{}
	var order []key
	termEnd := time.Now().Add(grace)
	var killEnd time.Time
	pause := 2 * time.Millisecond
	for settled := false; ; {
		cur := find()
		if len(cur) == 0 {
			if settled {
				break
			}
			// Once more: a process adopted while the last look was
			// under way is seen by the next.
			settled = true
			continue
		}
		settled = false
		now := time.Now()
		if killEnd.IsZero() && !now.Before(termEnd) {
			killEnd = now.Add(killLimit)
			if note != nil && grace > 0 {
				note("%s still running after %s grace: sending SIGKILL", plural(len(cur), "process", "processes"), grace)
			}
		}
		if !killEnd.IsZero() && now.After(killEnd) {
			survivors = cur
			break
		}
		for _, c := range cur {
			k := key{c.Pid, c.Start}
			_, seen := sent[k]
			switch {
			case !killEnd.IsZero():
				if signalProc(c, unix.SIGKILL) && !seen {
					sent[k] = c
					order = append(order, k)
				}
			case !seen:
				if signalProc(c, unix.SIGTERM) {
					sent[k] = c
					order = append(order, k)
				}
			}
		}
		time.Sleep(pause)
		if pause < 100*time.Millisecond {
			pause *= 2
		}
	}
	for _, k := range order {
		ended = append(ended, sent[k])
	}
	sortProcs(ended)
	return ended, survivors
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// Identity is what tells a run's processes apart once its supervisor is
// gone, as a session records it.
type Identity struct {
	// Leader and LeaderStart identify the worker's own process, which led
	// its own session and process group; 0 when unknown.
	Leader      int
	LeaderStart uint64
	// Since is a start time (clock ticks since boot) that no process of
	// the run precedes, for when Leader is unknown: the supervisor's.
	Since uint64
	// Marker is the KEY=VALUE entry the worker's environment held.
	Marker string
	// Span bounds, once the worker's own process is gone, which members of
	// its session and group count: those started within Span of it (the
	// run's timeout and grace; descendants of those count whenever they
	// started). A process that reused the worker's pid and led a session
	// of that number since could only have started later. 0: members
	// count only while the worker lives.
	Span time.Duration
}

// ticksPerSecond is the unit of /proc start times (USER_HZ, 100 on every
// Linux this runs on).
const ticksPerSecond = 100

// FindRun lists the live processes that provably belong to the run id
// describes, started no earlier than its worker (or Since):
//
//   - the members of the worker's session and process group, while the
//     worker's own process lives (same pid and start time, the marker in
//     its environment), and also once it is gone (killed with its
//     supervisor): a session's id is its leader's pid, so while no other
//     process has made that pid its own session or group, a member started
//     after the worker and within id.Span of it can only be of the
//     worker's session;
//   - every process whose environment holds the marker;
//   - every descendant of those.
//
// A process that left the worker's session and dropped the marker after
// its supervisor was gone is not found: nothing proves it is the run's.
// This process and its ancestors are never listed.
func FindRun(id Identity) ([]Proc, error) {
	procs, err := scanProcs()
	if err != nil {
		return nil, err
	}
	return findIn(procs, ancestors(procs), id, environs{}), nil
}

// environs caches the environments read during one look at /proc.
type environs map[int]map[string]bool

// has reports whether pid's initial environment holds the entry kv.
func (e environs) has(pid int, kv string) bool {
	if kv == "" {
		return false
	}
	m, ok := e[pid]
	if !ok {
		m = map[string]bool{}
		if data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ"); err == nil {
			for _, kv := range bytes.Split(data, []byte{0}) {
				m[string(kv)] = true
			}
		}
		e[pid] = m
	}
	return m[kv]
}

// sessionProvable reports whether the members of the session and group
// numbered id.Leader are provably the run's: the worker itself lives
// (same start time, the marker in its environment), or it is gone and no
// other process leads a session or group of that number.
func sessionProvable(procs map[int]procStat, id Identity, env environs) bool {
	if id.Leader <= 0 {
		return false
	}
	leader, ok := procs[id.Leader]
	switch {
	case leader.startTime == id.LeaderStart && !leader.dead():
		return env.has(id.Leader, id.Marker)
	case id.Span <= 0:
		return false
	case !ok || leader.startTime == id.LeaderStart:
		return true
	default:
		// The pid was reused: only a process that made it its own
		// session or group could have started members of that number.
		return leader.session != id.Leader && leader.pgrp != id.Leader
	}
}

// memberOf reports whether st is a member of the worker's session or group
// that counts (sessionProvable said members do): while the worker lives,
// any; once it is gone, those started within id.Span of it.
func memberOf(st procStat, id Identity, leaderAlive bool) bool {
	if st.session != id.Leader && st.pgrp != id.Leader {
		return false
	}
	return leaderAlive || st.startTime <= id.LeaderStart+uint64(id.Span/time.Second)*ticksPerSecond
}

// findIn is FindRun on one look at /proc; skip holds this process and its
// ancestors.
func findIn(procs map[int]procStat, skip map[int]bool, id Identity, env environs) []Proc {
	since := id.Since
	if id.Leader > 0 {
		since = id.LeaderStart
	}
	inSession := sessionProvable(procs, id, env)
	leader, ok := procs[id.Leader]
	leaderAlive := id.Leader > 0 && ok && leader.startTime == id.LeaderStart && !leader.dead()
	roots := map[int]bool{}
	for pid, st := range procs {
		if st.dead() || skip[pid] || st.startTime < since {
			continue
		}
		if inSession && memberOf(st, id, leaderAlive) || env.has(pid, id.Marker) {
			roots[pid] = true
		}
	}
	var out []Proc
	for pid, st := range procs {
		if st.dead() || skip[pid] || st.startTime < since {
			continue
		}
		if roots[pid] || underAny(procs, pid, roots) {
			out = append(out, procOf(pid, st))
		}
	}
	sortProcs(out)
	return out
}

// underAny reports whether an ancestor of pid is in set.
func underAny(procs map[int]procStat, pid int, set map[int]bool) bool {
	for depth := 0; depth < 4096; depth++ {
		st, ok := procs[pid]
		if !ok || st.ppid <= 0 {
			return false
		}
		if set[st.ppid] {
			return true
		}
		if parent, ok := procs[st.ppid]; !ok || parent.startTime > st.startTime {
			return false
		}
		pid = st.ppid
	}
	return false
}

// EndRun ends the processes FindRun lists for id, looking again for new
// ones until none is left: SIGTERM, up to grace, then SIGKILL. It returns
// the processes it ended; an error when some survived SIGKILL or /proc
// could not be read.
func EndRun(id Identity, grace time.Duration) ([]Proc, error) {
	var scanErr error
	find := func() []Proc {
		ps, err := FindRun(id)
		if err != nil {
			scanErr = err
		}
		return ps
	}
	ended, survivors := endAll(find, grace, nil)
	if scanErr != nil {
		return ended, fmt.Errorf("ending the run's processes: %w", scanErr)
	}
	if len(survivors) > 0 {
		return ended, fmt.Errorf("ending the run's processes: %s survived SIGKILL", survivors[0])
	}
	return ended, nil
}

// EndRuns ends what is left of several runs whose supervisors are gone,
// as EndRun does for one, with one look at /proc per round for all of
// them (whoever finds sessions lost sweeps them all at once). grace is
// how long SIGTERM may take before SIGKILL.
func EndRuns(ids []Identity, grace time.Duration) ([]Proc, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	var scanErr error
	find := func() []Proc {
		procs, err := scanProcs()
		if err != nil {
			scanErr = err
			return nil
		}
		env, skip := environs{}, ancestors(procs)
		seen := map[int]bool{}
		var out []Proc
		for _, id := range ids {
			for _, p := range findIn(procs, skip, id, env) {
				if !seen[p.Pid] {
					seen[p.Pid] = true
					out = append(out, p)
				}
			}
		}
		return out
	}
	ended, survivors := endAll(find, grace, nil)
	if scanErr != nil {
		return ended, fmt.Errorf("ending the processes of lost runs: %w", scanErr)
	}
	if len(survivors) > 0 {
		return ended, fmt.Errorf("ending the processes of lost runs: %s survived SIGKILL", survivors[0])
	}
	return ended, nil
}
