package claudecode

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/store"
)

// FuzzClaudeCodeParse feeds arbitrary transcripts to Parse: it must not
// panic, and every batch it produces must be a valid v1.2 batch. A NUL byte
// splits the input into the session's file and a subagent's file.
func FuzzClaudeCodeParse(f *testing.F) {
	f.Add([]byte(`{"type":"user","uuid":"u","sessionId":"s","timestamp":"2026-01-01T00:00:00Z","message":{"role":"user","content":"hi"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		main, sub, _ := bytes.Cut(data, []byte{0})
		files := []adapters.File{{Path: "/p/s.jsonl", Body: bytes.NewReader(main)}}
		if sub != nil {
			files = append(files, adapters.File{Path: "/p/s/subagents/agent-x.jsonl", Body: bytes.NewReader(sub)})
		}
		id := "s"
		if len(data) > 0 && data[0] == ' ' {
			id = "" // let the parser find the id
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
