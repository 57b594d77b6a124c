package capture

import (
	"cmp"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/adapters/claudecode"
	"github.com/agentreview/service/internal/loopback"
	"github.com/agentreview/service/store"
)

// MaxOTLPBody is the most bytes an OTLP request body may have, before and
// after gzip decompression.
const MaxOTLPBody = 32 << 20

// MaxOTLPSessions is the most sessions one logs export may name: each is a
// session and a capture folder the export may create. Claude Code sends
// the events of one session per export.
const MaxOTLPSessions = 32

// Receiver is the OTLP/HTTP endpoint Claude Code's exporters send to
// (OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318): POST /v1/logs and
// /v1/metrics, in protobuf (application/x-protobuf) or JSON
// (application/json), plain or gzip. /v1/traces is answered with success
// and dropped. A Host that is not a loopback name gets 421, as in the
// service; a request a browser sends (any Origin, or a Sec-Fetch-Site
// other than none) 403; a body over MaxOTLPBody, before or after
// decompression, 413; a logs export naming more than MaxOTLPSessions
// sessions 400, and nothing of it is kept.
//
// Log events are kept in the store per session before the answer, and the
// session is then brought up to date in the background (see Capture); each
// session's part of the export is also appended, raw, to its capture file
// (store.AppendCapture).
// Metrics are decoded and dropped: Claude Code's counters repeat, as
// running totals, what its api_request events report one by one, and only
// the events also give the request count and can be counted once each.
func (c *Capture) Receiver() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("POST /v1/logs", c.signal(c.logs))
	mux.Handle("POST /v1/metrics", c.signal(metrics))
	mux.Handle("POST /v1/traces", c.signal(nil))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !loopback.IsHost(r.Host) {
			httpError(w, http.StatusMisdirectedRequest, "misdirected request: host "+r.Host+" is not a loopback name")
			return
		}
		if fromBrowser(r) {
			httpError(w, http.StatusForbidden, "forbidden: telemetry is not taken from a browser")
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// fromBrowser reports whether a browser sent r: browsers add Origin to
// cross-site and form POSTs and Sec-Fetch-Site to every request, which is
// none only for one the user typed; exporters send neither.
func fromBrowser(r *http.Request) bool {
	site := r.Header.Get("Sec-Fetch-Site")
	return len(r.Header.Values("Origin")) > 0 || site != "" && site != "none"
}

// statusError is a request the receiver refuses, with its status.
type statusError struct {
	status int
	msg    string
}

func (e *statusError) Error() string { return e.msg }

func httpError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	fmt.Fprintln(w, msg)
}

// signal answers one OTLP signal path: it checks the content type, reads
// the body within the limits and hands it to decode (nil: drop it).
func (c *Capture) signal(decode func(ctx context.Context, body []byte, asJSON bool) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asJSON, body, err := readOTLP(w, r)
		if err == nil && decode != nil {
			err = decode(r.Context(), body, asJSON)
		}
		var se *statusError
		switch {
		case err == nil:
		case errors.As(err, &se):
			httpError(w, se.status, se.msg)
			return
		case errors.Is(err, context.DeadlineExceeded) && r.Context().Err() == nil:
			// The store stayed locked past its wait: the exporter retries.
			c.log().Warn("otlp: store busy", "path", r.URL.Path, "err", err)
			w.Header().Set("Retry-After", "1")
			httpError(w, http.StatusServiceUnavailable, "store busy; retry")
			return
		default:
			c.log().Error("otlp: record telemetry", "path", r.URL.Path, "err", err)
			httpError(w, http.StatusInternalServerError, "internal error")
			return
		}
		// An empty Export*ServiceResponse: no bytes in protobuf, {} in JSON.
		if asJSON {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, "{}")
			return
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	})
}

// readOTLP checks the content type and encoding and reads the body, plain
// or gzip, within MaxOTLPBody before and after decompression.
func readOTLP(w http.ResponseWriter, r *http.Request) (asJSON bool, body []byte, err error) {
	ct := r.Header.Get("Content-Type")
	mt, _, _ := mime.ParseMediaType(ct)
	switch mt {
	case "application/x-protobuf":
	case "application/json":
		asJSON = true
	default:
		return false, nil, &statusError{http.StatusUnsupportedMediaType, fmt.Sprintf("content-type must be application/x-protobuf or application/json, got %q", ct)}
	}
	enc := strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding")))
	if enc != "" && enc != "gzip" && enc != "identity" {
		return asJSON, nil, &statusError{http.StatusUnsupportedMediaType, fmt.Sprintf("unsupported content-encoding %q; use gzip or none", enc)}
	}
	tooLarge := &statusError{http.StatusRequestEntityTooLarge, fmt.Sprintf("body larger than %d bytes", MaxOTLPBody)}
	if r.ContentLength > MaxOTLPBody {
		return asJSON, nil, tooLarge
	}
	raw := http.MaxBytesReader(w, r.Body, MaxOTLPBody)
	var src io.Reader = raw
	if enc == "gzip" {
		zr, err := gzip.NewReader(raw)
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				return asJSON, nil, tooLarge
			}
			return asJSON, nil, &statusError{http.StatusBadRequest, "invalid gzip body"}
		}
		defer zr.Close()
		src = zr
	}
	body, err = io.ReadAll(io.LimitReader(src, MaxOTLPBody+1))
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return asJSON, nil, tooLarge
	case err != nil && enc == "gzip":
		return asJSON, nil, &statusError{http.StatusBadRequest, "invalid gzip body"}
	case err != nil:
		return asJSON, nil, fmt.Errorf("read body: %w", err)
	case len(body) > MaxOTLPBody:
		return asJSON, nil, &statusError{http.StatusRequestEntityTooLarge, fmt.Sprintf("decompressed body larger than %d bytes", MaxOTLPBody)}
	}
	return asJSON, body, nil
}

func unmarshal(body []byte, asJSON bool, m proto.Message) error {
	var err error
	if asJSON {
		err = protojson.UnmarshalOptions{DiscardUnknown: true}.Unmarshal(body, m)
	} else {
		err = proto.Unmarshal(body, m)
	}
	if err != nil {
		kind := "protobuf"
		if asJSON {
			kind = "JSON"
		}
		return &statusError{http.StatusBadRequest, fmt.Sprintf("invalid OTLP %s body: %v", kind, err)}
	}
	return nil
}

// metrics decodes a metrics export, which is then dropped (see Receiver).
func metrics(_ context.Context, body []byte, asJSON bool) error {
	return unmarshal(body, asJSON, &colmetricspb.ExportMetricsServiceRequest{})
}

// logs keeps the Claude Code events of a logs export, per session: in the
// store, the events the merge uses; in the session's capture file, every
// event as received (the raw evidence). The file is written only once the
// store has the events, so an export the exporter sends again after a
// failure is not kept twice.
func (c *Capture) logs(ctx context.Context, body []byte, asJSON bool) error {
	received := time.Now()
	var req collogspb.ExportLogsServiceRequest
	if err := unmarshal(body, asJSON, &req); err != nil {
		return err
	}
	parts := splitLogs(&req) // every session the export names
	if len(parts) > MaxOTLPSessions {
		return &statusError{http.StatusBadRequest, fmt.Sprintf("logs export names %d sessions, more than %d", len(parts), MaxOTLPSessions)}
	}
	for _, s := range sessionRecords(&req, received) {
		if err := c.record(ctx, s); err != nil {
			return err
		}
	}
	c.keepRaw(ctx, parts, received)
	return nil
}

// keepRaw appends each session's part of an export to its capture file.
// A failure is logged, not answered: the store already has what the
// sessions are built from, and an error would only have the exporter send
// the whole export again.
func (c *Capture) keepRaw(ctx context.Context, parts []sessionLogs, received time.Time) {
	for _, part := range parts {
		b, err := protojson.Marshal(part.req)
		if err == nil {
			err = c.Store.AppendCapture(ctx, part.id, store.ChannelOTel, b, received)
		}
		var deleted *store.DeletedError
		if err != nil && !errors.As(err, &deleted) {
			c.log().Error("otlp: keep capture file", "session", part.id, "err", err)
		}
	}
}

// sessionEvents are the telemetry records of one session in one export.
type sessionEvents struct {
	id      string
	records []store.TelemetryRecord
}

// decodeLogs reads a logs export into the records to keep, by session in
// the order sessions first appear. received stands in for the time of an
// event that carries none.
func decodeLogs(body []byte, asJSON bool, received time.Time) ([]sessionEvents, error) {
	var req collogspb.ExportLogsServiceRequest
	if err := unmarshal(body, asJSON, &req); err != nil {
		return nil, err
	}
	return sessionRecords(&req, received), nil
}

// sessionRecords picks the records to keep out of a logs export, by
// session in the order sessions first appear.
func sessionRecords(req *collogspb.ExportLogsServiceRequest, received time.Time) []sessionEvents {
	var out []sessionEvents
	index := map[string]int{}
	add := func(sid string, rec store.TelemetryRecord) {
		i, ok := index[sid]
		if !ok {
			i = len(out)
			index[sid] = i
			out = append(out, sessionEvents{id: sid})
		}
		out[i].records = append(out[i].records, rec)
	}
	for _, rl := range req.GetResourceLogs() {
		res := attributes(rl.GetResource().GetAttributes())
		claude := text(res["service.name"]) == "claude-code"
		version := text(res["service.version"])
		described := map[string]bool{} // sessions given their resource record
		for _, sl := range rl.GetScopeLogs() {
			for _, lr := range sl.GetLogRecords() {
				attrs := attributes(lr.GetAttributes())
				name, sid, ok := sessionEvent(lr, attrs, res, claude)
				if !ok {
					continue
				}
				rec, ok := eventRecord(name, lr, attrs, received)
				if !ok {
					continue
				}
				if !described[sid] {
					described[sid] = true
					r := claudecode.Resource{Version: cmp.Or(version, text(attrs["app.version"])), Workspace: first(strs(attrs["workspace.host_paths"]))}
					if r != (claudecode.Resource{}) {
						add(sid, store.TelemetryRecord{Kind: claudecode.KindResource, Key: "resource", Body: mustJSON(r)})
					}
				}
				add(sid, rec)
			}
		}
	}
	return out
}

// sessionLogs is the part of a logs export about one session.
type sessionLogs struct {
	id  string
	req *collogspb.ExportLogsServiceRequest
}

// splitLogs splits a logs export by session, in the order sessions first
// appear: each part holds every Claude Code event of its session, those
// the store keeps or not, under their resource and scope as sent. Records
// of no session, or of other programs, are in no part.
func splitLogs(req *collogspb.ExportLogsServiceRequest) []sessionLogs {
	var out []sessionLogs
	index := map[string]int{}
	for _, rl := range req.GetResourceLogs() {
		res := attributes(rl.GetResource().GetAttributes())
		claude := text(res["service.name"]) == "claude-code"
		resourceOf := map[string]*logspb.ResourceLogs{} // this resource's copy, by session
		for _, sl := range rl.GetScopeLogs() {
			scopeOf := map[string]*logspb.ScopeLogs{} // this scope's copy, by session
			for _, lr := range sl.GetLogRecords() {
				_, sid, ok := sessionEvent(lr, attributes(lr.GetAttributes()), res, claude)
				if !ok {
					continue
				}
				if _, seen := index[sid]; !seen {
					index[sid] = len(out)
					out = append(out, sessionLogs{id: sid, req: &collogspb.ExportLogsServiceRequest{}})
				}
				part := out[index[sid]].req
				rc, ok := resourceOf[sid]
				if !ok {
					rc = &logspb.ResourceLogs{Resource: rl.GetResource(), SchemaUrl: rl.GetSchemaUrl()}
					resourceOf[sid] = rc
					part.ResourceLogs = append(part.ResourceLogs, rc)
				}
				sc, ok := scopeOf[sid]
				if !ok {
					sc = &logspb.ScopeLogs{Scope: sl.GetScope(), SchemaUrl: sl.GetSchemaUrl()}
					scopeOf[sid] = sc
					rc.ScopeLogs = append(rc.ScopeLogs, sc)
				}
				sc.LogRecords = append(sc.LogRecords, lr)
			}
		}
	}
	return out
}

// sessionEvent returns the short name and session of a Claude Code event
// whose session.id (its own, else its resource's) is a plain token; ok
// false for any other record.
func sessionEvent(lr *logspb.LogRecord, attrs, res map[string]*commonpb.AnyValue, claude bool) (name, sid string, ok bool) {
	name, ok = eventName(lr, attrs, claude)
	if !ok {
		return "", "", false
	}
	sid = cmp.Or(text(attrs["session.id"]), text(res["session.id"]))
	if !store.PlainID(sid) {
		return "", "", false
	}
	return name, sid, true
}

// eventName is a Claude Code event's short name (api_request, ...): from
// the event_name field, the event.name attribute or the body, which some
// builds give as claude_code.<name>. Records of other programs are not
// events of ours (ok false).
func eventName(lr interface {
	GetEventName() string
	GetBody() *commonpb.AnyValue
}, attrs map[string]*commonpb.AnyValue, claude bool) (string, bool) {
	for _, name := range []string{lr.GetEventName(), text(attrs["event.name"]), lr.GetBody().GetStringValue()} {
		if short, ok := strings.CutPrefix(name, "claude_code."); ok {
			return short, true
		}
		if claude && name != "" {
			return name, true
		}
	}
	return "", false
}

// eventRecord turns the events the merge uses into a record to keep.
func eventRecord(name string, lr interface {
	GetTimeUnixNano() uint64
	GetObservedTimeUnixNano() uint64
}, attrs map[string]*commonpb.AnyValue, received time.Time) (store.TelemetryRecord, bool) {
	at := eventTime(lr, attrs, received).Text
	switch name {
	case "api_request":
		q := claudecode.APIRequest{
			At: at, Model: text(attrs["model"]),
			Input: integer(attrs["input_tokens"]), Output: integer(attrs["output_tokens"]),
			CacheRead: integer(attrs["cache_read_tokens"]), CacheCreation: integer(attrs["cache_creation_tokens"]),
		}
		if v, ok := number(attrs["cost_usd"]); ok {
			q.CostUSD = &v
		}
		if v, ok := number(attrs["cost_usd_micros"]); ok {
			micros := int64(v)
			q.CostMicros = &micros
		}
		key := cmp.Or(text(attrs["request_id"]), text(attrs["client_request_id"]))
		if key == "" {
			key = "seq:" + text(attrs["event.sequence"]) + "@" + at
		}
		return store.TelemetryRecord{Kind: claudecode.KindAPIRequest, Key: key, Body: mustJSON(q)}, true
	case "tool_decision", "tool_result":
		id := text(attrs["tool_use_id"])
		if id == "" {
			// Without the id the event cannot be joined to its transcript
			// record (Claude Code before tool_use_id was sent): left out
			// rather than shown twice.
			return store.TelemetryRecord{}, false
		}
		e := claudecode.ToolEvent{
			At: at, PromptID: text(attrs["prompt.id"]),
			ToolName:  cmp.Or(text(attrs["tool_name"]), text(attrs["name"])),
			ErrorType: text(attrs["error_type"]), Error: text(attrs["error"]),
		}
		if name == "tool_decision" {
			e.Decision, e.Source = text(attrs["decision"]), text(attrs["source"])
		} else {
			// Older builds named these decision and source, as tool_decision does.
			e.Decision = cmp.Or(text(attrs["decision_type"]), text(attrs["decision"]))
			e.Source = cmp.Or(text(attrs["decision_source"]), text(attrs["source"]))
			if b, ok := boolean(attrs["success"]); ok {
				e.Success = &b
			}
			if d, ok := number(attrs["duration_ms"]); ok {
				ms := int64(d)
				e.Duration = &ms
			}
		}
		e.Parameters = jsonObject(attrs["tool_parameters"])
		kind := claudecode.KindToolResult
		if name == "tool_decision" {
			kind = claudecode.KindToolDecision
		}
		return store.TelemetryRecord{Kind: kind, Key: id, Body: mustJSON(e)}, true
	}
	return store.TelemetryRecord{}, false
}

// eventTime is event.timestamp, else the record's time, else its observed
// time, else when it was received.
func eventTime(lr interface {
	GetTimeUnixNano() uint64
	GetObservedTimeUnixNano() uint64
}, attrs map[string]*commonpb.AnyValue, received time.Time) adapters.Time {
	if t, ok := adapters.ParseTime(text(attrs["event.timestamp"])); ok {
		return t
	}
	for _, ns := range []uint64{lr.GetTimeUnixNano(), lr.GetObservedTimeUnixNano()} {
		if ns > 0 && ns < 1<<63 {
			return adapters.TimeOf(time.Unix(0, int64(ns)))
		}
	}
	return adapters.TimeOf(received)
}

func attributes(kvs []*commonpb.KeyValue) map[string]*commonpb.AnyValue {
	m := make(map[string]*commonpb.AnyValue, len(kvs))
	for _, kv := range kvs {
		m[kv.GetKey()] = kv.GetValue()
	}
	return m
}

// text is an attribute as text; numbers and booleans as written in JSON.
// Claude Code sends values as strings, ints or doubles, varying by build.
func text(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	case *commonpb.AnyValue_DoubleValue:
		return strconv.FormatFloat(x.DoubleValue, 'g', -1, 64)
	case *commonpb.AnyValue_BoolValue:
		return strconv.FormatBool(x.BoolValue)
	}
	return ""
}

// strs is an attribute that may be an array of strings, or one string.
func strs(v *commonpb.AnyValue) []string {
	if a := v.GetArrayValue(); a != nil {
		var out []string
		for _, e := range a.GetValues() {
			if s := text(e); s != "" {
				out = append(out, s)
			}
		}
		return out
	}
	if s := text(v); s != "" {
		// Some builds send a list as its JSON text.
		var list []string
		if json.Unmarshal([]byte(s), &list) == nil {
			return list
		}
		return []string{s}
	}
	return nil
}

func number(v *commonpb.AnyValue) (float64, bool) {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_DoubleValue:
		return x.DoubleValue, true
	case *commonpb.AnyValue_IntValue:
		return float64(x.IntValue), true
	case *commonpb.AnyValue_StringValue:
		f, err := strconv.ParseFloat(strings.TrimSpace(x.StringValue), 64)
		return f, err == nil
	}
	return 0, false
}

func integer(v *commonpb.AnyValue) int64 {
	if x, ok := v.GetValue().(*commonpb.AnyValue_IntValue); ok {
		return x.IntValue
	}
	f, _ := number(v)
	if f != f || f > 1<<62 || f < -(1<<62) { // NaN or out of range
		return 0
	}
	return int64(f)
}

func boolean(v *commonpb.AnyValue) (bool, bool) {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_BoolValue:
		return x.BoolValue, true
	case *commonpb.AnyValue_StringValue:
		b, err := strconv.ParseBool(strings.ToLower(strings.TrimSpace(x.StringValue)))
		return b, err == nil
	case *commonpb.AnyValue_IntValue:
		return x.IntValue != 0, true
	}
	return false, false
}

// jsonObject is an attribute holding a JSON object (as text, or as a
// key-value list), nil otherwise.
func jsonObject(v *commonpb.AnyValue) json.RawMessage {
	if kv := v.GetKvlistValue(); kv != nil {
		m := map[string]string{}
		for _, e := range kv.GetValues() {
			m[e.GetKey()] = text(e.GetValue())
		}
		return mustJSON(m)
	}
	s := strings.TrimSpace(text(v))
	if !strings.HasPrefix(s, "{") || !json.Valid([]byte(s)) {
		return nil
	}
	return json.RawMessage(s)
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage(`{}`)
	}
	return b
}

func first(s []string) string {
	if len(s) > 0 {
		return s[0]
	}
	return ""
}
