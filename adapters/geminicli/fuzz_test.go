package geminicli

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/store"
)

// FuzzGeminiParse feeds arbitrary session files to Parse (a NUL byte
// splits the input into a JSONL file and a legacy JSON file of one
// session): it must not panic, and every batch must be a valid v1.2 batch.
func FuzzGeminiParse(f *testing.F) {
	f.Add([]byte(`{"sessionId":"s","projectHash":"h","startTime":"2026-01-01T00:00:00Z"}
{"id":"u","timestamp":"2026-01-01T00:00:01Z","type":"user","content":[{"text":"hi"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		names := []string{"/g/chats/session-a.jsonl", "/g/chats/session-b.json"}
		var files []adapters.File
		for i, part := range bytes.SplitN(data, []byte{0}, 2) {
			files = append(files, adapters.File{Path: names[i], Body: bytes.NewReader(part)})
		}
		s := Parse(adapters.Unit{ID: "s"}, files)
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
