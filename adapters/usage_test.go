package adapters_test

import (
	"strings"
	"testing"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/pricing"
	"github.com/agentreview/service/store"
)

// TestAddUsage: a response reported on several lines counts once with its
// last (final) counts, and odd values never make the batch invalid.
func TestAddUsage(t *testing.T) {
	b := adapters.NewBuilder(adapters.Unit{ID: "s1"})
	at, _ := adapters.ParseTime("2026-01-01T00:00:00Z")
	b.Header.Agent = store.Agent{Kind: "test", Version: "1"}
	b.Header.Workspace.Root = "/w"
	b.NewTurn("1", "", at)
	b.Stream("f").Message(nil, "m1", "user", "hi", at)
	b.AddUsage(adapters.Reported{ID: "msg_1", At: at, Model: "m", Tokens: pricing.Tokens{Input: 3, Output: 1}})
	b.AddUsage(adapters.Reported{ID: "msg_1", At: at, Model: "m", Tokens: pricing.Tokens{Input: 3, Output: 40}})
	bad := -2.0
	b.AddUsage(adapters.Reported{ID: strings.Repeat("x", 2000), At: at, Model: strings.Repeat("é", 400), Tokens: pricing.Tokens{Input: -5}, CostUSD: &bad})
	s := b.Finish()
	if s.Usage == nil || *s.Usage != (adapters.Usage{APIRequests: 2, Input: 3, Output: 40}) {
		t.Errorf("Usage = %+v; want 2 requests, input 3, output 40 (the last line of msg_1)", s.Usage)
	}
	var recs []store.UsageRecord
	for _, bt := range s.Batches {
		if err := bt.Validate(); err != nil {
			t.Fatalf("Validate = %v", err)
		}
		recs = append(recs, bt.Usage...)
	}
	if len(recs) != 2 || recs[0].TurnID != "turn-1" || recs[0].ActorID != adapters.RootActor || recs[1].CostUSD != nil {
		t.Errorf("usage records = %+v", recs)
	}
}
