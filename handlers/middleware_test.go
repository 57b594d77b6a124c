package handlers

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
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

func TestResponsesCompressedWhenAccepted(t *testing.T) {
	s := newTestService(t)
	// As many turns as a live update redraws, each changed since 2026-01-01.
	s.mustPush(manyTurns("big", updateTurns, time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)), http.StatusCreated)
	for _, path := range []string{
		"/", "/session?id=big", "/session/updates?id=big&since=2026-01-01T00:00:00Z",
		"/api/sessions/big", "/api/sessions/big/export",
		"/static/app.js", "/static/app.css", "/static/vendor/htmx-2.0.11.min.js",
	} {
		plain := s.get(path)
		if plain.Code != http.StatusOK {
			t.Fatalf("GET %s = %d; want 200", path, plain.Code)
		}
		if ce := plain.Header().Get("Content-Encoding"); ce != "" {
			t.Errorf("GET %s without Accept-Encoding: Content-Encoding = %q; want none", path, ce)
		}
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.Header.Set("Accept-Encoding", "gzip")
		gz := s.do(req)
		if ce := gz.Header().Get("Content-Encoding"); ce != "gzip" {
			t.Errorf("GET %s accepting gzip: Content-Encoding = %q; want gzip", path, ce)
			continue
		}
		if !strings.Contains(gz.Header().Get("Vary"), "Accept-Encoding") {
			t.Errorf("GET %s: Vary = %q; want Accept-Encoding", path, gz.Header().Get("Vary"))
		}
		zr, err := gzip.NewReader(gz.Body)
		if err != nil {
			t.Fatalf("GET %s: gzip.NewReader = %v", path, err)
		}
		body, err := io.ReadAll(zr)
		if err != nil {
			t.Fatalf("GET %s: reading the gzip body = %v", path, err)
		}
		if !bytes.Equal(body, plain.Body.Bytes()) {
			t.Errorf("GET %s: the gzip body decodes to %d bytes; want the plain %d bytes", path, len(body), plain.Body.Len())
		}
		if gz.Body.Len() >= plain.Body.Len() {
			t.Errorf("GET %s: %d bytes compressed; want fewer than the plain %d", path, gz.Body.Len(), plain.Body.Len())
		}
	}
}

// The event stream is never compressed, even for a client that accepts
// it, and each event arrives when it is sent.
func TestEventStreamNeverCompressed(t *testing.T) {
	s := newTestService(t)
	srv := loopbackServer(t, s)
	c := openStreamWith(t, srv, "", http.Header{"Accept-Encoding": {"gzip, deflate, br, zstd"}})
	if ce := c.resp.Header.Get("Content-Encoding"); ce != "" {
		t.Fatalf("event stream Content-Encoding = %q; want none", ce)
	}
	c.mustReady()
	s.mustPush(newBatch("s1"), http.StatusCreated)
	f, ok := c.next(5 * time.Second)
	if !ok || f.event != "change" || !strings.Contains(f.data, `"s1"`) {
		t.Fatalf("frame after a push = %+v (%v); want the change of s1, flushed at once", f, ok)
	}
}

func TestEveryResponseCarriesStrictCSP(t *testing.T) {
	s := newTestService(t)
	s.mustPush(newBatch("s1"), http.StatusCreated)
	want := map[string]string{
		"default-src": "'self'", "frame-ancestors": "'none'", "base-uri": "'none'", "form-action": "'self'",
	}
	for _, path := range []string{"/", "/rows", "/session?id=s1", "/session?id=nope", "/session/step?id=s1&seq=1",
		"/api/sessions", "/api/sessions/nope", "/nope", "/static/app.js"} {
		rec := s.get(path)
		csp := rec.Header().Get("Content-Security-Policy")
		got := map[string]string{}
		for _, d := range strings.Split(csp, ";") {
			name, value, _ := strings.Cut(strings.TrimSpace(d), " ")
			got[name] = value
		}
		for name, value := range want {
			if got[name] != value {
				t.Errorf("GET %s (%d): CSP %s = %q; want %q (policy %q)", path, rec.Code, name, got[name], value, csp)
			}
		}
		for _, weak := range []string{"unsafe-inline", "unsafe-eval", "script-src", "style-src"} {
			if strings.Contains(csp, weak) {
				t.Errorf("GET %s: CSP %q has %s; want default-src 'self' to govern scripts and styles", path, csp, weak)
			}
		}
	}
}
