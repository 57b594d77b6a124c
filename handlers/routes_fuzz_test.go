package handlers

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// fuzzRoutes are the read routes a query string or an id reaches: id
// routes take the input as their id, the others as their query.
var fuzzRoutes = []string{
	"/", "/rows", "/session", "/session/turns", "/session/steps", "/session/updates", "/session/step", "/session/changes",
	"/session/change", "/session/export-panel", "/search", "/usage", "/api/sessions", "/api/search", "/api/usage",
	"/api/sessions/:id", "/api/sessions/:id/changes", "/api/sessions/:id/export", "/api/sessions/:id/export/review",
	"/api/sessions/:id/steps/1/images/1", "/session/next", "/total-estimate", "/session/problem",
}

// FuzzReadRoutes checks that no query string or id, however hostile, makes
// a read route fail (5xx) or answer more than a bounded page: bad input is
// a 4xx with its problem, or an answer.
func FuzzReadRoutes(f *testing.F) {
	for i := range fuzzRoutes {
		for _, q := range []string{
			"", "id=s1", "id=s1&before=1", "id=s1&turn=s1-t1&after=1&before=3", "id=s1&turns=all&step=2", "id=s1&from=0&to=1", "id=s1&from=1&to=99", "id=s1&after=2", "id=s1&before=%FF", "id=s1&since=0&from=1,2", "id=s1&since=0", "id=s1&seq=2", "id=s1&path=main.go", "id=%00", "id=%FF&seq=-1",
			"q=test", "q=%22go+test%22+type:command", "q=verdict:%22needs+work%22", "q=a*+b*+c*", "q=%00", "limit=0", "after=zz",
			"agent=cc&workspace=%2F&since=2026-01-01&until=x&failed=1&flagged=1&noted=1&cost=recorded&verdict=approved&unreviewed=1",
			"group=day&since=2026-01-01&until=2025-01-01", "group=session&model=%FF", "group=block&breakdown=agent", "breakdown=%00&stack=agent", "group=project&project=%2Ftmp%2Fws-s1", "project=%00%FF", "from=2026-13-01", "s1", "%2e%2e", "a;b=c&&&=",
			"group=session&sort=cost&titles=3", "sort=%00&estimate=1", "estimate=1&agent=%FF&since=x", "s1?turns=1&before=2&head=-1", "s1?since=zz&seq=x", "s1?seq=99999999999999999999", "s1?images=1", "s1?mask=%00", "s1?format=md&keep=%5Bgeneric-secret-1%5D", "s1?format=md&outline=1&images=1", "s1?format=md&step=2", "s1?step=%FF&format=md", "s1?format=%00",
		} {
			f.Add(uint8(i), q)
		}
	}
	s := newTestService(f)
	s.mustPush(newBatch("s1"), http.StatusCreated)
	fuzzReads(f, s.handler, "127.0.0.1:1234")
}

// FuzzTeamReadRoutes is FuzzReadRoutes on a team server, over PostgreSQL,
// which holds less than SQLite (no NUL, only UTF-8) and reads filters its
// own way.
func FuzzTeamReadRoutes(f *testing.F) {
	for i := range fuzzRoutes {
		for _, q := range []string{"", "id=s1", "q=test", "agent=%00", "id=%FF", "s1", "%00", "owner=%FF&since=2026-01-01", "after=1%3A%00", "project=%FF%00&group=session"} {
			f.Add(uint8(i), q)
		}
	}
	s := newTeamServer(f, Team{})
	s.push(s.mustToken("alice"), newBatch("s1"), http.StatusCreated)
	fuzzReads(f, s.srv.Config.Handler, "review.example.com", "X-Forwarded-User", "bob")
}

// fuzzReads fuzzes the read routes of h, each request with host and the
// headers given as name, value pairs; first it checks that a good request
// is answered, so a fuzz cannot pass by being refused at the door.
func fuzzReads(f *testing.F, h http.Handler, host string, header ...string) {
	get := func(route uint8, in string) (*http.Request, *httptest.ResponseRecorder) {
		path := fuzzRoutes[int(route)%len(fuzzRoutes)]
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		if before, after, ok := strings.Cut(path, ":id"); ok { // the input is its id, then its query after a ?
			in, query, _ := strings.Cut(in, "?")
			req.URL.Path, req.URL.RawPath, req.URL.RawQuery = before+in+after, before+url.PathEscape(in)+after, query
		} else {
			req.URL.Path, req.URL.RawQuery = path, in
		}
		req.Host = host
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Add(header[i], header[i+1])
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req) // not a helper of the test's: their Helper is f's
		return req, rec
	}
	for route, in := range map[uint8]string{0: "", 2: "id=s1", 14: "s1", 16: "s1"} {
		if req, rec := get(route, in); rec.Code != http.StatusOK {
			f.Fatalf("GET %s = %d %.300s; want it answered", req.URL, rec.Code, rec.Body)
		}
	}
	f.Fuzz(func(t *testing.T, route uint8, in string) {
		req, rec := get(route, in)
		if rec.Code >= 500 {
			t.Fatalf("GET %s = %d %.300s; want a 4xx or an answer", req.URL, rec.Code, rec.Body)
		}
		if n := rec.Body.Len(); n > 2<<20 {
			t.Fatalf("GET %s = %d bytes; want a bounded page", req.URL, n)
		}
	})
}

// FuzzReviewWrites checks that no body makes a review write fail (5xx):
// a verdict or a note is stored, or refused with its problem (4xx).
func FuzzReviewWrites(f *testing.F) {
	for _, b := range []string{
		`{"state":"approved"}`, `{"state":"needs work","note":"# fix\n- a","reviewer":"ann"}`, `{"state":""}`, `{"state":"a\u0000b"}`,
		`{"seq":1,"author":"ann","text":"look"}`, `{"seq":99,"text":"x"}`, `{"seq":-1}`, `{"text":"\ud800"}`, `[]`, `{`, "", `{"state":1}`,
		`{"state":"approved","note":"rotate ` + fakeAWS + ` first","reviewer":"ann"}`, `{"seq":1,"text":"it printed ` + fakeGitHub + `"}`,
	} {
		for w := range 3 {
			f.Add(uint8(w), b)
		}
	}
	s := newTestService(f)
	s.mustPush(newBatch("s1"), http.StatusCreated)
	writes := []struct{ method, path string }{
		{http.MethodPut, "/api/sessions/s1/verdict"}, {http.MethodPost, "/api/sessions/s1/notes"}, {http.MethodPut, "/api/sessions/s1/notes/1"},
	}
	send := func(w uint8, body string) (string, *httptest.ResponseRecorder) {
		c := writes[int(w)%len(writes)]
		req := httptest.NewRequest(c.method, c.path, strings.NewReader(body))
		req.Host = "127.0.0.1:1234"
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Sec-Fetch-Site", "same-origin")
		rec := httptest.NewRecorder()
		s.handler.ServeHTTP(rec, req)
		return c.method + " " + c.path, rec
	}
	for w, body := range []string{`{"state":"approved"}`, `{"seq":1,"author":"ann","text":"look"}`, `{"author":"ann","text":"looked"}`} {
		if what, rec := send(uint8(w), body); rec.Code != http.StatusOK && rec.Code != http.StatusCreated {
			f.Fatalf("%s %s = %d %s; want it stored", what, body, rec.Code, rec.Body)
		}
	}
	f.Fuzz(func(t *testing.T, w uint8, body string) {
		what, rec := send(w, body)
		if rec.Code >= 500 {
			t.Fatalf("%s %q = %d %.300s; want it stored or refused (4xx)", what, body, rec.Code, rec.Body)
		}
		if rec.Code >= 300 {
			return
		}
		// What a reviewer wrote goes into the shared report, masked: the
		// report is still made (not withheld for a secret left in it).
		req := httptest.NewRequest(http.MethodGet, "/api/sessions/s1/export", nil)
		req.Host = "127.0.0.1:1234"
		exp := httptest.NewRecorder()
		s.handler.ServeHTTP(exp, req) // not s.get: its Helper is f's
		if exp.Code != http.StatusOK {
			t.Fatalf("after %s %q, the export = %d %.300s; want the report", what, body, exp.Code, exp.Body)
		}
	})
}

// FuzzTeamIngest checks that no push body makes a team server's ingest
// fail (5xx): PostgreSQL holds less text than SQLite, and what it cannot
// hold is refused with its problem.
func FuzzTeamIngest(f *testing.F) {
	seed := newBatch("s1")
	f.Add(mustJSON(f, seed))
	seed["session"].(obj)["workspace"] = obj{"root": "/a\u0000b"}
	f.Add(mustJSON(f, seed))
	f.Add([]byte(`{"schema_version":"1.2","session":{"id":"\ud800"}}`))
	f.Add([]byte(`{"schema_version":"1.2","session":{"id":"x","metrics":{"cost_usd":1e308,"tokens":{"input":9223372036854775807}}}}`))
	s := newTeamServer(f, Team{})
	tok := s.mustToken("alice")
	push := func(body []byte) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "/api/ingest", bytes.NewReader(body))
		req.Host = "review.example.com"
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+tok)
		rec := httptest.NewRecorder()
		s.srv.Config.Handler.ServeHTTP(rec, req)
		return rec
	}
	if rec := push(mustJSON(f, newBatch("s0"))); rec.Code != http.StatusCreated {
		f.Fatalf("push s0 = %d %s; want it stored", rec.Code, rec.Body)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if rec := push(body); rec.Code >= 500 {
			t.Fatalf("push %.300q = %d %.300s; want it stored or refused (4xx)", body, rec.Code, rec.Body)
		}
	})
}
