package handlers

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
)

// Every id that ingest accepts works in every route and page when
// percent-encoded: routes match the path as sent, so "/" or "%" in an id
// never splits it or names another session.
func TestOddIDsWorkInEveryRoute(t *testing.T) {
	s := newTestService(t)
	srv := httptest.NewServer(s.handler)
	t.Cleanup(srv.Close)
	// Neighbours an odd id could be confused with; they must stay.
	for _, id := range []string{"a", "b", "export"} {
		s.mustPush(newBatch(id), http.StatusCreated)
	}

	for _, id := range []string{
		"a/b", "a/export", "/lead", "trail/", "a//b", "100%", "%2F", "a%2Fb", "what?", "x?y=1", "x#y",
		"with space", "a+b", "a&b=c", "a;b", `a\b`, "ünïcödé", "日本語", "tab\there", "line\nbreak",
		"..", ".",
	} {
		t.Run(id, func(t *testing.T) {
			api := "/api/sessions/" + url.PathEscape(id)
			page := "?id=" + url.QueryEscape(id)

			if code, _, body := send(t, srv, http.MethodPost, "/api/ingest", mustJSON(t, newBatch(id))); code != http.StatusCreated {
				t.Fatalf("push = %d %s; want 201", code, body)
			}
			code, _, body := send(t, srv, http.MethodGet, api, nil)
			var d struct {
				ID string `json:"id"`
			}
			if code != http.StatusOK || json.Unmarshal([]byte(body), &d) != nil || d.ID != id {
				t.Fatalf("GET %s = %d, id %q; want 200 and the session %q (%.200s)", api, code, d.ID, id, body)
			}
			if code, _, _ := send(t, srv, http.MethodHead, api, nil); code != http.StatusOK {
				t.Errorf("HEAD %s = %d; want 200", api, code)
			}
			code, h, body := send(t, srv, http.MethodGet, api+"/export", nil)
			if code != http.StatusOK || !strings.HasPrefix(h.Get("Content-Disposition"), `attachment; filename="session-`) || !strings.Contains(body, "<html") {
				t.Errorf("GET %s/export = %d %q; want 200 and the report as a download", api, code, h.Get("Content-Disposition"))
			}
			if code, _, body := send(t, srv, http.MethodGet, api+"/export/review", nil); code != http.StatusOK || !strings.Contains(body, `"session_id":`+string(mustJSON(t, id))) {
				t.Errorf("GET %s/export/review = %d %.200s; want 200 naming the session", api, code, body)
			}
			code, _, body = send(t, srv, http.MethodGet, "/", nil)
			if list, err := goquery.NewDocumentFromReader(strings.NewReader(body)); err != nil || code != http.StatusOK ||
				list.Find(`a[data-testid="title"][href="/session`+page+`"]`).Length() != 1 {
				t.Errorf("GET / = %d; want 200 with one row linking to /session%s", code, page)
			}
			code, _, body = send(t, srv, http.MethodGet, "/session"+page, nil)
			if code != http.StatusOK {
				t.Fatalf("GET /session%s = %d; want 200", page, code)
			}
			doc, err := goquery.NewDocumentFromReader(strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := doc.Find(`[data-testid="session"]`).Attr("data-session-id"); got != id {
				t.Errorf("session page shows id %q; want %q", got, id)
			}
			if got, _ := doc.Find(`[data-testid="delete-dialog"]`).Attr("data-delete-url"); got != api {
				t.Errorf("delete url = %q; want %q", got, api)
			}
			if got, _ := doc.Find(`[sse-connect]`).Attr("sse-connect"); got != "/api/events?session="+url.QueryEscape(id) {
				t.Errorf("event stream = %q; want it for the session %q only", got, id)
			}
			// The fragments the page itself asks for, at the addresses it has.
			updates, _ := doc.Find(`[data-testid="session"]`).Attr("data-updates-url")
			// (Updates since a stamp older than the session's, as a page
			// open before the last push has: the page's own is 204.)
			frags := []string{"/session/step" + page + "&seq=2", updates + "&since=2000-01-01T00%3A00%3A00Z"}
			for _, attr := range []string{"data-body-url", "hx-get"} {
				doc.Find("[" + attr + "]").Each(func(_ int, e *goquery.Selection) { frags = append(frags, e.AttrOr(attr, "")) })
			}
			for _, frag := range frags {
				if code, _, body := send(t, srv, http.MethodGet, frag, nil); code != http.StatusOK {
					t.Errorf("GET %s = %d %.200s; want 200", frag, code, body)
				}
			}

			if code, _, body := send(t, srv, http.MethodDelete, api, nil); code != http.StatusOK {
				t.Fatalf("DELETE %s = %d %s; want 200", api, code, body)
			}
			if code, _, _ := send(t, srv, http.MethodGet, api, nil); code != http.StatusNotFound {
				t.Errorf("GET %s after delete = %d; want 404", api, code)
			}
			if code, _, body := send(t, srv, http.MethodPost, "/api/ingest", mustJSON(t, newBatch(id))); code != http.StatusGone {
				t.Errorf("push after delete = %d %s; want 410", code, body)
			}
			if code, _, _ := send(t, srv, http.MethodDelete, api, nil); code != http.StatusNotFound {
				t.Errorf("second DELETE %s = %d; want 404", api, code)
			}
			for _, other := range []string{"a", "b", "export"} {
				if code, _, _ := send(t, srv, http.MethodGet, "/api/sessions/"+other, nil); code != http.StatusOK {
					t.Errorf("GET of session %q after deleting %q = %d; want 200", other, id, code)
				}
			}
		})
	}
}

// The UI development server reads an odd id from the core, and proxies its
// API routes with the path as sent.
func TestOddIDsThroughDevServer(t *testing.T) {
	core := newTestService(t)
	coreSrv := loopbackServer(t, core)
	const id = "a/b ?#%ü"
	core.mustPush(newBatch(id), http.StatusCreated)
	core.mustPush(newBatch("a"), http.StatusCreated)
	coreURL, _ := url.Parse(coreSrv.URL)
	dev := httptest.NewServer(Routes(Deps{Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Core: coreURL}))
	t.Cleanup(dev.Close)

	api := "/api/sessions/" + url.PathEscape(id)
	for _, c := range []struct{ method, path, want string }{
		{http.MethodGet, "/session?id=" + url.QueryEscape(id), `data-testid="timeline"`},
		{http.MethodGet, "/session/export-panel?id=" + url.QueryEscape(id), `data-testid="export-findings"`},
		{http.MethodGet, api, `"id":` + string(mustJSON(t, id))},
		{http.MethodDelete, api, `"deleted":` + string(mustJSON(t, id))},
	} {
		req, _ := http.NewRequest(c.method, dev.URL+c.path, nil)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK || !strings.Contains(string(body), c.want) {
			t.Errorf("dev %s %s = %d %.200s; want 200 containing %q", c.method, c.path, res.StatusCode, body, c.want)
		}
	}
	if rec := core.get("/api/sessions/a"); rec.Code != http.StatusOK {
		t.Errorf("GET of session a after deleting %q = %d; want 200", id, rec.Code)
	}
}
