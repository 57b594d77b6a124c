package store

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"io"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// jsonProblems are what is wrong with a batch's JSON itself, which a
// typed batch cannot express, so decoding finds them and Validate reports
// them in field order in place of the value rules: a field missing, null,
// of the wrong JSON type or unknown; a number that is not a whole one; a
// range that is not two numbers; and an optional string sent empty (in a
// Batch an empty optional string means left out). Every rule on the values
// themselves is Validate's alone. Decoding keeps records at their index
// in the body even when they are not objects, so Validate's paths are the
// body's.
type jsonProblems struct {
	at      map[string]string   // path: problem, for a field whose JSON is wrong
	unknown map[string][]string // object path: its unknown fields' paths, sorted
}

func (j *jsonProblems) add(path, msg string) {
	if j.at == nil {
		j.at = map[string]string{}
	}
	j.at[path] = msg
}

// none says nothing is wrong so far.
func (j *jsonProblems) none() bool { return len(j.at) == 0 && len(j.unknown) == 0 }

// forget drops the problems at path and inside it: a name repeated in an
// object keeps only its last value, as encoding/json does.
func (j *jsonProblems) forget(path string) {
	inside := func(p string) bool {
		rest, ok := strings.CutPrefix(p, path)
		return ok && (rest == "" || rest[0] == '.' || rest[0] == '[')
	}
	for p := range j.at {
		if inside(p) {
			delete(j.at, p)
		}
	}
	for p := range j.unknown {
		if inside(p) {
			delete(j.unknown, p)
		}
	}
}

// orNil returns j, or nil when the JSON had no problem.
func (j *jsonProblems) orNil() *jsonProblems {
	if len(j.at) == 0 && len(j.unknown) == 0 {
		return nil
	}
	return j
}

// rest returns the problems no field of the batch took, by path: none
// unless a field Validate walks is missing from its walk.
func (j *jsonProblems) rest() []Problem {
	var ps []Problem
	for path, msg := range j.at {
		ps = append(ps, Problem{Path: path, Message: msg})
	}
	for _, paths := range j.unknown {
		for _, path := range paths {
			ps = append(ps, Problem{Path: path, Message: "unknown field"})
		}
	}
	slices.SortFunc(ps, func(a, b Problem) int { return strings.Compare(a.Path, b.Path) })
	return ps
}

// decoder reads a body in one pass with jsontext straight into typed
// values, noting the problems of its JSON as it goes: ParseBatch (in
// decode.go, with the batch format's fields) and the verdict and note
// bodies use it. The first syntax error ends the reading: err keeps it,
// and every read after it does nothing.
type decoder struct {
	dec   *jsontext.Decoder
	body  []byte // what dec reads, so a value can be read again
	found *jsonProblems
	path  fieldPath // where the value at hand is
	at    place     // what holds the value at hand
	buf   []byte    // str's
	err   error
}

// place is what holds the value at hand, which decides the problem of a
// null.
type place uint8

const (
	optionalField place = iota
	requiredField
	element // of an array, where null is just the wrong type
)

// newDecoder reads r, which yields the bytes of body (ParseBatchFrom). A
// bytes.Buffer is read in place, not copied. Invalid UTF-8 becomes U+FFFD
// and a repeated name is allowed, as in encoding/json.
func newDecoder(r io.Reader, body []byte, found *jsonProblems) *decoder {
	dec := jsontext.NewDecoder(r, jsontext.AllowInvalidUTF8(true), jsontext.AllowDuplicateNames(true))
	return &decoder{dec: dec, body: body, found: found, at: requiredField}
}

// whole reads the body's one value, an object, with read. It returns
// ErrNotJSON when the body is not one JSON value and ErrNotObject when
// that value is not an object.
func (d *decoder) whole(read func()) error {
	isObject := d.dec.PeekKind() == '{'
	if isObject {
		read()
	} else {
		d.skip()
	}
	if d.err != nil {
		return ErrNotJSON
	}
	if _, err := d.dec.ReadToken(); err != io.EOF {
		return ErrNotJSON // something after the value
	}
	if !isObject {
		return ErrNotObject
	}
	return nil
}

// fail keeps the decoder's first error.
func (d *decoder) fail(err error) {
	if d.err == nil {
		d.err = err
	}
}

// broken takes the error behind a kind of 0 from PeekKind.
func (d *decoder) broken() {
	_, err := d.dec.ReadToken()
	d.fail(cmp.Or(err, errors.New("invalid JSON")))
}

func (d *decoder) skip() {
	if d.err == nil {
		if err := d.dec.SkipValue(); err != nil {
			d.fail(err)
		}
	}
}

func (d *decoder) token() jsontext.Token {
	if d.err != nil {
		return jsontext.Token{}
	}
	tok, err := d.dec.ReadToken()
	if err != nil {
		d.fail(err)
	}
	return tok
}

func (d *decoder) value() jsontext.Value {
	if d.err != nil {
		return nil
	}
	v, err := d.dec.ReadValue()
	if err != nil {
		d.fail(err)
	}
	return v
}

// more reports whether the object or array at hand has another member
// before its end.
func (d *decoder) more(end jsontext.Kind) bool {
	if d.err != nil {
		return false
	}
	switch d.dec.PeekKind() {
	case 0:
		d.broken()
		return false
	case end:
		return false
	}
	return true
}

// note notes a problem at the path at hand.
func (d *decoder) note(msg string) { d.found.add(string(d.path), msg) }

// wrong notes a problem with the value at hand and skips it.
func (d *decoder) wrong(msg string) {
	d.note(msg)
	d.skip()
}

// kind returns the kind of the value at hand, or 0 when there is none to
// read: an error, or a null in a field, whose problem it notes.
func (d *decoder) kind() jsontext.Kind {
	if d.err != nil {
		return 0
	}
	k := d.dec.PeekKind()
	switch {
	case k == 0:
		d.broken()
	case k == 'n' && d.at == optionalField:
		d.wrong("must be omitted, not null")
		return 0
	case k == 'n' && d.at == requiredField:
		d.wrong("expected a value, got null")
		return 0
	case k == 't':
		return 'f' // one kind for booleans
	}
	return k
}

// jsonKind names a kind of JSON value as the problems do.
func jsonKind(k jsontext.Kind) string {
	switch k {
	case 'n':
		return "null"
	case 't', 'f':
		return "boolean"
	case '0':
		return "number"
	case '"':
		return "string"
	case '[':
		return "array"
	case '{':
		return "object"
	}
	return "nothing"
}

// fields are the names an object of the format has, and which of them
// are required; at most 64.
type fields struct {
	names    []string
	required uint64 // bit i for names[i]
}

// newFields lists the fields of an object: the required names, then the
// optional ones, each separated by spaces.
func newFields(required, optional string) fields {
	names := strings.Fields(required)
	return fields{names: append(names, strings.Fields(optional)...), required: 1<<len(names) - 1}
}

// object reads an object whose names are fs, calling read for each name
// of fs with the path and place of its value set; read reads the value.
// Other names are noted as unknown and the required names missing as
// such. A repeated name keeps its last value, as in encoding/json: what
// an earlier one noted is forgotten. It returns false when the value is
// not an object (the problem noted).
func (d *decoder) object(fs fields, read func(name string)) bool {
	switch k := d.kind(); k {
	case 0:
		return false
	case '{':
	default:
		d.wrong("expected object, got " + jsonKind(k))
		return false
	}
	d.token()
	held := d.at
	var seen uint64
	var unknown []string
	for d.more('}') {
		name, err := readName(d.dec)
		if err != nil {
			d.fail(err)
			break
		}
		n := d.path.push(name)
		if i := slices.Index(fs.names, name); i < 0 {
			if !slices.Contains(unknown, name) {
				unknown = append(unknown, name)
			}
			d.skip()
		} else {
			if seen&(1<<i) != 0 {
				d.found.forget(string(d.path))
			}
			seen |= 1 << i
			d.at = optionalField
			if fs.required&(1<<i) != 0 {
				d.at = requiredField
			}
			read(name)
		}
		d.path = d.path[:n]
	}
	d.token()
	d.at = held
	for missing := fs.required &^ seen; missing != 0; missing &= missing - 1 {
		n := d.path.push(fs.names[bits.TrailingZeros64(missing)])
		d.note("required")
		d.path = d.path[:n]
	}
	if unknown != nil {
		slices.Sort(unknown)
		if d.found.unknown == nil {
			d.found.unknown = map[string][]string{}
		}
		path := string(d.path)
		for _, name := range unknown {
			n := d.path.push(name)
			d.found.unknown[path] = append(d.found.unknown[path], string(d.path))
			d.path = d.path[:n]
		}
	}
	return true
}

// array reads an array, calling read for each element with its path and
// place set. It returns the number of elements, or -1 when the value is
// not an array (the problem noted).
func (d *decoder) array(read func(i int)) int {
	switch k := d.kind(); k {
	case 0:
		return -1
	case '[':
	default:
		d.wrong("expected array, got " + jsonKind(k))
		return -1
	}
	d.token()
	held := d.at
	i := 0
	for ; d.more(']'); i++ {
		n := d.path.pushIndex(i)
		d.at = element
		read(i)
		d.path = d.path[:n]
	}
	d.token()
	d.at = held
	return i
}

// str reads the string at hand as a Token's String would (escapes
// decoded, invalid UTF-8 as U+FFFD), unquoted into one buffer for every
// string: a Token unquotes into a new one, grown as it goes, and most of
// a batch is its payloads' text.
func (d *decoder) str() string {
	v := d.value()
	if d.err != nil {
		return ""
	}
	d.buf, _ = jsontext.AppendUnquote(d.buf[:0], v) // its only error is the invalid UTF-8 it replaced
	return string(d.buf)
}

// text reads a string, or returns false with the problem noted.
func (d *decoder) text() (string, bool) {
	switch k := d.kind(); k {
	case 0:
		return "", false
	case '"':
		return d.str(), true
	default:
		d.wrong("expected string, got " + jsonKind(k))
		return "", false
	}
}

func (d *decoder) reqString() string { s, _ := d.text(); return s }

// optString reads an optional string, which may not be empty: in a batch
// an empty one means left out.
func (d *decoder) optString() string {
	s, ok := d.text()
	if ok && s == "" {
		d.note(nonEmpty(s))
	}
	return s
}

// optContent reads an optional field that may hold an empty string.
func (d *decoder) optContent() *string {
	if s, ok := d.text(); ok {
		return &s
	}
	return nil
}

// timestamp reads a timestamp; a value that is not a string gets the
// timestamp rule's own message, as does an optional one sent empty.
func (d *decoder) timestamp() string {
	switch k := d.kind(); k {
	case 0:
		return ""
	case '"':
		s := d.str()
		if s == "" && d.at == optionalField {
			d.note(isoTimestamp(s))
		}
		return s
	default:
		d.wrong(isoTimestamp(""))
		return ""
	}
}

// integer checks a JSON number is whole (1, 1.0 and 1e3 are; 1.5 is not).
func integer(n []byte) (int64, string) {
	if i, ok := smallInt(n); ok {
		return i, ""
	}
	if i, err := strconv.ParseInt(string(n), 10, 64); err == nil {
		return i, ""
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, "expected integer, got " + string(n)
	}
	return int64(f), ""
}

// smallInt parses a number of at most 18 digits and no fraction or
// exponent without the string strconv needs: most numbers of a batch.
func smallInt(n []byte) (int64, bool) {
	digits := n
	if len(n) > 0 && n[0] == '-' {
		digits = n[1:]
	}
	if len(digits) == 0 || len(digits) > 18 {
		return 0, false
	}
	var i int64
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
		i = i*10 + int64(c-'0')
	}
	if len(digits) < len(n) {
		i = -i
	}
	return i, true
}

// int reads a whole number, or returns false with the problem noted.
func (d *decoder) int() (int64, bool) {
	switch k := d.kind(); k {
	case 0:
		return 0, false
	case '0':
		i, msg := integer(d.value())
		if msg != "" {
			d.note(msg)
			return 0, false
		}
		return i, true
	default:
		d.wrong("expected integer, got " + jsonKind(k))
		return 0, false
	}
}

func (d *decoder) count() int64 { i, _ := d.int(); return i }

func (d *decoder) bool() *bool {
	switch k := d.kind(); k {
	case 0:
		return nil
	case 'f':
		tok := d.token()
		if d.err != nil {
			return nil
		}
		b := tok.Bool()
		return &b
	default:
		d.wrong("expected boolean, got " + jsonKind(k))
		return nil
	}
}

// strings reads an array of strings (possibly empty).
func (d *decoder) strings() []string {
	out := []string{}
	d.array(func(int) { s, _ := d.text(); out = append(out, s) })
	return out
}

// openShape reads a value the store keeps as it was sent, without
// inspecting it (an other step's raw, an edit's structured_patch):
// compacted and escaped as encoding/json writes it, so it reads back byte
// for byte as it is stored.
func (d *decoder) openShape() json.RawMessage {
	if d.kind() == 0 {
		return nil
	}
	v := d.value()
	if d.err != nil {
		return nil
	}
	b, err := appendRawJSON(nil, json.RawMessage(v)) // step_json.go: copied as it is when already compact
	if err != nil {
		d.fail(err)
	}
	return b
}

// shown is the value at hand as a problem shows it: as encoding/json
// writes it once decoded (numbers as they were written).
func (d *decoder) shown() []byte {
	v := d.value()
	if d.err != nil {
		return nil
	}
	var t any
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.UseNumber()
	if err := dec.Decode(&t); err != nil {
		d.fail(err)
		return nil
	}
	b, _ := json.Marshal(t) // a decoded value always marshals
	return b
}

// readRecords reads an array of objects into records of one kind, reading
// each with read and keeping at most limit; an element that is not an
// object is noted and its record stays the zero value. A missing or
// empty optional array reads as nil, as in a batch that leaves the kind
// out; a required one is never nil. done, when not nil, is called with
// each record read. It returns the number of elements, 0 when the value
// is not an array.
func readRecords[T any](d *decoder, limit int, read func(*decoder, *T), done func(*T)) ([]T, int) {
	var recs []T
	if d.at == requiredField {
		recs = []T{}
	}
	n := d.array(func(i int) {
		if i >= limit {
			d.skip() // too many: only counted
			return
		}
		recs = append(recs, *new(T))
		if k := d.kind(); k != '{' {
			d.wrong("expected object, got " + jsonKind(k))
			return
		}
		read(d, &recs[i])
		if done != nil {
			done(&recs[i])
		}
	})
	return recs, max(n, 0)
}
