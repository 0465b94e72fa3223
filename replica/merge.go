package replica

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/git-agentmine/git-agentmine/internal/jsonscan"
)

// MergeRules say how concurrent versions of one kind's documents merge.
type MergeRules struct {
	// SetFields names the top-level array fields merged as sets: an element
	// added on either side is kept, an element removed on either side (and
	// still present, untouched, on the other) is removed.
	SetFields []string
	// MaxVersion is the newest schema version (the "v" field) this binary
	// understands; documents with a higher "v" are refused. Zero means 1.
	MaxVersion int
	// Unreported names bookkeeping fields that change with every edit (such
	// as "updated"): a conflict on them resolves like any other field but is
	// not reported as a conflict.
	Unreported []string
}

// DefaultMergeRules returns the rules used for kinds that name none: the
// set-like fields "labels", "blocked_by" and "tags", schema version 1, and
// "updated" resolved without being reported.
func DefaultMergeRules() MergeRules {
	return MergeRules{SetFields: []string{"labels", "blocked_by", "tags"}, MaxVersion: 1, Unreported: []string{"updated"}}
}

func (r MergeRules) maxVersion() int {
	if r.MaxVersion <= 0 {
		return 1
	}
	return r.MaxVersion
}

// jsonDoc is a parsed entity document: its top-level fields in their original
// order with compacted raw values, and the layout it was written with.
type jsonDoc struct {
	keys    []string
	vals    map[string]json.RawMessage
	indent  string // "" for compact documents
	newline bool   // whether the document ended with a newline
}

// parseDoc parses a JSON object document, keeping field order and exact
// value bytes (numbers are never converted through float64).
func parseDoc(data []byte) (*jsonDoc, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	t, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("corrupt JSON: %w", err)
	}
	if d, ok := t.(json.Delim); !ok || d != '{' {
		return nil, errors.New("corrupt JSON: not an object")
	}
	d := &jsonDoc{vals: map[string]json.RawMessage{}}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("corrupt JSON: %w", err)
		}
		k, ok := t.(string)
		if !ok {
			return nil, errors.New("corrupt JSON: bad object key")
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, fmt.Errorf("corrupt JSON: %w", err)
		}
		var c bytes.Buffer
		if err := json.Compact(&c, raw); err != nil {
			return nil, fmt.Errorf("corrupt JSON: %w", err)
		}
		if _, dup := d.vals[k]; !dup {
			d.keys = append(d.keys, k)
		}
		d.vals[k] = c.Bytes()
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("corrupt JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("corrupt JSON: trailing data after the object")
	}
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if len(trimmed) > 1 && trimmed[1] == '\n' {
		rest := trimmed[2:]
		n := 0
		for n < len(rest) && (rest[n] == ' ' || rest[n] == '\t') {
			n++
		}
		d.indent = string(rest[:n])
		if d.indent == "" {
			d.indent = "  "
		}
	}
	d.newline = bytes.HasSuffix(data, []byte("\n"))
	return d, nil
}

// version returns the document's schema version, the "v" field.
func (d *jsonDoc) version() (int, error) {
	raw, ok := d.vals["v"]
	if !ok {
		return 0, errors.New("no schema version (field \"v\")")
	}
	var v int
	if err := json.Unmarshal(raw, &v); err != nil {
		return 0, fmt.Errorf("schema version (field \"v\") is %s, not an integer", raw)
	}
	return v, nil
}

// checkDoc parses data and checks its schema version against the rules.
func checkDoc(data []byte, rules MergeRules) (*jsonDoc, error) {
	d, err := parseDoc(data)
	if err != nil {
		return nil, err
	}
	v, err := d.version()
	if err != nil {
		return nil, err
	}
	if v > rules.maxVersion() {
		return nil, fmt.Errorf("schema version %d is newer than this git-agentmine understands (%d): upgrade git-agentmine", v, rules.maxVersion())
	}
	return d, nil
}

// checkTip checks a document a fast-forward or a new entity takes as it
// is: what checkDoc accepts, without building the parsed document. Valid
// JSON whose top-level "v" is a plain integer within the rules is
// accepted from one scan of the bytes; anything else (an escaped key, a
// version written otherwise, an error) is left to checkDoc, whose verdict
// and words stand.
func checkTip(data []byte, rules MergeRules) error {
	if v, ok := plainVersion(data); ok && v <= rules.maxVersion() {
		return nil
	}
	_, err := checkDoc(data, rules)
	return err
}

// plainVersion returns the value of the top-level "v" field of a JSON
// object (valid UTF-8) when it is written as at most nine decimal digits
// and jsonscan reads the object (no key twice, none with an escape); ok is
// false otherwise.
func plainVersion(data []byte) (v int, ok bool) {
	if !utf8.Valid(data) {
		return 0, false
	}
	sc := jsonscan.New(data)
	var lit json.RawMessage
	sc.Object(func(key string) {
		if key == "v" {
			sc.Raw(&lit)
		} else {
			sc.Skip()
		}
	})
	if !sc.OK() || len(lit) == 0 || len(lit) > 9 {
		return 0, false
	}
	for _, c := range lit {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int(c-'0')
	}
	return v, true
}

// encode writes the fields keys (in that order) of vals in the layout of d.
func (d *jsonDoc) encode(keys []string, vals map[string]json.RawMessage) []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		b.Write(vals[k])
	}
	b.WriteByte('}')
	out := b.Bytes()
	if d.indent != "" {
		var ib bytes.Buffer
		if err := json.Indent(&ib, out, "", d.indent); err == nil {
			out = ib.Bytes()
		}
	}
	if d.newline {
		out = append(out, '\n')
	}
	return out
}

// side is one of the two versions being merged: its tip commit, the tip's
// committer time and a way to learn when a field last changed on this side.
type side struct {
	doc    *jsonDoc
	commit string
	time   int64
	// changed returns the committer time and id of the commit on this side
	// (since the merge base) that last gave field its current value.
	changed func(field string) (int64, string)
}

// later reports whether (t1, c1) is later than (t2, c2): committer time
// first, then the commit id as the tie-breaker.
func later(t1 int64, c1 string, t2 int64, c2 string) bool {
	if t1 != t2 {
		return t1 > t2
	}
	return c1 > c2
}

// fieldConflict is one field changed differently on both sides.
type fieldConflict struct {
	field            string
	unreported       bool
	a, b             json.RawMessage // nil when the side removed the field
	aWins            bool
	aTime, bTime     int64
	aCommit, bCommit string
}

// mergeDocs merges a and b field by field against base (which may be nil
// for unrelated histories). It is symmetric: mergeDocs(base, a, b) and
// mergeDocs(base, b, a) produce the same bytes, so every clone computes the
// same merged document.
func mergeDocs(base *jsonDoc, a, b side, rules MergeRules) ([]byte, []fieldConflict) {
	if base == nil {
		base = &jsonDoc{vals: map[string]json.RawMessage{}}
	}
	// The primary side gives the layout and the field order.
	prim, sec := a, b
	if later(b.time, b.commit, a.time, a.commit) {
		prim, sec = b, a
	}
	var keys []string
	seen := map[string]bool{}
	for _, d := range []*jsonDoc{prim.doc, sec.doc} {
		for _, k := range d.keys {
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	// Fields removed on both sides or on one side are handled below too.
	for _, k := range base.keys {
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	out := map[string]json.RawMessage{}
	var outKeys []string
	var conflicts []fieldConflict
	for _, k := range keys {
		bv, bok := base.vals[k]
		av, aok := a.doc.vals[k]
		cv, cok := b.doc.vals[k]
		same := func(x json.RawMessage, xok bool, y json.RawMessage, yok bool) bool {
			return xok == yok && bytes.Equal(x, y)
		}
		var v json.RawMessage
		var ok bool
		switch {
		case same(av, aok, cv, cok):
			v, ok = av, aok
		case same(av, aok, bv, bok):
			v, ok = cv, cok
		case same(cv, cok, bv, bok):
			v, ok = av, aok
		default:
			if slices.Contains(rules.SetFields, k) {
				if m, merged := mergeSet(bv, prim.doc.vals[k], sec.doc.vals[k]); merged {
					v, ok = m, true
					break
				}
			}
			at, ac := a.changed(k)
			bt, bc := b.changed(k)
			c := fieldConflict{field: k, unreported: slices.Contains(rules.Unreported, k), aTime: at, bTime: bt, aCommit: ac, bCommit: bc, aWins: later(at, ac, bt, bc)}
			if aok {
				c.a = av
			}
			if cok {
				c.b = cv
			}
			conflicts = append(conflicts, c)
			if c.aWins {
				v, ok = av, aok
			} else {
				v, ok = cv, cok
			}
		}
		if ok {
			out[k] = v
			outKeys = append(outKeys, k)
		}
	}
	return prim.doc.encode(outKeys, out), conflicts
}

// mergeSet merges two versions of an array field as sets against base. An
// element is kept when both sides have it, or when one side added it (it is
// not in base). Order: the primary side's elements, then the secondary's new
// ones. It reports false when a value is not an array (or null/absent).
func mergeSet(base, prim, sec json.RawMessage) (json.RawMessage, bool) {
	bs, ok1 := setElems(base)
	ps, ok2 := setElems(prim)
	ss, ok3 := setElems(sec)
	if !ok1 || !ok2 || !ok3 {
		return nil, false
	}
	in := func(list []string, e string) bool { return slices.Contains(list, e) }
	var res []string
	for _, list := range [][]string{ps, ss} {
		for _, e := range list {
			if in(res, e) {
				continue
			}
			both := in(ps, e) && in(ss, e)
			if both || !in(bs, e) {
				res = append(res, e)
			}
		}
	}
	return json.RawMessage("[" + strings.Join(res, ",") + "]"), true
}

// setElems returns the compacted elements of a JSON array; an absent or null
// value is the empty set.
func setElems(raw json.RawMessage) ([]string, bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, true
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil {
		return nil, false
	}
	out := make([]string, 0, len(elems))
	for _, e := range elems {
		var c bytes.Buffer
		if err := json.Compact(&c, e); err != nil {
			return nil, false
		}
		out = append(out, c.String())
	}
	return out, true
}
