package main

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentreview/service/adapters/agents"
	"github.com/agentreview/service/store"
)

// TestDemoHasEachAgent: the demo's sessions apply to a store file, and
// each agent the service imports has at least one of them. The Copilot CLI
// session has no metrics (Copilot reports no cost), its failed command and
// its autopilot turn.
func TestDemoHasEachAgent(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "demo.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, b := range demoSessions(time.Now()) {
		if _, err := st.Apply(ctx, b); err != nil {
			t.Fatalf("Apply(%s) = %v", b.Session.ID, err)
		}
	}
	for _, a := range agents.All {
		list, err := st.List(ctx, store.ListQuery{Agent: a.Kind})
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Sessions) == 0 {
			t.Errorf("the demo has no %s session", a.Kind)
		}
	}

	d, err := st.Detail(ctx, "demo-copilot-5e3a", store.DetailQuery{})
	if err != nil {
		t.Fatalf("Detail(demo-copilot-5e3a) = %v", err)
	}
	failed := 0
	for _, s := range d.Steps {
		if s.Outcome == "failed" {
			failed++
		}
	}
	if d.Agent.Kind != "copilot-cli" || d.Metrics != nil || failed != 1 || len(d.Turns) != 1 || d.Turns[0].Mode != "autopilot" {
		t.Errorf("demo Copilot session: kind %q, metrics %+v, %d failed, turns %+v", d.Agent.Kind, d.Metrics, failed, d.Turns)
	}
}

// TestDemoCrushSession: the demo's Crush session has a cost and nothing
// else in its metrics, and its denied command did not run.
func TestDemoCrushSession(t *testing.T) {
	b := crushMigration(time.Now())
	if m := b.Session.Metrics; m == nil || m.CostUSD <= 0 || m.APIRequests != 0 || m.Tokens != (store.Tokens{}) {
		t.Errorf("metrics %+v; want a cost alone", m)
	}
	denied := 0
	for _, s := range b.Steps {
		if s.Decision == "rejected" && s.Outcome == "not_run" && s.Payload.ExitCode == nil && s.Payload.Stdout == nil {
			denied++
		}
	}
	if denied != 1 {
		t.Errorf("%d denied commands; want 1, without output", denied)
	}
}
