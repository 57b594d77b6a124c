package store

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-json-experiment/json/jsontext"
)

// MaxProblems is the most problems an InvalidError lists; the rest are counted.
const MaxProblems = 100

// ParseBatch decodes a request body and runs the envelope and schema checks
// of a v1.2 batch. It returns ErrNotJSON, ErrNotObject, a *TooManyError or
// an *InvalidError; the reference checks need the store and run in Apply.
func ParseBatch(body []byte) (*Batch, error) {
	v, err := decodeTree(body)
	if err != nil {
		return nil, ErrNotJSON
	}
	top, ok := v.(map[string]any)
	if !ok {
		return nil, ErrNotObject
	}
	for _, kind := range []string{"segments", "actors", "turns", "steps"} {
		if a, ok := top[kind].([]any); ok && len(a) > MaxItems {
			return nil, &TooManyError{Kind: kind, Count: len(a)}
		}
	}
	c := &checker{}
	b := c.batch(&object{c: c, m: top})
	if len(c.problems) > 0 {
		return nil, newInvalidError(c.problems)
	}
	return b, nil
}

// checker walks a decoded JSON tree, building records and collecting every
// problem with its path into the request body.
type checker struct {
	problems []Problem
}

func (c *checker) add(path, msg string) {
	c.problems = append(c.problems, Problem{Path: path, Message: msg})
}

// object is one JSON object under validation. Reading a field marks it
// known; done reports the fields nobody read as unknown.
type object struct {
	c       *checker
	path    string
	m       map[string]any
	seen    []string
	present int // fields read that were in m: when all of m, none is unknown
}

func (o *object) at(name string) string {
	if o.path == "" {
		return name
	}
	return o.path + "." + name
}

// get returns the field's value; ok is false when it is missing or null,
// in which case the problem has been recorded.
func (o *object) get(name string, required bool) (v any, ok bool) {
	v, present := o.m[name]
	if present && !slices.Contains(o.seen, name) {
		o.present++
	}
	o.seen = append(o.seen, name)
	switch {
	case !present && required:
		o.c.add(o.at(name), "required")
	case present && v == nil && !required:
		o.c.add(o.at(name), "must be omitted, not null")
	case present && v == nil:
		o.c.add(o.at(name), "expected a value, got null")
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
	for _, k := range unknown {
		o.c.add(o.at(k), "unknown field")
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
		return map[jsontext.Kind]string{'{': "object", '[': "array", '"': "string", '0': "number", 't': "boolean", 'f': "boolean"}[jsontext.Value(x).Kind()]
	}
	return fmt.Sprintf("%T", v)
}

func (o *object) wrongType(name, want string, v any) {
	o.c.add(o.at(name), fmt.Sprintf("expected %s, got %s", want, jsonType(v)))
}

// text reads a string field. Content fields may be empty; all others must not.
func (o *object) text(name string, required, mayBeEmpty bool) (string, bool) {
	v, ok := o.get(name, required)
	if !ok {
		return "", false
	}
	s, isStr := v.(string)
	if !isStr {
		o.wrongType(name, "string", v)
		return "", false
	}
	if s == "" && !mayBeEmpty {
		o.c.add(o.at(name), "must not be empty")
		return "", false
	}
	return s, true
}

func (o *object) reqString(name string) string { s, _ := o.text(name, true, false); return s }
func (o *object) optString(name string) string { s, _ := o.text(name, false, false); return s }

// optContent reads an optional field that may hold an empty string.
func (o *object) optContent(name string) *string {
	if s, ok := o.text(name, false, true); ok {
		return &s
	}
	return nil
}

func (o *object) enum(name string, values []string) string {
	s, ok := o.text(name, true, true)
	if ok && !slices.Contains(values, s) {
		o.c.add(o.at(name), fmt.Sprintf("expected one of %s, got %q", strings.Join(values, ", "), s))
		return ""
	}
	return s
}

// timestampRE is an ISO 8601 date-time with a zone and optional fractions.
var timestampRE = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$`)

// ParseTimestamp parses a v1.2 timestamp.
func ParseTimestamp(s string) (time.Time, bool) {
	if !timestampRE.MatchString(s) {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	return t, err == nil
}

func (o *object) timestamp(name string, required bool) string {
	v, ok := o.get(name, required)
	if !ok {
		return ""
	}
	s, isStr := v.(string)
	if _, valid := ParseTimestamp(s); !isStr || !valid {
		o.c.add(o.at(name), "expected ISO 8601 date-time with timezone")
		return ""
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

func (o *object) int(name string, required, nonNegative bool) (int64, bool) {
	v, ok := o.get(name, required)
	if !ok {
		return 0, false
	}
	i, msg := integer(v)
	if msg == "" && nonNegative && i < 0 {
		msg = fmt.Sprintf("expected integer >= 0, got %d", i)
	}
	if msg != "" {
		o.c.add(o.at(name), msg)
		return 0, false
	}
	return i, true
}

func (o *object) count(name string) int64 { i, _ := o.int(name, true, true); return i }

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
	return &object{c: o.c, path: o.at(name), m: m}
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

// strings reads a required array of non-empty strings (possibly empty).
func (o *object) strings(name string) []string {
	a := o.array(name, true)
	out := make([]string, 0, len(a))
	for i, v := range a {
		s, isStr := v.(string)
		switch {
		case !isStr:
			o.c.add(fmt.Sprintf("%s[%d]", o.at(name), i), "expected string, got "+jsonType(v))
		case s == "":
			o.c.add(fmt.Sprintf("%s[%d]", o.at(name), i), "must not be empty")
		default:
			out = append(out, s)
		}
	}
	return out
}

// items calls each for every element of an array of objects.
func (o *object) items(name string, required bool, each func(*object)) {
	for i, v := range o.array(name, required) {
		path := fmt.Sprintf("%s[%d]", o.at(name), i)
		m, isObj := v.(map[string]any)
		if !isObj {
			o.c.add(path, "expected object, got "+jsonType(v))
			continue
		}
		item := &object{c: o.c, path: path, m: m}
		each(item)
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

func (c *checker) batch(top *object) *Batch {
	b := &Batch{}
	if v, ok := top.get("schema_version", true); ok {
		if s, _ := v.(string); s != SchemaVersion {
			c.add("schema_version", fmt.Sprintf("expected %q, got %s", SchemaVersion, raw(v)))
		}
		b.SchemaVersion = SchemaVersion
	}
	if s := top.object("session", true); s != nil {
		b.Session = s.session()
		s.done()
	}
	top.items("segments", false, func(o *object) { b.Segments = append(b.Segments, o.segment()) })
	top.items("actors", false, func(o *object) { b.Actors = append(b.Actors, o.actor()) })
	top.items("turns", false, func(o *object) { b.Turns = append(b.Turns, o.turn()) })
	top.items("steps", false, func(o *object) { b.Steps = append(b.Steps, o.step()) })
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
			f, err := strconv.ParseFloat(string(asNumber(v)), 64)
			if err != nil || f < 0 {
				m.c.add(m.at("cost_usd"), fmt.Sprintf("expected number >= 0, got %s", raw(v)))
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

func asNumber(v any) json.Number {
	n, _ := v.(json.Number)
	return n
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
		Type:          o.enum("type", StepTypes),
		Decision:      o.reqString("decision"),
		Outcome:       o.reqString("outcome"),
		ContentStatus: o.enum("content_status", contentStatuses),
		Channels:      o.strings("channels"),
		Flags:         []Flag{},
	}
	if e := o.object("error", false); e != nil {
		st.Error = &StepError{Type: e.reqString("type")}
		st.Error.Message, _ = e.text("message", true, true)
		e.done()
	}
	o.items("flags", true, func(f *object) {
		st.Flags = append(st.Flags, Flag{Kind: f.reqString("kind"), Severity: f.enum("severity", severities), Reason: f.reqString("reason")})
	})
	if p := o.object("payload", true); p != nil {
		st.Payload = p.payload(st.Type)
		p.done()
	}
	return st
}

// payload reads the fields of one step type; with an unknown type only the
// type error is reported.
func (o *object) payload(typ string) Payload {
	var p Payload
	switch typ {
	case TypeCommand:
		p.Command = o.optContent("command")
		p.Stdout = o.optContent("stdout")
		p.Stderr = o.optContent("stderr")
		if i, ok := o.int("exit_code", false, false); ok {
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
			if jsonType(v) != "object" {
				o.wrongType("raw", "object", v)
			} else {
				p.Raw = raw(v) // an open shape: not inspected
			}
		}
	default:
		o.present = len(o.m) // with an unknown type, only the type error is reported
	}
	return p
}

func (o *object) lineRange(v any) *[2]int64 {
	a, isArr := v.([]any)
	if !isArr || len(a) != 2 {
		o.c.add(o.at("range"), "expected array of exactly two integers, got "+jsonType(v))
		return nil
	}
	var r [2]int64
	for i, x := range a {
		n, msg := integer(x)
		if msg != "" {
			o.c.add(fmt.Sprintf("%s[%d]", o.at("range"), i), msg)
			return nil
		}
		r[i] = n
	}
	return &r
}
