package handlers

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/agentreview/service/pricing"
	"github.com/agentreview/service/store"
)

// TestSessionDetailUsage: the session detail JSON carries usage with the
// names the API documents, and leaves it out for a session without any.
func TestSessionDetailUsage(t *testing.T) {
	s := newTestService(t)
	s.mustPush(newBatch("plain"), http.StatusCreated)
	b, err := store.ParseBatch(mustJSON(t, newBatch("used")))
	if err != nil {
		t.Fatal(err)
	}
	b.Usage = []store.UsageRecord{{ID: "msg_1", At: "2026-01-01T00:00:00Z", Model: "claude-sonnet-4-5", ActorID: "used-root", TurnID: "used-t1",
		Tokens: pricing.Tokens{Input: 1000, Output: 2000, CacheRead: 3000, CacheCreation: 4000}, Source: store.UsageFromFile}}
	if _, err := s.store.Apply(context.Background(), b); err != nil {
		t.Fatalf("Apply = %v", err)
	}

	var plain map[string]json.RawMessage
	if rec := s.get("/api/sessions/plain"); rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &plain) != nil {
		t.Fatalf("GET plain = %d %s", rec.Code, rec.Body)
	}
	if _, ok := plain["usage"]; ok {
		t.Errorf("session without usage has usage %s; want it left out", plain["usage"])
	}

	rec := s.get("/api/sessions/used")
	var d struct {
		Usage struct {
			Tokens struct {
				Input         int64 `json:"input"`
				Output        int64 `json:"output"`
				CacheRead     int64 `json:"cache_read"`
				CacheCreation int64 `json:"cache_creation"`
			} `json:"tokens"`
			APIRequests int64 `json:"api_requests"`
			Models      []struct {
				Model            string   `json:"model"`
				APIRequests      int64    `json:"api_requests"`
				EstimatedCostUSD *float64 `json:"estimated_cost_usd"`
			} `json:"models"`
			EstimatedCostUSD *float64 `json:"estimated_cost_usd"`
			Pricing          struct {
				Source string `json:"source"`
				AsOf   string `json:"as_of"`
			} `json:"pricing"`
		} `json:"usage"`
	}
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &d) != nil {
		t.Fatalf("GET used = %d %s", rec.Code, rec.Body)
	}
	u := d.Usage
	if u.Tokens.Input != 1000 || u.Tokens.Output != 2000 || u.Tokens.CacheRead != 3000 || u.Tokens.CacheCreation != 4000 || u.APIRequests != 1 {
		t.Errorf("usage = %+v; want the record's tokens, 1 request", u)
	}
	if len(u.Models) != 1 || u.Models[0].Model != "claude-sonnet-4-5" || u.Models[0].EstimatedCostUSD == nil || u.EstimatedCostUSD == nil || u.Pricing.Source == "" || u.Pricing.AsOf == "" {
		t.Errorf("usage = %s; want one priced model and the pricing source", rec.Body)
	}
}
