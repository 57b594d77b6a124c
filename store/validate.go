package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
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
	v := &validator{json: found}
	v.batch(b)
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
	if len(r) > 0 && !json.Valid(r) {
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

// validator walks a batch field by field, in the order of the v1.2 schema,
// collecting every problem with its path.
type validator struct {
	problems []Problem
	json     *jsonProblems
}

func join(obj, name string) string {
	if obj == "" {
		return name
	}
	return obj + "." + name
}

func index(array string, i int) string { return array + "[" + strconv.Itoa(i) + "]" }

// field reports the problem of one field: decoding's if it found one,
// otherwise msg, the field's rule applied to its value ("" for none).
// It returns false when decoding found a problem, so the caller skips
// what lies inside the field.
func (v *validator) field(obj, name, msg string) bool {
	if v.json != nil {
		path := join(obj, name)
		if m, ok := v.json.at[path]; ok {
			delete(v.json.at, path)
			v.problems = append(v.problems, Problem{Path: path, Message: m})
			return false
		}
	}
	if msg != "" {
		v.problems = append(v.problems, Problem{Path: join(obj, name), Message: msg})
	}
	return true
}

// end reports the unknown fields of the object at path.
func (v *validator) end(path string) {
	if v.json == nil {
		return
	}
	for _, p := range v.json.unknown[path] {
		v.problems = append(v.problems, Problem{Path: p, Message: "unknown field"})
	}
	delete(v.json.unknown, path)
}

// required is the rule of a required array, which a batch built in Go
// may leave nil.
func required[T any](a []T) string {
	if a == nil {
		return "required"
	}
	return ""
}

func (v *validator) strings(obj, name string, values []string) {
	if !v.field(obj, name, required(values)) || v.json == nil && !slices.Contains(values, "") {
		return
	}
	array := join(obj, name)
	for i, s := range values {
		v.field("", index(array, i), nonEmpty(s))
	}
}

func (v *validator) batch(b *Batch) {
	version := ""
	if b.SchemaVersion != SchemaVersion {
		version = wrongVersion(raw(b.SchemaVersion))
	}
	v.field("", "schema_version", version)
	if v.field("", "session", "") {
		v.session(&b.Session)
		v.end("session")
	}
	if v.field("", "segments", "") {
		for i := range b.Segments {
			if obj := index("segments", i); v.field("", obj, "") {
				v.segment(obj, &b.Segments[i])
				v.end(obj)
			}
		}
	}
	if v.field("", "actors", "") {
		for i := range b.Actors {
			if obj := index("actors", i); v.field("", obj, "") {
				v.actor(obj, &b.Actors[i])
				v.end(obj)
			}
		}
	}
	if v.field("", "turns", "") {
		for i := range b.Turns {
			if obj := index("turns", i); v.field("", obj, "") {
				v.turn(obj, &b.Turns[i])
				v.end(obj)
			}
		}
	}
	if v.field("", "steps", "") {
		for i := range b.Steps {
			if obj := index("steps", i); v.field("", obj, "") {
				v.step(obj, &b.Steps[i])
				v.end(obj)
			}
		}
	}
	v.end("")
}

func (v *validator) session(h *SessionHeader) {
	const obj = "session"
	v.field(obj, "id", nonEmpty(h.ID))
	if v.field(obj, "agent", "") {
		const agent = obj + ".agent"
		v.field(agent, "kind", nonEmpty(h.Agent.Kind))
		v.field(agent, "version", nonEmpty(h.Agent.Version))
		v.field(agent, "format_version", "")
		v.end(agent)
	}
	if v.field(obj, "workspace", "") {
		const ws = obj + ".workspace"
		v.field(ws, "root", nonEmpty(h.Workspace.Root))
		v.field(ws, "repo", "")
		v.end(ws)
	}
	v.field(obj, "started_at", isoTimestamp(h.StartedAt))
	v.field(obj, "ended_at", optTimestamp(h.EndedAt))
	v.field(obj, "source", "")
	if v.field(obj, "metrics", "") && h.Metrics != nil {
		const m = obj + ".metrics"
		v.field(m, "api_requests", nonNegative(h.Metrics.APIRequests))
		v.field(m, "cost_usd", cost(h.Metrics.CostUSD))
		if v.field(m, "tokens", "") {
			const t = m + ".tokens"
			tk := &h.Metrics.Tokens
			v.field(t, "input", nonNegative(tk.Input))
			v.field(t, "output", nonNegative(tk.Output))
			v.field(t, "cache_read", nonNegative(tk.CacheRead))
			v.field(t, "cache_creation", nonNegative(tk.CacheCreation))
			v.end(t)
		}
		v.end(m)
	}
}

func (v *validator) segment(obj string, g *Segment) {
	v.field(obj, "index", nonNegative(g.Index))
	v.field(obj, "start_reason", nonEmpty(g.StartReason))
	v.field(obj, "started_at", isoTimestamp(g.StartedAt))
	v.field(obj, "ended_at", optTimestamp(g.EndedAt))
	v.strings(obj, "source_files", g.SourceFiles)
}

func (v *validator) actor(obj string, a *Actor) {
	v.field(obj, "id", nonEmpty(a.ID))
	v.field(obj, "parent_id", "")
	v.field(obj, "type", nonEmpty(a.Type))
	v.field(obj, "label", "")
}

func (v *validator) turn(obj string, t *Turn) {
	v.field(obj, "id", nonEmpty(t.ID))
	v.field(obj, "session_id", nonEmpty(t.SessionID))
	v.field(obj, "segment_index", nonNegative(t.SegmentIndex))
	v.field(obj, "actor_id", nonEmpty(t.ActorID))
	v.field(obj, "index", nonNegative(t.Index))
	v.field(obj, "prompt_id", "")
	v.field(obj, "mode", "")
	v.field(obj, "started_at", isoTimestamp(t.StartedAt))
	v.field(obj, "step_ids", "") // the store rebuilds it
}

func (v *validator) step(obj string, st *Step) {
	v.field(obj, "id", nonEmpty(st.ID))
	v.field(obj, "session_id", nonEmpty(st.SessionID))
	v.field(obj, "segment_index", nonNegative(st.SegmentIndex))
	v.field(obj, "turn_id", nonEmpty(st.TurnID))
	v.field(obj, "actor_id", nonEmpty(st.ActorID))
	v.field(obj, "seq", nonNegative(st.Seq))
	v.field(obj, "at", isoTimestamp(st.At))
	typeKnown := v.field(obj, "type", oneOf(st.Type, StepTypes)) && slices.Contains(StepTypes, st.Type)
	v.field(obj, "decision", nonEmpty(st.Decision))
	v.field(obj, "outcome", nonEmpty(st.Outcome))
	v.field(obj, "content_status", oneOf(st.ContentStatus, contentStatuses))
	v.strings(obj, "channels", st.Channels)
	if v.field(obj, "error", "") && st.Error != nil {
		e := obj + ".error"
		v.field(e, "type", nonEmpty(st.Error.Type))
		v.field(e, "message", "") // may be empty
		v.end(e)
	}
	if v.field(obj, "flags", required(st.Flags)) {
		flags := obj + ".flags"
		for i, f := range st.Flags {
			if fo := index(flags, i); v.field("", fo, "") {
				v.field(fo, "kind", nonEmpty(f.Kind))
				v.field(fo, "severity", oneOf(f.Severity, severities))
				v.field(fo, "reason", nonEmpty(f.Reason))
				v.end(fo)
			}
		}
	}
	if v.field(obj, "payload", "") {
		p := obj + ".payload"
		if typeKnown {
			v.payload(p, st.Type, &st.Payload)
		}
		v.end(p)
	}
}

// payloadField is one field of a step payload: the step types that have
// it, whether a batch sets it, and its rule ("" for none).
type payloadField struct {
	name  string
	types []string
	set   func(*Payload) bool
	rule  func(*Payload) string
}

// payloadFields are every payload field in the schema's order, which is
// also the order decoding reads each type's fields.
var payloadFields = []payloadField{
	{"command", []string{TypeCommand}, func(p *Payload) bool { return p.Command != nil }, nil},
	{"stdout", []string{TypeCommand}, func(p *Payload) bool { return p.Stdout != nil }, nil},
	{"stderr", []string{TypeCommand}, func(p *Payload) bool { return p.Stderr != nil }, nil},
	{"exit_code", []string{TypeCommand}, func(p *Payload) bool { return p.ExitCode != nil }, nil},
	{"cwd", []string{TypeCommand}, func(p *Payload) bool { return p.Cwd != nil }, nil},
	{"output_ref", []string{TypeCommand}, func(p *Payload) bool { return p.OutputRef != nil }, nil},
	{"path", []string{TypeEdit, TypeRead}, func(p *Payload) bool { return p.Path != "" }, func(p *Payload) string { return nonEmpty(p.Path) }},
	{"old_string", []string{TypeEdit}, func(p *Payload) bool { return p.OldString != nil }, nil},
	{"new_string", []string{TypeEdit}, func(p *Payload) bool { return p.NewString != nil }, nil},
	{"structured_patch", []string{TypeEdit}, func(p *Payload) bool { return p.StructuredPatch != nil }, func(p *Payload) string { return anyJSON(p.StructuredPatch) }},
	{"is_full_write", []string{TypeEdit}, func(p *Payload) bool { return p.IsFullWrite != nil }, func(p *Payload) string {
		if p.IsFullWrite == nil {
			return "required"
		}
		return ""
	}},
	{"landed_in_final_state", []string{TypeEdit}, func(p *Payload) bool { return p.LandedInFinalState != nil }, nil},
	{"range", []string{TypeRead}, func(p *Payload) bool { return p.Range != nil }, nil},
	{"role", []string{TypeMessage}, func(p *Payload) bool { return p.Role != "" }, func(p *Payload) string { return nonEmpty(p.Role) }},
	{"text", []string{TypeMessage}, func(p *Payload) bool { return p.Text != nil }, nil},
	{"text_ref", []string{TypeMessage}, func(p *Payload) bool { return p.TextRef != nil }, nil},
	{"tool_name", []string{TypeOther}, func(p *Payload) bool { return p.ToolName != "" }, func(p *Payload) string { return nonEmpty(p.ToolName) }},
	{"raw", []string{TypeOther}, func(p *Payload) bool { return p.Raw != nil }, func(p *Payload) string { return rawObject(p.Raw) }},
}

// payload checks the fields of one step type. A field of another type is
// unknown, as in JSON; only a batch built in Go can set one, since
// decoding reads only the type's own fields.
func (v *validator) payload(obj, typ string, p *Payload) {
	for _, f := range payloadFields {
		switch {
		case slices.Contains(f.types, typ):
			msg := ""
			if f.rule != nil {
				msg = f.rule(p)
			}
			if v.field(obj, f.name, msg) && f.name == "range" {
				v.field(obj, "range[0]", "")
				v.field(obj, "range[1]", "")
			}
		case f.set(p):
			v.field(obj, f.name, "unknown field")
		}
	}
}

// describe adds the first problems of an invalid or unresolved batch to
// its error's text, for writers that print it (import, capture, the hook);
// errors.As still finds the error, whose own text the ingest answer keeps.
func describe(err error) error {
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
