package handlers

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentreview/service/adapters/agents"
	"github.com/agentreview/service/store"
)

const testToken = "test-token-0123456789abcdefghijklmnopqrstu"

// testService is the real router over a real temp-file store, as the
// local server has it.
type testService struct {
	t       testing.TB
	store   *store.Store
	hub     *Hub
	handler http.Handler
}

func newTestService(t testing.TB) *testService {
	t.Helper()
	st := mustOpenStore(t, filepath.Join(t.TempDir(), "store.db"))
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	hub := NewHub(st, log)
	t.Cleanup(hub.Close)
	h := Routes(Deps{Store: st, Hub: hub, Auth: Auth{Token: testToken, TokenFile: "~/.service/ingest-token"}, Log: log,
		Resume: agents.ResumeCommand})
	return &testService{t: t, store: st, hub: hub, handler: h}
}

func mustOpenStore(t testing.TB, path string) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatalf("store.Open(%s) = %v", path, err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// do sends a request through the router. Host defaults to 127.0.0.1.
func (s *testService) do(req *http.Request) *httptest.ResponseRecorder {
	s.t.Helper()
	if req.Host == "example.com" || req.Host == "" {
		req.Host = "127.0.0.1:1234"
	}
	rec := httptest.NewRecorder()
	s.handler.ServeHTTP(rec, req)
	return rec
}

func (s *testService) get(path string) *httptest.ResponseRecorder {
	s.t.Helper()
	return s.do(httptest.NewRequest(http.MethodGet, path, nil))
}

// push sends body to the ingest route with the token and JSON content type.
func (s *testService) push(body []byte, header ...string) *httptest.ResponseRecorder {
	s.t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/api/ingest", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		if header[i+1] == "" {
			req.Header.Del(header[i])
		} else {
			req.Header.Set(header[i], header[i+1])
		}
	}
	return s.do(req)
}

// stampOf is the change stamp of session id, as its page holds it for
// its live updates.
func (s *testService) stampOf(t testing.TB, id string) string {
	t.Helper()
	d, err := s.store.Detail(context.Background(), id, store.DetailQuery{NoSteps: true})
	if err != nil {
		t.Fatal(err)
	}
	return d.UpdatedAt
}

func (s *testService) mustPush(b obj, want int) {
	s.t.Helper()
	if rec := s.push(mustJSON(s.t, b)); rec.Code != want {
		s.t.Fatalf("push = %d %s; want %d", rec.Code, rec.Body, want)
	}
}

// snapshot is everything a client can read of the store, to prove a refused
// request changed nothing.
func (s *testService) snapshot() string {
	s.t.Helper()
	ctx := context.Background()
	l, err := s.store.List(ctx, store.ListQuery{})
	if err != nil {
		s.t.Fatalf("List = %v", err)
	}
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "%s\n", mustJSON(s.t, l))
	for _, o := range l.Sessions {
		d, err := s.store.Detail(ctx, o.ID, store.DetailQuery{})
		if err != nil {
			s.t.Fatalf("Detail(%s) = %v", o.ID, err)
		}
		fmt.Fprintf(&buf, "%s\n", mustJSON(s.t, d))
	}
	stamp, err := s.store.LatestStamp(ctx)
	if err != nil {
		s.t.Fatalf("LatestStamp = %v", err)
	}
	fmt.Fprintf(&buf, "stamp %d\n", stamp)
	return buf.String()
}

// send makes a request to a real server, with the ingest token and a JSON
// content type when it has a body, and returns the whole answer.
func send(t testing.TB, srv *httptest.Server, method, path string, body []byte) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatalf("NewRequest(%s %s) = %v", method, path, err)
	}
	if body != nil {
		req.Header.Set("Authorization", "Bearer "+testToken)
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := srv.Client().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, string(b)
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("json.Marshal = %v", err)
	}
	return b
}

func gzipped(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func decodeError(t *testing.T, rec *httptest.ResponseRecorder) errorBody {
	t.Helper()
	var e errorBody
	if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil {
		t.Fatalf("error body %q is not JSON: %v", rec.Body, err)
	}
	return e
}

type obj = map[string]any
type arr = []any

// newBatch is a valid batch: one segment, a root actor, one turn and a step
// of each type at seq 1..5.
func newBatch(sid string) obj {
	step := func(seq int, typ string, payload obj) obj {
		return obj{
			"id": fmt.Sprintf("%s-s%d", sid, seq), "session_id": sid, "segment_index": 0, "turn_id": sid + "-t1",
			"actor_id": sid + "-root", "seq": seq, "at": "2026-01-02T10:00:02Z", "type": typ,
			"decision": "accepted", "outcome": "ok", "content_status": "inline",
			"channels": arr{"hook"}, "flags": arr{}, "payload": payload,
		}
	}
	return obj{
		"schema_version": "1.2",
		"session": obj{
			"id": sid, "agent": obj{"kind": "testagent", "version": "1.0.0"},
			"workspace": obj{"root": "/tmp/ws"}, "started_at": "2026-01-02T10:00:00Z",
			"metrics": obj{"cost_usd": 0.5, "api_requests": 2, "tokens": obj{"input": 10, "output": 5, "cache_read": 0, "cache_creation": 0}},
		},
		"segments": arr{obj{"index": 0, "start_reason": "start", "started_at": "2026-01-02T10:00:00Z", "source_files": arr{}}},
		"actors":   arr{obj{"id": sid + "-root", "type": "root"}},
		"turns": arr{obj{"id": sid + "-t1", "session_id": sid, "segment_index": 0, "actor_id": sid + "-root",
			"index": 1, "started_at": "2026-01-02T10:00:01Z", "step_ids": arr{}}},
		"steps": arr{
			step(1, "message", obj{"role": "user", "text": "Fix the failing test"}),
			step(2, "command", obj{"command": "go test ./...", "stdout": "ok", "exit_code": 0}),
			step(3, "edit", obj{"path": "/tmp/ws/main.go", "old_string": "a", "new_string": "b", "is_full_write": false}),
			step(4, "read", obj{"path": "/tmp/ws/main.go", "range": arr{1, 20}}),
			step(5, "other", obj{"tool_name": "WebFetch", "raw": obj{"url": "https://example.com"}}),
		},
	}
}

// stepsOnly is a push of the header without metrics and the given steps.
func stepsOnly(sid string, steps ...any) obj {
	b := newBatch(sid)
	delete(b["session"].(obj), "metrics")
	delete(b, "segments")
	delete(b, "actors")
	delete(b, "turns")
	b["steps"] = arr(steps)
	return b
}

// eachJSONLine calls fn with each line of a JSON Lines file.
func eachJSONLine(t *testing.T, path string, fn func(line []byte)) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		fn(sc.Bytes())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
}
