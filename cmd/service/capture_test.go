package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	"google.golang.org/protobuf/proto"

	"github.com/agentreview/service/store"
	"github.com/agentreview/service/store/storetest"
)

func str(key, value string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: key, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: value}}}
}

// The capture command end to end: a transcript appears in Claude Code's
// folder and its telemetry arrives on the OTLP port; the session is stored
// with its steps and cost.
func TestCaptureCommand(t *testing.T) {
	home := withHome(t)
	config := filepath.Join(home, ".claude-config")
	t.Setenv("CLAUDE_CONFIG_DIR", config)
	for _, v := range []string{"CLINE_DATA_DIR", "CLINE_DIR"} {
		t.Setenv(v, "")
		os.Unsetenv(v)
	}
	db := filepath.Join(home, "s.db")
	port := freePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out syncBuffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"capture", "--db", db, "--otlp-port", fmt.Sprint(port)}, &out, &out) }()
	waitListening(t, port, &out)

	claudeTranscript(t, config) // under $CLAUDE_CONFIG_DIR/projects
	body, err := proto.Marshal(&collogspb.ExportLogsServiceRequest{ResourceLogs: []*logspb.ResourceLogs{{
		Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{str("service.name", "claude-code"), str("service.version", "2.1.38")}},
		ScopeLogs: []*logspb.ScopeLogs{{LogRecords: []*logspb.LogRecord{{
			TimeUnixNano: uint64(time.Date(2026, 2, 10, 21, 12, 0, 0, time.UTC).UnixNano()),
			Body:         &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "claude_code.api_request"}},
			Attributes: []*commonpb.KeyValue{
				str("event.name", "api_request"), str("session.id", spotterSession), str("request_id", "req_1"),
				str("cost_usd", "0.25"), str("input_tokens", "100"), str("output_tokens", "50"),
			},
		}}}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.Post(fmt.Sprintf("http://127.0.0.1:%d/v1/logs", port), "application/x-protobuf", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("POST /v1/logs = %d; want 200", res.StatusCode)
	}

	st, err := store.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	deadline := time.Now().Add(15 * time.Second)
	for {
		d, err := st.Detail(context.Background(), spotterSession, store.DetailQuery{})
		if err == nil && len(d.Steps) > 0 && d.Metrics != nil && d.Metrics.CostUSD == 0.25 && d.Source == "import:claude-code" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("session not captured with its transcript and cost: %v %+v; output:\n%s", err, d.Session, &out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("capture = %v; output:\n%s", err, &out)
	}
	if !strings.Contains(out.String(), "capture stopped") {
		t.Errorf("output %q; want it to say capture stopped", out.String())
	}
}

// TestCaptureTerminalSafe: capture names the folders it follows, some of
// them the agents' own (the stored sessions' workspaces, where Aider may
// run): without their control characters.
func TestCaptureTerminalSafe(t *testing.T) {
	home := withHome(t)
	db := filepath.Join(home, "s.db")
	st, err := store.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	b := storetest.Batch("evil-workspace", 0, 3)
	b.Session.Workspace.Root = "/tmp/evil\x1b]0;pwned\x07\x1b[2J"
	if _, err := st.Apply(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	st.Close()
	port := freePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	var out syncBuffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"capture", "--db", db, "--otlp-port", fmt.Sprint(port)}, &out, &out) }()
	waitListening(t, port, &out)
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("capture = %v", err)
	}
	printed := out.String()
	if !strings.Contains(printed, "/tmp/evil") || strings.ContainsFunc(printed, func(r rune) bool { return r != '\n' && unicode.IsControl(r) }) {
		t.Errorf("capture printed %q; want the stored workspace followed, without its control characters", printed)
	}
}
