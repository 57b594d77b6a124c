package handlers

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
)

// fuzzRoutes are the read routes a query string or an id reaches: id
// routes take the input as their id, the others as their query.
var fuzzRoutes = []string{
	"/", "/rows", "/session", "/session/turns", "/session/updates", "/session/step", "/session/changes",
	"/session/change", "/session/export-panel", "/search", "/usage", "/api/sessions", "/api/search", "/api/usage",
	"/api/sessions/:id", "/api/sessions/:id/changes", "/api/sessions/:id/export", "/api/sessions/:id/export/review",
	"/api/sessions/:id/steps/1/images/1",
}

// FuzzReadRoutes checks that no query string or id, however hostile, makes
// a read route fail (5xx) or answer more than a bounded page: bad input is
// a 4xx with its problem, or an answer.
func FuzzReadRoutes(f *testing.F) {
	for i := range fuzzRoutes {
		for _, q := range []string{
			"", "id=s1", "id=s1&before=1", "id=s1&since=0", "id=s1&seq=2", "id=s1&path=main.go", "id=%00", "id=%FF&seq=-1",
			"q=test", "q=%22go+test%22+type:command", "q=verdict:%22needs+work%22", "q=a*+b*+c*", "q=%00", "limit=0", "after=zz",
			"agent=cc&workspace=%2F&since=2026-01-01&until=x&failed=1&flagged=1&cost=recorded&verdict=approved&unreviewed=1",
			"group=day&since=2026-01-01&until=2025-01-01", "group=session&model=%FF", "from=2026-13-01", "s1", "%2e%2e", "a;b=c&&&=",
		} {
			f.Add(uint8(i), q)
		}
	}
	s := newTestService(f)
	s.mustPush(newBatch("s1"), http.StatusCreated)
	f.Fuzz(func(t *testing.T, route uint8, in string) {
		path := fuzzRoutes[int(route)%len(fuzzRoutes)]
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		if id, ok := cutID(path); ok {
			req.URL.Path, req.URL.RawPath = id[0]+in+id[1], id[0]+url.PathEscape(in)+id[1]
		} else {
			req.URL.Path, req.URL.RawQuery = path, in
		}
		req.Host = "127.0.0.1:1234"
		rec := httptest.NewRecorder()
		s.handler.ServeHTTP(rec, req) // not s.do: its Helper is f's
		if rec.Code >= 500 {
			t.Fatalf("GET %s = %d %.300s; want a 4xx or an answer", req.URL, rec.Code, rec.Body)
		}
		if n := rec.Body.Len(); n > 2<<20 {
			t.Fatalf("GET %s = %d bytes; want a bounded page", req.URL, n)
		}
	})
}

// cutID splits an id route at its :id.
func cutID(path string) ([2]string, bool) {
	const id = ":id"
	for i := 0; i+len(id) <= len(path); i++ {
		if path[i:i+len(id)] == id {
			return [2]string{path[:i], path[i+len(id):]}, true
		}
	}
	return [2]string{}, false
}
