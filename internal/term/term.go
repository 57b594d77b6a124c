// Package term holds the one reading of text written for a terminal, as
// the commands an agent runs print it: its control sequences (ECMA-48's
// ESC [ … sequences: colours and styles, cursor moves, erasures), which
// carry no text, and its other control characters, which a page cannot
// show. Secret masking and search read such text as a terminal shows it
// (without the sequences), and the review app shows it so, in colour.
package term

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxCSI bounds a control sequence: ESC [ with more parameter bytes than
// this is not read as one (its bytes are text, its ESC a control
// character), so a sequence never hides text.
const maxCSI = 64

// sequenceLen is the length of the control sequence (CSI) s starts
// with: ESC [, then parameter bytes (0x30–0x3F), intermediate bytes
// (0x20–0x2F) and a final byte (0x40–0x7E); 0 when s does not start with
// a whole one of at most maxCSI bytes.
func sequenceLen(s string) int {
	if len(s) < 3 || s[0] != 0x1b || s[1] != '[' {
		return 0
	}
	n := min(len(s), maxCSI)
	i := 2
	for i < n && s[i] >= 0x30 && s[i] <= 0x3f {
		i++
	}
	for i < n && s[i] >= 0x20 && s[i] <= 0x2f {
		i++
	}
	if i < n && s[i] >= 0x40 && s[i] <= 0x7e {
		return i + 1
	}
	return 0
}

// Shown is s as a terminal shows it: without its control sequences
// (CSI), which carry no text, and where they were. Secret masking and
// search read command output so: the "1m" of ESC [ 1 m must not be glued
// to the token or the word after it, nor a code split a token in two.
// Text without ESC is returned as it is.
func Shown(s string) (string, Cuts) {
	if strings.IndexByte(s, 0x1b) < 0 {
		return s, nil
	}
	var c Cuts
	var b strings.Builder
	b.Grow(len(s))
	gone := 0
	for i := 0; i < len(s); {
		n := 0
		if s[i] == 0x1b {
			n = sequenceLen(s[i:])
		}
		if n == 0 {
			b.WriteByte(s[i])
			i++
			continue
		}
		gone += n
		c = append(c, cut{b.Len(), gone})
		i += n
	}
	return b.String(), c
}

// Cuts are where Shown took control sequences out of a text.
type Cuts []cut

// cut is an offset of the text left (at) and how many bytes were taken
// out before it (gone).
type cut struct{ at, gone int }

// Before is the offset in the whole text of the byte at offset at of the
// text left: after every sequence taken out before it.
func (c Cuts) Before(at int) int {
	i, _ := slices.BinarySearchFunc(c, at, func(x cut, at int) int { return cmp.Compare(x.at, at+1) })
	if i == 0 {
		return at
	}
	return at + c[i-1].gone
}

// Color is one of the eight colours of SGR sequences (a bright one is
// its plain colour), or Default: the terminal's own.
type Color uint8

const (
	Default Color = iota
	Black
	Red
	Green
	Yellow
	Blue
	Magenta
	Cyan
	White
)

// Style is the style SGR sequences (ESC [ … m) give the text after them.
// Inverse swaps its colours, as jest's PASS and FAIL labels ask.
type Style struct {
	FG, BG                                Color
	Bold, Dim, Italic, Underline, Inverse bool
}

// Apply is the style after the control sequence seq (whole, as Next
// reads it): as it was when seq is not an SGR sequence.
func (st Style) Apply(seq string) Style {
	if len(seq) < 3 || seq[len(seq)-1] != 'm' {
		return st
	}
	params := seq[2 : len(seq)-1]
	if strings.IndexFunc(params, func(r rune) bool { return !(r >= '0' && r <= '9' || r == ';' || r == ':') }) >= 0 {
		return st // a private sequence (ESC [ > 4 m), not a style
	}
	codes := strings.Split(params, ";")
	for i := 0; i < len(codes); i++ {
		code, sub, _ := strings.Cut(codes[i], ":")
		n, _ := strconv.Atoi(code) // "" is 0, as terminals read it
		switch {
		case n == 0:
			st = Style{}
		case n == 1:
			st.Bold = true
		case n == 2:
			st.Dim = true
		case n == 3:
			st.Italic = true
		case n == 4 || n == 21:
			st.Underline = true
		case n == 7:
			st.Inverse = true
		case n == 27:
			st.Inverse = false
		case n == 22:
			st.Bold, st.Dim = false, false
		case n == 23:
			st.Italic = false
		case n == 24:
			st.Underline = false
		case n >= 30 && n <= 37:
			st.FG = Color(n - 29)
		case n >= 90 && n <= 97:
			st.FG = Color(n - 89)
		case n == 39:
			st.FG = Default
		case n >= 40 && n <= 47:
			st.BG = Color(n - 39)
		case n >= 100 && n <= 107:
			st.BG = Color(n - 99)
		case n == 49:
			st.BG = Default
		case n == 38 || n == 48:
			var c Color
			if sub != "" { // 38:5:n, 38:2::r:g:b
				c = extended(strings.Split(sub, ":"))
			} else {
				var used int
				c, used = extendedParams(codes[i+1:])
				i += used
			}
			if n == 38 {
				st.FG = c
			} else {
				st.BG = c
			}
		}
	}
	return st
}

// extendedParams reads the colour of 38;5;n or 38;2;r;g;b from the
// parameters after the 38 (or 48), returning how many it used.
func extendedParams(rest []string) (Color, int) {
	if len(rest) == 0 {
		return Default, 0
	}
	switch rest[0] {
	case "5":
		return extended(rest[:min(len(rest), 2)]), min(len(rest), 2)
	case "2":
		return Default, min(len(rest), 4)
	}
	return Default, 1
}

// extended is the colour of an extended colour's parameters (5 and an
// index, or 2 and red, green, blue): of the 256 colours, the first 16 are
// the eight colours and their bright ones; others, and any colour given
// by its red, green and blue, are the terminal's own (the page's palette
// has no room for them that reads on both its backgrounds).
func extended(p []string) Color {
	if len(p) == 2 && p[0] == "5" {
		if n, err := strconv.Atoi(p[1]); err == nil && n >= 0 && n < 16 {
			return Color(n%8 + 1)
		}
	}
	return Default
}

// Caret is a control character in caret notation, as cat -v writes it:
// ^[ for ESC, ^G for BEL, ^? for DEL, ^[ and a letter for a C1 control
// (its 7-bit form); "" for a character that is not a control character,
// or is a tab, a line feed or a carriage return, which text keeps.
func Caret(r rune) string {
	switch {
	case r == '\t' || r == '\n' || r == '\r':
		return ""
	case r < 0x20:
		return "^" + string(rune(r+0x40))
	case r == 0x7f:
		return "^?"
	case r >= 0x80 && r < 0xa0:
		return "^[" + string(rune(r-0x40))
	}
	return ""
}

// Next reads the piece of text s starts with: a run of text up to the
// next control character (n bytes, caret ""), a control sequence (n bytes,
// csi true), or another control character (n bytes, caret its caret
// notation).
func Next(s string) (n int, csi bool, caret string) {
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c >= 0x20 && c < 0x7f || c == '\t' || c == '\n' || c == '\r':
			i++
			continue
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRuneInString(s[i:])
			if r < 0x80 || r >= 0xa0 {
				i += size
				continue
			}
		}
		if i > 0 {
			return i, false, ""
		}
		if n := sequenceLen(s); n > 0 {
			return n, true, ""
		}
		r, size := utf8.DecodeRuneInString(s)
		return size, false, Caret(r)
	}
	return len(s), false, ""
}

// Plain is s as text to read without a terminal: its control sequences
// left out, and every other control character but tab, line feed and
// carriage return in caret notation, so that nothing the agent read is
// hidden and no control character reaches a page. Text without control
// characters is returned as it is.
func Plain(s string) string { return caretText(s, true) }

// Visible is s with every control character but tab, line feed and
// carriage return in caret notation, a control sequence's ESC too (^[[31m):
// for a file's text, which holds its escape sequences as characters, not
// as a terminal's instructions.
func Visible(s string) string { return caretText(s, false) }

// caretText writes s's control characters in caret notation, leaving out
// its control sequences when dropCSI.
func caretText(s string, dropCSI bool) string {
	if n, csi, caret := Next(s); n == len(s) && !csi && caret == "" {
		return s // no control character
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for s != "" {
		n, csi, caret := Next(s)
		switch {
		case csi && dropCSI:
		case csi:
			b.WriteString("^[")
			b.WriteString(s[1:n])
		case caret != "":
			b.WriteString(caret)
		default:
			b.WriteString(s[:n])
		}
		s = s[n:]
	}
	return b.String()
}
