package web

import (
	"strconv"
	"strings"
)

// ANSI colour in worker logs: SGR sequences (ESC [ … m) become class names
// on text segments (bold, fg-N and bg-N for the 16 standard colours);
// every other escape sequence (cursor movement, erasing, titles) and every
// control character but newline and tab is dropped. A carriage return
// starts a new line, so progress bars read as a list of states rather than
// overwriting each other. The page inserts segments as text nodes.

// ansiState is the SGR state carried from one chunk of a log to the next.
type ansiState struct {
	bold   bool
	fg, bg int // 0: default; 30-37/90-97 and 40-47/100-107 otherwise
}

func (a ansiState) class() string {
	var cs []string
	if a.bold {
		cs = append(cs, "b")
	}
	if a.fg != 0 {
		cs = append(cs, "fg"+strconv.Itoa(a.fg))
	}
	if a.bg != 0 {
		cs = append(cs, "bg"+strconv.Itoa(a.bg))
	}
	return strings.Join(cs, " ")
}

// apply reads the parameters of one SGR sequence.
func (a *ansiState) apply(params string) {
	if params == "" {
		*a = ansiState{}
		return
	}
	ps := strings.Split(params, ";")
	for i := 0; i < len(ps); i++ {
		n, err := strconv.Atoi(ps[i])
		if err != nil {
			continue
		}
		switch {
		case n == 0:
			*a = ansiState{}
		case n == 1:
			a.bold = true
		case n == 22:
			a.bold = false
		case n >= 30 && n <= 37, n >= 90 && n <= 97:
			a.fg = n
		case n == 39:
			a.fg = 0
		case n >= 40 && n <= 47, n >= 100 && n <= 107:
			a.bg = n
		case n == 49:
			a.bg = 0
		case n == 38 || n == 48:
			// 256-colour or true colour: skip its arguments, keep the
			// default colour.
			if i+1 < len(ps) && ps[i+1] == "5" {
				i += 2
			} else if i+1 < len(ps) && ps[i+1] == "2" {
				i += 4
			}
		}
	}
}

// escapeEnd returns the length of the escape sequence at the start of b
// (which starts with ESC), and false when it is not finished within b.
func escapeEnd(b []byte) (int, bool) {
	if len(b) < 2 {
		return 0, false
	}
	switch b[1] {
	case '[': // CSI: parameters and intermediates, then a final byte 0x40-0x7e
		for i := 2; i < len(b); i++ {
			if b[i] >= 0x40 && b[i] <= 0x7e {
				return i + 1, true
			}
		}
		return 0, false
	case ']', 'P', '_', '^': // OSC, DCS, APC, PM: up to BEL or ESC \
		for i := 2; i < len(b); i++ {
			if b[i] == 0x07 {
				return i + 1, true
			}
			if b[i] == 0x1b && i+1 < len(b) && b[i+1] == '\\' {
				return i + 2, true
			}
		}
		return 0, false
	}
	return 2, true // a two-byte sequence
}

// segments turns log text into coloured text segments, carrying the SGR
// state across calls.
func (a *ansiState) segments(b []byte) []segment {
	var out []segment
	var cur strings.Builder
	cls := a.class()
	flush := func() {
		if cur.Len() == 0 {
			return
		}
		if n := len(out); n > 0 && out[n-1].C == cls {
			out[n-1].T += cur.String()
		} else {
			out = append(out, segment{T: cur.String(), C: cls})
		}
		cur.Reset()
	}
	for i := 0; i < len(b); {
		c := b[i]
		switch {
		case c == 0x1b:
			n, ok := escapeEnd(b[i:])
			if !ok {
				i = len(b) // an unfinished sequence at the very end: dropped
				continue
			}
			if b[i+1] == '[' && b[i+n-1] == 'm' {
				flush()
				a.apply(string(b[i+2 : i+n-1]))
				cls = a.class()
			}
			i += n
		case c == '\r':
			if i+1 < len(b) && b[i+1] == '\n' {
				i++
				continue
			}
			cur.WriteByte('\n')
			i++
		case c == '\n' || c == '\t':
			cur.WriteByte(c)
			i++
		case c < 0x20 || c == 0x7f:
			i++
		default:
			cur.WriteByte(c)
			i++
		}
	}
	flush()
	return out
}
