package aider

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentreview/service/adapters/adapterstest"
	"github.com/agentreview/service/store"
)

// FuzzAiderParse feeds arbitrary chat histories to Discover and Parse: they
// must not panic, and every batch of every run must be a valid v1.2 batch,
// as built (Validate) and as sent (ParseBatch).
func FuzzAiderParse(f *testing.F) {
	f.Add([]byte(banner + history("#### hi", "", "a.py", "```", "<<<<<<< SEARCH", "=======", "x", ">>>>>>> REPLACE", "```", "",
		"> Tokens: 2.3k sent, 604 received. Cost: $0.01 message, $0.01 session.", "> Applied edit to a.py", "> Commit 1a2b3c4 feat: x")))
	f.Add([]byte(banner + history("#### /run ls", "> a.py", "", "#### /clear", "", "x", "<<<<<<< SEARCH", "=======",
		"> The LLM did not conform to the edit format.", "> ## SearchReplaceNoExactMatch: in a.py", "> # Fix any errors below, if possible.", "> ## Running: lint")))
	f.Add([]byte("stray\n# aider chat started at 2025-13-40 99:99:99\r\n#### \r\n> \r\n# aider chat started at x"))
	if b, err := os.ReadFile("testdata/aider-ai/chat-history_lines_1-247.aider.chat.history.md"); err == nil {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), HistoryFile)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		units, _ := Discover([]string{path})
		for _, u := range units {
			s := adapterstest.ParseUnit(t, Agent, u)
			for i, b := range s.Batches {
				if err := b.Validate(); err != nil {
					t.Fatalf("run %s batch %d: Validate = %v", u.ID, i, err)
				}
				body, err := json.Marshal(b)
				if err != nil {
					t.Fatalf("run %s batch %d: json.Marshal = %v", u.ID, i, err)
				}
				if _, err := store.ParseBatch(body); err != nil {
					if inv, ok := err.(*store.InvalidError); ok {
						t.Fatalf("run %s batch %d: ParseBatch = %v %+v\n%s", u.ID, i, err, inv.Problems, body)
					}
					t.Fatalf("run %s batch %d: ParseBatch = %v\n%s", u.ID, i, err, body)
				}
			}
		}
	})
}
