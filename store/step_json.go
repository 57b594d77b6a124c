package store

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// The JSON columns of a step (payload, error, channels, flags) are written
// by hand: encoding/json's reflection was most of splitStep's time. The
// bytes are the ones json.Marshal writes for the same values (field order,
// omitempty, its escaping of <, >, &, U+2028, U+2029 and invalid UTF-8),
// which FuzzStepJSON checks; what reads the columns back is unchanged.

// appendPayloadJSON appends p as json.Marshal writes it. The open shapes
// (raw, structured_patch) are checked and copied (appendRawJSON).
func appendPayloadJSON(dst []byte, p *Payload) ([]byte, error) {
	n := len(dst)
	dst = append(dst, '{')
	field := func(name string) {
		if len(dst) > n+1 {
			dst = append(dst, ',')
		}
		dst = append(dst, '"')
		dst = append(dst, name...)
		dst = append(dst, '"', ':')
	}
	text := func(name string, s *string) {
		if s != nil {
			field(name)
			dst = appendJSONString(dst, *s)
		}
	}
	flag := func(name string, b *bool) {
		if b != nil {
			field(name)
			dst = strconv.AppendBool(dst, *b)
		}
	}
	shape := func(name string, v json.RawMessage) (err error) {
		if len(v) == 0 {
			return nil
		}
		field(name)
		dst, err = appendRawJSON(dst, v)
		return err
	}
	text("command", p.Command)
	text("stdout", p.Stdout)
	text("stderr", p.Stderr)
	if p.ExitCode != nil {
		field("exit_code")
		dst = strconv.AppendInt(dst, *p.ExitCode, 10)
	}
	text("cwd", p.Cwd)
	text("output_ref", p.OutputRef)
	if p.Path != "" {
		text("path", &p.Path)
	}
	text("old_string", p.OldString)
	text("new_string", p.NewString)
	if err := shape("structured_patch", p.StructuredPatch); err != nil {
		return dst, err
	}
	flag("is_full_write", p.IsFullWrite)
	flag("landed_in_final_state", p.LandedInFinalState)
	if p.Range != nil {
		field("range")
		dst = append(dst, '[')
		dst = strconv.AppendInt(dst, p.Range[0], 10)
		dst = append(dst, ',')
		dst = strconv.AppendInt(dst, p.Range[1], 10)
		dst = append(dst, ']')
	}
	if p.Role != "" {
		text("role", &p.Role)
	}
	text("text", p.Text)
	text("text_ref", p.TextRef)
	if p.ToolName != "" {
		text("tool_name", &p.ToolName)
	}
	if err := shape("raw", p.Raw); err != nil {
		return dst, err
	}
	return append(dst, '}'), nil
}

// appendRawJSON appends a JSON value as json.Marshal writes a
// json.RawMessage: compacted, with <, >, &, U+2028 and U+2029 escaped. A
// value already in that form, as json.Marshal wrote it (an adapter's raw),
// is checked (validJSON) and copied: encoding/json's compaction, byte by
// byte, was 9% of an import's CPU (docs/performance.md). Any other value
// goes through json.Marshal.
func appendRawJSON(dst []byte, v json.RawMessage) ([]byte, error) {
	if inMarshalForm(v) && validJSON(v) {
		return append(dst, v...), nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return dst, err
	}
	return append(dst, b...), nil
}

// rawSpecial marks the bytes inMarshalForm looks at: a string's quotes and
// escapes, what json.Marshal escapes (<, >, &, and 0xE2, which begins
// U+2028 and U+2029) and whitespace (which it drops outside strings).
var rawSpecial = [256]bool{'"': true, '\\': true, '<': true, '>': true, '&': true, 0xE2: true,
	' ': true, '\t': true, '\n': true, '\r': true}

// inMarshalForm reports whether json.Marshal would leave a JSON text as it
// is: no whitespace outside strings and nothing it escapes. It does not
// check the JSON is valid.
func inMarshalForm(b []byte) bool {
	inString := false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if !rawSpecial[c] {
			continue
		}
		switch c {
		case '"':
			inString = !inString
		case '\\':
			i++ // the escaped character, ASCII in valid JSON
		case 0xE2:
			if i+2 < len(b) && b[i+1] == 0x80 && (b[i+2] == 0xA8 || b[i+2] == 0xA9) {
				return false
			}
		case ' ', '\t', '\n', '\r':
			if !inString {
				return false
			}
		default: // <, >, &
			return false
		}
	}
	return true
}

// validJSON is json.Valid at jsontext's speed (several times encoding/json's):
// jsontext is told to accept what json.Valid accepts (duplicate names,
// invalid UTF-8), and what it still refuses goes to json.Valid for the
// answer, so the two never differ (FuzzValidJSON).
func validJSON(b []byte) bool {
	return jsontext.Value(b).IsValid(jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true)) || json.Valid(b)
}

// appendErrorJSON appends e as json.Marshal writes it.
func appendErrorJSON(dst []byte, e *StepError) []byte {
	dst = append(dst, `{"type":`...)
	dst = appendJSONString(dst, e.Type)
	dst = append(dst, `,"message":`...)
	dst = appendJSONString(dst, e.Message)
	return append(dst, '}')
}

// appendStringsJSON appends a non-nil list of strings as json.Marshal
// writes it.
func appendStringsJSON(dst []byte, ss []string) []byte {
	dst = append(dst, '[')
	for i, s := range ss {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSONString(dst, s)
	}
	return append(dst, ']')
}

// appendFlagsJSON appends a non-nil list of flags as json.Marshal writes it.
func appendFlagsJSON(dst []byte, fs []Flag) []byte {
	dst = append(dst, '[')
	for i := range fs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"kind":`...)
		dst = appendJSONString(dst, fs[i].Kind)
		dst = append(dst, `,"severity":`...)
		dst = appendJSONString(dst, fs[i].Severity)
		dst = append(dst, `,"reason":`...)
		dst = appendJSONString(dst, fs[i].Reason)
		dst = append(dst, '}')
	}
	return append(dst, ']')
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s quoted as encoding/json quotes a string with
// its default HTML escaping.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
