package main

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentreview/service/adapters/aider"
	"github.com/agentreview/service/adapters/claudecode"
	"github.com/agentreview/service/adapters/cline"
	"github.com/agentreview/service/adapters/codex"
	"github.com/agentreview/service/adapters/copilotcli"
	"github.com/agentreview/service/adapters/crush"
	"github.com/agentreview/service/adapters/geminicli"
	"github.com/agentreview/service/adapters/opencode"
	"github.com/agentreview/service/adapters/qwencode"
	"github.com/agentreview/service/store"
)

// TestDemoHasEachAgent: the demo's sessions apply to a store file, and
// each agent the service imports has at least one of them.
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
	for _, kind := range []string{claudecode.Kind, cline.Kind, codex.Kind, geminicli.Kind, copilotcli.Kind, opencode.Kind, crush.Kind, qwencode.Kind, aider.Kind} {
		list, err := st.List(ctx, store.ListQuery{Agent: kind})
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Sessions) == 0 {
			t.Errorf("the demo has no %s session", kind)
		}
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
