package main

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentreview/service/store"
)

// TestDemoHasGeminiSession: the demo's sessions go through Apply and one of
// them is a Gemini CLI session with its steps.
func TestDemoHasGeminiSession(t *testing.T) {
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
	list, err := st.List(ctx, store.ListQuery{Agent: "gemini-cli"})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Sessions) != 1 || list.Sessions[0].Agent.Kind != "gemini-cli" {
		t.Fatalf("demo sessions of gemini-cli = %+v; want one", list.Sessions)
	}
}
