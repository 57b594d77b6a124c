package handlers

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"

	"github.com/agentreview/service/store"
)

func TestListAndDetailRoutes(t *testing.T) {
	s := newTestService(t)
	a, b := newBatch("a"), newBatch("b")
	b["session"].(obj)["agent"].(obj)["kind"] = "other-agent"
	b["session"].(obj)["started_at"] = "2026-01-03T10:00:00Z"
	s.mustPush(a, http.StatusCreated)
	s.mustPush(b, http.StatusCreated)

	var l store.SessionList
	rec := s.get("/api/sessions")
	if err := json.Unmarshal(rec.Body.Bytes(), &l); err != nil || rec.Code != 200 {
		t.Fatalf("GET /api/sessions = %d %v", rec.Code, err)
	}
	if len(l.Sessions) != 2 || l.Sessions[0].ID != "b" || len(l.Agents) != 2 || l.Total.Sessions != 2 || l.Total.CostUSD != 1.0 {
		t.Errorf("list = %+v; want b then a, 2 agents, total 2 sessions and $1.00", l)
	}
	rec = s.get("/api/sessions?agent=other-agent")
	json.Unmarshal(rec.Body.Bytes(), &l)
	if len(l.Sessions) != 1 || l.Sessions[0].ID != "b" {
		t.Errorf("list ?agent=other-agent = %+v; want only b", l.Sessions)
	}

	var d store.SessionDetail
	rec = s.get("/api/sessions/a")
	if err := json.Unmarshal(rec.Body.Bytes(), &d); err != nil || rec.Code != 200 {
		t.Fatalf("GET /api/sessions/a = %d %v", rec.Code, err)
	}
	if d.Summary.Steps != 5 || d.Summary.Title != "Fix the failing test" || len(d.Report.Commands) != 1 || len(d.Turns[0].StepIDs) != 5 {
		t.Errorf("detail = %+v; want 5 steps, the prompt as title, 1 command, 5 step ids", d.SessionOverview)
	}
	if rec := s.get("/api/sessions/nope"); rec.Code != http.StatusNotFound || decodeError(t, rec).Error != "not found" {
		t.Errorf("GET unknown = %d %s; want 404 JSON", rec.Code, rec.Body)
	}
}

func TestListRoutePages(t *testing.T) {
	s := newTestService(t)
	for _, id := range []string{"a", "b", "c"} {
		s.mustPush(newBatch(id), http.StatusCreated)
	}
	var l store.SessionList
	json.Unmarshal(s.get("/api/sessions?limit=2").Body.Bytes(), &l)
	if len(l.Sessions) != 2 || l.Next == "" || l.Total.Sessions != 3 {
		t.Fatalf("?limit=2 = %d sessions, next %q, total %d; want 2, a cursor, 3", len(l.Sessions), l.Next, l.Total.Sessions)
	}
	var rest store.SessionList
	json.Unmarshal(s.get("/api/sessions?limit=2&after="+url.QueryEscape(l.Next)).Body.Bytes(), &rest)
	if len(rest.Sessions) != 1 || rest.Next != "" {
		t.Errorf("second page = %d sessions, next %q; want the last one and no cursor", len(rest.Sessions), rest.Next)
	}
	for _, q := range []string{"?limit=x", "?after=nonsense"} {
		if rec := s.get("/api/sessions" + q); rec.Code != http.StatusBadRequest {
			t.Errorf("GET /api/sessions%s = %d; want 400", q, rec.Code)
		}
	}
}
