package codex

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/store"
)

// FuzzCodexParse feeds arbitrary rollouts to Parse (a NUL byte splits the
// input into two files of one session): it must not panic, and every batch
// must be a valid v1.2 batch.
func FuzzCodexParse(f *testing.F) {
	f.Add([]byte(`{"timestamp":"2026-01-01T00:00:00Z","type":"event_msg","payload":{"type":"user_message","message":"hi"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var files []adapters.File
		for i, part := range bytes.SplitN(data, []byte{0}, 2) {
			files = append(files, adapters.File{Path: "/r/rollout-" + string(rune('a'+i)) + ".jsonl", Body: bytes.NewReader(part)})
		}
		id := "s"
		if len(data) > 0 && data[0] == ' ' {
			id = ""
		}
		s := Parse(adapters.Unit{ID: id}, files)
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
