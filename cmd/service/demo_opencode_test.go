package main

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/agentreview/service/store"
)

// TestDemoHasOpencodeSession checks the demo holds one opencode session
// and that it is a valid v1.2 batch.
func TestDemoHasOpencodeSession(t *testing.T) {
	n := 0
	for _, b := range demoSessions(time.Now()) {
		if b.Session.Agent.Kind != "opencode" {
			continue
		}
		n++
		body, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := store.ParseBatch(body); err != nil {
			t.Errorf("ParseBatch(%s) = %v", b.Session.ID, err)
		}
	}
	if n != 1 {
		t.Errorf("demo has %d opencode sessions; want 1", n)
	}
}
