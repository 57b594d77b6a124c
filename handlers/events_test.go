package handlers

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentreview/service/store"
)

// sseClient reads frames of one event stream.
type sseClient struct {
	t      *testing.T
	resp   *http.Response
	frames chan frame
	cancel context.CancelFunc
}

type frame struct {
	event, data, retry string
	comment            bool
}

func openStream(t *testing.T, srv *httptest.Server, query string) *sseClient {
	t.Helper()
	return openStreamWith(t, srv, query, nil)
}

// openStreamWith opens a stream with the given request headers.
func openStreamWith(t *testing.T, srv *httptest.Server, query string, header http.Header) *sseClient {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/api/events"+query, nil)
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		cancel()
		t.Fatalf("GET /api/events%s = %v", query, err)
	}
	c := &sseClient{t: t, resp: resp, frames: make(chan frame, 64), cancel: cancel}
	t.Cleanup(func() { cancel(); resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		return c
	}
	go func() {
		defer close(c.frames)
		sc := bufio.NewScanner(resp.Body)
		var f frame
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				c.frames <- f
				f = frame{}
			case strings.HasPrefix(line, ":"):
				f.comment = true
			case strings.HasPrefix(line, "event: "):
				f.event = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				f.data = strings.TrimPrefix(line, "data: ")
			case strings.HasPrefix(line, "retry: "):
				f.retry = strings.TrimPrefix(line, "retry: ")
			}
		}
	}()
	return c
}

// next returns the next frame within d; ok is false on timeout or end.
func (c *sseClient) next(d time.Duration) (frame, bool) {
	select {
	case f, ok := <-c.frames:
		return f, ok
	case <-time.After(d):
		return frame{}, false
	}
}

// changes collects the change frames that arrive within d.
func (c *sseClient) changes(d time.Duration) []changeEvent {
	var out []changeEvent
	deadline := time.After(d)
	for {
		select {
		case f, ok := <-c.frames:
			if !ok {
				return out
			}
			if f.event == "change" {
				var ce changeEvent
				if err := json.Unmarshal([]byte(f.data), &ce); err != nil {
					c.t.Fatalf("change data %q: %v", f.data, err)
				}
				out = append(out, ce)
			}
		case <-deadline:
			return out
		}
	}
}

func (c *sseClient) mustReady() {
	c.t.Helper()
	retry, ok := c.next(2 * time.Second)
	if !ok || retry.retry != "2000" {
		c.t.Fatalf("first frame = %+v; want retry: 2000", retry)
	}
	ready, ok := c.next(2 * time.Second)
	if !ok || ready.event != "ready" || ready.data != "{}" {
		c.t.Fatalf("second frame = %+v; want event: ready with data {}", ready)
	}
}

// streamCount is how many streams the hub holds open.
func (h *Hub) streamCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.streams)
}

// loopbackServer serves the router on a real port; httptest's URL host is
// 127.0.0.1, which the Host check accepts.
func loopbackServer(t *testing.T, s *testService) *httptest.Server {
	srv := httptest.NewServer(s.handler)
	t.Cleanup(srv.Close)
	t.Cleanup(s.hub.Close) // end streams first, as the real server does
	return srv
}

func TestEventsReadyThenChangeAfterPush(t *testing.T) {
	s := newTestService(t)
	srv := loopbackServer(t, s)
	c := openStream(t, srv, "")
	if ct := c.resp.Header.Get("Content-Type"); ct != "text/event-stream; charset=utf-8" {
		t.Errorf("content-type = %q", ct)
	}
	c.mustReady()
	s.mustPush(newBatch("s1"), http.StatusCreated)
	got := c.changes(time.Second)
	if len(got) != 1 || got[0].SessionID != "s1" {
		t.Fatalf("changes after a push = %+v; want one for s1", got)
	}
	d, _ := s.store.Detail(context.Background(), "s1", store.DetailQuery{})
	if got[0].UpdatedAt != d.UpdatedAt {
		t.Errorf("change updated_at = %s; want the session's %s", got[0].UpdatedAt, d.UpdatedAt)
	}
}

func TestEventsIdenticalResendSendsNothing(t *testing.T) {
	s := newTestService(t)
	srv := loopbackServer(t, s)
	s.mustPush(newBatch("s1"), http.StatusCreated)
	c := openStream(t, srv, "")
	c.mustReady()
	s.mustPush(newBatch("s1"), http.StatusOK)
	if got := c.changes(1200 * time.Millisecond); len(got) != 0 {
		t.Errorf("changes after an identical re-send = %+v; want none", got)
	}
}

func TestEventsSessionFilter(t *testing.T) {
	s := newTestService(t)
	srv := loopbackServer(t, s)
	c := openStream(t, srv, "?session=wanted")
	c.mustReady()
	s.mustPush(newBatch("other"), http.StatusCreated)
	s.mustPush(newBatch("wanted"), http.StatusCreated)
	got := c.changes(time.Second)
	if len(got) != 1 || got[0].SessionID != "wanted" {
		t.Errorf("filtered changes = %+v; want only one for wanted", got)
	}
}

func TestEventsWriteByAnotherStoreIsSeen(t *testing.T) {
	s := newTestService(t)
	srv := loopbackServer(t, s)
	c := openStream(t, srv, "")
	c.mustReady()
	// A second handle on the same file stands for another process: nothing
	// pokes the hub, so the change must come from polling.
	other := mustOpenStore(t, s.store.Path())
	b, err := store.ParseBatch(mustJSON(t, newBatch("elsewhere")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Apply(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	if err := other.Delete(context.Background(), "elsewhere"); err != nil {
		t.Fatal(err)
	}
	got := c.changes(1500 * time.Millisecond)
	if len(got) != 1 || got[0].SessionID != "elsewhere" {
		t.Errorf("changes after another process wrote and deleted = %+v; want one for elsewhere", got)
	}
}

func TestEventsOneChangePerSessionPerCheck(t *testing.T) {
	s := newTestService(t)
	s.hub.interval = time.Hour // only explicit checks
	srv := loopbackServer(t, s)
	c := openStream(t, srv, "")
	c.mustReady()
	for i := range 3 {
		b := newBatch("burst")
		b["session"].(obj)["agent"].(obj)["version"] = string(rune('a' + i))
		p, _ := store.ParseBatch(mustJSON(t, b))
		if _, err := s.store.Apply(context.Background(), p); err != nil {
			t.Fatal(err)
		}
	}
	s.hub.Poke()
	if got := c.changes(time.Second); len(got) != 1 {
		t.Errorf("changes after a burst of 3 writes = %+v; want 1", got)
	}
}

func TestEventsDeleteSendsChange(t *testing.T) {
	s := newTestService(t)
	srv := loopbackServer(t, s)
	s.mustPush(newBatch("s1"), http.StatusCreated)
	c := openStream(t, srv, "?session=s1")
	c.mustReady()
	if rec := s.do(httptest.NewRequest(http.MethodDelete, "/api/sessions/s1", nil)); rec.Code != http.StatusOK {
		t.Fatalf("delete = %d", rec.Code)
	}
	if got := c.changes(time.Second); len(got) != 1 {
		t.Errorf("changes after delete = %+v; want 1", got)
	}
}

func TestEventsPing(t *testing.T) {
	s := newTestService(t)
	s.hub.ping = 50 * time.Millisecond
	srv := loopbackServer(t, s)
	c := openStream(t, srv, "")
	c.mustReady()
	if f, ok := c.next(time.Second); !ok || !f.comment {
		t.Errorf("frame after ready = %+v; want a ping comment", f)
	}
}

func TestEventsLimitThen503(t *testing.T) {
	s := newTestService(t)
	srv := loopbackServer(t, s)
	for range MaxStreams {
		openStream(t, srv, "").mustReady()
	}
	c := openStream(t, srv, "")
	if c.resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("stream %d = %d; want 503", MaxStreams+1, c.resp.StatusCode)
	}
	var e errorBody
	json.NewDecoder(c.resp.Body).Decode(&e)
	if e.Error != "too many live connections" {
		t.Errorf("503 error = %q; want too many live connections", e.Error)
	}
}

func TestEventsHead(t *testing.T) {
	s := newTestService(t)
	rec := s.do(httptest.NewRequest(http.MethodHead, "/api/events", nil))
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "text/event-stream; charset=utf-8" || rec.Body.Len() != 0 {
		t.Errorf("HEAD /api/events = %d %q %q; want 200, the stream's content type, no body", rec.Code, rec.Header().Get("Content-Type"), rec.Body)
	}
}

func TestEventsEndOnClose(t *testing.T) {
	s := newTestService(t)
	srv := loopbackServer(t, s)
	c := openStream(t, srv, "")
	c.mustReady()
	s.hub.Close()
	for {
		if _, ok := c.next(2 * time.Second); !ok {
			break
		}
	}
	select {
	case _, open := <-c.frames:
		if open {
			t.Fatal("stream still open after the hub closed")
		}
	default:
		t.Fatal("stream still open 2s after the hub closed")
	}
}

// countingSource counts the store reads of the hub.
type countingSource struct {
	ChangeSource
	calls atomic.Int64
}

func (c *countingSource) ChangesSince(ctx context.Context, stamp int64) ([]store.Change, int64, error) {
	c.calls.Add(1)
	return c.ChangeSource.ChangesSince(ctx, stamp)
}

func TestEventsNoPollingWithoutStreams(t *testing.T) {
	s := newTestService(t)
	src := &countingSource{ChangeSource: s.store}
	s.hub.src = src
	s.hub.interval = 20 * time.Millisecond
	srv := loopbackServer(t, s)
	c := openStream(t, srv, "")
	c.mustReady()
	time.Sleep(200 * time.Millisecond)
	if src.calls.Load() == 0 {
		t.Fatal("no checks while a stream was open")
	}
	c.cancel()
	time.Sleep(100 * time.Millisecond) // the stream leaves; one more check may see it gone
	n := src.calls.Load()
	time.Sleep(200 * time.Millisecond)
	if got := src.calls.Load(); got != n {
		t.Errorf("%d checks ran with no stream open; want none", got-n)
	}
}
