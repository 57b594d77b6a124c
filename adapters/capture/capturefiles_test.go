package capture

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/agentreview/service/store"
)

// captureExports reads a session's otlp-logs.ndjson: each line's channel
// and its payload decoded as a logs export.
func captureExports(t *testing.T, st *store.Store, id string) []*collogspb.ExportLogsServiceRequest {
	t.Helper()
	dir, err := st.CaptureDir(id)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, "otlp-logs.ndjson"))
	if err != nil {
		t.Fatalf("capture file of %s: %v", id, err)
	}
	defer f.Close()
	var out []*collogspb.ExportLogsServiceRequest
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var line struct {
			ReceivedAt string          `json:"received_at"`
			Channel    string          `json:"channel"`
			Payload    json.RawMessage `json:"payload"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("capture line %q: %v", sc.Text(), err)
		}
		if _, err := time.Parse(time.RFC3339, line.ReceivedAt); err != nil || line.Channel != "otel" {
			t.Errorf("capture line received_at %q, channel %q; want a time and otel", line.ReceivedAt, line.Channel)
		}
		var req collogspb.ExportLogsServiceRequest
		if err := protojson.Unmarshal(line.Payload, &req); err != nil {
			t.Fatalf("capture payload %s is no OTLP logs export: %v", line.Payload, err)
		}
		out = append(out, &req)
	}
	return out
}

// exportSessions lists the session.id and event.name of every record of
// an export.
func exportSessions(req *collogspb.ExportLogsServiceRequest) (ids, names []string) {
	for _, rl := range req.GetResourceLogs() {
		for _, sl := range rl.GetScopeLogs() {
			for _, lr := range sl.GetLogRecords() {
				attrs := attributes(lr.GetAttributes())
				ids = append(ids, text(attrs["session.id"]))
				names = append(names, text(attrs["event.name"]))
			}
		}
	}
	return ids, names
}

func wantNoPath(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Lstat(%s) = %v; want nothing there", path, err)
	}
}

// An export about two sessions lands in two capture folders, each with
// every Claude Code event of its session (those the store does not keep
// too) and nothing of the other; the store keeps its telemetry as before.
func TestReceiverKeepsCaptureFiles(t *testing.T) {
	h := startCapture(t)
	const other = "7f3c2a10-0000-4000-8000-000000000002"
	at := time.Unix(1785708000, 0)
	noSession := event("", "api_request", at)
	h.postLogs(t, export(
		apiRequest(sid, "req_1", at, 1, 1, 1, 0, 0),
		event(other, "user_prompt", at, "prompt_length", 5),
		apiRequest(other, "req_2", at, 2, 1, 1, 0, 0),
		noSession,
		event(sid, "tool_decision", at, "tool_name", "Bash", "tool_use_id", "toolu_1", "decision", "accept"),
	))
	wantMetrics(t, h.st, sid, store.Metrics{CostUSD: 1, APIRequests: 1, Tokens: store.Tokens{Input: 1, Output: 1}})
	wantMetrics(t, h.st, other, store.Metrics{CostUSD: 2, APIRequests: 1, Tokens: store.Tokens{Input: 1, Output: 1}})

	for id, want := range map[string][]string{
		sid:   {"api_request", "tool_decision"},
		other: {"user_prompt", "api_request"},
	} {
		exports := captureExports(t, h.st, id)
		if len(exports) != 1 {
			t.Fatalf("%s: %d capture lines; want 1", id, len(exports))
		}
		ids, names := exportSessions(exports[0])
		if !slices.Equal(names, want) || slices.ContainsFunc(ids, func(s string) bool { return s != id }) {
			t.Errorf("%s: capture holds events %v of sessions %v; want %v of its own only", id, names, ids, want)
		}
		if v := text(attributes(exports[0].GetResourceLogs()[0].GetResource().GetAttributes())["service.version"]); v != "2.1.38" {
			t.Errorf("%s: capture resource service.version %q; want the resource as sent", id, v)
		}
		dir, _ := h.st.CaptureDir(id)
		for path, want := range map[string]os.FileMode{filepath.Dir(dir): 0o700, dir: 0o700, filepath.Join(dir, "otlp-logs.ndjson"): 0o600} {
			if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != want {
				t.Errorf("Stat(%s) = %v, %v; want mode %v", path, fi.Mode(), err, want)
			}
		}
	}
	entries, _ := os.ReadDir(filepath.Join(filepath.Dir(h.st.Path()), "captures"))
	if len(entries) != 2 {
		t.Errorf("%d capture folders; want one per session", len(entries))
	}

	// The next export of a session is appended.
	h.postLogs(t, export(apiRequest(sid, "req_3", at.Add(time.Second), 1, 1, 1, 0, 0)))
	if n := len(captureExports(t, h.st, sid)); n != 2 {
		t.Errorf("%d capture lines after a second export; want 2", n)
	}
}

// Deleting a session removes its capture folder, and its telemetry that
// arrives after makes none again.
func TestDeleteRemovesCaptureFiles(t *testing.T) {
	h := startCapture(t)
	h.postLogs(t, export(apiRequest(sid, "req_1", time.Unix(1785708000, 0), 1, 1, 1, 0, 0)))
	wantMetrics(t, h.st, sid, store.Metrics{CostUSD: 1, APIRequests: 1, Tokens: store.Tokens{Input: 1, Output: 1}})
	dir, _ := h.st.CaptureDir(sid)
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("no capture folder before the delete: %v", err)
	}
	if err := h.st.Delete(context.Background(), sid); err != nil {
		t.Fatal(err)
	}
	wantNoPath(t, dir)
	h.postLogs(t, export(apiRequest(sid, "req_2", time.Unix(1785708001, 0), 1, 1, 1, 0, 0),
		event(sid, "user_prompt", time.Unix(1785708001, 0))))
	wantNoPath(t, dir)
}

// A session id that is not a plain token names no folder: nothing is
// written for it.
func TestReceiverKeepsNoCaptureOfBadSessionID(t *testing.T) {
	h := startCapture(t)
	at := time.Unix(1785708000, 0)
	h.postLogs(t, export(apiRequest("../escape", "req_1", at, 1, 1, 1, 0, 0), event("a/b", "user_prompt", at), event("..", "user_prompt", at)))
	base := filepath.Dir(h.st.Path())
	wantNoPath(t, filepath.Join(base, "captures"))
	wantNoPath(t, filepath.Join(base, "escape"))
	if n := telemetryRows(t, h.st); n != 0 {
		t.Errorf("%d telemetry rows for bad session ids; want 0", n)
	}
}

// splitLogs keeps resources and scopes apart: two resources with records
// of one session give that session two resource entries.
func TestSplitLogsKeepsResources(t *testing.T) {
	at := time.Unix(1785708000, 0)
	a, b := export(apiRequest(sid, "r1", at, 1, 0, 0, 0, 0)), export(apiRequest(sid, "r2", at, 1, 0, 0, 0, 0))
	req := &collogspb.ExportLogsServiceRequest{ResourceLogs: []*logspb.ResourceLogs{a.ResourceLogs[0], b.ResourceLogs[0]}}
	parts := splitLogs(req)
	if len(parts) != 1 || parts[0].id != sid || len(parts[0].req.GetResourceLogs()) != 2 {
		t.Fatalf("splitLogs = %+v; want one part with both resources", parts)
	}
}
