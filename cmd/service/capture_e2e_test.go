package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploghttp"
	otellog "go.opentelemetry.io/otel/log"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/agentreview/service/store"
)

// e2eSession is the session of the transcript the end-to-end tests write:
// lines adapted from adapters/claudecode/testdata/spotter/short.jsonl
// under a session id of their own.
const (
	e2eSession = "0d6c7a52-3b1e-4c1f-9a4e-6f1f2a7d9e01"
	e2eToolUse = "toolu_0116Hyi5v8ut7Ffb7d8qV1Sc"
	e2eProject = "-home-marco-projects-spotter"
)

// e2eTranscript is a minimal Claude Code transcript: a prompt, an assistant
// line with one Bash tool_use and the user line with its tool_result.
func e2eTranscript(sid string) string {
	lines := []string{
		`{"parentUuid":null,"isSidechain":false,"userType":"external","cwd":"/home/marco/projects/spotter","sessionId":"SID","version":"2.1.38","gitBranch":"master","type":"user","message":{"role":"user","content":"mix phx.server doesnt seem to start"},"uuid":"7d48cbd2-6615-4dd8-87f6-38f12b8167d6","timestamp":"2026-02-10T21:11:56.846Z","permissionMode":"default"}`,
		`{"parentUuid":"7d48cbd2-6615-4dd8-87f6-38f12b8167d6","isSidechain":false,"userType":"external","cwd":"/home/marco/projects/spotter","sessionId":"SID","version":"2.1.38","gitBranch":"master","message":{"model":"claude-opus-4-6","id":"msg_01MKH1ccEGrZGNPvu8pYiiQa","type":"message","role":"assistant","content":[{"type":"tool_use","id":"TOOLU","name":"Bash","input":{"command":"mix phx.server 2>&1 | head -80","timeout":30000},"caller":{"type":"direct"}}],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":3,"cache_creation_input_tokens":13835,"cache_read_input_tokens":11515,"output_tokens":13,"service_tier":"standard"}},"requestId":"req_011CY15QS2LGwAeBxdfa6e1V","type":"assistant","uuid":"194d33b0-6cf7-4c54-8200-07dfd3fb88cf","timestamp":"2026-02-10T21:12:01.117Z"}`,
		`{"parentUuid":"194d33b0-6cf7-4c54-8200-07dfd3fb88cf","isSidechain":false,"userType":"external","cwd":"/home/marco/projects/spotter","sessionId":"SID","version":"2.1.38","gitBranch":"master","type":"user","message":{"role":"user","content":[{"type":"tool_result","content":"Compiling 3 files (.ex)\n[info] Running SpotterWeb.Endpoint","is_error":false,"tool_use_id":"TOOLU"}]},"uuid":"ff80d82a-4ac1-4945-83dd-1226f98b8cf6","timestamp":"2026-02-10T21:12:05.480Z","toolUseResult":{"stdout":"Compiling 3 files (.ex)\n[info] Running SpotterWeb.Endpoint","stderr":"","interrupted":false,"isImage":false},"sourceToolAssistantUUID":"194d33b0-6cf7-4c54-8200-07dfd3fb88cf"}`,
	}
	s := strings.Join(lines, "\n") + "\n"
	return strings.NewReplacer("SID", sid, "TOOLU", e2eToolUse).Replace(s)
}

// e2eAssistantLine is a later assistant reply of the transcript.
func e2eAssistantLine(sid, uuid, parent, text string) string {
	b, _ := json.Marshal(map[string]any{
		"parentUuid": parent, "isSidechain": false, "userType": "external", "cwd": "/home/marco/projects/spotter",
		"sessionId": sid, "version": "2.1.38", "gitBranch": "master", "type": "assistant", "uuid": uuid,
		"timestamp": time.Now().UTC().Format("2006-01-02T15:04:05.000Z"), "requestId": "req_" + uuid,
		"message": map[string]any{
			"model": "claude-opus-4-6", "id": "msg_" + uuid, "type": "message", "role": "assistant",
			"content": []any{map[string]any{"type": "text", "text": text}},
			"usage":   map[string]any{"input_tokens": 3, "output_tokens": 9},
		},
	})
	return string(b) + "\n"
}

func writeTranscript(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	// A plain write in place, as Claude Code creates its transcripts.
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// startCaptureCommand runs `service capture` in this process on db with
// the OTLP receiver on a free port, and stops it when the test ends.
func startCaptureCommand(t *testing.T, db string) (port int, out *syncBuffer) {
	t.Helper()
	for _, v := range []string{"CLINE_DATA_DIR", "CLINE_DIR"} {
		t.Setenv(v, "")
		os.Unsetenv(v)
	}
	port = freePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	out = &syncBuffer{}
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"capture", "--db", db, "--otlp-port", fmt.Sprint(port)}, out, out) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("capture = %v; output:\n%s", err, out)
		}
	})
	waitListening(t, port, out)
	return port, out
}

// The capture command end to end with the OpenTelemetry Go SDK as the
// exporter: Claude Code-shaped api_request and tool_result events arrive
// over OTLP/HTTP protobuf before the transcript, then the transcript is
// written; the store ends with one session, its cost, and the tool call as
// one inline step.
func TestCaptureEndToEndWithOTelSDK(t *testing.T) {
	home := withHome(t)
	config := filepath.Join(home, ".claude-config")
	t.Setenv("CLAUDE_CONFIG_DIR", config)
	if err := os.MkdirAll(filepath.Join(config, "projects"), 0o700); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(home, "s.db")
	port, out := startCaptureCommand(t, db)

	ctx := context.Background()
	exp, err := otlploghttp.New(ctx,
		otlploghttp.WithEndpoint(fmt.Sprintf("127.0.0.1:%d", port)),
		otlploghttp.WithInsecure(),
	)
	if err != nil {
		t.Fatal(err)
	}
	res := resource.NewSchemaless(
		attribute.String("service.name", "claude-code"),
		attribute.String("service.version", "2.1.38"),
	)
	lp := sdklog.NewLoggerProvider(sdklog.WithResource(res), sdklog.WithProcessor(sdklog.NewBatchProcessor(exp)))
	defer lp.Shutdown(ctx)
	logger := lp.Logger("com.anthropic.claude_code.events", otellog.WithInstrumentationVersion("2.1.38"))

	const cost = 0.0423
	base := time.Date(2026, 2, 10, 21, 12, 1, 0, time.UTC)
	emit := func(name string, at time.Time, seq int, attrs ...attribute.KeyValue) {
		var r otellog.Record
		r.SetEventName("claude_code." + name)
		r.SetTimestamp(at)
		r.SetObservedTimestamp(time.Now())
		r.SetBody(attribute.StringValue("claude_code." + name))
		r.AddAttributes(
			attribute.String("event.name", name),
			attribute.String("event.timestamp", at.Format("2006-01-02T15:04:05.000Z")),
			attribute.Int("event.sequence", seq),
			attribute.String("session.id", e2eSession),
			attribute.String("prompt.id", "prompt-1"),
			attribute.String("app.version", "2.1.38"),
			attribute.String("user.email", "dev@example.com"),
		)
		r.AddAttributes(attrs...)
		logger.Emit(ctx, r)
	}
	emit("api_request", base, 1,
		attribute.String("model", "claude-opus-4-6"),
		attribute.String("request_id", "req_011CY15QS2LGwAeBxdfa6e1V"),
		attribute.Float64("cost_usd", cost),
		attribute.Int("input_tokens", 3),
		attribute.Int("output_tokens", 13),
		attribute.Int("cache_read_tokens", 11515),
		attribute.Int("cache_creation_tokens", 13835),
		attribute.Int("duration_ms", 1200),
	)
	emit("tool_result", base.Add(4*time.Second), 2,
		attribute.String("tool_name", "Bash"),
		attribute.String("tool_use_id", e2eToolUse),
		attribute.String("success", "true"),
		attribute.Int("duration_ms", 4300),
		attribute.String("decision_type", "accept"),
		attribute.String("decision_source", "user_temporary"),
		attribute.String("tool_parameters", `{"bash_command":"mix","full_command":"mix phx.server 2>&1 | head -80"}`),
	)
	flushCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := lp.ForceFlush(flushCtx); err != nil {
		t.Fatalf("ForceFlush = %v; output:\n%s", err, out)
	}

	st, err := store.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()

	// The telemetry alone: a session with the cost and a reference step.
	waitDetail(t, st, e2eSession, out, func(d store.SessionDetail) (bool, string) {
		if d.Metrics == nil || d.Metrics.CostUSD != cost {
			return false, fmt.Sprintf("metrics %+v; want cost %v", d.Metrics, cost)
		}
		return countStep(d, e2eToolUse) == 1, fmt.Sprintf("%d steps %s", countStep(d, e2eToolUse), e2eToolUse)
	})

	// Then the transcript.
	writeTranscript(t, filepath.Join(config, "projects", e2eProject, e2eSession+".jsonl"), e2eTranscript(e2eSession))
	d := waitDetail(t, st, e2eSession, out, func(d store.SessionDetail) (bool, string) {
		var step store.Step
		for _, s := range d.Steps {
			if s.ID == e2eToolUse {
				step = s
			}
		}
		n := countStep(d, e2eToolUse)
		return n == 1 && step.ContentStatus == store.ContentInline && d.Source == "import:claude-code",
			fmt.Sprintf("source %s, %d steps %s, content %s", d.Source, n, e2eToolUse, step.ContentStatus)
	})
	list, err := st.List(ctx, store.ListQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Sessions) != 1 {
		t.Errorf("store has %d sessions; want 1", len(list.Sessions))
	}
	if d.Metrics == nil || d.Metrics.CostUSD != cost || d.Metrics.APIRequests != 1 ||
		d.Metrics.Tokens != (store.Tokens{Input: 3, Output: 13, CacheRead: 11515, CacheCreation: 13835}) {
		t.Errorf("metrics = %+v; want the api_request's as sent", d.Metrics)
	}
	seen := map[string]int{}
	tools := 0
	for _, s := range d.Steps {
		seen[s.ID]++
		if s.Type == store.TypeCommand {
			tools++
		}
	}
	for id, n := range seen {
		if n > 1 {
			t.Errorf("step %s stored %d times", id, n)
		}
	}
	if tools != 1 {
		t.Errorf("%d command steps; want the one tool call, once", tools)
	}
	for _, s := range d.Steps {
		if s.ID == e2eToolUse {
			if s.Payload.Command == nil || *s.Payload.Command != "mix phx.server 2>&1 | head -80" ||
				s.Payload.Stdout == nil || !strings.Contains(*s.Payload.Stdout, "SpotterWeb.Endpoint") || s.Payload.OutputRef != nil {
				t.Errorf("tool step payload = %+v; want the transcript's command and output inline", s.Payload)
			}
			if strings.Join(s.Channels, ",") != "transcript,otel" {
				t.Errorf("tool step channels %v; want transcript and otel", s.Channels)
			}
		}
	}
	t.Logf("session %s: %d steps, cost %v, channels joined", e2eSession, len(d.Steps), d.Metrics.CostUSD)
}

func countStep(d store.SessionDetail, id string) int {
	n := 0
	for _, s := range d.Steps {
		if s.ID == id {
			n++
		}
	}
	return n
}

// waitDetail polls the session until cond holds, for up to 15 seconds.
func waitDetail(t *testing.T, st *store.Store, sid string, out *syncBuffer, cond func(store.SessionDetail) (bool, string)) store.SessionDetail {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	why := "not stored"
	for {
		d, err := st.Detail(context.Background(), sid, store.DetailQuery{})
		if err == nil {
			var ok bool
			if ok, why = cond(d); ok {
				return d
			}
		} else {
			why = err.Error()
		}
		if time.Now().After(deadline) {
			t.Fatalf("session %s: %s; capture output:\n%s", sid, why, out)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// A transcript under a watched folder reaches the server's change stream,
// with capture and the server two processes on one store: its creation,
// then a line appended to it, within a second.
func TestWatchedTranscriptReachesEventStream(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	bin := mustBuild(t)
	home := withHome(t)
	t.Setenv("CLAUDE_CONFIG_DIR", "")
	os.Unsetenv("CLAUDE_CONFIG_DIR")
	project := filepath.Join(home, ".claude", "projects", e2eProject)
	if err := os.MkdirAll(project, 0o700); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(t.TempDir(), "store.db")
	srv := startServer(t, bin, home, db)
	_, out := startCaptureCommand(t, db)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.base+"/api/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	type change struct {
		at        time.Time
		updatedAt string
	}
	var (
		mu      sync.Mutex
		changes []change // of e2eSession
	)
	arrived := make(chan struct{}, 64)
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if line == "event: ready" {
				close(ready)
			}
			if data, ok := strings.CutPrefix(line, "data: "); ok && data != "{}" {
				var c struct {
					SessionID string `json:"session_id"`
					UpdatedAt string `json:"updated_at"`
				}
				json.Unmarshal([]byte(data), &c)
				if c.SessionID == e2eSession {
					mu.Lock()
					changes = append(changes, change{time.Now(), c.UpdatedAt})
					mu.Unlock()
					arrived <- struct{}{}
				}
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(10 * time.Second):
		t.Fatalf("no ready event; server output:\n%s", srv.out)
	}
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(changes)
	}
	waitChange := func(after int, within time.Duration) (time.Time, bool) {
		deadline := time.After(within)
		for {
			mu.Lock()
			if len(changes) > after {
				at := changes[len(changes)-1].at
				mu.Unlock()
				return at, true
			}
			mu.Unlock()
			select {
			case <-arrived:
			case <-deadline:
				return time.Time{}, false
			}
		}
	}

	path := filepath.Join(project, e2eSession+".jsonl")
	writeTranscript(t, path, e2eTranscript(e2eSession))
	written := time.Now()
	first, ok := waitChange(0, 15*time.Second)
	if !ok {
		t.Fatalf("no change event for the new transcript; capture output:\n%s\nserver output:\n%s", out, srv.out)
	}
	t.Logf("new transcript: change event %v after the write", first.Sub(written).Round(time.Millisecond))

	// Let the first import settle: no more events for a moment.
	for {
		n := count()
		if _, more := waitChange(n, 1500*time.Millisecond); !more {
			break
		}
	}

	before := count()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(e2eAssistantLine(e2eSession, "b2c3d4e5-0000-4000-8000-000000000001", "ff80d82a-4ac1-4945-83dd-1226f98b8cf6", "The server starts now.")); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	appended := time.Now()
	got, ok := waitChange(before, 10*time.Second)
	if !ok {
		t.Fatalf("no change event after the append; capture output:\n%s\nserver output:\n%s", out, srv.out)
	}
	latency := got.Sub(appended)
	t.Logf("appended line: change event %v after the write", latency.Round(time.Millisecond))
	// The requirement is one second; a loaded two-core machine gets half a
	// second more.
	if latency > 1500*time.Millisecond {
		t.Errorf("change event %v after the append; want within 1s (1.5s allowed under load)", latency)
	}

	// The event is the append: the session now has the reply.
	st, err := store.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	d, err := st.Detail(context.Background(), e2eSession, store.DetailQuery{})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	last := changes[len(changes)-1].updatedAt
	mu.Unlock()
	if last != d.UpdatedAt {
		t.Logf("last change updated_at %s, session now %s", last, d.UpdatedAt)
	}
	found := false
	for _, s := range d.Steps {
		if s.Payload.Text != nil && strings.Contains(*s.Payload.Text, "The server starts now.") {
			found = true
		}
	}
	if !found {
		t.Errorf("appended reply not in the session's %d steps", len(d.Steps))
	}
}
