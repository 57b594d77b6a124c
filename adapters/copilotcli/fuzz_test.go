package copilotcli

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/store"
)

// FuzzCopilotParse feeds arbitrary input to Parse, as an events.jsonl log
// or, when it starts with '{' and has no newline, as a legacy JSON file: it
// must not panic, and every batch must be a valid v1.2 batch.
func FuzzCopilotParse(f *testing.F) {
	f.Add([]byte(`{"type":"user.message","data":{"content":"hi"},"id":"e1","timestamp":"2026-01-01T00:00:00Z"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := "/c/session-state/s/events.jsonl"
		if bytes.HasPrefix(data, []byte("{")) && !bytes.Contains(data, []byte("\n")) {
			path = "/c/history-session-state/s.json"
		}
		s := Parse(adapters.Unit{ID: "s"}, []adapters.File{{Path: path, Body: bytes.NewReader(data)}})
		for i, b := range s.Batches {
			body, err := json.Marshal(b)
			if err != nil {
				t.Fatalf("batch %d: json.Marshal = %v", i, err)
			}
			if _, err := store.ParseBatch(body); err != nil {
				if inv, ok := err.(*store.InvalidError); ok {
					t.Fatalf("batch %d: ParseBatch = %v %+v\n%s", i, err, inv.Problems, body)
				}
				t.Fatalf("batch %d: ParseBatch = %v\n%s", i, err, body)
			}
		}
	})
}
