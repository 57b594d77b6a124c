package handlers

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentreview/service/store"
)

// TestListFilterParams: the JSON list and the list page read the same
// filters, and a bad filter value is a 400 naming it, on both.
func TestListFilterParams(t *testing.T) {
	s := newTestService(t)
	start := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	s.mustPush(sessionBatch("plain", "testagent", "1.0.0", start, "/tmp/ws", metricsOf(0.1, 1, 1, 1)), http.StatusCreated)
	s.mustPush(sessionBatch("alpha", "testagent", "1.0.0", start.Add(time.Hour), "/tmp/alpha", nil), http.StatusCreated)
	if err := s.store.SetVerdict(context.Background(), "alpha", store.Verdict{State: "approved"}); err != nil {
		t.Fatal(err)
	}

	for path, want := range map[string]string{
		"/api/sessions?workspace=alpha":            "alpha",
		"/api/sessions?since=2026-01-02T10:30:00Z": "alpha",
		"/api/sessions?until=2026-01-02T10:30:00Z": "plain",
		"/api/sessions?cost=recorded":              "plain",
		"/api/sessions?cost=not_recorded":          "alpha",
		"/api/sessions?unreviewed=1":               "plain",
		"/api/sessions?verdict=approved":           "alpha",
	} {
		rec := s.get(path)
		var l struct {
			Sessions []struct{ ID string }
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &l); rec.Code != http.StatusOK || err != nil {
			t.Fatalf("GET %s = %d %s; want 200", path, rec.Code, rec.Body)
		}
		if len(l.Sessions) != 1 || l.Sessions[0].ID != want {
			t.Errorf("GET %s = %+v; want only %s", path, l.Sessions, want)
		}
	}
	// The pages say it on the page (TestListPageEmptyAndBadFilters).
	for _, path := range []string{"/api/sessions?since=yesterday", "/api/sessions?until=2026-13-01", "/api/sessions?cost=maybe"} {
		rec := s.get(path)
		if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "bad list filter") {
			t.Errorf("GET %s = %d %s; want 400 naming the bad filter", path, rec.Code, rec.Body)
		}
	}
}
