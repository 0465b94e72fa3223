package web

import (
	"fmt"
	"strconv"
	"strings"
)

// ANSI colour in worker logs: SGR sequences (ESC [ … m) become class names
// on text segments (bold, fg-N and bg-N for the 16 standard colours) and,
// for 256-colour and true-colour sequences, a colour ("#rrggbb") the page
// sets through the element's style object (the CSP forbids style
// attributes, not that). Every other escape sequence (cursor movement,
// erasing, titles) and every control character but newline and tab is
// dropped. A carriage return that is not part of a line end becomes a
// segment of its own (R): the page moves back to the start of the line and
// overwrites it, as a terminal does, so a progress bar stays one line.
// The page inserts segments as text nodes.

// ansiState is the SGR state carried from one chunk of a log to the next.
type ansiState struct {
	bold   bool
	fg, bg int // 0: default; 30-37/90-97 and 40-47/100-107 otherwise
	// fgRGB and bgRGB are a 256-colour or true colour ("#rrggbb"); they
	// replace fg and bg while set.
	fgRGB, bgRGB string
}

func (a ansiState) class() string {
	var cs []string
	if a.bold {
		cs = append(cs, "b")
	}
	if a.fg != 0 && a.fgRGB == "" {
		cs = append(cs, "fg"+strconv.Itoa(a.fg))
	}
	if a.bg != 0 && a.bgRGB == "" {
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
	ps := strings.Split(strings.ReplaceAll(params, ":", ";"), ";")
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
			a.fg, a.fgRGB = n, ""
		case n == 39:
			a.fg, a.fgRGB = 0, ""
		case n >= 40 && n <= 47, n >= 100 && n <= 107:
			a.bg, a.bgRGB = n, ""
		case n == 49:
			a.bg, a.bgRGB = 0, ""
		case n == 38 || n == 48:
			std, rgb, used := extColour(ps[i+1:])
			i += used
			if n == 38 {
				a.fg, a.fgRGB = std, rgb
			} else if std != 0 {
				a.bg, a.bgRGB = std+10, rgb
			} else {
				a.bg, a.bgRGB = 0, rgb
			}
		}
	}
}

// extColour reads the arguments of a 38 or 48 (the parameters after it):
// "5;N" (256 colours) or "2;R;G;B" (true colour). It returns the standard
// foreground code (30-37, 90-97) for N below 16, else the colour as
// "#rrggbb", and how many parameters it used.
func extColour(ps []string) (std int, rgb string, used int) {
	num := func(i int) (int, bool) {
		if i >= len(ps) {
			return 0, false
		}
		v, err := strconv.Atoi(ps[i])
		return v, err == nil && v >= 0 && v <= 255
	}
	if len(ps) == 0 {
		return 0, "", 0
	}
	switch ps[0] {
	case "5":
		n, ok := num(1)
		if !ok {
			return 0, "", len(ps)
		}
		switch {
		case n < 8:
			return 30 + n, "", 2
		case n < 16:
			return 90 + n - 8, "", 2
		}
		return 0, xterm256(n), 2
	case "2":
		r, ok1 := num(1)
		g, ok2 := num(2)
		b, ok3 := num(3)
		if !ok1 || !ok2 || !ok3 {
			return 0, "", len(ps)
		}
		return 0, fmt.Sprintf("#%02x%02x%02x", r, g, b), 4
	}
	return 0, "", 0
}

// xterm256 is the colour of xterm's palette entry n (16-255): a 6×6×6
// cube, then 24 greys.
func xterm256(n int) string {
	if n >= 232 {
		v := 8 + (n-232)*10
		return fmt.Sprintf("#%02x%02x%02x", v, v, v)
	}
	n -= 16
	level := func(c int) int {
		if c == 0 {
			return 0
		}
		return 55 + c*40
	}
	return fmt.Sprintf("#%02x%02x%02x", level(n/36), level(n/6%6), level(n%6))
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
		if n := len(out); n > 0 && !out[n-1].R && out[n-1].C == cls && out[n-1].F == a.fgRGB && out[n-1].B == a.bgRGB {
			out[n-1].T += cur.String()
		} else {
			out = append(out, segment{T: cur.String(), C: cls, F: a.fgRGB, B: a.bgRGB})
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
			flush()
			out = append(out, segment{R: true})
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
