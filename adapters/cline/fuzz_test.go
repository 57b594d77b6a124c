package cline

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/store"
)

// FuzzClineParse feeds arbitrary files to both layouts: NUL bytes split the
// input into up to three files, read as a task's history, ui messages and
// metadata, and as an SDK session's manifest, messages and a subagent's
// messages. It must not panic, and every batch must be a valid v1.2 batch.
func FuzzClineParse(f *testing.F) {
	f.Add([]byte("[{\"role\":\"user\",\"content\":\"<task>hi</task>\"}]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		parts := bytes.SplitN(data, []byte{0}, 3)
		for len(parts) < 3 {
			parts = append(parts, nil)
		}
		fileOf := func(i int, path string) *adapters.File {
			if parts[i] == nil {
				return nil
			}
			return &adapters.File{Path: path, Body: bytes.NewReader(parts[i])}
		}
		check := func(s *adapters.Session) {
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
		}
		check(ParseTask(Task{ID: "1769000000000", APIHistory: fileOf(0, "/t/api_conversation_history.json"),
			UIMessages: fileOf(1, "/t/ui_messages.json"), Metadata: fileOf(2, "/t/task_metadata.json")}))
		parts = bytes.SplitN(data, []byte{0}, 3)
		for len(parts) < 3 {
			parts = append(parts, nil)
		}
		sdk := SDKSession{ID: "s", Manifest: fileOf(0, "/s/s.json"), Messages: fileOf(1, "/s/s.messages.json")}
		if sub := fileOf(2, "/s/s__a.messages.json"); sub != nil {
			sdk.Subagents = []adapters.File{*sub}
		}
		check(ParseSDKSession(sdk))
	})
}
