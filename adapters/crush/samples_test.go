package crush

import (
	"context"
	"maps"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/store"
	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

// sampleDB is the real Crush database of ../shared/samples (SOURCES.md).
func sampleDB(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "shared", "samples", "crush", "dbos-transact-golang", ".crush", "crush.db")
}

// rawCounts counts, with SQL of the test's own over the raw database, the
// steps each top-level session's records make, by kind: prompts (user
// messages with text), assistant text, reasoning, tool calls by the step
// their tool maps to (bash a command, view a read, write and edit an edit,
// each change of a multiedit an edit, any other tool other:<name>), and a
// system message for each reply that finished with an error or was
// cancelled; also the calls the user denied, the replies that were the
// provider's error, and the session's cost.
type rawSession struct {
	steps     map[string]int
	denied    int
	apiErrors int
	cost      float64
}

func rawCounts(t *testing.T, path string) map[string]*rawSession {
	t.Helper()
	conn, err := sqlite.OpenConn(path, sqlite.OpenReadOnly)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	out := map[string]*rawSession{}
	err = sqlitex.Execute(conn, `SELECT id, cost FROM sessions WHERE parent_session_id IS NULL OR parent_session_id = ''`, &sqlitex.ExecOptions{
		ResultFunc: func(s *sqlite.Stmt) error {
			out[s.ColumnText(0)] = &rawSession{steps: map[string]int{}, cost: s.ColumnFloat(1)}
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	err = sqlitex.Execute(conn, `SELECT m.session_id, m.role, p.value ->> 'type', p.value -> 'data' ->> 'name',
			p.value -> 'data' ->> 'text', p.value -> 'data' ->> 'reason', p.value -> 'data' ->> 'is_error', p.value -> 'data' ->> 'content',
			json_array_length(p.value -> 'data' ->> 'input', '$.edits')
		FROM messages m, json_each(m.parts) p`, &sqlitex.ExecOptions{
		ResultFunc: func(s *sqlite.Stmt) error {
			r := out[s.ColumnText(0)]
			if r == nil {
				return nil
			}
			role, typ, name, text := s.ColumnText(1), s.ColumnText(2), s.ColumnText(3), strings.TrimSpace(s.ColumnText(4))
			switch {
			case role == "user" && typ == "text" && text != "":
				r.steps["message:user"]++
			case role == "assistant" && typ == "text" && text != "":
				r.steps["message:assistant"]++
			case role == "assistant" && typ == "finish" && (s.ColumnText(5) == "error" || s.ColumnText(5) == "canceled"):
				r.steps["message:system"]++
				if s.ColumnText(5) == "error" {
					r.apiErrors++
				}
			case typ == "tool_call":
				switch name {
				case "bash":
					r.steps["command"]++
				case "view":
					r.steps["read"]++
				case "write", "edit":
					r.steps["edit"]++
				case "multiedit":
					r.steps["edit"] += s.ColumnInt(8)
				default:
					r.steps["other:"+name]++
				}
			case typ == "tool_result" && s.ColumnInt(6) == 1 && s.ColumnText(7) == "Permission denied":
				r.denied++
			}
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestSampleImport imports the real Crush database through the import
// runner into a store and compares each session's stored steps, turns,
// denied calls and cost with what the raw database holds.
func TestSampleImport(t *testing.T) {
	ctx := context.Background()
	db := sampleDB(t)
	want := rawCounts(t, db)
	if len(want) != 2 {
		t.Fatalf("raw sessions %d; the sample has 2", len(want))
	}
	if errs := want["a20c5ed5-41d4-45f7-88eb-7ba0645f1341"]; errs == nil || errs.apiErrors == 0 {
		t.Fatalf("the sample's first session has no reply that finished with an error; want one to check")
	}
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	im := &adapters.Importer{Store: st}
	sum, err := im.Run(ctx, Agent, []string{filepath.Dir(db)})
	if err != nil || len(sum.Problems) > 0 {
		t.Fatalf("Run = %v, problems %v", err, sum.Problems)
	}
	if sum.Sessions != len(want) || sum.New != len(want) {
		t.Fatalf("Run = %s; want %d new sessions", sum, len(want))
	}
	for id, w := range want {
		d, err := st.Detail(ctx, id, store.DetailQuery{})
		if err != nil {
			t.Fatalf("Detail(%s): %v", id, err)
		}
		got := map[string]int{}
		denied, apiErrors := 0, 0
		for _, step := range d.Steps {
			switch step.Type {
			case store.TypeMessage:
				got["message:"+step.Payload.Role]++
			case store.TypeOther:
				got["other:"+step.Payload.ToolName]++
			default:
				got[step.Type]++
			}
			if step.Decision == adapters.DecisionRejected && step.Outcome == adapters.OutcomeNotRun {
				denied++
			}
			if step.Payload.Role == "system" && step.Outcome == adapters.OutcomeFailed && step.Error != nil && step.Error.Type == "api_error" {
				apiErrors++
			}
		}
		if apiErrors != w.apiErrors {
			t.Errorf("%s: %d failed replies; the raw database has %d that finished with an error", id, apiErrors, w.apiErrors)
		}
		if !maps.Equal(got, w.steps) {
			t.Errorf("%s: stored steps %v; the raw database has %v", id, got, w.steps)
		}
		if len(d.Turns) != w.steps["message:user"] {
			t.Errorf("%s: %d turns; the raw database has %d prompts", id, len(d.Turns), w.steps["message:user"])
		}
		if denied != w.denied {
			t.Errorf("%s: %d denied steps; the raw database has %d", id, denied, w.denied)
		}
		if d.Metrics == nil || d.Metrics.CostUSD != w.cost {
			t.Errorf("%s: metrics %+v; the session row's cost is %v", id, d.Metrics, w.cost)
		}
		if d.Agent.Kind != Kind {
			t.Errorf("%s: agent %+v", id, d.Agent)
		}
	}
}
