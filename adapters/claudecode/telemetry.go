package claudecode

import (
	"cmp"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/store"
)

// Kinds of the telemetry records kept for a Claude Code session.
const (
	KindAPIRequest   = "api_request"
	KindToolDecision = "tool_decision"
	KindToolResult   = "tool_result"
	KindResource     = "resource"
)

// APIRequest is one api_request event: one model request with the cost and
// tokens Claude Code reported for it.
type APIRequest struct {
	At            string   `json:"at"`
	Model         string   `json:"model,omitempty"`
	CostUSD       *float64 `json:"cost_usd,omitempty"`
	CostMicros    *int64   `json:"cost_usd_micros,omitempty"`
	Input         int64    `json:"input_tokens"`
	Output        int64    `json:"output_tokens"`
	CacheRead     int64    `json:"cache_read_tokens"`
	CacheCreation int64    `json:"cache_creation_tokens"`
}

// ToolEvent is a tool_decision or tool_result event of one tool call.
type ToolEvent struct {
	At       string `json:"at"`
	PromptID string `json:"prompt_id,omitempty"`
	ToolName string `json:"tool_name,omitempty"`
	// Decision is accept or reject; Source says who decided: config, hook,
	// user_temporary, user_permanent, user_abort, user_reject.
	Decision  string `json:"decision,omitempty"`
	Source    string `json:"source,omitempty"`
	Success   *bool  `json:"success,omitempty"` // tool_result only
	ErrorType string `json:"error_type,omitempty"`
	Error     string `json:"error,omitempty"`
	Duration  *int64 `json:"duration_ms,omitempty"`
	// Parameters are the tool_parameters Claude Code sends (for Bash the
	// command); tool_input is never kept: it is cut at about 4 KB.
	Parameters json.RawMessage `json:"tool_parameters,omitempty"`
}

// Resource is what the exporter says about the agent, for a session known
// from telemetry alone.
type Resource struct {
	Version   string `json:"version,omitempty"`
	Workspace string `json:"workspace,omitempty"`
}

// telemetry is what was kept for one session, in arrival order.
type telemetry struct {
	sessionID string
	resource  Resource
	requests  []APIRequest
	calls     []*telemetryCall
	first     adapters.Time // the earliest event
}

// telemetryCall is the telemetry of one tool call.
type telemetryCall struct {
	id       string // the tool_use id
	ord      int64  // arrival number of its first event
	decision *ToolEvent
	result   *ToolEvent
}

// decodeTelemetry reads the records kept for a session. A record whose body
// does not decode is left out.
func decodeTelemetry(sid string, recs []store.TelemetryRecord) *telemetry {
	t := &telemetry{sessionID: sid}
	calls := map[string]*telemetryCall{}
	seen := func(at string) {
		if tm, ok := adapters.ParseTime(at); ok && (t.first.IsZero() || tm.At.Before(t.first.At)) {
			t.first = tm
		}
	}
	for _, r := range recs {
		switch r.Kind {
		case KindAPIRequest:
			var q APIRequest
			if json.Unmarshal(r.Body, &q) == nil {
				t.requests = append(t.requests, q)
				seen(q.At)
			}
		case KindToolDecision, KindToolResult:
			var e ToolEvent
			if json.Unmarshal(r.Body, &e) != nil || r.Key == "" {
				continue
			}
			seen(e.At)
			c := calls[r.Key]
			if c == nil {
				c = &telemetryCall{id: r.Key, ord: r.Ord}
				calls[r.Key] = c
				t.calls = append(t.calls, c)
			}
			c.ord = min(c.ord, r.Ord)
			if r.Kind == KindToolDecision {
				c.decision = &e
			} else {
				c.result = &e
			}
		case KindResource:
			json.Unmarshal(r.Body, &t.resource)
		}
	}
	slices.SortStableFunc(t.calls, func(a, b *telemetryCall) int { return cmp.Compare(a.ord, b.ord) })
	if t.first.IsZero() {
		t.first = adapters.TimeOf(time.Unix(0, 0))
	}
	return t
}

func (t *telemetry) empty() bool { return len(t.requests) == 0 && len(t.calls) == 0 }

// metrics are the session's usage as Claude Code reported it, nil when no
// api_request event was received. Claude Code sends one api_request event
// per model request with that request's cost_usd and tokens; its own
// running totals (the cost.usage and token.usage counters) are these same
// reported values added up, so the sum over the session's events IS the
// total it reports: nothing here is priced or estimated. A request counts
// once however often its event is re-sent (events are kept by request id).
// When every event has cost_usd_micros the cost is added up in micros, so
// the total is exact; otherwise the cost_usd values are added in arrival
// order, which makes every writer reach the same total.
func (t *telemetry) metrics() *store.Metrics {
	if len(t.requests) == 0 {
		return nil
	}
	m := &store.Metrics{APIRequests: int64(len(t.requests))}
	var micros int64
	exact := true
	for _, q := range t.requests {
		m.Tokens.Input += max(q.Input, 0)
		m.Tokens.Output += max(q.Output, 0)
		m.Tokens.CacheRead += max(q.CacheRead, 0)
		m.Tokens.CacheCreation += max(q.CacheCreation, 0)
		switch {
		case q.CostUSD != nil:
			m.CostUSD += max(*q.CostUSD, 0)
		case q.CostMicros != nil:
			m.CostUSD += float64(max(*q.CostMicros, 0)) / 1e6
		}
		if q.CostMicros == nil {
			exact = false
		} else {
			micros += max(*q.CostMicros, 0)
		}
	}
	if exact {
		m.CostUSD = float64(micros) / 1e6
	}
	return m
}

// at is when the call was first seen.
func (c *telemetryCall) at(fallback adapters.Time) adapters.Time {
	for _, e := range []*ToolEvent{c.decision, c.result} {
		if e != nil {
			if tm, ok := adapters.ParseTime(e.At); ok {
				return tm
			}
		}
	}
	return fallback
}

func (c *telemetryCall) toolName() string {
	for _, e := range []*ToolEvent{c.result, c.decision} {
		if e != nil && e.ToolName != "" {
			return e.ToolName
		}
	}
	return "unknown"
}

func (c *telemetryCall) promptID() string {
	for _, e := range []*ToolEvent{c.decision, c.result} {
		if e != nil && e.PromptID != "" {
			return e.PromptID
		}
	}
	return ""
}

// decisionSource is the permission decision and who made it: the
// tool_decision event's, else the one tool_result repeats.
func (c *telemetryCall) decisionSource() (decision, source string) {
	for _, e := range []*ToolEvent{c.decision, c.result} {
		if e != nil && e.Decision != "" {
			return e.Decision, e.Source
		}
	}
	return "", ""
}

// stepDecision maps Claude Code's decision to a step's: accepted when a
// user allowed the call, auto when a rule, a hook or the mode did, rejected
// when anyone refused it; "" when no decision was reported.
func (c *telemetryCall) stepDecision() string {
	decision, source := c.decisionSource()
	switch strings.ToLower(decision) {
	case "":
		return ""
	case "accept", "accepted", "allow":
		if strings.HasPrefix(source, "user") {
			return adapters.DecisionAccepted
		}
		return adapters.DecisionAuto
	}
	return adapters.DecisionRejected
}

// outcome is ok or failed from the tool_result event (not_run for a
// rejection); unknown without one.
func (c *telemetryCall) outcome() (string, *store.StepError) {
	if c.stepDecision() == adapters.DecisionRejected {
		_, source := c.decisionSource()
		return adapters.OutcomeNotRun, &store.StepError{Type: "rejected", Message: strings.TrimSpace("rejected " + source)}
	}
	if c.result == nil || c.result.Success == nil {
		return adapters.OutcomeUnknown, nil
	}
	if *c.result.Success {
		return adapters.OutcomeOK, nil
	}
	typ := c.result.ErrorType
	if typ == "" {
		typ = "tool_error"
	}
	return adapters.OutcomeFailed, &store.StepError{Type: typ, Message: c.result.Error}
}

// How telemetry and transcripts become one session: Claude Code tells of a
// tool call twice. Its OpenTelemetry events (tool_decision, tool_result)
// reach the receiver within seconds, with the permission decision and the
// outcome but no content; its transcript line holds the content. Both name
// the call by its tool_use id, and the parser makes that id the step's id
// (ToolStepID), so the two are joined by step id and always end up as one
// step.
//
// The receiver keeps every event in the store beside the session
// (store.AddTelemetry; deleted with it). Whoever reads the transcript
// (import, capture, hook) reads it through Parse, whose builder joins the
// kept events (adapters.Unit.Stored) to the parsed records before they are
// split into batches (joinTelemetry), so no writer undoes what another
// joined:
//
//   - a tool call in both gets the transcript's step (content inline, seq
//     from the parser) with the telemetry's decision, and its outcome where
//     the transcript has none yet; channels transcript and otel;
//   - a tool call only in the telemetry becomes a reference_only step
//     (channel otel; a pointer otel:tool_result/<tool_use id> in output_ref
//     for a command, in raw for other tools) in the transcript turn that was
//     current at its time. Its seq is provisional: adapters.ProvisionalSeq
//     (2^40) plus the store's arrival number of its first event, unique in
//     the session and never reused, so it collides neither with the
//     parser's seqs (far below) nor with another provisional step. When the
//     transcript line arrives, the next read gives the SAME step (same id)
//     the parser's seq and inline content: adapters.KeepStoredSeqs lets a
//     stored provisional seq go, and the parser's seq is free. A call once
//     read from a transcript never goes back to reference_only;
//   - the session's metrics are the telemetry's (see telemetry.metrics); a
//     session without api_request events gets none, so the app shows not
//     recorded.
//
// Without a transcript (not found, or holding nothing yet) the session is
// made of the telemetry alone, with one turn per prompt.id
// (TelemetryBatches).

// joinTelemetry joins the telemetry kept for a session to its records,
// before they are split (the builder's Join). stored are the step seqs
// already stored: a call whose step holds a parser's seq there was read
// from a transcript before and is never made reference-only again. Records
// without a header (no transcript read) become a session of the telemetry
// alone. The returned function joins the steps of a spill as their batches
// are built; nil when none needs it.
func joinTelemetry(r *adapters.Records, spilled []*adapters.SpilledStep, t *telemetry, stored map[string]int64) func(*store.Step) {
	if t.empty() {
		return nil
	}
	if r.Header.ID == "" {
		start := t.first
		r.Header = telemetryHeader(t.sessionID, t.resource, start)
		r.Segments = []store.Segment{{Index: 0, StartReason: "start", StartedAt: start.Text, SourceFiles: []string{}}}
		r.Actors = []store.Actor{adapters.RootActorRecord()}
	}
	calls := map[string]*telemetryCall{}
	for _, c := range t.calls {
		calls[c.id] = c
	}
	joined := map[string]bool{}
	for i := range r.Steps {
		if c := calls[r.Steps[i].ID]; c != nil {
			join(&r.Steps[i], c)
			joined[c.id] = true
		}
	}
	var joinSpilled func(*store.Step)
	for _, o := range spilled {
		if calls[o.ID] != nil {
			joined[o.ID] = true
		}
	}
	if len(spilled) > 0 {
		joinSpilled = func(st *store.Step) {
			if c := calls[st.ID]; c != nil {
				join(st, c)
			}
		}
	}
	at := func(tr store.Turn) time.Time { tm, _ := store.ParseTimestamp(tr.StartedAt); return tm }
	turns := slices.Clone(r.Turns)
	slices.SortStableFunc(turns, func(a, b store.Turn) int { return at(a).Compare(at(b)) })
	for _, c := range t.calls {
		seq, ok := stored[c.id]
		if joined[c.id] || (ok && seq < adapters.ProvisionalSeq) {
			continue
		}
		when := c.at(t.first)
		var turn store.Turn
		if len(turns) > 0 {
			turn = turns[0]
			for _, tr := range turns {
				if at(tr).After(when.At) {
					break
				}
				turn = tr
			}
		} else {
			turn = otelTurn(r, t, c)
		}
		r.Steps = append(r.Steps, referenceStep(t.sessionID, turn, r.SegmentAt(turn, when), c, when))
	}
	r.Usage = append(r.Usage, t.usage(r.Turns)...)
	if m := t.metrics(); m != nil {
		r.Header.Metrics = m
	}
	return joinSpilled
}

// TelemetryBatches are the batches of a session whose transcript is not at
// hand, made of the telemetry kept for session sid (recs) and, when the
// transcript was read before, its header and turns (r; empty otherwise);
// stored are
// the step seqs already stored. Nil when the telemetry holds nothing.
func TelemetryBatches(sid string, r adapters.Records, recs []store.TelemetryRecord, stored map[string]int64) []*store.Batch {
	t := decodeTelemetry(sid, recs)
	if t.empty() {
		return nil
	}
	joinTelemetry(&r, nil, t, stored)
	return adapters.Split(r)
}

// TelemetryHeader is the header of a session known so far from the
// telemetry records recs alone; its transcript, once read, writes the
// header again.
func TelemetryHeader(sid string, recs []store.TelemetryRecord) store.SessionHeader {
	t := decodeTelemetry(sid, recs)
	return telemetryHeader(sid, t.resource, t.first)
}

// join adds a call's telemetry to its transcript step: the decision, and
// the outcome while the transcript has none. A rejection the transcript
// shows stays one.
func join(st *store.Step, c *telemetryCall) {
	if !slices.Contains(st.Channels, "otel") {
		st.Channels = append(slices.Clip(st.Channels), "otel")
	}
	if d := c.stepDecision(); d != "" && st.Decision != adapters.DecisionRejected {
		st.Decision = d
	}
	if st.Outcome == adapters.OutcomeUnknown {
		if outcome, e := c.outcome(); outcome != adapters.OutcomeUnknown {
			st.Outcome = outcome
			if st.Error == nil {
				st.Error = e
			}
		}
	}
}

// referenceStep is a tool call known only from telemetry, in turn and
// segment seg: no content, a pointer to the event, and a provisional seq.
func referenceStep(sid string, turn store.Turn, seg int64, c *telemetryCall, when adapters.Time) store.Step {
	ref := "otel:tool_result/" + c.id
	st := store.Step{
		ID: c.id, SessionID: sid, SegmentIndex: seg, TurnID: turn.ID, ActorID: turn.ActorID,
		Seq: adapters.ProvisionalSeq + c.ord, At: when.Text,
		Decision: cmp.Or(c.stepDecision(), adapters.DecisionUnknown), ContentStatus: store.ContentReferenceOnly,
		Channels: []string{"otel"}, Flags: []store.Flag{},
	}
	st.Outcome, st.Error = c.outcome()
	name := c.toolName()
	if name == "Bash" {
		st.Type = store.TypeCommand
		st.Payload = store.Payload{OutputRef: &ref}
		return st
	}
	otel := map[string]any{}
	if c.decision != nil {
		otel["tool_decision"] = c.decision
	}
	if c.result != nil {
		otel["tool_result"] = c.result
	}
	st.Type = store.TypeOther
	st.Payload = store.Payload{ToolName: name, Raw: adapters.Raw(map[string]any{"ref": ref, "otel": otel})}
	return st
}

// telemetryHeader is the header of a session known from telemetry alone;
// its transcript, once read, writes the header again.
func telemetryHeader(sid string, r Resource, start adapters.Time) store.SessionHeader {
	return store.SessionHeader{
		ID:        sid,
		Agent:     store.Agent{Kind: Kind, Version: cmp.Or(r.Version, "unknown")},
		Workspace: store.Workspace{Root: cmp.Or(r.Workspace, "unknown")},
		StartedAt: start.Text,
		Source:    "capture:" + Kind,
	}
}

// otelTurn returns the turn of a call's prompt in a session without a
// transcript, adding it to r the first time: one turn per prompt.id, in the
// order the prompts were first seen.
func otelTurn(r *adapters.Records, t *telemetry, c *telemetryCall) store.Turn {
	id := "turn-otel"
	if p := c.promptID(); p != "" {
		id += "-" + p
	}
	for _, tr := range r.Turns {
		if tr.ID == id {
			return tr
		}
	}
	tr := store.Turn{
		ID: id, SessionID: t.sessionID, SegmentIndex: 0, ActorID: adapters.RootActor,
		Index: int64(len(r.Turns) + 1), PromptID: c.promptID(), StartedAt: c.at(t.first).Text, StepIDs: []string{},
	}
	r.Turns = append(r.Turns, tr)
	return tr
}
