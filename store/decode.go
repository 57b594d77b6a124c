package store

import (
	"bytes"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// ParseBatch decodes a request body into a batch and checks it with the
// same Validate that Apply runs for every writer. It returns ErrNotJSON,
// ErrNotObject, a *TooManyError or an *InvalidError; the reference checks
// need the store and run in Apply.
func ParseBatch(body []byte) (*Batch, error) {
	return ParseBatchFrom(bytes.NewBuffer(body), body, nil)
}

// ParseBatchFrom is ParseBatch of a body r delivers as it comes (one
// still being decompressed, so the two overlap): r yields the bytes of
// body in order, filling it, and body is read again only behind r. An
// error of r ends the decoding as a syntax error would; its caller knows
// the reason. A stream, when not nil, is handed the steps as they are
// decoded (ApplyParsing).
func ParseBatchFrom(r io.Reader, body []byte, stream *StepStream) (*Batch, error) {
	found := &jsonProblems{}
	d := newDecoder(r, body, found)
	b := &Batch{}
	var counts [4]int // the elements of each of itemKinds, by the last of its name
	sawHeader := false
	clean := func() bool { return d.err == nil && found.none() }
	err := d.whole(func() {
		d.object(batchFields, func(name string) {
			stream.field(name)
			switch name {
			case "schema_version":
				b.SchemaVersion = d.schemaVersion()
			case "session":
				b.Session = d.session()
				sawHeader = true
			case "segments":
				b.Segments, counts[0] = readRecords(d, MaxItems, (*decoder).segment, nil)
			case "actors":
				b.Actors, counts[1] = readRecords(d, MaxItems, (*decoder).actor, nil)
			case "turns":
				b.Turns, counts[2] = readRecords(d, MaxItems, (*decoder).turn, nil)
			case "steps":
				stream.begin(b, sawHeader, clean())
				b.Steps, counts[3] = readRecords(d, MaxItems, (*decoder).step, func(st *Step) {
					stream.add(st, clean())
				})
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
	// payloadFieldsOf are the fields of each step type's payload, read off
	// payloadFields (validate.go): the required names, then the others.
	payloadFieldsOf = func() map[string]fields {
		m := map[string]fields{}
		for _, typ := range StepTypes {
			var required, optional []string
			for _, f := range payloadFields {
				switch {
				case f.types&typesOf(typ) == 0:
				case f.required:
					required = append(required, f.name)
				default:
					optional = append(optional, f.name)
				}
			}
			m[typ] = newFields(strings.Join(required, " "), strings.Join(optional, " "))
		}
		return m
	}()
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
			st.Flags, _ = readRecords(d, math.MaxInt, (*decoder).flag, nil)
		case "payload":
			payload.start, payload.typ, payload.read = d.dec.InputOffset(), st.Type, true
			st.Payload = d.payload(st.Type)
			payload.end = d.dec.InputOffset()
		}
	})
	if payload.read && payload.typ != st.Type && d.err == nil {
		n := d.path.push("payload")
		d.found.forget(string(d.path))
		v := bytes.TrimLeft(d.body[payload.start:payload.end], ": \t\r\n")
		again := newDecoder(bytes.NewBuffer(v), v, d.found)
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
			n := d.path.pushIndex(i)
			d.note(msg)
			d.path = d.path[:n]
			return nil
		}
	}
	return &r
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
