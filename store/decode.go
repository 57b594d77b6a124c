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

// ParseBatch decodes a request body into a batch and checks it with the
// same Validate that Apply runs for every writer. It returns ErrNotJSON,
// ErrNotObject, a *TooManyError or an *InvalidError; the reference checks
// need the store and run in Apply.
func ParseBatch(body []byte) (*Batch, error) {
	found := &jsonProblems{}
	d := newDecoder(body, found)
	b := &Batch{}
	var counts [4]int // the elements of each of itemKinds, by the last of its name
	err := d.whole(func() {
		d.object(batchFields, func(name string) {
			switch name {
			case "schema_version":
				b.SchemaVersion = d.schemaVersion()
			case "session":
				b.Session = d.session()
			case "segments":
				b.Segments, counts[0] = readRecords(d, MaxItems, (*decoder).segment)
			case "actors":
				b.Actors, counts[1] = readRecords(d, MaxItems, (*decoder).actor)
			case "turns":
				b.Turns, counts[2] = readRecords(d, MaxItems, (*decoder).turn)
			case "steps":
				b.Steps, counts[3] = readRecords(d, MaxItems, (*decoder).step)
			}
		})
	})
	if err != nil {
		return nil, err
	}
	// Too many records of a kind is the answer whatever else is wrong.
	for i, n := range counts {
		if err := checkCount(itemKinds[i], n); err != nil {
			return nil, err
		}
	}
	if err := b.validate(found.orNil()); err != nil {
		return nil, err
	}
	return b, nil
}

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
// values, noting the problems of its JSON as it goes. The first syntax
// error ends the reading: err keeps it, and every read after it does
// nothing.
type decoder struct {
	dec   *jsontext.Decoder
	body  []byte // what dec reads, so a value can be read again
	found *jsonProblems
	path  []byte // where the value at hand is, as Validate writes paths
	at    place  // what holds the value at hand
	buf   []byte // str's
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

func newDecoder(body []byte, found *jsonProblems) *decoder {
	// A bytes.Buffer is read in place, not copied. Invalid UTF-8 becomes
	// U+FFFD and a repeated name is allowed, as in encoding/json.
	dec := jsontext.NewDecoder(bytes.NewBuffer(body), jsontext.AllowInvalidUTF8(true), jsontext.AllowDuplicateNames(true))
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

func (d *decoder) push(name string) int {
	n := len(d.path)
	if n > 0 {
		d.path = append(d.path, '.')
	}
	d.path = append(d.path, name...)
	return n
}

func (d *decoder) pushIndex(i int) int {
	n := len(d.path)
	d.path = append(d.path, '[')
	d.path = strconv.AppendInt(d.path, int64(i), 10)
	d.path = append(d.path, ']')
	return n
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
		n := d.push(name)
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
		n := d.push(fs.names[bits.TrailingZeros64(missing)])
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
			n := d.push(name)
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
		n := d.pushIndex(i)
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
	b, err := json.Marshal(json.RawMessage(v))
	if err != nil {
		d.fail(err)
	}
	return b
}

// shown is the value at hand as a problem shows it: as encoding/json
// writes it once decoded.
func (d *decoder) shown() []byte {
	v := d.value()
	if d.err != nil {
		return nil
	}
	t, err := decodeTree(v)
	if err != nil {
		d.fail(err)
		return nil
	}
	return raw(t)
}

// readRecords reads an array of objects into records of one kind, reading
// each with read and keeping at most limit; an element that is not an
// object is noted and its record stays the zero value. A missing or
// empty optional array reads as nil, as in a batch that leaves the kind
// out; a required one is never nil. It returns the number of elements,
// 0 when the value is not an array.
func readRecords[T any](d *decoder, limit int, read func(*decoder, *T)) ([]T, int) {
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
	})
	return recs, max(n, 0)
}

// The fields of each object of the batch format.
var (
	batchFields     = newFields("schema_version session", "segments actors turns steps")
	sessionFields   = newFields("id agent workspace started_at", "ended_at source metrics")
	agentFields     = newFields("kind version", "format_version")
	workspaceFields = newFields("root", "repo")
	metricsFields   = newFields("cost_usd api_requests tokens", "")
	tokensFields    = newFields("input output cache_read cache_creation", "")
	segmentFields   = newFields("index start_reason started_at source_files", "ended_at")
	actorFields     = newFields("id type", "parent_id label")
	turnFields      = newFields("id session_id segment_index actor_id index started_at step_ids", "prompt_id mode")
	stepFields      = newFields("id session_id segment_index turn_id actor_id seq at type decision outcome content_status channels flags payload", "error")
	stepErrorFields = newFields("type message", "")
	flagFields      = newFields("kind severity reason", "")
	// payloadFieldsOf are the fields of each step type's payload, those
	// of payloadFields in validate.go.
	payloadFieldsOf = map[string]fields{
		TypeCommand: newFields("", "command stdout stderr exit_code cwd output_ref"),
		TypeEdit:    newFields("path is_full_write", "old_string new_string structured_patch landed_in_final_state"),
		TypeRead:    newFields("path", "range"),
		TypeMessage: newFields("role", "text text_ref"),
		TypeOther:   newFields("tool_name raw", ""),
	}
)

func (d *decoder) schemaVersion() string {
	switch k := d.kind(); k {
	case 0:
		return ""
	case '"':
		return d.str()
	default:
		d.note(wrongVersion(d.shown()))
		return ""
	}
}

func (d *decoder) session() SessionHeader {
	var h SessionHeader
	d.object(sessionFields, func(name string) {
		switch name {
		case "id":
			h.ID = d.reqString()
		case "agent":
			h.Agent = Agent{}
			d.object(agentFields, func(name string) {
				switch name {
				case "kind":
					h.Agent.Kind = d.reqString()
				case "version":
					h.Agent.Version = d.reqString()
				case "format_version":
					h.Agent.FormatVersion = d.optString()
				}
			})
		case "workspace":
			h.Workspace = Workspace{}
			d.object(workspaceFields, func(name string) {
				switch name {
				case "root":
					h.Workspace.Root = d.reqString()
				case "repo":
					h.Workspace.Repo = d.optString()
				}
			})
		case "started_at":
			h.StartedAt = d.timestamp()
		case "ended_at":
			h.EndedAt = d.timestamp()
		case "source":
			h.Source = d.optString()
		case "metrics":
			h.Metrics = d.metrics()
		}
	})
	return h
}

func (d *decoder) metrics() *Metrics {
	m := &Metrics{}
	isObject := d.object(metricsFields, func(name string) {
		switch name {
		case "api_requests":
			m.APIRequests = d.count()
		case "cost_usd":
			m.CostUSD = d.cost()
		case "tokens":
			m.Tokens = Tokens{}
			d.object(tokensFields, func(name string) {
				switch name {
				case "input":
					m.Tokens.Input = d.count()
				case "output":
					m.Tokens.Output = d.count()
				case "cache_read":
					m.Tokens.CacheRead = d.count()
				case "cache_creation":
					m.Tokens.CacheCreation = d.count()
				}
			})
		}
	})
	if !isObject {
		return nil
	}
	return m
}

func (d *decoder) cost() float64 {
	switch k := d.kind(); k {
	case 0:
		return 0
	case '0':
		n := d.value()
		f, err := strconv.ParseFloat(string(n), 64)
		if err != nil {
			d.note(costProblem(string(n)))
		}
		return f
	default:
		d.note(costProblem(string(d.shown())))
		return 0
	}
}

func (d *decoder) segment(g *Segment) {
	d.object(segmentFields, func(name string) {
		switch name {
		case "index":
			g.Index = d.count()
		case "start_reason":
			g.StartReason = d.reqString()
		case "started_at":
			g.StartedAt = d.timestamp()
		case "ended_at":
			g.EndedAt = d.timestamp()
		case "source_files":
			g.SourceFiles = d.strings()
		}
	})
}

func (d *decoder) actor(a *Actor) {
	d.object(actorFields, func(name string) {
		switch name {
		case "id":
			a.ID = d.reqString()
		case "parent_id":
			a.ParentID = d.optString()
		case "type":
			a.Type = d.reqString()
		case "label":
			a.Label = d.optString()
		}
	})
}

func (d *decoder) turn(t *Turn) {
	d.object(turnFields, func(name string) {
		switch name {
		case "id":
			t.ID = d.reqString()
		case "session_id":
			t.SessionID = d.reqString()
		case "segment_index":
			t.SegmentIndex = d.count()
		case "actor_id":
			t.ActorID = d.reqString()
		case "index":
			t.Index = d.count()
		case "prompt_id":
			t.PromptID = d.optString()
		case "mode":
			t.Mode = d.optString()
		case "started_at":
			t.StartedAt = d.timestamp()
		case "step_ids":
			d.array(func(int) { d.skip() }) // required, but the store rebuilds it
		}
	})
}

func (d *decoder) step(st *Step) {
	// The payload's fields depend on the step's type: a payload that
	// comes before the type (a writer that sorts names) is only scanned,
	// and read from its bytes once the step's last type is known.
	var payload struct {
		start, end int64
		typ        string
		read       bool
	}
	d.object(stepFields, func(name string) {
		switch name {
		case "id":
			st.ID = d.reqString()
		case "session_id":
			st.SessionID = d.reqString()
		case "segment_index":
			st.SegmentIndex = d.count()
		case "turn_id":
			st.TurnID = d.reqString()
		case "actor_id":
			st.ActorID = d.reqString()
		case "seq":
			st.Seq = d.count()
		case "at":
			st.At = d.timestamp()
		case "type":
			st.Type = d.reqString()
		case "decision":
			st.Decision = d.reqString()
		case "outcome":
			st.Outcome = d.reqString()
		case "content_status":
			st.ContentStatus = d.reqString()
		case "channels":
			st.Channels = d.strings()
		case "error":
			st.Error = nil
			e := &StepError{}
			if d.object(stepErrorFields, func(name string) {
				switch name {
				case "type":
					e.Type = d.reqString()
				case "message":
					e.Message = d.reqString()
				}
			}) {
				st.Error = e
			}
		case "flags":
			st.Flags, _ = readRecords(d, math.MaxInt, (*decoder).flag)
		case "payload":
			payload.start, payload.typ, payload.read = d.dec.InputOffset(), st.Type, true
			st.Payload = d.payload(st.Type)
			payload.end = d.dec.InputOffset()
		}
	})
	if payload.read && payload.typ != st.Type && d.err == nil {
		n := d.push("payload")
		d.found.forget(string(d.path))
		again := newDecoder(bytes.TrimLeft(d.body[payload.start:payload.end], ": \t\r\n"), d.found)
		again.path = d.path
		st.Payload = again.payload(st.Type)
		if again.err != nil {
			d.fail(again.err)
		}
		d.path = d.path[:n]
	}
}

func (d *decoder) flag(f *Flag) {
	d.object(flagFields, func(name string) {
		switch name {
		case "kind":
			f.Kind = d.reqString()
		case "severity":
			f.Severity = d.reqString()
		case "reason":
			f.Reason = d.reqString()
		}
	})
}

// payload reads the fields of one step type; with an unknown type no field
// is read, and none is reported: only the type is wrong.
func (d *decoder) payload(typ string) Payload {
	var p Payload
	fs, known := payloadFieldsOf[typ]
	if !known {
		switch k := d.kind(); k {
		case 0:
		case '{':
			d.skip()
		default:
			d.wrong("expected object, got " + jsonKind(k))
		}
		return p
	}
	d.object(fs, func(name string) {
		switch name {
		case "command":
			p.Command = d.optContent()
		case "stdout":
			p.Stdout = d.optContent()
		case "stderr":
			p.Stderr = d.optContent()
		case "exit_code":
			p.ExitCode = nil
			if i, ok := d.int(); ok {
				p.ExitCode = &i
			}
		case "cwd":
			p.Cwd = d.optContent()
		case "output_ref":
			p.OutputRef = d.optContent()
		case "path":
			p.Path = d.reqString()
		case "old_string":
			p.OldString = d.optContent()
		case "new_string":
			p.NewString = d.optContent()
		case "structured_patch":
			p.StructuredPatch = d.openShape()
		case "is_full_write":
			p.IsFullWrite = d.bool()
		case "landed_in_final_state":
			p.LandedInFinalState = d.bool()
		case "range":
			p.Range = d.lineRange()
		case "role":
			p.Role = d.reqString()
		case "text":
			p.Text = d.optContent()
		case "text_ref":
			p.TextRef = d.optContent()
		case "tool_name":
			p.ToolName = d.reqString()
		case "raw":
			p.Raw = d.openShape() // Validate checks only that it is an object
		}
	})
	return p
}

// lineRange reads a read step's range: an array of exactly two whole
// numbers; of two that are not, the first is noted.
func (d *decoder) lineRange() *[2]int64 {
	var (
		r    [2]int64
		msgs [2]string
	)
	k := d.kind()
	if k != '[' {
		if k != 0 {
			d.wrong("expected array of exactly two integers, got " + jsonKind(k))
		}
		return nil
	}
	n := d.array(func(i int) {
		switch k := d.kind(); {
		case i >= 2:
			d.skip()
		case k == '0':
			r[i], msgs[i] = integer(d.value())
		default:
			msgs[i] = "expected integer, got " + jsonKind(k)
			d.skip()
		}
	})
	if n != 2 {
		d.note("expected array of exactly two integers, got array")
		return nil
	}
	for i, msg := range msgs {
		if msg != "" {
			n := d.pushIndex(i)
			d.note(msg)
			d.path = d.path[:n]
			return nil
		}
	}
	return &r
}

// raw renders a decoded value as compact JSON: an open shape as it came.
func raw(v any) json.RawMessage {
	if o, ok := v.(openShape); ok {
		return json.RawMessage(o)
	}
	b, _ := json.Marshal(v) // a decoded tree always marshals
	return b
}

// fieldNames are the names of the batch format, by their JSON: a name
// decoded is one of these strings, not a new one per record.
var fieldNames = func() map[string]string {
	m := map[string]string{}
	for _, fs := range []fields{batchFields, sessionFields, agentFields, workspaceFields, metricsFields, tokensFields,
		segmentFields, actorFields, turnFields, stepFields, stepErrorFields, flagFields} {
		for _, name := range fs.names {
			m[`"`+name+`"`] = name
		}
	}
	for _, fs := range payloadFieldsOf {
		for _, name := range fs.names {
			m[`"`+name+`"`] = name
		}
	}
	return m
}()

// readName reads an object's name as a Token's String would: escapes
// decoded, invalid UTF-8 as U+FFFD.
func readName(dec *jsontext.Decoder) (string, error) {
	raw, err := dec.ReadValue()
	if err != nil {
		return "", err
	}
	if name, ok := fieldNames[string(raw)]; ok {
		return name, nil
	}
	b, _ := jsontext.AppendUnquote(nil, raw) // its only error is the invalid UTF-8 it replaced
	return string(b), nil
}

// openShape holds the exact JSON of a value named raw or structured_patch
// inside a value decodeTree decodes, which shown writes as it came.
type openShape jsontext.Value

// openFields are the names whose values decodeTree keeps as openShape.
var openFields = map[string]bool{"raw": true, "structured_patch": true}

// decodeTree decodes one JSON value into maps, slices, strings, booleans,
// nil, json.Number (the number's own text) and openShape, for shown: a
// problem shows a value of the wrong type as encoding/json writes this
// tree. Invalid UTF-8 becomes U+FFFD and a repeated name keeps its last
// value, as encoding/json does; anything after the value is an error.
func decodeTree(body []byte) (any, error) {
	dec := jsontext.NewDecoder(bytes.NewReader(body), jsontext.AllowInvalidUTF8(true), jsontext.AllowDuplicateNames(true))
	v, err := readTree(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return nil, errors.New("data after the JSON value")
	}
	return v, nil
}

func readTree(dec *jsontext.Decoder) (any, error) {
	tok, err := dec.ReadToken()
	if err != nil {
		return nil, err
	}
	switch tok.Kind() {
	case '{':
		m := map[string]any{}
		for dec.PeekKind() != '}' {
			key, err := readName(dec)
			if err != nil {
				return nil, err
			}
			if openFields[key] {
				val, err := dec.ReadValue()
				if err != nil {
					return nil, err
				}
				if val.Kind() == 'n' {
					m[key] = nil
				} else {
					// Compacted and escaped as encoding/json writes it, so the
					// value reads back byte for byte as it is stored.
					b, err := json.Marshal(json.RawMessage(val))
					if err != nil {
						return nil, err
					}
					m[key] = openShape(b)
				}
				continue
			}
			if m[key], err = readTree(dec); err != nil {
				return nil, err
			}
		}
		_, err := dec.ReadToken()
		return m, err
	case '[':
		a := []any{}
		for dec.PeekKind() != ']' {
			v, err := readTree(dec)
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
		_, err := dec.ReadToken()
		return a, err
	case '"':
		return tok.String(), nil
	case '0':
		return json.Number(tok.String()), nil
	case 't', 'f':
		return tok.Bool(), nil
	case 'n':
		return nil, nil
	}
	return nil, errors.New("unexpected JSON token")
}
