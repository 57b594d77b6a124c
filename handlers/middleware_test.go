package handlers

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestEveryResponseCarriesSecurityHeaders(t *testing.T) {
	s := newTestService(t)
	s.mustPush(newBatch("s1"), http.StatusCreated)
	misdirected := httptest.NewRequest(http.MethodGet, "/api/sessions", nil)
	misdirected.Host = "evil.example"
	for name, rec := range map[string]*httptest.ResponseRecorder{
		"list":         s.get("/api/sessions"),
		"detail":       s.get("/api/sessions/s1"),
		"404":          s.get("/api/sessions/nope"),
		"unknown path": s.get("/nope"),
		"405":          s.get("/api/ingest"),
		"401":          s.push([]byte("{}"), "Authorization", ""),
		"page":         s.get("/"),
		"static":       s.get("/static/app.css"),
		"421":          s.do(misdirected),
		"head events":  s.do(httptest.NewRequest(http.MethodHead, "/api/events", nil)),
	} {
		for k, want := range map[string]string{"X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer", "Cache-Control": "no-store"} {
			if got := rec.Header().Get(k); got != want {
				t.Errorf("%s (%d): %s = %q; want %q", name, rec.Code, k, got, want)
			}
		}
		for k := range rec.Header() {
			if strings.HasPrefix(strings.ToLower(k), "access-control-") {
				t.Errorf("%s: CORS header %s sent", name, k)
			}
		}
	}
}

func TestNonLoopbackHostIs421OnEveryRoute(t *testing.T) {
	s := newTestService(t)
	before := s.snapshot()
	for _, r := range []struct{ method, path string }{
		{"GET", "/"}, {"GET", "/api/sessions"}, {"GET", "/api/events"}, {"POST", "/api/ingest"},
		{"DELETE", "/api/sessions/x"}, {"GET", "/static/app.css"},
	} {
		req := httptest.NewRequest(r.method, r.path, strings.NewReader(string(mustJSON(t, newBatch("s1")))))
		req.Host = "evil.example:1234"
		req.Header.Set("Authorization", "Bearer "+testToken)
		req.Header.Set("Content-Type", "application/json")
		rec := s.do(req)
		if rec.Code != http.StatusMisdirectedRequest || !strings.HasPrefix(rec.Body.String(), "misdirected request") ||
			!strings.HasPrefix(rec.Header().Get("Content-Type"), "text/plain") {
			t.Errorf("%s %s with Host evil.example = %d %q %q; want 421 plain text", r.method, r.path, rec.Code, rec.Header().Get("Content-Type"), rec.Body)
		}
	}
	if s.snapshot() != before {
		t.Error("a misdirected push changed the store")
	}
}

func TestPreflightNeverApproved(t *testing.T) {
	s := newTestService(t)
	for _, path := range []string{"/api/ingest", "/api/sessions", "/api/sessions/x"} {
		req := httptest.NewRequest(http.MethodOptions, path, nil)
		req.Header.Set("Origin", "http://evil.example")
		req.Header.Set("Access-Control-Request-Method", "POST")
		rec := s.do(req)
		if rec.Code < 400 {
			t.Errorf("OPTIONS %s = %d; want a refusal", path, rec.Code)
		}
	}
}
