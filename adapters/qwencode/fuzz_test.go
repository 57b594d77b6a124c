package qwencode

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/store"
)

// FuzzQwenParse feeds arbitrary chat recordings to Parse (a NUL byte splits
// the input into two files of one session): it must not panic, and every
// batch must be a valid v1.2 batch. The samples in testdata are seeds.
func FuzzQwenParse(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/*projects/*/chats/*.jsonl")
	seeds2, _ := filepath.Glob("testdata/handmade/projects/*/chats/*.jsonl")
	for _, p := range append(seeds, seeds2...) {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"uuid":"u","sessionId":"s","timestamp":"2026-01-01T00:00:01Z","type":"user","message":{"parts":[{"text":"hi"}]}}` + "\n" +
		`{"uuid":"a","sessionId":"s","type":"assistant","message":{"parts":[{"functionCall":{"id":"c","name":"read_file","args":{"absolute_path":"a","offset":-3,"limit":2}}}]}}` + "\x00" +
		`{"uuid":"r","sessionId":"s","type":"tool_result","message":{"parts":[{"functionResponse":{"id":"c","response":{"error":5}}}]},"toolCallResult":{"callId":"c","status":"error"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		names := []string{"/q/projects/-p/chats/s.jsonl", "/q/projects/-p/chats/s-copy.jsonl"}
		var files []adapters.File
		for i, part := range bytes.SplitN(data, []byte{0}, 2) {
			files = append(files, adapters.File{Path: names[i], Body: bytes.NewReader(part)})
		}
		s := Parse(adapters.Unit{ID: "s"}, files)
		defer s.Close()
		err := s.Each(func(b *store.Batch) error {
			body, err := json.Marshal(b)
			if err != nil {
				t.Fatalf("json.Marshal = %v", err)
			}
			if _, err := store.ParseBatch(body); err != nil {
				if inv, ok := err.(*store.InvalidError); ok {
					t.Fatalf("ParseBatch = %v %+v\n%s", err, inv.Problems, body)
				}
				t.Fatalf("ParseBatch = %v\n%s", err, body)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}
