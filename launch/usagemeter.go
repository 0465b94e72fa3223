package launch

import "bytes"

// usageMeter reads the usage a client reports in its output while the
// output streams, so that no report is lost to the log's rotation or to
// the tail a reader of the log reads: opencode reports each model request
// in a step_finish event, and a long run's events can fill megabytes.
type usageMeter struct {
	client  Client
	hint    []byte // what every usage report line holds
	partial []byte // the unfinished last line
	long    bool   // the current line is too long to hold a report
	summed  Usage
	last    Usage
	ok      bool
}

// maxUsageLine bounds the line a usage report is looked for in; longer
// lines (a tool's output) are skipped.
const maxUsageLine = 4 << 20

// newUsageMeter returns a meter for client c, or nil when c reports no
// usage ReadUsage reads.
func newUsageMeter(c Client) *usageMeter {
	hint := map[Client]string{ClaudeCode: `"result"`, Codex: `"turn.completed"`, Gemini: `"result"`, OpenCode: `"step_finish"`,
		Custom: `"agentmine"`}[c]
	if hint == "" {
		return nil
	}
	return &usageMeter{client: c, hint: []byte(hint)}
}

// write takes the next bytes of output.
func (m *usageMeter) write(b []byte) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			if !m.long {
				m.partial = append(m.partial, b...)
				if len(m.partial) > maxUsageLine {
					m.partial, m.long = m.partial[:0], true
				}
			}
			return
		}
		if !m.long {
			m.line(append(m.partial, b[:i]...))
		}
		m.partial, m.long = m.partial[:0], false
		b = b[i+1:]
	}
}

// line reads one whole line: the reports of clients that report each
// request (Codex's turn.completed, opencode's step_finish, a custom
// client's usage lines) are summed; for
// those that report the run's total at the end (Claude Code's and
// Gemini's result events) the last report counts.
func (m *usageMeter) line(l []byte) {
	if !bytes.Contains(l, m.hint) {
		return
	}
	u, ok := ReadUsage(m.client, l)
	if !ok {
		return
	}
	m.ok = true
	switch m.client {
	case Codex, OpenCode, Custom:
		m.summed = m.summed.add(u)
	default:
		m.last = u
	}
}

// usage returns what the output reported, once it has ended (an
// unfinished last line is read too); nil when it reported nothing.
func (m *usageMeter) usage() *Usage {
	if m == nil {
		return nil
	}
	if len(m.partial) > 0 && !m.long {
		m.line(m.partial)
		m.partial = nil
	}
	if !m.ok {
		return nil
	}
	u := m.last
	if m.client == Codex || m.client == OpenCode || m.client == Custom {
		u = m.summed
	}
	return &u
}

// add returns the sum of two usages.
func (u Usage) add(v Usage) Usage {
	return Usage{InputTokens: u.InputTokens + v.InputTokens, OutputTokens: u.OutputTokens + v.OutputTokens,
		CacheReadTokens: u.CacheReadTokens + v.CacheReadTokens, CacheWriteTokens: u.CacheWriteTokens + v.CacheWriteTokens,
		CostUSD: u.CostUSD + v.CostUSD}
}
