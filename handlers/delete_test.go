package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentreview/service/store"
	"github.com/agentreview/service/views"
)

func TestDeleteSession(t *testing.T) {
	cases := []struct {
		name    string
		headers map[string]string
		status  int
	}{
		{"terminal client, no browser headers", nil, http.StatusOK},
		{"same origin", map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": "http://127.0.0.1:1234"}, http.StatusOK},
		{"typed in the address bar", map[string]string{"Sec-Fetch-Site": "none"}, http.StatusOK},
		{"cross site", map[string]string{"Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"same site, other origin", map[string]string{"Sec-Fetch-Site": "same-site"}, http.StatusForbidden},
		{"other origin, old browser", map[string]string{"Origin": "http://evil.example"}, http.StatusForbidden},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newTestService(t)
			s.mustPush(newBatch("s1"), http.StatusCreated)
			s.mustPush(newBatch("keep"), http.StatusCreated)
			before := s.snapshot()
			req := httptest.NewRequest(http.MethodDelete, "/api/sessions/s1", nil)
			for k, v := range c.headers {
				req.Header.Set(k, v)
			}
			rec := s.do(req)
			if rec.Code != c.status {
				t.Fatalf("DELETE = %d %s; want %d", rec.Code, rec.Body, c.status)
			}
			if c.status == http.StatusForbidden {
				if s.snapshot() != before {
					t.Error("a refused delete changed the store")
				}
				return
			}
			if rec := s.get("/api/sessions/s1"); rec.Code != http.StatusNotFound {
				t.Errorf("GET after delete = %d; want 404", rec.Code)
			}
			if rec := s.get("/api/sessions/keep"); rec.Code != http.StatusOK {
				t.Errorf("GET of another session after delete = %d; want 200", rec.Code)
			}
			if rec := s.push(mustJSON(t, newBatch("s1"))); rec.Code != http.StatusGone {
				t.Errorf("push after delete = %d; want 410", rec.Code)
			}
			if rec := s.do(httptest.NewRequest(http.MethodDelete, "/api/sessions/s1", nil)); rec.Code != http.StatusNotFound {
				t.Errorf("second DELETE = %d; want 404", rec.Code)
			}
		})
	}
}

func TestDeleteUnknownIs404(t *testing.T) {
	s := newTestService(t)
	before := s.snapshot()
	rec := s.do(httptest.NewRequest(http.MethodDelete, "/api/sessions/nope", nil))
	if rec.Code != http.StatusNotFound || decodeError(t, rec).Error != "not found" {
		t.Errorf("DELETE unknown = %d %s; want 404 not found", rec.Code, rec.Body)
	}
	if s.snapshot() != before {
		t.Error("deleting an unknown id changed the store")
	}
}

// The delete route removes the session's raw capture files with it, and
// only its own.
func TestDeleteRemovesCaptureFiles(t *testing.T) {
	s := newTestService(t)
	dirs := map[string]string{}
	for _, id := range []string{"s1", "keep"} {
		s.mustPush(newBatch(id), http.StatusCreated)
		err := s.store.AppendCapture(context.Background(), id, store.ChannelHook, json.RawMessage(`{"session_id":"`+id+`"}`), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		dirs[id], _ = s.store.CaptureDir(id)
	}
	if got, want := filepath.Dir(dirs["s1"]), filepath.Join(filepath.Dir(s.store.Path()), "captures"); got != want {
		t.Fatalf("capture folder in %s; want %s, beside the store", got, want)
	}
	if rec := s.do(httptest.NewRequest(http.MethodDelete, "/api/sessions/s1", nil)); rec.Code != http.StatusOK {
		t.Fatalf("DELETE = %d %s; want 200", rec.Code, rec.Body)
	}
	if _, err := os.Stat(dirs["s1"]); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("capture folder of the deleted session: Stat = %v; want it gone", err)
	}
	if _, err := os.Stat(filepath.Join(dirs["keep"], "hooks.ndjson")); err != nil {
		t.Errorf("capture file of another session after delete: %v; want it kept", err)
	}
}

// A deleted session's code leaves the highlighting cache (views), whether
// this server deleted it or another process did (the change stream sees
// its tombstone): nothing of it stays in the server's memory.
func TestDeleteForgetsHighlightedCode(t *testing.T) {
	for _, by := range []string{"this server", "another process"} {
		t.Run(by, func(t *testing.T) {
			s := newTestService(t)
			marker := "func marker" + strings.ReplaceAll(by, " ", "") + "() {}"
			b := newBatch("s1")
			b["steps"].(arr)[2].(obj)["payload"].(obj)["new_string"] = "package main\n\n" + marker + "\n"
			s.mustPush(b, http.StatusCreated)
			for _, path := range []string{"/session?id=s1", "/session/step?id=s1&seq=3"} {
				if rec := s.get(path); rec.Code != http.StatusOK {
					t.Fatalf("GET %s = %d", path, rec.Code)
				}
			}
			if !views.HighlightsHold(marker) {
				t.Fatal("the session's code is not in the highlighting cache after its pages; this test would prove nothing")
			}
			switch by {
			case "this server":
				if rec := s.do(httptest.NewRequest(http.MethodDelete, "/api/sessions/s1", nil)); rec.Code != http.StatusOK {
					t.Fatalf("DELETE = %d %s; want 200", rec.Code, rec.Body)
				}
			case "another process":
				srv := httptest.NewServer(s.handler)
				t.Cleanup(srv.Close)
				stream := openStream(t, srv, "")
				if f, ok := stream.next(5 * time.Second); !ok {
					t.Fatalf("no first frame on the stream: %+v", f)
				}
				other := mustOpenStore(t, s.store.Path())
				if err := other.Delete(context.Background(), "s1"); err != nil {
					t.Fatal(err)
				}
				if got := stream.changes(3 * time.Second); len(got) == 0 {
					t.Fatal("no change on the stream for the deletion")
				}
			}
			if views.HighlightsHold(marker) {
				t.Error("the deleted session's code is still in the highlighting cache")
			}
		})
	}
}
