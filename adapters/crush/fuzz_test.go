package crush

import (
	"encoding/json"
	"testing"

	"github.com/agentreview/service/adapters/adapterstest"
	"github.com/agentreview/service/store"
)

// FuzzCrushParts stores arbitrary text as the parts of an assistant
// message between a prompt and a tool message, and parses the session: it
// must not panic, and every batch must be a valid v1.2 batch.
func FuzzCrushParts(f *testing.F) {
	f.Add(`[{"type":"tool_call","data":{"id":"c","name":"bash","input":"{\"command\":\"ls\"}"}}]`)
	f.Add(`[{"type":"tool_call","data":{"id":"c","name":"multiedit","input":"{\"file_path\":\"a\",\"edits\":[{}]}"}},{"type":"finish","data":{"reason":"error"}}]`)
	f.Add(`[{"type":"reasoning","data":{"thinking":"x"}},{"type":"text","data":{"text":"y"}}]`)
	f.Fuzz(func(t *testing.T, parts string) {
		d := newDB(t)
		d.session("s", "", 0, 1754709000)
		d.message("u", "s", "user", 1754709000, "text", text("go"))
		d.exec(`INSERT INTO messages (id, session_id, role, parts, created_at, updated_at) VALUES ('a', 's', 'assistant', ?, 1754709001, 1754709001)`, parts)
		d.message("r", "s", "tool", 1754709002, "tool_result", toolResult("c", "out\nExit code 2", false, "{}"))
		units, _ := Discover([]string{d.path})
		for _, u := range units {
			s := adapterstest.ParseUnit(t, Agent, u)
			err := s.Each(func(b *store.Batch) error {
				body, err := json.Marshal(b)
				if err != nil {
					t.Fatalf("json.Marshal = %v", err)
				}
				if _, err := store.ParseBatch(body); err != nil {
					t.Fatalf("ParseBatch = %v\n%s", err, body)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
	})
}
