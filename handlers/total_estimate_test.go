package handlers

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentreview/service/pricing"
	"github.com/agentreview/service/store"
)

// unrecordedSessions are sessions without metrics and their usage
// records, some of them with a reported cost.
func unrecordedSessions() map[string][]store.UsageRecord {
	cost := 0.5
	return map[string][]store.UsageRecord{
		"ea": {{ID: "1", At: "2026-03-02T12:00:00Z", Model: "claude-sonnet-4-5", Tokens: pricing.Tokens{Input: 20_000, Output: 3_000, CacheRead: 90_000}},
			{ID: "2", At: "2026-03-02T12:05:00Z", Model: "claude-sonnet-4-5", Tokens: pricing.Tokens{Input: 500, Output: 70}, CostUSD: &cost}},
		"eb": {{ID: "1", At: "2026-03-03T12:00:00Z", Model: "claude-opus-4-1", Tokens: pricing.Tokens{Input: 4_000, Output: 900}},
			{ID: "2", At: "2026-03-03T12:01:00Z", Model: "no-such-model", Tokens: pricing.Tokens{Input: 7}}},
	}
}

// mustApplyUnrecorded stores session sid of agent without metrics, with
// the usage records recs.
func mustApplyUnrecorded(t *testing.T, s *testService, sid, agent string, recs []store.UsageRecord) {
	t.Helper()
	v := newBatch(sid)
	delete(v["session"].(obj), "metrics")
	v["session"].(obj)["agent"].(obj)["kind"] = agent
	mustApplyBatchUsage(t, s, v, recs)
}

// estimateOf is the estimate of the records without a reported cost of
// the sessions sids, each priced from the price table, as the list's
// total shows it.
func estimateOf(t *testing.T, sessions map[string][]store.UsageRecord, sids ...string) string {
	t.Helper()
	usd := 0.0
	for _, sid := range sids {
		for _, r := range sessions[sid] {
			at, _ := time.Parse(time.RFC3339, r.At)
			if cost, ok := pricing.Default().Estimate(r.Model, at, r.Tokens); ok && r.CostUSD == nil {
				usd += cost
			}
		}
	}
	return fmt.Sprintf("≈ $%.2f estimated", usd)
}

// TestListTotalEstimate: the list's total says the estimate of what it
// cannot show (the requests without a reported cost of the sessions
// without metrics), loaded after the page, for the list's filters; the API
// gives it when asked.
func TestListTotalEstimate(t *testing.T) {
	s := newTestService(t)
	if body := mustDocument(t, s, "/"); body.Find(`[data-testid="total-estimate-loading"]`).Length() != 0 {
		t.Error("the list of no session loads an estimate")
	}
	sessions := unrecordedSessions()
	mustApplyUnrecorded(t, s, "ea", "claude-code", sessions["ea"])
	mustApplyUnrecorded(t, s, "eb", "codex", sessions["eb"])
	s.mustPush(newBatch("em"), http.StatusCreated) // with metrics: its cost is in the total

	page := mustDocument(t, s, "/?agent=codex")
	if got := page.Find(`[data-testid="total-estimate-loading"]`).AttrOr("hx-get", ""); got != "/total-estimate?agent=codex" {
		t.Errorf("the page loads its estimate from %q; want the list's filters", got)
	}
	for _, c := range []struct{ query, want, unpriced string }{
		{"", estimateOf(t, sessions, "ea", "eb"), "(1 model without a price left out)"},
		{"?agent=claude-code", estimateOf(t, sessions, "ea"), ""},
		{"?agent=codex", estimateOf(t, sessions, "eb"), "(1 model without a price left out)"},
		{"?agent=testagent", "", ""}, // em alone: its metrics
		{"?agent=nobody", "", ""},
	} {
		rec := s.get("/total-estimate" + c.query)
		doc := mustDocument(t, s, "/total-estimate"+c.query)
		got := strings.TrimSpace(doc.Find(`[data-testid="total-estimate"] .estimate`).Text())
		unpriced := strings.TrimSpace(doc.Find(`[data-testid="total-estimate"] .muted`).Text())
		if rec.Code != http.StatusOK || got != c.want || unpriced != c.unpriced {
			t.Errorf("GET /total-estimate%s = %d %q %q; want %q %q", c.query, rec.Code, got, unpriced, c.want, c.unpriced)
		}
		if c.want == "" && strings.TrimSpace(rec.Body.String()) != "" {
			t.Errorf("GET /total-estimate%s = %q; want nothing", c.query, rec.Body)
		}
	}
	if rec := s.get("/total-estimate?since=yesterday"); rec.Code != http.StatusBadRequest {
		t.Errorf("GET /total-estimate?since=yesterday = %d; want 400", rec.Code)
	}

	var l struct{ Total store.Total }
	if err := json.Unmarshal(s.get("/api/sessions?estimate=1&agent=claude-code").Body.Bytes(), &l); err != nil {
		t.Fatal(err)
	}
	if l.Total.EstimatedCostUSD == nil || fmt.Sprintf("≈ $%.2f estimated", *l.Total.EstimatedCostUSD) != estimateOf(t, sessions, "ea") {
		t.Errorf("GET /api/sessions?estimate=1&agent=claude-code total = %+v; want the estimate %s", l.Total, estimateOf(t, sessions, "ea"))
	}
	if body := s.get("/api/sessions").Body.String(); strings.Contains(body, "estimated_cost_usd") {
		t.Error("GET /api/sessions gives an estimate not asked for")
	}
}
