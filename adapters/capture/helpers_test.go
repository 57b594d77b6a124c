package capture

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/agentreview/service/store"
)

func mustOpen(t testing.TB) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// logBuffer collects what a capture logs, safe for its goroutines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// harness is a running capture on a temp store: Claude Code and Cline
// roots in temp folders and the receiver on an httptest server.
type harness struct {
	st      *store.Store
	c       *Capture
	srv     *httptest.Server
	claude  string // projects root
	cline   string // tasks root
	project string // a project folder under claude
	logs    *logBuffer
}

func startCapture(t *testing.T) *harness {
	t.Helper()
	dir := t.TempDir()
	h := &harness{
		st:     mustOpen(t),
		claude: filepath.Join(dir, "claude", "projects"),
		cline:  filepath.Join(dir, "cline", "data", "tasks"),
		logs:   &logBuffer{},
	}
	h.project = filepath.Join(h.claude, "-home-dev-hello")
	for _, d := range []string{h.project, h.cline} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	h.c = &Capture{
		Store: h.st, ClaudeRoots: []string{h.claude}, ClineRoots: []string{h.cline},
		Log: slog.New(slog.NewTextHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	runCapture(t, h.c)
	h.srv = httptest.NewServer(h.c.Receiver())
	t.Cleanup(h.srv.Close) // before capture stops: cleanups run last first
	return h
}

// runCapture runs c until the test ends, and checks that it stopped
// without an error.
func runCapture(t *testing.T, c *Capture) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run = %v", err)
		}
	})
}

// post sends body to the receiver and returns the status and answer.
func (h *harness) post(t *testing.T, path, contentType, encoding string, body []byte) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, h.srv.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	if encoding != "" {
		req.Header.Set("Content-Encoding", encoding)
	}
	return do(t, req)
}

func do(t *testing.T, req *http.Request) (int, string) {
	t.Helper()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// postLogs sends an export as protobuf and wants 200.
func (h *harness) postLogs(t *testing.T, req *collogspb.ExportLogsServiceRequest) {
	t.Helper()
	body, err := proto.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	if status, answer := h.post(t, "/v1/logs", "application/x-protobuf", "", body); status != http.StatusOK {
		t.Fatalf("POST /v1/logs = %d %s; want 200", status, answer)
	}
}

func (h *harness) transcript(sid string) string { return filepath.Join(h.project, sid+".jsonl") }

// appendLines adds transcript lines, each with its newline.
func appendLines(t *testing.T, path string, lines ...string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, l := range lines {
		if _, err := f.WriteString(l + "\n"); err != nil {
			t.Fatal(err)
		}
	}
}

// waitFor polls cond until it holds or the deadline passes; the last
// reason it gave is the failure message.
// growsLive has capture follow an agent's root and writes a real session
// file there as the agent would append to it: at path (its folders made
// after the watch began), the first split lines of src, then the rest.
// After each part the store must hold session sid with the steps the
// adapter reads from what was written (steps).
func growsLive(t *testing.T, kind, root, src, path, sid string, split int, steps func(path string) int) {
	t.Helper()
	if err := os.MkdirAll(root, 0o700); err != nil {
		t.Fatal(err)
	}
	h := &harness{st: mustOpen(t), logs: &logBuffer{}}
	h.c = &Capture{Store: h.st, Roots: map[string][]string{kind: {root}}, Debounce: 50 * time.Millisecond}
	runCapture(t, h.c)
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	save(t, path, []byte(strings.Join(lines[:split], "")))
	first := steps(path)
	waitFor(t, 10*time.Second, func() (bool, string) {
		n := stepCount(t, h, sid)
		return n == first, fmt.Sprintf("%d steps stored; want the first lines' %d", n, first)
	})
	appendLines(t, path, strings.TrimSuffix(strings.Join(lines[split:], ""), "\n"))
	want := steps(src)
	if want <= first {
		t.Fatalf("the whole sample has %d steps, its first lines %d; the test shows no growth", want, first)
	}
	waitFor(t, 10*time.Second, func() (bool, string) {
		n := stepCount(t, h, sid)
		return n == want, fmt.Sprintf("%d steps stored after the append; want %d", n, want)
	})
}

func waitFor(t *testing.T, within time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		ok, why := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", within, why)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// detail reads a session, ok false while it is not stored.
func detail(t *testing.T, st *store.Store, sid string) (store.SessionDetail, bool) {
	t.Helper()
	d, err := st.Detail(context.Background(), sid, store.DetailQuery{})
	if errors.Is(err, store.ErrNotFound) {
		return d, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return d, true
}

func stepByID(d store.SessionDetail, id string) (store.Step, int) {
	var found store.Step
	n := 0
	for _, s := range d.Steps {
		if s.ID == id {
			found = s
			n++
		}
	}
	return found, n
}

// Builders of OTLP exports shaped like Claude Code's (AGENT-FORMATS 3.5).

func kv(key string, v any) *commonpb.KeyValue {
	var av *commonpb.AnyValue
	switch x := v.(type) {
	case string:
		av = &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: x}}
	case int:
		av = &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: int64(x)}}
	case float64:
		av = &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: x}}
	case bool:
		av = &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: x}}
	default:
		panic(fmt.Sprintf("kv %s: %T", key, v))
	}
	return &commonpb.KeyValue{Key: key, Value: av}
}

var seq int

// event is one Claude Code log record: body claude_code.<name>, event.name
// <name>, the session and prompt ids, then attrs as key, value pairs.
func event(sid, name string, at time.Time, attrs ...any) *logspb.LogRecord {
	seq++
	kvs := []*commonpb.KeyValue{
		kv("event.name", name), kv("session.id", sid), kv("prompt.id", "prompt-1"),
		kv("event.timestamp", at.UTC().Format("2006-01-02T15:04:05.000Z")), kv("event.sequence", seq),
		kv("user.email", "dev@example.com"), kv("app.version", "2.1.38"),
	}
	for i := 0; i+1 < len(attrs); i += 2 {
		kvs = append(kvs, kv(attrs[i].(string), attrs[i+1]))
	}
	return &logspb.LogRecord{
		TimeUnixNano: uint64(at.UnixNano()),
		Body:         &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "claude_code." + name}},
		Attributes:   kvs,
	}
}

func export(records ...*logspb.LogRecord) *collogspb.ExportLogsServiceRequest {
	return &collogspb.ExportLogsServiceRequest{ResourceLogs: []*logspb.ResourceLogs{{
		Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{
			kv("service.name", "claude-code"), kv("service.version", "2.1.38"),
		}},
		ScopeLogs: []*logspb.ScopeLogs{{LogRecords: records}},
	}}}
}

func apiRequest(sid, requestID string, at time.Time, cost float64, in, out, cacheRead, cacheCreation int) *logspb.LogRecord {
	return event(sid, "api_request", at, "model", "claude-opus-4-6", "request_id", requestID, "cost_usd", cost,
		"input_tokens", in, "output_tokens", out, "cache_read_tokens", cacheRead, "cache_creation_tokens", cacheCreation,
		"duration_ms", 1200)
}

func protoJSON(t testing.TB, req proto.Message) []byte {
	t.Helper()
	b, err := protojson.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func gzipped(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// Claude Code transcript lines (AGENT-FORMATS 1.9).

const transcriptTime = "2026-03-01T10:00:00.000Z"

func promptLine(sid, uuid, text string) string {
	return line(map[string]any{
		"type": "user", "uuid": uuid, "parentUuid": nil, "sessionId": sid, "cwd": "/home/dev/hello",
		"version": "2.1.38", "timestamp": transcriptTime, "permissionMode": "default",
		"message": map[string]any{"role": "user", "content": text},
	})
}

func toolUseLine(sid, uuid, toolUseID, command, at string) string {
	return line(map[string]any{
		"type": "assistant", "uuid": uuid, "sessionId": sid, "cwd": "/home/dev/hello", "version": "2.1.38",
		"timestamp": at, "requestId": "req_1",
		"message": map[string]any{
			"id": "msg_1", "model": "claude-opus-4-6", "role": "assistant",
			"content": []any{map[string]any{"type": "tool_use", "id": toolUseID, "name": "Bash", "input": map[string]any{"command": command}}},
			"usage":   map[string]any{"input_tokens": 3, "output_tokens": 77},
		},
	})
}

func toolResultLine(sid, uuid, toolUseID, stdout, at string) string {
	return line(map[string]any{
		"type": "user", "uuid": uuid, "sessionId": sid, "cwd": "/home/dev/hello", "version": "2.1.38", "timestamp": at,
		"message":       map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": toolUseID, "content": stdout}}},
		"toolUseResult": map[string]any{"stdout": stdout, "stderr": "", "interrupted": false, "isImage": false},
	})
}

func line(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func mustTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t
}

func deref(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}
