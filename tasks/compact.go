package tasks

import "strings"

// A board read whole keeps every task's strings for as long as it lives.
// The JSON decoder leaves each of them pointing into its own copy of the
// whole document (keys, indentation and all), so one title kept a
// four-hundred-byte document alive. compacter copies the strings of a
// batch of tasks into one shared string instead, and gives the values that
// repeat from task to task (types, priorities, authors, labels) one copy
// each.
type compacter struct {
	// interned maps a repeated value to its one copy.
	interned map[string]string
	buf      []byte
}

// maxInterned bounds how many distinct repeated values are kept: a board
// whose labels or authors are all different stops interning, not growing.
const maxInterned = 1 << 12

// maxInternLen bounds the length of a value worth interning.
const maxInternLen = 64

// compact re-homes the strings of ts: the repeated ones interned, the rest
// copied into one new string shared by the batch. The tasks read the same
// afterwards.
func (c *compacter) compact(ts []Task) {
	if c.interned == nil {
		c.interned = map[string]string{}
	}
	c.buf = c.buf[:0]
	for i := range ts {
		c.internRepeated(&ts[i])
		eachUnique(&ts[i], func(s *string) { c.buf = append(c.buf, *s...) })
	}
	all := string(c.buf)
	off := 0
	for i := range ts {
		eachUnique(&ts[i], func(s *string) {
			n := len(*s)
			*s = all[off : off+n]
			off += n
		})
	}
}

// intern points s at the kept copy of its value, keeping one when there
// is room; a value not kept gets a copy of its own.
func (c *compacter) intern(s *string) {
	if *s == "" {
		return
	}
	if v, ok := c.interned[*s]; ok {
		*s = v
		return
	}
	v := strings.Clone(*s) // its own copy, not the document's
	if len(v) <= maxInternLen && len(c.interned) < maxInterned {
		c.interned[v] = v
	}
	*s = v
}

// internRepeated interns the fields whose values repeat across a board.
func (c *compacter) internRepeated(t *Task) {
	for _, s := range []*string{&t.Type, &t.Priority, &t.Assignee, &t.Base, &t.Created.Author, &t.Updated.Author} {
		c.intern(s)
	}
	for _, f := range []*Fact{t.Cancelled, t.Reopened, t.Exhausted} {
		if f != nil {
			c.intern(&f.Author)
		}
	}
	for i := range t.Labels {
		c.intern(&t.Labels[i])
	}
}

// eachUnique calls f with every non-empty string field of t that
// internRepeated leaves alone, in a fixed order: the ones still pointing
// into the decoded document. The id is not one of them: Load sets it from
// the ref.
func eachUnique(t *Task, f func(*string)) {
	own := func(s *string) {
		if len(*s) > 0 {
			f(s)
		}
	}
	for _, s := range []*string{&t.Title, &t.Description, &t.Parent} {
		own(s)
	}
	for _, list := range [][]string{t.BlockedBy, t.DoD, t.Acceptance, t.Paths} {
		for i := range list {
			own(&list[i])
		}
	}
	for _, f := range []*Fact{t.Cancelled, t.Reopened, t.Exhausted} {
		if f != nil {
			own(&f.Reason)
		}
	}
}
