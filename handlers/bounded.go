package handlers

import (
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/agentreview/service/internal/term"
)

// Bounded rendering: every value an agent recorded reaches a page, a
// fragment or the export through clip, prettyJSON or oneLine, so what is
// rendered is never more than a small multiple of what was stored, and
// the review app's cuts (headChars, shownChars) apply to every field.

const (
	// lineChars is the most characters of a title, a prompt line in the
	// list or a step's one-line summary.
	lineChars = 160
	// promptChars is the most characters of a turn's prompt, shown above
	// its steps; the prompt's message step holds all of it.
	promptChars = 1000
	// indentDepth is how deep JSON gets line breaks and indentation; deeper
	// values are printed compact, so a deeply nested value renders at about
	// its stored size instead of growing with the square of its depth.
	indentDepth = 4
)

// clip keeps the first limit characters of s (all of s when limit is 0)
// and returns how many characters it left out.
func clip(s string, limit int) (string, int) {
	if limit <= 0 || len(s) <= limit {
		return s, 0
	}
	n := 0
	for i := range s {
		if n == limit {
			return s[:i], utf8.RuneCountInString(s[i:])
		}
		n++
	}
	return s, 0
}

// shorten is s cut to limit characters, marked with "…" when cut, as a
// page shows text (term.Plain: no control sequence, other control
// characters in caret notation): for values shown in a heading or a table
// cell, where there is no room for a note.
func shorten(s string, limit int) string {
	cut, more := clip(s, limit)
	cut = term.Plain(cut)
	if more > 0 {
		return cut + "…"
	}
	return cut
}

// oneLine is the first line of s, cut to lineChars (shorten).
func oneLine(s string) string {
	s, _ = clip(s, 4*lineChars) // what follows is linear in what is kept
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = strings.TrimSpace(s[:i]) + " …"
	}
	return shorten(s, lineChars)
}

// prettyJSON indents raw for reading, up to indentDepth levels deep, and
// keeps the first limit characters of the result (all when limit is 0),
// returning how many it left out. Text that is not JSON is clipped as is.
func prettyJSON(raw json.RawMessage, limit int) (string, int) {
	if !json.Valid(raw) {
		return clip(string(raw), limit)
	}
	out := boundedText{limit: limit}
	out.b.Grow(min(len(raw)+len(raw)/4, max(limit, 64)*utf8.UTFMax))
	breakLine := func(depth int) {
		out.writeByte('\n')
		for range 2 * depth {
			out.writeByte(' ')
		}
	}
	depth := 0
	inString, escaped := false, false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if inString {
			out.writeByte(c)
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case ' ', '\t', '\n', '\r':
		case '"':
			inString = true
			out.writeByte(c)
		case '{', '[':
			out.writeByte(c)
			depth++
			j := i + 1
			for j < len(raw) && strings.IndexByte(" \t\n\r", raw[j]) >= 0 {
				j++
			}
			if j < len(raw) && (raw[j] == '}' || raw[j] == ']') {
				out.writeByte(raw[j]) // empty: {} or []
				depth--
				i = j
			} else if depth <= indentDepth {
				breakLine(depth)
			}
		case '}', ']':
			if depth <= indentDepth {
				breakLine(depth - 1)
			}
			depth--
			out.writeByte(c)
		case ',':
			out.writeByte(c)
			if depth <= indentDepth {
				breakLine(depth)
			}
		case ':':
			out.writeByte(c)
			if depth <= indentDepth {
				out.writeByte(' ')
			}
		default:
			out.writeByte(c)
		}
	}
	return out.b.String(), out.more
}

// boundedText keeps the first limit characters written to it (all when
// limit is 0) and counts the rest.
type boundedText struct {
	b     strings.Builder
	limit int
	kept  int
	more  int
	full  bool
}

func (t *boundedText) writeByte(c byte) {
	start := utf8.RuneStart(c)
	if start && t.limit > 0 && t.kept == t.limit {
		t.full = true
	}
	if t.full {
		if start {
			t.more++
		}
		return
	}
	t.b.WriteByte(c)
	if start {
		t.kept++
	}
}
