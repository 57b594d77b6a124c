package main

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentreview/service/store"
)

// TestDemoHasCopilotSession: the demo's sessions apply to a store file and
// one of them is a Copilot CLI session, with no metrics (Copilot reports
// no cost) and its failed command.
func TestDemoHasCopilotSession(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, b := range demoSessions(time.Now()) {
		if _, err := st.Apply(ctx, b); err != nil {
			t.Fatalf("Apply(%s) = %v", b.Session.ID, err)
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
