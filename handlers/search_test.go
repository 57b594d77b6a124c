package handlers

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/agentreview/service/store"
)

func TestSearchAPI(t *testing.T) {
	s := newTestService(t)
	b := newBatch("a")
	b["steps"].([]any)[1].(obj)["payload"].(obj)["stdout"] = "FAIL handlers/auth_test.go: <b>boom</b>"
	s.mustPush(b, http.StatusCreated)
	s.mustPush(newBatch("b"), http.StatusCreated)

	rec := s.get("/api/search?q=" + url.QueryEscape("auth_test.go type:command"))
	var res store.SearchResult
	if err := json.Unmarshal(rec.Body.Bytes(), &res); err != nil || rec.Code != http.StatusOK {
		t.Fatalf("GET /api/search = %d %s", rec.Code, rec.Body)
	}
	if len(res.Hits) != 1 {
		t.Fatalf("hits = %+v; want one", res.Hits)
	}
	h := res.Hits[0]
	if h.SessionID != "a" || h.Seq != 2 || h.Type != "command" || h.Status != "ok" || len(h.Matches) != 1 {
		t.Errorf("hit = %+v; want session a, seq 2, command, ok, one match", h)
	}
	if m := h.Matches[0]; h.Snippet[m[0]:m[1]] != "auth_test.go" {
		t.Errorf("match %v of %q = %q; want auth_test.go", m, h.Snippet, h.Snippet[m[0]:m[1]])
	}

	var page store.SearchResult
	json.Unmarshal(s.get("/api/search?q=type:command&limit=1").Body.Bytes(), &page)
	if len(page.Hits) != 1 || page.Next == "" {
		t.Fatalf("limit=1 = %+v; want one hit and a cursor", page)
	}
	var rest store.SearchResult
	json.Unmarshal(s.get("/api/search?q=type:command&limit=1&after="+url.QueryEscape(page.Next)).Body.Bytes(), &rest)
	if len(rest.Hits) != 1 || rest.Next != "" || rest.Hits[0].SessionID == page.Hits[0].SessionID {
		t.Errorf("second page = %+v; want the other session's command and no cursor", rest)
	}

	for _, tc := range []struct{ q, error, detail string }{
		{"q=", "invalid search query", "is empty"},
		{"q=" + url.QueryEscape(`"open`), "invalid search query", "never closed"},
		{"q=" + url.QueryEscape("NEAR( AND"), "", ""}, // words, not FTS syntax: 200
		{"q=type:nope", "invalid search query", `"nope" is not a step type`},
		{"q=x&limit=0", `query parameter limit="0" is not valid: give 1 to 200`, ""},
		{"q=x&after=junk", "after is not a cursor of this list", ""},
	} {
		rec := s.get("/api/search?" + tc.q)
		if tc.error == "" {
			if rec.Code != http.StatusOK {
				t.Errorf("GET /api/search?%s = %d %s; want 200", tc.q, rec.Code, rec.Body)
			}
			continue
		}
		e := decodeError(t, rec)
		if rec.Code != http.StatusBadRequest || e.Error != tc.error || (tc.detail != "" && (len(e.Details) == 0 || !strings.Contains(e.Details[0].Message, tc.detail))) {
			t.Errorf("GET /api/search?%s = %d %s; want 400 %q with %q", tc.q, rec.Code, rec.Body, tc.error, tc.detail)
		}
	}
}
