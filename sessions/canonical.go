package sessions

import "github.com/git-agentmine/git-agentmine/internal/jsonscan"

// DecodeCanonical decodes a session document in the canonical form Encode
// writes (exact keys, each once) without the reflective decoder's first-use
// cost; it reports false for anything else, which gitstore.Decode then
// reads with that decoder.
func (s *Session) DecodeCanonical(data []byte) bool {
	sc := jsonscan.New(data)
	sc.Object(func(key string) { s.scanField(sc, key) })
	return sc.OK()
}

func (s *Session) scanField(sc *jsonscan.Scanner, key string) {
	if s.scanString(sc, key) {
		return
	}
	switch key {
	case "v":
		sc.Int(&s.V)
	case "command":
		sc.Strings(&s.Command)
	case "command_env":
		sc.Strings(&s.CommandEnv)
	case "pid":
		sc.Int(&s.Pid)
	case "pid_start":
		sc.Uint64(&s.PidStart)
	case "timeout":
		sc.Int(&s.Timeout)
	case "stall_timeout":
		sc.Int(&s.StallTimeout)
	case "grace":
		sc.Int(&s.Grace)
	case "started":
		sc.Time(&s.Started)
	case "scope":
		s.Scope.scan(sc)
	case "sparse":
		sc.Strings(&s.Sparse)
	case "generated":
		sc.Strings(&s.Generated)
	case "generated_blobs":
		sc.StringMap(&s.GeneratedBlobs)
	case "dod":
		sc.Strings(&s.DoD)
	case "dod_timeout":
		sc.Int(&s.DoDTimeout)
	case "skip_dod":
		sc.Bool(&s.SkipDoD)
	case "strict":
		sc.Bool(&s.Strict)
	case "seal":
		scanPtr(sc, &s.Seal, (*Seal).scan)
	case "worker_pid":
		sc.Int(&s.WorkerPid)
	case "worker_start":
		sc.Uint64(&s.WorkerStart)
	case "isolation":
		scanPtr(sc, &s.Isolation, (*Isolation).scan)
	case "setup":
		scanPtr(sc, &s.Setup, (*Setup).scan)
	default:
		sc.Fail()
	}
}

// scanString reads the session's string fields; false when key is none.
func (s *Session) scanString(sc *jsonscan.Scanner, key string) bool {
	var dst *string
	switch key {
	case "id":
		dst = &s.ID
	case "task":
		dst = &s.Task
	case "agent":
		dst = &s.Agent
	case "client":
		dst = &s.Client
	case "client_version":
		dst = &s.ClientVersion
	case "command_stdin":
		dst = &s.CommandStdin
	case "mode":
		dst = &s.Mode
	case "branch":
		dst = &s.Branch
	case "base_ref":
		dst = &s.BaseRef
	case "base_commit":
		dst = &s.BaseCommit
	case "worktree":
		dst = &s.Worktree
	case "host":
		dst = &s.Host
	case "log":
		dst = &s.Log
	case "claim_remote":
		dst = &s.ClaimRemote
	case "repo":
		dst = &s.Repo
	case "role":
		dst = &s.Role
	case "reviews":
		dst = &s.Reviews
	default:
		return false
	}
	sc.String(dst)
	return true
}

// scanPtr reads an object into a new *T with scan; null sets nil.
func scanPtr[T any](sc *jsonscan.Scanner, dst **T, scan func(*T, *jsonscan.Scanner)) {
	if sc.Null() {
		*dst = nil
		return
	}
	v := new(T)
	scan(v, sc)
	*dst = v
}

func (s *Scope) scan(sc *jsonscan.Scanner) {
	sc.Object(func(key string) {
		switch key {
		case "read":
			sc.Strings(&s.Read)
		case "write":
			sc.Strings(&s.Write)
		case "exclude":
			sc.Strings(&s.Exclude)
		default:
			sc.Fail()
		}
	})
}

func (s *Seal) scan(sc *jsonscan.Scanner) {
	sc.Object(func(key string) {
		switch key {
		case "sha256":
			sc.String(&s.SHA256)
		case "host":
			sc.String(&s.Host)
		case "pid":
			sc.Int(&s.Pid)
		case "pid_start":
			sc.Uint64(&s.PidStart)
		default:
			sc.Fail()
		}
	})
}

func (s *Isolation) scan(sc *jsonscan.Scanner) {
	sc.Object(func(key string) {
		switch key {
		case "requested":
			sc.String(&s.Requested)
		case "level":
			sc.String(&s.Level)
		case "network":
			sc.Bool(&s.Network)
		case "note":
			sc.String(&s.Note)
		default:
			sc.Fail()
		}
	})
}

func (s *Setup) scan(sc *jsonscan.Scanner) {
	sc.Object(func(key string) {
		switch key {
		case "commands":
			sc.Strings(&s.Commands)
		case "timeout":
			sc.Int(&s.Timeout)
		case "include":
			sc.Strings(&s.Include)
		case "share":
			sc.Strings(&s.Share)
		case "prepared":
			sc.Strings(&s.Prepared)
		default:
			sc.Fail()
		}
	})
}

// decodeCanonical decodes an outcome line in the canonical form the
// recorders write (exact keys, each once); false for anything else,
// which ParseLine then reads with the reflective decoder.
func (o *Outcome) decodeCanonical(data []byte) bool {
	sc := jsonscan.New(data)
	sc.Object(func(key string) { o.scanField(sc, key) })
	return sc.OK()
}

func (o *Outcome) scanField(sc *jsonscan.Scanner, key string) {
	switch key {
	case "v":
		sc.Int(&o.V)
	case "session":
		sc.String(&o.Session)
	case "exit_code":
		sc.Int(&o.ExitCode)
	case "signal":
		sc.String(&o.Signal)
	case "timed_out":
		sc.Bool(&o.TimedOut)
	case "finished":
		sc.Time(&o.Finished)
	case "tip":
		sc.String(&o.Tip)
	case "reason":
		sc.String(&o.Reason)
	case "artifacts":
		sc.Strings(&o.Artifacts)
	case "claimed_artifacts":
		sc.Strings(&o.Claimed)
	case "recorded_by":
		sc.String(&o.By)
	case "scope_valid":
		sc.BoolPtr(&o.ScopeValid)
	case "dod_status":
		sc.String(&o.DoDStatus)
	case "scope":
		sc.Raw(&o.Scope)
	case "dod":
		sc.Raw(&o.DoD)
	case "commits":
		sc.Int(&o.Commits)
	case "usage":
		scanPtr(sc, &o.Usage, (*Usage).scan)
	case "rate_limited":
		scanPtr(sc, &o.RateLimit, (*RateLimit).scan)
	case "supervisor":
		scanPtr(sc, &o.Supervisor, (*Supervisor).scan)
	default:
		sc.Fail()
	}
}

func (u *Usage) scan(sc *jsonscan.Scanner) {
	sc.Object(func(key string) {
		switch key {
		case "input_tokens":
			sc.Int64(&u.InputTokens)
		case "output_tokens":
			sc.Int64(&u.OutputTokens)
		case "cache_read_tokens":
			sc.Int64(&u.CacheReadTokens)
		case "cache_write_tokens":
			sc.Int64(&u.CacheWriteTokens)
		case "cost_usd":
			sc.Float64(&u.CostUSD)
		default:
			sc.Fail()
		}
	})
}

func (r *RateLimit) scan(sc *jsonscan.Scanner) {
	sc.Object(func(key string) {
		switch key {
		case "until":
			sc.TimePtr(&r.Until)
		default:
			sc.Fail()
		}
	})
}

func (s *Supervisor) scan(sc *jsonscan.Scanner) {
	sc.Object(func(key string) {
		switch key {
		case "host":
			sc.String(&s.Host)
		case "pid":
			sc.Int(&s.Pid)
		case "pid_start":
			sc.Uint64(&s.PidStart)
		case "nonce":
			sc.String(&s.Nonce)
		case "review_key":
			sc.String(&s.ReviewKey)
		default:
			sc.Fail()
		}
	})
}
