package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
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
	v, err := decodeTree(body)
	if err != nil {
		return nil, ErrNotJSON
	}
	top, ok := v.(map[string]any)
	if !ok {
		return nil, ErrNotObject
	}
	// Validate checks the counts too; checking them here first spares
	// decoding records that would be refused anyway.
	for _, kind := range itemKinds {
		if a, ok := top[kind].([]any); ok {
			if err := checkCount(kind, len(a)); err != nil {
				return nil, err
			}
		}
	}
	found := &jsonProblems{}
	b := (&object{found: found, m: top}).batch()
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

// object is one JSON object being decoded. Reading a field marks it
// known; done notes the fields nobody read as unknown. Its path is built
// only for a problem: a valid batch is decoded without one string per
// record.
type object struct {
	found   *jsonProblems // where the problems of the JSON go
	parent  *object       // nil for the batch itself
	name    string        // the field of parent that holds it
	index   int           // its index in that field's array, or -1
	m       map[string]any
	seen    []string
	present int // fields read that were in m: when all of m, none is unknown
}

// path is where the object is in the body: "" for the batch itself.
func (o *object) path() string {
	if o.parent == nil {
		return ""
	}
	p := o.parent.at(o.name)
	if o.index >= 0 {
		p += "[" + strconv.Itoa(o.index) + "]"
	}
	return p
}

func (o *object) at(name string) string {
	p := o.path()
	if p == "" {
		return name
	}
	return p + "." + name
}

// get returns the field's value; ok is false when it is missing or null,
// in which case the problem has been noted.
func (o *object) get(name string, required bool) (v any, ok bool) {
	v, present := o.m[name]
	if present && !slices.Contains(o.seen, name) {
		o.present++
	}
	o.seen = append(o.seen, name)
	switch {
	case !present && required:
		o.found.add(o.at(name), "required")
	case present && v == nil && !required:
		o.found.add(o.at(name), "must be omitted, not null")
	case present && v == nil:
		o.found.add(o.at(name), "expected a value, got null")
	case present:
		return v, true
	}
	return nil, false
}

func (o *object) done() {
	if o.present == len(o.m) {
		return
	}
	var unknown []string
	for k := range o.m {
		if !slices.Contains(o.seen, k) {
			unknown = append(unknown, k)
		}
	}
	slices.Sort(unknown)
	path := o.path()
	if o.found.unknown == nil {
		o.found.unknown = map[string][]string{}
	}
	for _, k := range unknown {
		o.found.unknown[path] = append(o.found.unknown[path], o.at(k))
	}
}

func jsonType(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	case openShape:
		return rawType(json.RawMessage(x))
	}
	return fmt.Sprintf("%T", v)
}

func (o *object) wrongType(name, want string, v any) {
	o.found.add(o.at(name), fmt.Sprintf("expected %s, got %s", want, jsonType(v)))
}

// text reads a string field. An optional one sent empty gets the problem
// its rule gives the empty string, since the batch cannot tell it from one
// left out; required and content fields pass it on to Validate.
func (o *object) text(name string, required bool, rule func(string) string) string {
	v, ok := o.get(name, required)
	if !ok {
		return ""
	}
	s, isStr := v.(string)
	if !isStr {
		o.wrongType(name, "string", v)
		return ""
	}
	if s == "" && !required && rule != nil {
		o.found.add(o.at(name), rule(s))
	}
	return s
}

func (o *object) reqString(name string) string { return o.text(name, true, nil) }
func (o *object) optString(name string) string { return o.text(name, false, nonEmpty) }

// optContent reads an optional field that may hold an empty string.
func (o *object) optContent(name string) *string {
	v, ok := o.get(name, false)
	if !ok {
		return nil
	}
	s, isStr := v.(string)
	if !isStr {
		o.wrongType(name, "string", v)
		return nil
	}
	return &s
}

// timestamp reads a timestamp field; a value that is not a string gets the
// timestamp rule's own message.
func (o *object) timestamp(name string, required bool) string {
	v, ok := o.get(name, required)
	if !ok {
		return ""
	}
	s, isStr := v.(string)
	if !isStr {
		o.found.add(o.at(name), isoTimestamp(""))
		return ""
	}
	if s == "" && !required {
		o.found.add(o.at(name), isoTimestamp(s))
	}
	return s
}

// integer checks a JSON number is whole (1, 1.0 and 1e3 are; 1.5 is not).
func integer(v any) (int64, string) {
	n, isNum := v.(json.Number)
	if !isNum {
		return 0, "expected integer, got " + jsonType(v)
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

func (o *object) int(name string, required bool) (int64, bool) {
	v, ok := o.get(name, required)
	if !ok {
		return 0, false
	}
	i, msg := integer(v)
	if msg != "" {
		o.found.add(o.at(name), msg)
		return 0, false
	}
	return i, true
}

func (o *object) count(name string) int64 { i, _ := o.int(name, true); return i }

func (o *object) bool(name string, required bool) *bool {
	v, ok := o.get(name, required)
	if !ok {
		return nil
	}
	b, isBool := v.(bool)
	if !isBool {
		o.wrongType(name, "boolean", v)
		return nil
	}
	return &b
}

func (o *object) object(name string, required bool) *object {
	v, ok := o.get(name, required)
	if !ok {
		return nil
	}
	m, isObj := v.(map[string]any)
	if !isObj {
		o.wrongType(name, "object", v)
		return nil
	}
	return &object{found: o.found, parent: o, name: name, index: -1, m: m}
}

func (o *object) array(name string, required bool) []any {
	v, ok := o.get(name, required)
	if !ok {
		return nil
	}
	a, isArr := v.([]any)
	if !isArr {
		o.wrongType(name, "array", v)
		return nil
	}
	return a
}

// strings reads a required array of strings (possibly empty).
func (o *object) strings(name string) []string {
	a := o.array(name, true)
	out := make([]string, len(a))
	for i, v := range a {
		s, isStr := v.(string)
		if !isStr {
			o.found.add(fmt.Sprintf("%s[%d]", o.at(name), i), "expected string, got "+jsonType(v))
		}
		out[i] = s
	}
	return out
}

// items calls each for every element of an array of objects; an element
// that is not an object is noted (its record stays the zero value).
func (o *object) items(name string, required bool, each func(i int, item *object)) {
	a := o.array(name, required)
	for i, v := range a {
		m, isObj := v.(map[string]any)
		if !isObj {
			o.found.add(fmt.Sprintf("%s[%d]", o.at(name), i), "expected object, got "+jsonType(v))
			continue
		}
		item := &object{found: o.found, parent: o, name: name, index: i, m: m}
		each(i, item)
		item.done()
	}
}

// raw renders a decoded value as compact JSON: an open shape as it came.
func raw(v any) json.RawMessage {
	if o, ok := v.(openShape); ok {
		return json.RawMessage(o)
	}
	b, _ := json.Marshal(v) // a decoded tree always marshals
	return b
}

// decodeRecords decodes an array of objects into a batch's slice of one
// kind, one record per element. A missing or empty optional array stays nil, as
// in a batch that leaves the kind out; a required one is never nil.
func decodeRecords[T any](o *object, name string, required bool, each func(rec *T, item *object)) []T {
	var recs []T
	if a, ok := o.m[name].([]any); ok && (len(a) > 0 || required) {
		recs = make([]T, len(a))
	} else if required {
		recs = []T{}
	}
	o.items(name, required, func(i int, item *object) { each(&recs[i], item) })
	return recs
}

func (top *object) batch() *Batch {
	b := &Batch{}
	if v, ok := top.get("schema_version", true); ok {
		s, isStr := v.(string)
		if !isStr {
			top.found.add("schema_version", wrongVersion(raw(v)))
		}
		b.SchemaVersion = s
	}
	if s := top.object("session", true); s != nil {
		b.Session = s.session()
		s.done()
	}
	b.Segments = decodeRecords(top, "segments", false, func(g *Segment, o *object) { *g = o.segment() })
	b.Actors = decodeRecords(top, "actors", false, func(a *Actor, o *object) { *a = o.actor() })
	b.Turns = decodeRecords(top, "turns", false, func(t *Turn, o *object) { *t = o.turn() })
	b.Steps = decodeRecords(top, "steps", false, func(st *Step, o *object) { *st = o.step() })
	top.done()
	return b
}

func (o *object) session() SessionHeader {
	h := SessionHeader{ID: o.reqString("id")}
	if a := o.object("agent", true); a != nil {
		h.Agent = Agent{Kind: a.reqString("kind"), Version: a.reqString("version"), FormatVersion: a.optString("format_version")}
		a.done()
	}
	if w := o.object("workspace", true); w != nil {
		h.Workspace = Workspace{Root: w.reqString("root"), Repo: w.optString("repo")}
		w.done()
	}
	h.StartedAt = o.timestamp("started_at", true)
	h.EndedAt = o.timestamp("ended_at", false)
	h.Source = o.optString("source")
	if m := o.object("metrics", false); m != nil {
		h.Metrics = &Metrics{APIRequests: m.count("api_requests")}
		if v, ok := m.get("cost_usd", true); ok {
			n, _ := v.(json.Number)
			f, err := strconv.ParseFloat(string(n), 64)
			if err != nil {
				m.found.add(m.at("cost_usd"), costProblem(string(raw(v))))
			}
			h.Metrics.CostUSD = f
		}
		if t := m.object("tokens", true); t != nil {
			h.Metrics.Tokens = Tokens{Input: t.count("input"), Output: t.count("output"), CacheRead: t.count("cache_read"), CacheCreation: t.count("cache_creation")}
			t.done()
		}
		m.done()
	}
	return h
}

func (o *object) segment() Segment {
	return Segment{
		Index:       o.count("index"),
		StartReason: o.reqString("start_reason"),
		StartedAt:   o.timestamp("started_at", true),
		EndedAt:     o.timestamp("ended_at", false),
		SourceFiles: o.strings("source_files"),
	}
}

func (o *object) actor() Actor {
	return Actor{ID: o.reqString("id"), ParentID: o.optString("parent_id"), Type: o.reqString("type"), Label: o.optString("label")}
}

func (o *object) turn() Turn {
	t := Turn{
		ID:           o.reqString("id"),
		SessionID:    o.reqString("session_id"),
		SegmentIndex: o.count("segment_index"),
		ActorID:      o.reqString("actor_id"),
		Index:        o.count("index"),
		PromptID:     o.optString("prompt_id"),
		Mode:         o.optString("mode"),
		StartedAt:    o.timestamp("started_at", true),
	}
	o.array("step_ids", true) // required, but the store rebuilds it
	return t
}

func (o *object) step() Step {
	st := Step{
		ID:            o.reqString("id"),
		SessionID:     o.reqString("session_id"),
		SegmentIndex:  o.count("segment_index"),
		TurnID:        o.reqString("turn_id"),
		ActorID:       o.reqString("actor_id"),
		Seq:           o.count("seq"),
		At:            o.timestamp("at", true),
		Type:          o.reqString("type"),
		Decision:      o.reqString("decision"),
		Outcome:       o.reqString("outcome"),
		ContentStatus: o.reqString("content_status"),
		Channels:      o.strings("channels"),
	}
	if e := o.object("error", false); e != nil {
		st.Error = &StepError{Type: e.reqString("type"), Message: e.reqString("message")}
		e.done()
	}
	st.Flags = decodeRecords(o, "flags", true, func(f *Flag, o *object) {
		*f = Flag{Kind: o.reqString("kind"), Severity: o.reqString("severity"), Reason: o.reqString("reason")}
	})
	if p := o.object("payload", true); p != nil {
		st.Payload = p.payload(st.Type)
		p.done()
	}
	return st
}

// payload reads the fields of one step type; with an unknown type no field
// is read, and none is reported: only the type is wrong.
func (o *object) payload(typ string) Payload {
	var p Payload
	switch typ {
	case TypeCommand:
		p.Command = o.optContent("command")
		p.Stdout = o.optContent("stdout")
		p.Stderr = o.optContent("stderr")
		if i, ok := o.int("exit_code", false); ok {
			p.ExitCode = &i
		}
		p.Cwd = o.optContent("cwd")
		p.OutputRef = o.optContent("output_ref")
	case TypeEdit:
		p.Path = o.reqString("path")
		p.OldString = o.optContent("old_string")
		p.NewString = o.optContent("new_string")
		if v, ok := o.get("structured_patch", false); ok {
			p.StructuredPatch = raw(v)
		}
		p.IsFullWrite = o.bool("is_full_write", true)
		p.LandedInFinalState = o.bool("landed_in_final_state", false)
	case TypeRead:
		p.Path = o.reqString("path")
		if v, ok := o.get("range", false); ok {
			p.Range = o.lineRange(v)
		}
	case TypeMessage:
		p.Role = o.reqString("role")
		p.Text = o.optContent("text")
		p.TextRef = o.optContent("text_ref")
	case TypeOther:
		p.ToolName = o.reqString("tool_name")
		if v, ok := o.get("raw", true); ok {
			p.Raw = raw(v) // an open shape: Validate checks only that it is an object
		}
	default:
		o.present = len(o.m)
	}
	return p
}

func (o *object) lineRange(v any) *[2]int64 {
	a, isArr := v.([]any)
	if !isArr || len(a) != 2 {
		o.found.add(o.at("range"), "expected array of exactly two integers, got "+jsonType(v))
		return nil
	}
	var r [2]int64
	for i, x := range a {
		n, msg := integer(x)
		if msg != "" {
			o.found.add(fmt.Sprintf("%s[%d]", o.at("range"), i), msg)
			return nil
		}
		r[i] = n
	}
	return &r
}

// fieldNames are the names of the batch format, by their JSON: a name
// decoded is one of these strings, not a new one per record.
var fieldNames = func() map[string]string {
	m := map[string]string{}
	for _, name := range strings.Fields(`schema_version session segments actors turns steps usage
		id agent kind version format_version workspace root repo started_at ended_at source metrics
		cost_usd api_requests tokens input output cache_read cache_creation
		index start_reason source_files parent_id type label
		session_id segment_index actor_id prompt_id mode step_ids
		turn_id seq at decision outcome content_status channels error message flags severity reason payload
		command stdout stderr exit_code cwd output_ref path old_string new_string structured_patch
		is_full_write landed_in_final_state range role text text_ref tool_name raw`) {
		m[`"`+name+`"`] = name
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

// openShape holds the exact JSON of a field the store keeps as it was
// sent, without inspecting it: an other step's raw and an edit's
// structured_patch.
type openShape jsontext.Value

// openFields are the names whose values decodeTree keeps as openShape.
var openFields = map[string]bool{"raw": true, "structured_patch": true}

// decodeTree decodes one JSON value in a single pass into maps, slices,
// strings, booleans, nil, json.Number (the number's own text) and
// openShape. Invalid UTF-8 becomes U+FFFD and a repeated name keeps its
// last value, as encoding/json does; anything after the value is an error.
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
