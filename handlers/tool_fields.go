package handlers

import (
	"bytes"
	"errors"
	"io"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentreview/service/views"
)

// Any other tool (an MCP server's, Claude Code's TaskOutput, a pushed
// step's own shape) is shown by its recorded value's parts, not as escaped
// JSON: each string, number and flag under a label made of its keys
// ("result.task.output"), a string of several lines or a long one as a
// block of text with its real line breaks. The recorded value itself stays
// one click away, as for the common tools.

const (
	// toolParts is the most labelled parts of a tool's value shown; the
	// recorded value has the rest.
	toolParts = 40
	// toolPartDepth is how deep a value's keys are followed; a deeper
	// object or array is one part, as compact JSON.
	toolPartDepth = 6
	// shortPart is the longest one-line string shown beside its label;
	// longer ones are blocks.
	shortPart = 120
)

// toolPartsView splits a tool's recorded value (payload raw) into
// labelled parts, their values together cut to limit characters (0:
// whole), as one text of that length would be: one-line values as fields,
// the others as blocks. The input's keys are the labels as they are; the
// result's start with "result". Nil when raw is not a JSON object or holds
// nothing to show.
func toolPartsView(raw []byte, limit int) *views.ToolView {
	v := &views.ToolView{Kind: "fields"}
	more, left := false, limit
	err := eachToolPart(raw, toolPartDepth, func(label, text string, isString bool) bool {
		if len(v.Fields)+len(v.Blocks) == toolParts || (limit > 0 && left <= 0) {
			more = true
			return false
		}
		shown, cut := clip(text, left)
		left -= len(shown) // bytes, at least the characters counted
		label = shorten(label, lineChars)
		t := views.Text{Shown: shown, More: cut}
		if len(text) > shortPart || strings.ContainsRune(text, '\n') {
			v.Blocks = append(v.Blocks, views.Block{Label: label, Text: t})
		} else {
			v.Fields = append(v.Fields, views.Field{Label: label, Value: t})
		}
		return true
	})
	if err != nil || len(v.Fields)+len(v.Blocks) == 0 {
		return nil
	}
	v.MoreParts = more
	return v
}

// toolInputLine is a tool's input on one line, "key: value, ...", from the
// values at the top of the input (or of the value, for a value without
// one; a text of several lines by its first), read from the first bytes of
// raw only: the timeline's summary of a step, made for every step of a
// session. "" when there are none.
func toolInputLine(raw []byte) string {
	var b strings.Builder
	head := raw[:min(len(raw), 4*lineChars)]
	eachToolPart(head, 2, func(label, text string, isString bool) bool {
		nested := !isString && (text[0] == '{' || text[0] == '[')
		if strings.HasPrefix(label, "result") || strings.HasPrefix(label, "output") || nested {
			return b.Len() < lineChars
		}
		if i := strings.IndexByte(text, '\n'); i >= 0 {
			text = strings.TrimSpace(text[:i]) + " …"
		}
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		b.WriteString(label + ": " + text)
		return b.Len() < lineChars
	})
	return b.String()
}

// eachToolPart calls fn with each value of the JSON object raw, in order:
// its label (the keys and indexes that lead to it, without a leading
// "input"), its text (a string as it reads, a number, true, false or null
// as written, and an object or array deeper than depth as compact JSON)
// and whether it is a string. It stops when fn returns false. Text that
// is not a JSON object is an error; a value cut short (raw a prefix) ends
// the walk without one. An empty string is not a value to show: it is
// skipped.
func eachToolPart(raw []byte, depth int, fn func(label, text string, isString bool) bool) error {
	dec := jsontext.NewDecoder(bytes.NewReader(raw), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	if dec.PeekKind() != '{' {
		return errors.New("not a JSON object")
	}
	if _, err := dec.ReadToken(); err != nil {
		return err
	}
	var path []string
	label := func() string {
		p := path
		if len(p) > 1 && p[0] == "input" {
			p = p[1:]
		}
		var b strings.Builder
		for i, s := range p {
			if i > 0 && !strings.HasPrefix(s, "[") {
				b.WriteByte('.')
			}
			b.WriteString(s)
		}
		return b.String()
	}
	// name reads the next object name or array index onto path; false at
	// the container's end.
	name := func() (bool, error) {
		kind, n := dec.StackIndex(dec.StackDepth())
		if dec.PeekKind() == '}' || dec.PeekKind() == ']' {
			return false, nil
		}
		if kind == '[' {
			path = append(path, "["+strconv.FormatInt(n, 10)+"]")
			return true, nil
		}
		tok, err := dec.ReadToken()
		if err != nil {
			return false, err
		}
		path = append(path, tok.String())
		return true, nil
	}
	for dec.StackDepth() > 0 {
		ok, err := name()
		if err != nil {
			return ignoreCut(err)
		}
		if !ok {
			if _, err := dec.ReadToken(); err != nil { // the container's end
				return ignoreCut(err)
			}
			if len(path) > 0 {
				path = path[:len(path)-1]
			}
			continue
		}
		switch k := dec.PeekKind(); {
		case (k == '{' || k == '[') && dec.StackDepth() < depth:
			if _, err := dec.ReadToken(); err != nil {
				return ignoreCut(err)
			}
			continue // its values are labelled with this name
		case k == '{' || k == '[':
			v, err := dec.ReadValue()
			if err != nil {
				return ignoreCut(err)
			}
			if !fn(label(), string(v), false) {
				return nil
			}
		default:
			at := dec.InputOffset()
			tok, err := dec.ReadToken()
			if k == '"' && errors.Is(err, io.ErrUnexpectedEOF) {
				if text, ok := cutString(raw[at:]); ok {
					fn(label(), text+"…", true)
				}
				return nil
			}
			if err != nil {
				return ignoreCut(err)
			}
			// An empty string says nothing: no part of its own, no
			// "title:" without a value on the timeline.
			if (k != '"' || tok.String() != "") && !fn(label(), tok.String(), k == '"') {
				return nil
			}
		}
		path = path[:len(path)-1]
	}
	return nil
}

// cutString is the text of a JSON string cut short, from rest, what
// follows its name (the colon, spaces, then the string's quote and its
// first bytes, ending within the string, perhaps within an escape or a
// character): the longest prefix that reads as a string once closed.
func cutString(rest []byte) (string, bool) {
	i := bytes.IndexByte(rest, '"')
	if i < 0 || len(bytes.Trim(rest[:i], " \t\r\n:")) > 0 {
		return "", false
	}
	rest = rest[i:]
	// An escape is at most 6 bytes (\u0041) and a character 4: a prefix
	// that does not read ends within one of them.
	for end := len(rest); end > max(0, len(rest)-12); end-- {
		if text, err := jsontext.AppendUnquote(nil, append(rest[:end:end], '"')); err == nil {
			return string(text), true
		}
	}
	return "", false
}

// ignoreCut is err, or nil when it says the text ended early (a prefix of
// a longer value).
func ignoreCut(err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return nil
	}
	return err
}
