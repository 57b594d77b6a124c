package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// MaxProblems is the most problems an InvalidError lists; the rest are counted.
const MaxProblems = 100

// itemKinds are a batch's kinds of records, in the order they are checked.
var itemKinds = []string{"segments", "actors", "turns", "steps"}

// Validate checks a batch against the v1.2 schema: the number of records
// of each kind, then every field's rules. Apply calls it for every writer
// (ingest, import, capture, the hook, the demo), so a batch built in Go
// meets the same rules as one pushed as JSON. It returns a *TooManyError
// or an *InvalidError whose paths are those of the batch's JSON, e.g.
// steps[3].payload.path; the reference checks need the store and run in
// Apply.
func (b *Batch) Validate() error { return b.validate(nil) }

// validate reports, in the order of the batch's fields, the problems of
// the JSON it was decoded from (found, nil for a batch built in Go) where
// they are, and the value rules' problems everywhere else.
func (b *Batch) validate(found *jsonProblems) error {
	for i, n := range []int{len(b.Segments), len(b.Actors), len(b.Turns), len(b.Steps)} {
		if err := checkCount(itemKinds[i], n); err != nil {
			return err
		}
	}
	if err := checkCount("usage records", len(b.Usage)); err != nil {
		return err
	}
	v := &validator{json: found}
	v.batch(b)
	v.usage(b.Usage)
	if found != nil {
		v.problems = append(v.problems, found.rest()...)
	}
	if len(v.problems) > 0 {
		return newInvalidError(v.problems)
	}
	return nil
}

// checkCount refuses more than MaxItems records of one kind.
func checkCount(kind string, n int) error {
	if n > MaxItems {
		return &TooManyError{Kind: kind, Count: n}
	}
	return nil
}

// The value rules. Each returns the problem's message, or "" when the value
// meets the rule.

func nonEmpty(s string) string {
	if s == "" {
		return "must not be empty"
	}
	return ""
}

// ParseTimestamp parses a v1.2 timestamp.
func ParseTimestamp(s string) (time.Time, bool) {
	if !timestampShape(s) {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	return t, err == nil
}

// timestampShape reports whether s is an ISO 8601 date-time with a zone
// and optional fractions, the regular expression
// \d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2}), matched by
// hand: every record has a timestamp, and a regexp was most of the cost
// of validating a batch.
func timestampShape(s string) bool {
	const head = "dddd-dd-ddTdd:dd:dd"
	if len(s) <= len(head) || !digits(s[:len(head)], head) {
		return false
	}
	rest := s[len(head):]
	if rest[0] == '.' {
		n := 1
		for n < len(rest) && '0' <= rest[n] && rest[n] <= '9' {
			n++
		}
		if n == 1 {
			return false
		}
		rest = rest[n:]
	}
	return rest == "Z" || len(rest) == 6 && (rest[0] == '+' || rest[0] == '-') && digits(rest[1:], "dd:dd")
}

// digits matches s against a pattern where d stands for an ASCII digit and
// any other byte for itself.
func digits(s, pattern string) bool {
	if len(s) != len(pattern) {
		return false
	}
	for i := range len(pattern) {
		if c := s[i]; pattern[i] == 'd' && (c < '0' || c > '9') || pattern[i] != 'd' && c != pattern[i] {
			return false
		}
	}
	return true
}

func isoTimestamp(s string) string {
	if _, ok := ParseTimestamp(s); !ok {
		return "expected ISO 8601 date-time with timezone"
	}
	return ""
}

// optTimestamp is the rule of an optional timestamp: empty is left out.
func optTimestamp(s string) string {
	if s == "" {
		return ""
	}
	return isoTimestamp(s)
}

func nonNegative(i int64) string {
	if i < 0 {
		return fmt.Sprintf("expected integer >= 0, got %d", i)
	}
	return ""
}

func oneOf(s string, values []string) string {
	if !slices.Contains(values, s) {
		return fmt.Sprintf("expected one of %s, got %q", strings.Join(values, ", "), s)
	}
	return ""
}

// wrongVersion is the schema_version problem; got is the value as JSON.
func wrongVersion(got []byte) string {
	return fmt.Sprintf("expected %q, got %s", SchemaVersion, got)
}

func costProblem(got string) string { return "expected number >= 0, got " + got }

func cost(f float64) string {
	if f >= 0 && !math.IsInf(f, 0) { // false for NaN too
		return ""
	}
	return costProblem(strconv.FormatFloat(f, 'g', -1, 64))
}

// rawType names the JSON type of an encoded value.
func rawType(r json.RawMessage) string {
	r = bytes.TrimLeft(r, " \t\r\n")
	if len(r) == 0 {
		return "nothing"
	}
	switch r[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

// anyJSON is the rule of structured_patch: any JSON value, not inspected.
func anyJSON(r json.RawMessage) string {
	if len(r) > 0 && !validJSON(r) {
		return "expected a JSON value"
	}
	return ""
}

// rawObject is the rule of an other step's raw: a JSON object, not inspected.
func rawObject(r json.RawMessage) string {
	switch {
	case len(r) == 0:
		return "required"
	case rawType(r) != "object":
		return "expected object, got " + rawType(r)
	}
	return anyJSON(r)
}

// validator walks a batch field by field, in the order of the v1.2 schema,
// collecting every problem with its path. The path of the field at hand is
// built in one buffer and made a string only for a problem, so a valid
// batch costs no allocation per record.
type validator struct {
	problems []Problem
	json     *jsonProblems
	path     fieldPath
	entered  []int // the path's length before each object entered
}

// fieldPath is where a value is in a batch, as Validate and decoding
// report it: session.workspace.root, steps[3].payload.text.
type fieldPath []byte

// push appends a field's name and returns the length to cut back to.
func (p *fieldPath) push(name string) int {
	n := len(*p)
	if n > 0 {
		*p = append(*p, '.')
	}
	*p = append(*p, name...)
	return n
}

// pushIndex appends an element's index and returns the length to cut back
// to.
func (p *fieldPath) pushIndex(i int) int {
	n := len(*p)
	*p = append(*p, '[')
	*p = strconv.AppendInt(*p, int64(i), 10)
	*p = append(*p, ']')
	return n
}

// check reports the problem at the path: decoding's if it found one,
// otherwise msg, the field's rule applied to its value ("" for none). It
// returns false when decoding found a problem, so the caller skips what
// lies inside the field.
func (v *validator) check(msg string) bool {
	if v.json != nil {
		if m, ok := v.json.at[string(v.path)]; ok {
			path := string(v.path)
			delete(v.json.at, path)
			v.problems = append(v.problems, Problem{Path: path, Message: m})
			return false
		}
	}
	if msg != "" {
		v.problems = append(v.problems, Problem{Path: string(v.path), Message: msg})
	}
	return true
}

// field checks one field of the object at hand.
func (v *validator) field(name, msg string) bool {
	n := v.path.push(name)
	ok := v.check(msg)
	v.path = v.path[:n]
	return ok
}

// item checks one element of the array at hand.
func (v *validator) item(i int, msg string) bool {
	n := v.path.pushIndex(i)
	ok := v.check(msg)
	v.path = v.path[:n]
	return ok
}

// enter checks a field holding an object or array and, when decoding
// found nothing wrong with it, makes it the one at hand until leave.
func (v *validator) enter(name, msg string) bool { return v.entering(v.path.push(name), msg) }

// enterItem is enter for an element of the array at hand.
func (v *validator) enterItem(i int) bool { return v.entering(v.path.pushIndex(i), "") }

func (v *validator) entering(n int, msg string) bool {
	if !v.check(msg) {
		v.path = v.path[:n]
		return false
	}
	v.entered = append(v.entered, n)
	return true
}

// leave reports the unknown fields of the object at hand and returns to
// its parent.
func (v *validator) leave() {
	v.unknownFields()
	last := len(v.entered) - 1
	v.path = v.path[:v.entered[last]]
	v.entered = v.entered[:last]
}

// unknownFields reports the fields decoding found in the object at hand
// that the schema does not have.
func (v *validator) unknownFields() {
	if v.json == nil {
		return
	}
	paths, ok := v.json.unknown[string(v.path)]
	for _, p := range paths {
		v.problems = append(v.problems, Problem{Path: p, Message: "unknown field"})
	}
	if ok {
		delete(v.json.unknown, string(v.path))
	}
}

// required is the rule of a required array, which a batch built in Go
// may leave nil.
func required[T any](a []T) string {
	if a == nil {
		return "required"
	}
	return ""
}

func (v *validator) strings(name string, values []string) {
	if v.enter(name, required(values)) {
		for i, s := range values {
			v.item(i, nonEmpty(s))
		}
		v.leave()
	}
}

func (v *validator) batch(b *Batch) {
	version := ""
	if b.SchemaVersion != SchemaVersion {
		version = wrongVersion(appendJSONString(nil, b.SchemaVersion))
	}
	v.field("schema_version", version)
	if v.enter("session", "") {
		v.session(&b.Session)
		v.leave()
	}
	records(v, "segments", b.Segments, (*validator).segment)
	records(v, "actors", b.Actors, (*validator).actor)
	records(v, "turns", b.Turns, (*validator).turn)
	records(v, "steps", b.Steps, (*validator).step)
	v.unknownFields()
}

// records checks the records of one kind, each as the object at hand.
func records[T any](v *validator, name string, recs []T, check func(*validator, *T)) {
	if v.enter(name, "") {
		for i := range recs {
			if v.enterItem(i) {
				check(v, &recs[i])
				v.leave()
			}
		}
		v.leave()
	}
}

func (v *validator) session(h *SessionHeader) {
	v.field("id", nonEmpty(h.ID))
	if v.enter("agent", "") {
		v.field("kind", nonEmpty(h.Agent.Kind))
		v.field("version", nonEmpty(h.Agent.Version))
		v.field("format_version", "")
		v.leave()
	}
	if v.enter("workspace", "") {
		v.field("root", nonEmpty(h.Workspace.Root))
		v.field("repo", "")
		v.leave()
	}
	v.field("started_at", isoTimestamp(h.StartedAt))
	v.field("ended_at", optTimestamp(h.EndedAt))
	v.field("source", "")
	if v.enter("metrics", "") {
		if m := h.Metrics; m != nil {
			v.field("api_requests", nonNegative(m.APIRequests))
			v.field("cost_usd", cost(m.CostUSD))
			if v.enter("tokens", "") {
				v.field("input", nonNegative(m.Tokens.Input))
				v.field("output", nonNegative(m.Tokens.Output))
				v.field("cache_read", nonNegative(m.Tokens.CacheRead))
				v.field("cache_creation", nonNegative(m.Tokens.CacheCreation))
				v.leave()
			}
		}
		v.leave()
	}
}

func (v *validator) segment(g *Segment) {
	v.field("index", nonNegative(g.Index))
	v.field("start_reason", nonEmpty(g.StartReason))
	v.field("started_at", isoTimestamp(g.StartedAt))
	v.field("ended_at", optTimestamp(g.EndedAt))
	v.strings("source_files", g.SourceFiles)
}

func (v *validator) actor(a *Actor) {
	v.field("id", nonEmpty(a.ID))
	v.field("parent_id", "")
	v.field("type", nonEmpty(a.Type))
	v.field("label", "")
}

func (v *validator) turn(t *Turn) {
	v.field("id", nonEmpty(t.ID))
	v.field("session_id", nonEmpty(t.SessionID))
	v.field("segment_index", nonNegative(t.SegmentIndex))
	v.field("actor_id", nonEmpty(t.ActorID))
	v.field("index", nonNegative(t.Index))
	v.field("prompt_id", "")
	v.field("mode", "")
	v.field("started_at", isoTimestamp(t.StartedAt))
	v.field("step_ids", "") // the store rebuilds it
}

func (v *validator) step(st *Step) {
	v.field("id", nonEmpty(st.ID))
	v.field("session_id", nonEmpty(st.SessionID))
	v.field("segment_index", nonNegative(st.SegmentIndex))
	v.field("turn_id", nonEmpty(st.TurnID))
	v.field("actor_id", nonEmpty(st.ActorID))
	v.field("seq", nonNegative(st.Seq))
	v.field("at", isoTimestamp(st.At))
	typeKnown := v.field("type", oneOf(st.Type, StepTypes)) && slices.Contains(StepTypes, st.Type)
	v.field("decision", nonEmpty(st.Decision))
	v.field("outcome", nonEmpty(st.Outcome))
	v.field("content_status", oneOf(st.ContentStatus, contentStatuses))
	v.strings("channels", st.Channels)
	if v.enter("error", "") {
		if st.Error != nil {
			v.field("type", nonEmpty(st.Error.Type))
			v.field("message", "") // may be empty
		}
		v.leave()
	}
	if v.enter("flags", required(st.Flags)) {
		for i := range st.Flags {
			if f := &st.Flags[i]; v.enterItem(i) {
				v.field("kind", nonEmpty(f.Kind))
				v.field("severity", oneOf(f.Severity, severities))
				v.field("reason", nonEmpty(f.Reason))
				v.leave()
			}
		}
		v.leave()
	}
	if v.enter("payload", "") {
		if typeKnown {
			v.payload(st.Type, &st.Payload)
		}
		v.leave()
	}
}

// payloadField is one field of a step payload: the step types that have
// it, whether JSON must send it (decoding reports it missing), whether a
// batch sets it, and its rule ("" for none).
type payloadField struct {
	name     string
	types    typeSet
	required bool
	set      func(*Payload) bool
	rule     func(*Payload) string
}

// typeSet is a set of step types, one bit per type in StepTypes.
type typeSet uint8

func typesOf(types ...string) typeSet {
	var ts typeSet
	for _, t := range types {
		ts |= 1 << slices.Index(StepTypes, t)
	}
	return ts
}

// payloadFields are every payload field in the schema's order, which is
// also the order decoding reads each type's fields.
var payloadFields = []payloadField{
	{"command", typesOf(TypeCommand), false, func(p *Payload) bool { return p.Command != nil }, nil},
	{"stdout", typesOf(TypeCommand), false, func(p *Payload) bool { return p.Stdout != nil }, nil},
	{"stderr", typesOf(TypeCommand), false, func(p *Payload) bool { return p.Stderr != nil }, nil},
	{"exit_code", typesOf(TypeCommand), false, func(p *Payload) bool { return p.ExitCode != nil }, nil},
	{"cwd", typesOf(TypeCommand), false, func(p *Payload) bool { return p.Cwd != nil }, nil},
	{"output_ref", typesOf(TypeCommand), false, func(p *Payload) bool { return p.OutputRef != nil }, nil},
	{"path", typesOf(TypeEdit, TypeRead), true, func(p *Payload) bool { return p.Path != "" }, func(p *Payload) string { return nonEmpty(p.Path) }},
	{"old_string", typesOf(TypeEdit), false, func(p *Payload) bool { return p.OldString != nil }, nil},
	{"new_string", typesOf(TypeEdit), false, func(p *Payload) bool { return p.NewString != nil }, nil},
	{"structured_patch", typesOf(TypeEdit), false, func(p *Payload) bool { return p.StructuredPatch != nil }, func(p *Payload) string { return anyJSON(p.StructuredPatch) }},
	{"is_full_write", typesOf(TypeEdit), true, func(p *Payload) bool { return p.IsFullWrite != nil }, func(p *Payload) string {
		if p.IsFullWrite == nil {
			return "required"
		}
		return ""
	}},
	{"landed_in_final_state", typesOf(TypeEdit), false, func(p *Payload) bool { return p.LandedInFinalState != nil }, nil},
	{"range", typesOf(TypeRead), false, func(p *Payload) bool { return p.Range != nil }, nil},
	{"role", typesOf(TypeMessage), true, func(p *Payload) bool { return p.Role != "" }, func(p *Payload) string { return nonEmpty(p.Role) }},
	{"text", typesOf(TypeMessage), false, func(p *Payload) bool { return p.Text != nil }, nil},
	{"text_ref", typesOf(TypeMessage), false, func(p *Payload) bool { return p.TextRef != nil }, nil},
	{"tool_name", typesOf(TypeOther), true, func(p *Payload) bool { return p.ToolName != "" }, func(p *Payload) string { return nonEmpty(p.ToolName) }},
	{"raw", typesOf(TypeOther), true, func(p *Payload) bool { return p.Raw != nil }, func(p *Payload) string { return rawObject(p.Raw) }},
}

// payload checks the fields of one step type. A field of another type is
// unknown, as in JSON; only a batch built in Go can set one, since
// decoding reads only the type's own fields.
func (v *validator) payload(typ string, p *Payload) {
	this := typesOf(typ)
	for _, f := range payloadFields {
		switch {
		case f.types&this != 0:
			msg := ""
			if f.rule != nil {
				msg = f.rule(p)
			}
			if f.name == "range" {
				if v.enter(f.name, msg) {
					v.item(0, "")
					v.item(1, "")
					v.leave()
				}
			} else {
				v.field(f.name, msg)
			}
		case f.set(p):
			v.field(f.name, "unknown field")
		}
	}
}

// Describe adds the first problems of an invalid or unresolved batch to
// its error's text, for writers that print it (import, capture, the hook);
// errors.As still finds the error, whose own text the ingest answer keeps.
func Describe(err error) error {
	var (
		inv     *InvalidError
		ref     *ReferenceError
		ps      []Problem
		omitted int
	)
	switch {
	case errors.As(err, &inv):
		ps, omitted = inv.Problems, inv.Omitted
	case errors.As(err, &ref):
		ps, omitted = ref.Problems, ref.Omitted
	default:
		return err
	}
	const shown = 3
	var b strings.Builder
	for i, p := range ps[:min(len(ps), shown)] {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s: %s", p.Path, p.Message)
	}
	if more := len(ps) + omitted - shown; more > 0 {
		fmt.Fprintf(&b, "; and %d more", more)
	}
	return fmt.Errorf("%w: %s", err, b.String())
}
