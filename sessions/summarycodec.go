package sessions

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"time"
)

// A cached summary (summary.go) is read back for every session each time
// the board is read, so it is stored in a compact binary form rather than
// as JSON: decoding 30,000 JSON summaries was most of the board's cost.
// The form is the fields of Record.Summary in a fixed order: strings and
// byte strings as a uvarint length and the bytes, integers as varints,
// booleans as one byte, times as seconds, nanoseconds and zone offset, an
// optional part as a presence byte and the part. Rare parts (forged lines,
// reviews) are JSON inside it. Decoded strings share the cache's one
// string: nothing is copied per field.
//
// summaryFormat opens every encoded summary: an entry in any other form
// (an older cache's JSON, a foreign or damaged entry) does not decode, and
// its session is read from git again.
const summaryFormat = 0xA4

// errSummary is why an encoded summary does not decode.
var errSummary = errors.New("malformed cached summary")

// summaryEncoder appends a summary's fields to b.
type summaryEncoder struct{ b []byte }

func (e *summaryEncoder) str(s string) {
	e.b = binary.AppendUvarint(e.b, uint64(len(s)))
	e.b = append(e.b, s...)
}

func (e *summaryEncoder) bytes(s []byte) {
	if s == nil {
		e.b = append(e.b, 0)
		return
	}
	e.b = append(e.b, 1)
	e.b = binary.AppendUvarint(e.b, uint64(len(s)))
	e.b = append(e.b, s...)
}

func (e *summaryEncoder) int(n int64)   { e.b = binary.AppendVarint(e.b, n) }
func (e *summaryEncoder) uint(n uint64) { e.b = binary.AppendUvarint(e.b, n) }

func (e *summaryEncoder) bool(v bool) {
	if v {
		e.b = append(e.b, 1)
	} else {
		e.b = append(e.b, 0)
	}
}

// time stores the instant and the zone offset: decoding gives the time a
// JSON round trip gives (UTC, Local when the offset is Local's, else a
// fixed zone), so that printed times do not change.
func (e *summaryEncoder) time(t time.Time) {
	_, off := t.Zone()
	if t.Location() == time.UTC {
		off = math.MinInt32 // UTC itself, not merely offset 0
	}
	e.int(t.Unix())
	e.uint(uint64(t.Nanosecond()))
	e.int(int64(off))
}

// json stores v as JSON, or nothing when absent is true.
func (e *summaryEncoder) json(v any, absent bool) error {
	if absent {
		e.bytes(nil)
		return nil
	}
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	e.bytes(data)
	return nil
}

// encodeSummary renders r (a Record.Summary) in the cached form; r.Commit
// is not part of it (the cache keys each entry by it).
func encodeSummary(r Record) ([]byte, error) {
	e := &summaryEncoder{b: make([]byte, 0, 512)}
	e.b = append(e.b, summaryFormat)
	s := r.Session
	e.int(int64(s.V))
	// the id is the entry's own (the cache keys entries by it)
	for _, f := range []string{s.Task, s.Agent, s.Client, s.ClientVersion, s.Mode, s.Branch, s.BaseRef,
		s.BaseCommit, s.Worktree, s.Host} {
		e.str(f)
	}
	e.int(int64(s.Pid))
	e.uint(s.PidStart)
	e.int(int64(s.Timeout))
	e.int(int64(s.StallTimeout))
	e.int(int64(s.Grace))
	e.time(s.Started)
	e.bool(s.SkipDoD)
	e.bool(s.Strict)
	for _, f := range []string{s.Log, s.ClaimRemote, s.Repo} {
		e.str(f)
	}
	e.bool(s.Seal != nil)
	if s.Seal != nil {
		e.str(s.Seal.SHA256)
		e.str(s.Seal.Host)
		e.int(int64(s.Seal.Pid))
		e.uint(s.Seal.PidStart)
	}
	e.int(int64(s.WorkerPid))
	e.uint(s.WorkerStart)
	e.bool(s.Isolation != nil)
	if s.Isolation != nil {
		e.str(s.Isolation.Requested)
		e.str(s.Isolation.Level)
		e.bool(s.Isolation.Network)
		e.str(s.Isolation.Note)
	}
	e.str(s.Role)
	e.str(s.Reviews)
	e.str(r.Root)
	e.bool(r.Outcome != nil)
	if o := r.Outcome; o != nil {
		e.int(int64(o.V))
		// an outcome line names its own session: stored only if not
		e.bool(o.Session != s.ID)
		if o.Session != s.ID {
			e.str(o.Session)
		}
		e.int(int64(o.ExitCode))
		e.str(o.Signal)
		e.bool(o.TimedOut)
		e.time(o.Finished)
		e.str(o.Tip)
		e.str(o.Reason)
		e.str(o.By)
		switch {
		case o.ScopeValid == nil:
			e.b = append(e.b, 0)
		case *o.ScopeValid:
			e.b = append(e.b, 2)
		default:
			e.b = append(e.b, 1)
		}
		e.str(o.DoDStatus)
		e.bytes(o.Scope)
		e.bytes(o.DoD)
		e.int(int64(o.Commits))
		e.bool(o.Usage != nil)
		if u := o.Usage; u != nil {
			e.int(u.InputTokens)
			e.int(u.OutputTokens)
			e.int(u.CacheReadTokens)
			e.int(u.CacheWriteTokens)
			e.uint(math.Float64bits(u.CostUSD))
		}
		e.bool(o.RateLimit != nil)
		if rl := o.RateLimit; rl != nil {
			e.bool(rl.Until != nil)
			if rl.Until != nil {
				e.time(*rl.Until)
			}
		}
		e.bool(o.Supervisor != nil)
		if p := o.Supervisor; p != nil {
			e.str(p.Host)
			e.int(int64(p.Pid))
			e.uint(p.PidStart)
			e.str(p.Nonce)
			e.str(p.ReviewKey)
		}
	}
	if err := e.json(r.Forged, r.Forged == nil); err != nil {
		return nil, err
	}
	if err := e.json(r.Review, r.Review == nil); err != nil {
		return nil, err
	}
	if err := e.json(r.ForgedReviews, r.ForgedReviews == nil); err != nil {
		return nil, err
	}
	return e.b, nil
}

// summaryDecoder reads a summary's fields from s; the first field that
// does not read sets bad, and every later read gives zero values.
type summaryDecoder struct {
	s   string
	bad bool
}

func (d *summaryDecoder) uint() uint64 {
	var x uint64
	for shift := 0; shift < 64; shift += 7 {
		if len(d.s) == 0 {
			break
		}
		c := d.s[0]
		d.s = d.s[1:]
		x |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return x
		}
	}
	d.bad = true
	d.s = ""
	return 0
}

func (d *summaryDecoder) int() int64 {
	u := d.uint()
	x := int64(u >> 1)
	if u&1 != 0 {
		x = ^x
	}
	return x
}

func (d *summaryDecoder) str() string {
	n := d.uint()
	if n > uint64(len(d.s)) {
		d.bad = true
		d.s = ""
		return ""
	}
	v := d.s[:n]
	d.s = d.s[n:]
	return v
}

func (d *summaryDecoder) byte() byte {
	if len(d.s) == 0 {
		d.bad = true
		return 0
	}
	c := d.s[0]
	d.s = d.s[1:]
	return c
}

func (d *summaryDecoder) bool() bool {
	switch d.byte() {
	case 0:
		return false
	case 1:
		return true
	}
	d.bad = true
	return false
}

func (d *summaryDecoder) bytes() []byte {
	if !d.bool() {
		return nil
	}
	return []byte(d.str())
}

func (d *summaryDecoder) time() time.Time {
	sec, nsec, off := d.int(), d.uint(), d.int()
	if d.bad || nsec >= 1e9 {
		d.bad = true
		return time.Time{}
	}
	t := time.Unix(sec, int64(nsec))
	switch {
	case off == math.MinInt32:
		return t.UTC()
	case off < -24*3600 || off > 24*3600:
		d.bad = true
		return time.Time{}
	}
	if _, local := t.In(time.Local).Zone(); int64(local) == off {
		return t.In(time.Local)
	}
	return t.In(time.FixedZone("", int(off)))
}

// json decodes an optional JSON part into v.
func (d *summaryDecoder) json(v any) {
	if data := d.bytes(); data != nil && !d.bad {
		if err := json.Unmarshal(data, v); err != nil {
			d.bad = true
		}
	}
}

// decodeSummary reads an encoded summary (encodeSummary) of the session
// id (the cache entry's id, checked against its ref) into r, whose Commit
// the caller sets. Strings in r share data.
func decodeSummary(data, id string, r *Record) error {
	if len(data) == 0 || data[0] != summaryFormat {
		return errSummary
	}
	d := &summaryDecoder{s: data[1:]}
	s := &r.Session
	s.V = int(d.int())
	s.ID = id
	for _, f := range []*string{&s.Task, &s.Agent, &s.Client, &s.ClientVersion, &s.Mode, &s.Branch, &s.BaseRef,
		&s.BaseCommit, &s.Worktree, &s.Host} {
		*f = d.str()
	}
	s.Pid = int(d.int())
	s.PidStart = d.uint()
	s.Timeout = int(d.int())
	s.StallTimeout = int(d.int())
	s.Grace = int(d.int())
	s.Started = d.time()
	s.SkipDoD = d.bool()
	s.Strict = d.bool()
	for _, f := range []*string{&s.Log, &s.ClaimRemote, &s.Repo} {
		*f = d.str()
	}
	if d.bool() {
		s.Seal = &Seal{SHA256: d.str(), Host: d.str(), Pid: int(d.int()), PidStart: d.uint()}
	}
	s.WorkerPid = int(d.int())
	s.WorkerStart = d.uint()
	if d.bool() {
		s.Isolation = &Isolation{Requested: d.str(), Level: d.str(), Network: d.bool(), Note: d.str()}
	}
	s.Role = d.str()
	s.Reviews = d.str()
	r.Root = d.str()
	if d.bool() {
		o := &Outcome{}
		o.V = int(d.int())
		o.Session = id
		if d.bool() {
			o.Session = d.str()
		}
		o.ExitCode = int(d.int())
		o.Signal = d.str()
		o.TimedOut = d.bool()
		o.Finished = d.time()
		o.Tip = d.str()
		o.Reason = d.str()
		o.By = d.str()
		switch d.byte() {
		case 0:
		case 1:
			o.ScopeValid = new(bool)
		case 2:
			valid := true
			o.ScopeValid = &valid
		default:
			d.bad = true
		}
		o.DoDStatus = d.str()
		o.Scope = d.bytes()
		o.DoD = d.bytes()
		o.Commits = int(d.int())
		if d.bool() {
			o.Usage = &Usage{InputTokens: d.int(), OutputTokens: d.int(), CacheReadTokens: d.int(), CacheWriteTokens: d.int(),
				CostUSD: math.Float64frombits(d.uint())}
		}
		if d.bool() {
			o.RateLimit = &RateLimit{}
			if d.bool() {
				t := d.time()
				o.RateLimit.Until = &t
			}
		}
		if d.bool() {
			o.Supervisor = &Supervisor{Host: d.str(), Pid: int(d.int()), PidStart: d.uint(), Nonce: d.str(), ReviewKey: d.str()}
		}
		r.Outcome = o
	}
	d.json(&r.Forged)
	d.json(&r.Review)
	d.json(&r.ForgedReviews)
	if d.bad || len(d.s) != 0 {
		return errSummary
	}
	return nil
}
