package capture

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/proto"
	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/adapters/claudecode"
	"github.com/agentreview/service/store"
)

const sid = "7f3c2a10-0000-4000-8000-000000000001"

func wantMetrics(t *testing.T, st *store.Store, id string, want store.Metrics) {
	t.Helper()
	waitFor(t, 10*time.Second, func() (bool, string) {
		d, ok := detail(t, st, id)
		if !ok {
			return false, "session not stored"
		}
		if d.Metrics == nil {
			return false, "session has no metrics"
		}
		got := *d.Metrics
		if math.Abs(got.CostUSD-want.CostUSD) > 1e-9 || got.APIRequests != want.APIRequests || got.Tokens != want.Tokens {
			return false, fmt.Sprintf("metrics = %+v; want %+v", got, want)
		}
		return true, ""
	})
}

func TestReceiverProtobufGivesMetrics(t *testing.T) {
	h := startCapture(t)
	appendLines(t, h.transcript(sid), promptLine(sid, "u1", "fix the test"))
	at := mustTime(transcriptTime).Add(time.Second)
	req := export(
		apiRequest(sid, "req_1", at, 0.0123, 12, 340, 19205, 2872),
		apiRequest(sid, "req_2", at.Add(time.Second), 0.02, 3, 77, 20000, 0),
	)
	h.postLogs(t, req)
	h.postLogs(t, req) // an exporter's retry counts nothing twice
	want := store.Metrics{CostUSD: 0.0323, APIRequests: 2, Tokens: store.Tokens{Input: 15, Output: 417, CacheRead: 39205, CacheCreation: 2872}}
	wantMetrics(t, h.st, sid, want)
	d, _ := detail(t, h.st, sid)
	if d.Workspace.Root != "/home/dev/hello" || d.Source != "import:claude-code" {
		t.Errorf("session = %+v; want it read from its transcript", d.Session)
	}
	if d.Summary.Steps != 1 {
		t.Errorf("session has %d steps; want the prompt only", d.Summary.Steps)
	}
}

func TestReceiverJSON(t *testing.T) {
	h := startCapture(t)
	const other = "7f3c2a10-0000-4000-8000-000000000002"
	// As AGENT-FORMATS 3.5 shows it: numbers as intValue strings, a cost as
	// a string, the full name in the body and the short one in event.name.
	body := `{"resourceLogs":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"claude-code"}},{"key":"service.version","value":{"stringValue":"2.1.40"}}]},
	  "scopeLogs":[{"scope":{"name":"com.anthropic.claude_code.events"},"logRecords":[
	   {"timeUnixNano":"1785708000000000000","body":{"stringValue":"claude_code.api_request"},
	    "attributes":[{"key":"event.name","value":{"stringValue":"api_request"}},
	                  {"key":"session.id","value":{"stringValue":"` + other + `"}},{"key":"prompt.id","value":{"stringValue":"P"}},
	                  {"key":"model","value":{"stringValue":"claude-opus-4-6"}},
	                  {"key":"request_id","value":{"stringValue":"req_a"}},
	                  {"key":"cost_usd","value":{"stringValue":"0.0123"}},
	                  {"key":"input_tokens","value":{"intValue":"12"}},
	                  {"key":"output_tokens","value":{"doubleValue":5}}]}]}]}]}`
	if status, answer := h.post(t, "/v1/logs", "application/json", "", []byte(body)); status != http.StatusOK || answer != "{}" {
		t.Fatalf("POST /v1/logs = %d %q; want 200 {}", status, answer)
	}
	// And an export built with the OpenTelemetry types, marshaled by protojson.
	more := protoJSON(t, export(apiRequest(other, "req_b", time.Unix(1785708001, 0), 0.5, 1, 2, 3, 4)))
	if status, answer := h.post(t, "/v1/logs", "application/json; charset=utf-8", "", more); status != http.StatusOK {
		t.Fatalf("POST /v1/logs = %d %q; want 200", status, answer)
	}
	wantMetrics(t, h.st, other, store.Metrics{CostUSD: 0.5123, APIRequests: 2, Tokens: store.Tokens{Input: 13, Output: 7, CacheRead: 3, CacheCreation: 4}})
	d, _ := detail(t, h.st, other)
	// No transcript anywhere: the session is what the telemetry says.
	if d.Agent.Kind != "claude-code" || d.Agent.Version == "unknown" || d.Source != "capture:claude-code" || d.StartedAt != "2026-08-02T22:00:00Z" {
		t.Errorf("session = %+v; want claude-code from telemetry, started at the first event", d.Session)
	}
}

func TestReceiverGzip(t *testing.T) {
	h := startCapture(t)
	body, err := proto.Marshal(export(apiRequest(sid, "req_1", time.Unix(1785708000, 0), 1.25, 1, 1, 0, 0)))
	if err != nil {
		t.Fatal(err)
	}
	if status, answer := h.post(t, "/v1/logs", "application/x-protobuf", "gzip", gzipped(t, body)); status != http.StatusOK {
		t.Fatalf("POST gzip = %d %q; want 200", status, answer)
	}
	wantMetrics(t, h.st, sid, store.Metrics{CostUSD: 1.25, APIRequests: 1, Tokens: store.Tokens{Input: 1, Output: 1}})
}

// zeros reads n zero bytes without holding them.
type zeros struct{ n int64 }

func (z *zeros) Read(p []byte) (int, error) {
	if z.n <= 0 {
		return 0, io.EOF
	}
	n := min(int64(len(p)), z.n)
	clear(p[:n])
	z.n -= n
	return int(n), nil
}

func TestReceiverRefuses(t *testing.T) {
	h := startCapture(t)
	valid, _ := proto.Marshal(export(apiRequest(sid, "req_1", time.Unix(1785708000, 0), 1, 1, 1, 0, 0)))
	bomb := gzipped(t, make([]byte, MaxOTLPBody+1))
	cases := []struct {
		name   string
		req    func() *http.Request
		status int
		text   string
	}{
		{"not a loopback host", func() *http.Request {
			r, _ := http.NewRequest("POST", h.srv.URL+"/v1/logs", strings.NewReader(string(valid)))
			r.Host = "attacker.example:4318"
			r.Header.Set("Content-Type", "application/x-protobuf")
			return r
		}, http.StatusMisdirectedRequest, "misdirected request"},
		{"from a page of another site", func() *http.Request {
			r, _ := http.NewRequest("POST", h.srv.URL+"/v1/logs", strings.NewReader(string(valid)))
			r.Header.Set("Content-Type", "application/x-protobuf")
			r.Header.Set("Origin", "https://attacker.example")
			return r
		}, http.StatusForbidden, "not taken from a browser"},
		{"from a page with an opaque origin", func() *http.Request {
			r, _ := http.NewRequest("POST", h.srv.URL+"/v1/logs", strings.NewReader(string(valid)))
			r.Header.Set("Content-Type", "application/x-protobuf")
			r.Header.Set("Origin", "null")
			return r
		}, http.StatusForbidden, "not taken from a browser"},
		{"from a loopback page", func() *http.Request {
			r, _ := http.NewRequest("POST", h.srv.URL+"/v1/logs", strings.NewReader(string(valid)))
			r.Header.Set("Content-Type", "application/x-protobuf")
			r.Header.Set("Origin", h.srv.URL)
			return r
		}, http.StatusForbidden, "not taken from a browser"},
		{"a browser without Origin", func() *http.Request {
			r, _ := http.NewRequest("POST", h.srv.URL+"/v1/logs", strings.NewReader(string(valid)))
			r.Header.Set("Content-Type", "application/x-protobuf")
			r.Header.Set("Sec-Fetch-Site", "same-origin")
			return r
		}, http.StatusForbidden, "not taken from a browser"},
		{"another content type", func() *http.Request {
			r, _ := http.NewRequest("POST", h.srv.URL+"/v1/logs", strings.NewReader(string(valid)))
			r.Header.Set("Content-Type", "text/plain")
			return r
		}, http.StatusUnsupportedMediaType, "content-type must be"},
		{"another encoding", func() *http.Request {
			r, _ := http.NewRequest("POST", h.srv.URL+"/v1/logs", strings.NewReader(string(valid)))
			r.Header.Set("Content-Type", "application/x-protobuf")
			r.Header.Set("Content-Encoding", "br")
			return r
		}, http.StatusUnsupportedMediaType, "unsupported content-encoding"},
		{"over 32 MB", func() *http.Request {
			r, _ := http.NewRequest("POST", h.srv.URL+"/v1/logs", io.LimitReader(&zeros{n: MaxOTLPBody + 1}, MaxOTLPBody+1))
			r.ContentLength = MaxOTLPBody + 1
			r.Header.Set("Content-Type", "application/x-protobuf")
			return r
		}, http.StatusRequestEntityTooLarge, "body larger than"},
		{"over 32 MB, length not given", func() *http.Request {
			r, _ := http.NewRequest("POST", h.srv.URL+"/v1/logs", io.NopCloser(&zeros{n: MaxOTLPBody + 1}))
			r.Header.Set("Content-Type", "application/x-protobuf")
			return r
		}, http.StatusRequestEntityTooLarge, "body larger than"},
		{"over 32 MB after gzip", func() *http.Request {
			r, _ := http.NewRequest("POST", h.srv.URL+"/v1/logs", strings.NewReader(string(bomb)))
			r.Header.Set("Content-Type", "application/x-protobuf")
			r.Header.Set("Content-Encoding", "gzip")
			return r
		}, http.StatusRequestEntityTooLarge, "decompressed body larger than"},
		{"broken gzip", func() *http.Request {
			r, _ := http.NewRequest("POST", h.srv.URL+"/v1/logs", strings.NewReader("not gzip"))
			r.Header.Set("Content-Type", "application/x-protobuf")
			r.Header.Set("Content-Encoding", "gzip")
			return r
		}, http.StatusBadRequest, "invalid gzip body"},
		{"not protobuf", func() *http.Request {
			r, _ := http.NewRequest("POST", h.srv.URL+"/v1/logs", strings.NewReader("\xff\xff\xff"))
			r.Header.Set("Content-Type", "application/x-protobuf")
			return r
		}, http.StatusBadRequest, "invalid OTLP protobuf body"},
		{"not OTLP JSON", func() *http.Request {
			r, _ := http.NewRequest("POST", h.srv.URL+"/v1/logs", strings.NewReader(`{"resourceLogs":7}`))
			r.Header.Set("Content-Type", "application/json")
			return r
		}, http.StatusBadRequest, "invalid OTLP JSON body"},
		{"not POST", func() *http.Request {
			r, _ := http.NewRequest("GET", h.srv.URL+"/v1/logs", nil)
			return r
		}, http.StatusMethodNotAllowed, ""},
		{"another path", func() *http.Request {
			r, _ := http.NewRequest("POST", h.srv.URL+"/v1/profiles", strings.NewReader(string(valid)))
			r.Header.Set("Content-Type", "application/x-protobuf")
			return r
		}, http.StatusNotFound, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, answer := do(t, c.req())
			if status != c.status || !strings.Contains(answer, c.text) {
				t.Errorf("status %d %q; want %d with %q", status, answer, c.status, c.text)
			}
		})
	}
	list, err := h.st.List(context.Background(), store.ListQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Sessions) != 0 {
		t.Errorf("refused requests wrote %d sessions; want none", len(list.Sessions))
	}
}

func TestReceiverMetricsAndTraces(t *testing.T) {
	h := startCapture(t)
	metrics := &colmetricspb.ExportMetricsServiceRequest{ResourceMetrics: []*metricspb.ResourceMetrics{{
		ScopeMetrics: []*metricspb.ScopeMetrics{{Metrics: []*metricspb.Metric{{
			Name: "claude_code.cost.usage", Unit: "USD",
			Data: &metricspb.Metric_Sum{Sum: &metricspb.Sum{
				AggregationTemporality: metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE, IsMonotonic: true,
				DataPoints: []*metricspb.NumberDataPoint{{
					Attributes: []*commonpb.KeyValue{kv("session.id", sid), kv("model", "claude-opus-4-6")},
					Value:      &metricspb.NumberDataPoint_AsDouble{AsDouble: 0.42},
				}},
			}},
		}}}},
	}}}
	body, _ := proto.Marshal(metrics)
	for _, c := range []struct{ path, ctype string }{
		{"/v1/metrics", "application/x-protobuf"}, {"/v1/traces", "application/x-protobuf"}, {"/v1/traces", "application/json"},
	} {
		b := body
		if c.ctype == "application/json" {
			b = []byte(`{"resourceSpans":[]}`)
		}
		if status, answer := h.post(t, c.path, c.ctype, "", b); status != http.StatusOK {
			t.Errorf("POST %s %s = %d %q; want 200", c.path, c.ctype, status, answer)
		}
	}
	if status, _ := h.post(t, "/v1/metrics", "application/x-protobuf", "", []byte("\xff\xff")); status != http.StatusBadRequest {
		t.Errorf("POST /v1/metrics with a broken body = %d; want 400", status)
	}
	list, _ := h.st.List(context.Background(), store.ListQuery{})
	if len(list.Sessions) != 0 {
		t.Errorf("metrics and traces wrote %d sessions; want none", len(list.Sessions))
	}
}

// The heart of the merge: telemetry of a tool call arrives before the
// transcript line that holds its content, then the line arrives.
func TestToolResultBeforeTranscript(t *testing.T) {
	t.Run("in memory", testToolResultBeforeTranscript)
	t.Run("spilled", func(t *testing.T) {
		was := adapters.SpillAfter
		adapters.SpillAfter = 0 // the transcript's steps are joined as their batches are built
		t.Cleanup(func() { adapters.SpillAfter = was })
		testToolResultBeforeTranscript(t)
	})
}

func testToolResultBeforeTranscript(t *testing.T) {
	h := startCapture(t)
	path := h.transcript(sid)
	appendLines(t, path, promptLine(sid, "u1", "run the tests"))
	waitFor(t, 10*time.Second, func() (bool, string) {
		_, ok := detail(t, h.st, sid)
		return ok, "prompt not imported"
	})

	at := mustTime(transcriptTime).Add(2 * time.Second)
	h.postLogs(t, export(
		event(sid, "tool_decision", at, "tool_name", "Bash", "tool_use_id", "toolu_1", "decision", "accept", "source", "user_temporary"),
		event(sid, "tool_result", at.Add(time.Second), "tool_name", "Bash", "tool_use_id", "toolu_1", "success", "true",
			"duration_ms", 840, "decision_type", "accept", "decision_source", "user_temporary",
			"tool_parameters", `{"bash_command":"npm","full_command":"npm test"}`, "tool_input", `{"command":"npm test"}`),
		apiRequest(sid, "req_1", at, 0.05, 10, 20, 30, 40),
	))
	var ref store.Step
	waitFor(t, 10*time.Second, func() (bool, string) {
		d, _ := detail(t, h.st, sid)
		st, n := stepByID(d, "toolu_1")
		ref = st
		return n == 1, fmt.Sprintf("%d steps toolu_1 in %d steps", n, len(d.Steps))
	})
	d, _ := detail(t, h.st, sid)
	if ref.ContentStatus != store.ContentReferenceOnly || !slices.Equal(ref.Channels, []string{"otel"}) ||
		deref(ref.Payload.OutputRef) != "otel:tool_result/toolu_1" || ref.Payload.Command != nil || ref.Type != store.TypeCommand {
		t.Errorf("telemetry step = %+v; want a reference-only command with output_ref otel:tool_result/toolu_1", ref)
	}
	if ref.Seq < adapters.ProvisionalSeq || ref.Decision != adapters.DecisionAccepted || ref.Outcome != adapters.OutcomeOK {
		t.Errorf("telemetry step seq %d decision %s outcome %s; want a provisional seq, accepted, ok", ref.Seq, ref.Decision, ref.Outcome)
	}
	if len(d.Turns) != 1 || ref.TurnID != d.Turns[0].ID {
		t.Errorf("telemetry step in turn %s of %+v; want the prompt's turn", ref.TurnID, d.Turns)
	}

	appendLines(t, path,
		toolUseLine(sid, "a1", "toolu_1", "npm test", "2026-03-01T10:00:02.000Z"),
		toolResultLine(sid, "u2", "toolu_1", "1 passing", "2026-03-01T10:00:03.000Z"))
	var inline store.Step
	waitFor(t, 10*time.Second, func() (bool, string) {
		d, _ := detail(t, h.st, sid)
		st, n := stepByID(d, "toolu_1")
		inline = st
		return n == 1 && st.ContentStatus == store.ContentInline, fmt.Sprintf("toolu_1 ×%d, %s", n, st.ContentStatus)
	})
	d, _ = detail(t, h.st, sid)
	if len(d.Steps) != 2 {
		t.Errorf("session has %d steps; want the prompt and one tool step", len(d.Steps))
	}
	if inline.Seq != 2 || deref(inline.Payload.Command) != "npm test" || deref(inline.Payload.Stdout) != "1 passing" {
		t.Errorf("joined step seq %d command %q stdout %q; want seq 2, the transcript's content", inline.Seq, deref(inline.Payload.Command), deref(inline.Payload.Stdout))
	}
	if !slices.Equal(inline.Channels, []string{"transcript", "otel"}) || inline.Decision != adapters.DecisionAccepted || inline.Payload.OutputRef != nil {
		t.Errorf("joined step channels %v decision %s output_ref %v; want transcript+otel, accepted, no ref", inline.Channels, inline.Decision, inline.Payload.OutputRef)
	}
	if d.Metrics == nil || d.Metrics.APIRequests != 1 || d.Metrics.CostUSD != 0.05 {
		t.Errorf("metrics = %+v; want the api_request's", d.Metrics)
	}

	// Any later read of the transcript, here a full one as `service import`
	// does, keeps the joined evidence.
	stamp, _ := h.st.LatestStamp(context.Background())
	if _, err := ImportClaudeSession(context.Background(), h.st, sid, path, true); err != nil {
		t.Fatal(err)
	}
	if again, _ := h.st.LatestStamp(context.Background()); again != stamp {
		t.Errorf("reading the transcript again changed the session")
	}
}

// A decision to refuse, known only from telemetry, is a rejected step.
func TestRejectedByTelemetry(t *testing.T) {
	h := startCapture(t)
	appendLines(t, h.transcript(sid), promptLine(sid, "u1", "clean up"))
	at := mustTime(transcriptTime).Add(time.Second)
	h.postLogs(t, export(event(sid, "tool_decision", at, "tool_name", "Write", "tool_use_id", "toolu_9", "decision", "reject", "source", "user_reject")))
	waitFor(t, 10*time.Second, func() (bool, string) {
		d, _ := detail(t, h.st, sid)
		st, n := stepByID(d, "toolu_9")
		if n != 1 {
			return false, "no step toolu_9"
		}
		ok := st.Decision == adapters.DecisionRejected && st.Outcome == adapters.OutcomeNotRun && st.Type == store.TypeOther &&
			st.Payload.ToolName == "Write" && strings.Contains(string(st.Payload.Raw), `"ref":"otel:tool_result/toolu_9"`)
		return ok, fmt.Sprintf("step = %+v; want a rejected other step named Write with its ref", st)
	})
}

func TestDeleteRemovesTelemetry(t *testing.T) {
	h := startCapture(t)
	h.postLogs(t, export(apiRequest(sid, "req_1", time.Unix(1785708000, 0), 1, 1, 1, 0, 0)))
	wantMetrics(t, h.st, sid, store.Metrics{CostUSD: 1, APIRequests: 1, Tokens: store.Tokens{Input: 1, Output: 1}})
	if err := h.st.Delete(context.Background(), sid); err != nil {
		t.Fatal(err)
	}
	if n := telemetryRows(t, h.st); n != 0 {
		t.Errorf("%d telemetry rows after delete; want 0", n)
	}
	// The session is never recorded again, from telemetry either.
	h.postLogs(t, export(apiRequest(sid, "req_2", time.Unix(1785708001, 0), 1, 1, 1, 0, 0)))
	if _, ok := detail(t, h.st, sid); ok {
		t.Error("telemetry recorded a deleted session again")
	}
	if n := telemetryRows(t, h.st); n != 0 {
		t.Errorf("%d telemetry rows kept for a deleted session; want 0", n)
	}
}

func telemetryRows(t *testing.T, st *store.Store) int {
	t.Helper()
	conn, err := sqlite.OpenConn(st.Path(), sqlite.OpenReadOnly)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	n := -1
	err = sqlitex.Execute(conn, `SELECT count(*) FROM telemetry`, &sqlitex.ExecOptions{
		ResultFunc: func(s *sqlite.Stmt) error { n = s.ColumnInt(0); return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// seed reads a body of the fuzz corpus.
func seed(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "fuzz", "FuzzDecodeLogsJSON", name))
	if err != nil {
		t.Fatal(err)
	}
	_, lit, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	s, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(lit, "[]byte("), ")"))
	if err != nil {
		t.Fatal(err)
	}
	return []byte(s)
}

func TestDecodeClaudeCodeEvents(t *testing.T) {
	sessions, err := decodeLogs(seed(t, "all_events"), true, time.Now())
	if err != nil || len(sessions) != 1 {
		t.Fatalf("decodeLogs = %v, %d sessions; want one", err, len(sessions))
	}
	var got []string
	for _, r := range sessions[0].records {
		got = append(got, r.Kind+"/"+r.Key)
	}
	want := []string{"resource/resource", "api_request/req_1", "tool_decision/toolu_1", "tool_result/toolu_1", "tool_result/toolu_2", "tool_decision/toolu_3"}
	if !slices.Equal(got, want) {
		t.Errorf("records %v; want %v (user_prompt is not kept)", got, want)
	}
	recs := sessions[0].records
	for i := range recs {
		recs[i].Ord = int64(i + 1)
	}
	batches := claudecode.TelemetryBatches(sessions[0].id, adapters.Records{}, recs, nil)
	if len(batches) != 1 {
		t.Fatalf("TelemetryBatches = %d batches; want 1", len(batches))
	}
	if m := batches[0].Session.Metrics; m == nil || m.CostUSD != 0.05 || m.Tokens.CacheCreation != 40 {
		t.Errorf("metrics = %+v; want cost 0.05 from the micros", m)
	}
	var failed store.Step
	for _, st := range batches[0].Steps {
		if st.ID == "toolu_2" {
			failed = st
		}
	}
	if failed.Payload.ToolName != "Edit" || failed.Outcome != adapters.OutcomeFailed || failed.Error == nil || failed.Error.Type != "tool_use_error" || failed.Decision != adapters.DecisionAuto {
		t.Errorf("older attribute names: %s %s %+v %s; want Edit failed tool_use_error auto", failed.Payload.ToolName, failed.Outcome, failed.Error, failed.Decision)
	}
	var result claudecode.ToolEvent
	json.Unmarshal(recs[3].Body, &result) // tool_result/toolu_1
	if p := string(result.Parameters); p != `{"bash_command":"npm","full_command":"npm test"}` {
		t.Errorf("tool_parameters = %s", p)
	}
	if strings.Contains(string(recs[3].Body), "tool_input") {
		t.Error("tool_input was kept")
	}

	sessions, err = decodeLogs(seed(t, "odd_values"), true, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range sessions {
		ids = append(ids, s.id)
	}
	// from-resource: session.id on the resource; s-2: event name in an
	// attribute, body not text; "../etc" is no plain id; codex events and
	// records of another service are not Claude Code's.
	if !slices.Equal(ids, []string{"from-resource", "s-2"}) {
		t.Errorf("sessions %v; want from-resource and s-2", ids)
	}
}

// TestReceiverBoundsSessionsPerExport sends exports naming more sessions
// than one may create: refused whole, no session and no capture folder
// kept; one at the bound is taken.
func TestReceiverBoundsSessionsPerExport(t *testing.T) {
	h := startCapture(t)
	at := time.Unix(1785708000, 0)
	many := func(n int) []byte {
		var recs []*logspb.LogRecord
		for i := range n {
			id := fmt.Sprintf("flood-%05d", i)
			recs = append(recs, apiRequest(id, "req_"+id, at, 0.01, 1, 1, 0, 0), event(id, "user_prompt", at))
		}
		b, err := proto.Marshal(export(recs...))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	ctx := context.Background()
	captures := filepath.Join(filepath.Dir(h.st.Path()), "captures")

	status, answer := h.post(t, "/v1/logs", "application/x-protobuf", "", many(2000))
	if want := fmt.Sprintf("names 2000 sessions, more than %d", MaxOTLPSessions); status != http.StatusBadRequest || !strings.Contains(answer, want) {
		t.Errorf("POST of 2000 sessions = %d %q; want 400 with %q", status, answer, want)
	}
	status, answer = h.post(t, "/v1/logs", "application/json", "", protoJSONOf(t, many(MaxOTLPSessions+1)))
	if status != http.StatusBadRequest {
		t.Errorf("POST of %d sessions as JSON = %d %q; want 400", MaxOTLPSessions+1, status, answer)
	}
	list, err := h.st.List(ctx, store.ListQuery{})
	if err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(captures)
	if len(list.Sessions) != 0 || len(entries) != 0 {
		t.Errorf("refused exports left %d sessions and %d capture folders; want none", len(list.Sessions), len(entries))
	}

	if status, answer := h.post(t, "/v1/logs", "application/x-protobuf", "", many(MaxOTLPSessions)); status != http.StatusOK {
		t.Fatalf("POST of %d sessions = %d %q; want 200", MaxOTLPSessions, status, answer)
	}
	list, err = h.st.List(ctx, store.ListQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Sessions) != MaxOTLPSessions {
		t.Errorf("an export of %d sessions stored %d; want all", MaxOTLPSessions, len(list.Sessions))
	}
}

// protoJSONOf turns a protobuf logs export into OTLP JSON.
func protoJSONOf(t *testing.T, b []byte) []byte {
	t.Helper()
	var req collogspb.ExportLogsServiceRequest
	if err := proto.Unmarshal(b, &req); err != nil {
		t.Fatal(err)
	}
	return protoJSON(t, &req)
}
