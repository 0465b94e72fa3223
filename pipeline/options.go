package pipeline

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/git-agentmine/git-agentmine/exitcode"
	"github.com/git-agentmine/git-agentmine/sessions"
	"github.com/git-agentmine/git-agentmine/tasks"
)

// DefaultMaxLoops is how many attempts a task gets when --max-loops is not
// given.
const DefaultMaxLoops = 3

// Options are the choices of `run`.
type Options struct {
	// Name names the run (DefaultName when empty).
	Name string
	// Targets are task id prefixes: those tasks and their descendants.
	// None means every task that is not done or cancelled.
	Targets []string
	// Parallel is the most workers running at once (at least 1).
	Parallel int
	// MaxLoops is the most attempts per task (at least 1).
	MaxLoops int
	// Plan makes the named targets goals: each one without children is
	// handed to the planner before any worker (docs/loop.md says which
	// targets are goals without it).
	Plan bool
	// ReplanAfter is how many failed attempts of a task in a row (since
	// its last replan) make the run ask the planner before the next one;
	// 0 never does.
	ReplanAfter int
	// Review has a reviewer judge every session that passed its facts.
	Review bool
	// Merge lands passing sessions through the gated merge.
	Merge bool
	// Deadline, if positive, bounds the whole run.
	Deadline time.Duration
	// Budget is "" (none), a token count, or "$N" (cost in dollars).
	Budget string
	// BestOf starts that many attempts of each task at once and merges
	// one that passed (bestof.go); 0 is one, or len(Agents) when given.
	BestOf int
	// Agents are the agents of a round's attempts, in turn (none: each
	// task's own agent).
	Agents []string
	// Supervisor returns the command line of the detached supervisor of a
	// worker session (`worker supervise <id>`, as `worker run --exec
	// --detach` starts it).
	Supervisor func(session string) []string
	// Events receives every event as it happens (nil: none).
	Events func(Event)
	// Warn receives, once per run, the first warning a start gave (a claim
	// remote that could not be reached: the run goes on locally); every
	// one is in the run log. nil: none.
	Warn func(string)
	// Backoff is the first delay before a start is retried after an
	// infrastructure failure; it doubles each time (default 1s).
	Backoff time.Duration
	// RateLimitBackoff is the first pause of a client a limit refused
	// without saying when it resets (DefaultRateLimitBackoff when zero).
	RateLimitBackoff time.Duration
	// Poll is the longest the loop sleeps without looking (default
	// DefaultPoll). The end of a worker this run started wakes it at once;
	// the poll only catches what no process of this run signals: sessions
	// of adopted workers or of other clones, and a run stop.
	Poll time.Duration
}

// DefaultPoll is Options.Poll when none is given.
const DefaultPoll = 2 * time.Second

// Budget is a parsed --budget.
type Budget struct {
	Tokens int64
	Cost   float64
}

// ParseBudget reads "", a whole number of tokens, or "$N" dollars.
func ParseBudget(s string) (Budget, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Budget{}, nil
	}
	if c, ok := strings.CutPrefix(s, "$"); ok {
		f, err := strconv.ParseFloat(c, 64)
		if err != nil || f <= 0 {
			return Budget{}, exitcode.New(exitcode.Usage, fmt.Errorf("invalid --budget %q: want a token count or $N, more than 0", s), "")
		}
		return Budget{Cost: f}, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return Budget{}, exitcode.New(exitcode.Usage, fmt.Errorf("invalid --budget %q: want a token count or $N, more than 0", s), "")
	}
	return Budget{Tokens: n}, nil
}

// Exceeded says whether usage u passed the budget, and how far it got.
func (b Budget) Exceeded(u sessions.Usage) (bool, string) {
	tokens := u.InputTokens + u.OutputTokens
	switch {
	case b.Tokens > 0 && tokens >= b.Tokens:
		return true, fmt.Sprintf("budget used: %d of %d tokens", tokens, b.Tokens)
	case b.Cost > 0 && u.CostUSD >= b.Cost:
		return true, fmt.Sprintf("budget used: $%.4f of $%.2f", u.CostUSD, b.Cost)
	}
	return false, ""
}

// Validate checks the options before anything is read or written.
func (o *Options) Validate() error {
	if o.Name == "" {
		o.Name = DefaultName
	}
	if err := ValidateName(o.Name); err != nil {
		return err
	}
	if o.Parallel < 1 {
		return exitcode.New(exitcode.Usage, fmt.Errorf("invalid --parallel %d: want at least 1", o.Parallel), "")
	}
	if o.MaxLoops < 1 {
		return exitcode.New(exitcode.Usage, fmt.Errorf("invalid --max-loops %d: want at least 1", o.MaxLoops), "")
	}
	if o.ReplanAfter < 0 {
		return exitcode.New(exitcode.Usage, fmt.Errorf("invalid --replan-after %d: want 0 (never) or more", o.ReplanAfter), "")
	}
	if o.Plan && len(o.Targets) == 0 {
		return exitcode.New(exitcode.Usage, errors.New("run --plan needs the tasks to plan"), "name them after --plan")
	}
	if o.Deadline < 0 {
		return exitcode.New(exitcode.Usage, fmt.Errorf("invalid --deadline %s: want a positive duration", o.Deadline), "")
	}
	if _, err := ParseBudget(o.Budget); err != nil {
		return err
	}
	if o.BestOf == 0 && len(o.Agents) > 0 {
		o.BestOf = len(o.Agents)
	}
	if o.BestOf < 0 || o.BestOf > tasks.MaxBestOf {
		return exitcode.New(exitcode.Usage, fmt.Errorf("invalid --best-of %d: want 1 to %d", o.BestOf, tasks.MaxBestOf), "")
	}
	// A round runs its K attempts at once: it takes K slots.
	o.Parallel = max(o.Parallel, o.BestOf)
	if o.Supervisor == nil {
		return errors.New("run: no supervisor command for worker sessions")
	}
	if o.Backoff <= 0 {
		o.Backoff = time.Second
	}
	if o.Poll <= 0 {
		o.Poll = DefaultPoll
	}
	return nil
}
