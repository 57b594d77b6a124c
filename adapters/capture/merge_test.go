package capture

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/store"
)

func rec(kind, key string, ord int64, body any) store.TelemetryRecord {
	return store.TelemetryRecord{Kind: kind, Key: key, Ord: ord, Body: mustJSON(body)}
}

func TestStepDecision(t *testing.T) {
	cases := []struct {
		decision, source string
		want             string
	}{
		{"accept", "config", adapters.DecisionAuto},
		{"accept", "hook", adapters.DecisionAuto},
		{"accept", "", adapters.DecisionAuto},
		{"accept", "user_temporary", adapters.DecisionAccepted},
		{"accept", "user_permanent", adapters.DecisionAccepted},
		{"reject", "user_reject", adapters.DecisionRejected},
		{"reject", "user_abort", adapters.DecisionRejected},
		{"reject", "config", adapters.DecisionRejected},
		{"", "", ""},
	}
	for _, c := range cases {
		call := &toolCall{decision: &toolEvent{Decision: c.decision, Source: c.source}}
		if got := call.stepDecision(); got != c.want {
			t.Errorf("decision %q source %q gave %q; want %q", c.decision, c.source, got, c.want)
		}
	}
	// tool_result repeats the decision under decision_type/decision_source.
	call := &toolCall{result: &toolEvent{Decision: "accept", Source: "user_permanent"}}
	if got := call.stepDecision(); got != adapters.DecisionAccepted {
		t.Errorf("decision from tool_result = %q; want accepted", got)
	}
}

func TestMetricsAsReported(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	tenth, fifth := 0.1, 0.2 // added at run time, as floats
	i := func(v int64) *int64 { return &v }
	cases := []struct {
		name     string
		requests []request
		want     *store.Metrics
	}{
		{"none", nil, nil},
		{"costs added in arrival order", []request{
			{CostUSD: f(0.1), Input: 1, Output: 2, CacheRead: 3, CacheCreation: 4},
			{CostUSD: f(0.2), Input: 10, Output: 20, CacheRead: 30, CacheCreation: 40},
		}, &store.Metrics{CostUSD: tenth + fifth, APIRequests: 2, Tokens: store.Tokens{Input: 11, Output: 22, CacheRead: 33, CacheCreation: 44}}},
		{"micros when every request has them", []request{
			{CostUSD: f(0.1), CostMicros: i(100000)}, {CostUSD: f(0.2), CostMicros: i(200000)},
		}, &store.Metrics{CostUSD: 0.3, APIRequests: 2}},
		{"a request without cost still counts", []request{{Input: 5}}, &store.Metrics{APIRequests: 1, Tokens: store.Tokens{Input: 5}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var recs []store.TelemetryRecord
			for n, q := range c.requests {
				recs = append(recs, rec(kindRequest, string(rune('a'+n)), int64(n+1), q))
			}
			got := decodeTelemetry("s", recs).metrics()
			if (got == nil) != (c.want == nil) || (got != nil && *got != *c.want) {
				t.Errorf("metrics = %+v; want %+v", got, c.want)
			}
		})
	}
}

func mustValid(t *testing.T, s *adapters.Session) {
	t.Helper()
	for i, b := range s.Batches {
		body, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := store.ParseBatch(body); err != nil {
			var inv *store.InvalidError
			errors.As(err, &inv)
			t.Fatalf("batch %d: ParseBatch = %v %+v", i, err, inv)
		}
	}
}

// A session known from telemetry alone: one turn per prompt, reference-only
// steps with provisional seqs in arrival order, valid batches.
func TestMergeTelemetryOnly(t *testing.T) {
	ok := true
	recs := []store.TelemetryRecord{
		rec(kindResource, "resource", 1, resource{Version: "2.1.40", Workspace: "/home/dev/hello"}),
		rec(kindRequest, "req_1", 2, request{At: "2026-03-01T10:00:01Z", CostUSD: new(float64)}),
		rec(kindDecision, "toolu_1", 3, toolEvent{At: "2026-03-01T10:00:02Z", PromptID: "p1", ToolName: "Bash", Decision: "accept", Source: "config"}),
		rec(kindResult, "toolu_2", 4, toolEvent{At: "2026-03-01T10:00:05Z", PromptID: "p2", ToolName: "Read", Success: &ok}),
		rec(kindResult, "toolu_1", 5, toolEvent{At: "2026-03-01T10:00:03Z", PromptID: "p1", ToolName: "Bash", Success: &ok}),
	}
	sess := merge(&adapters.Session{ID: "s"}, decodeTelemetry("s", recs), nil)
	mustValid(t, sess)
	b := sess.Batches[0]
	if b.Session.Agent.Version != "2.1.40" || b.Session.Workspace.Root != "/home/dev/hello" || b.Session.StartedAt != "2026-03-01T10:00:01Z" || b.Session.Metrics == nil {
		t.Errorf("header = %+v; want the telemetry's", b.Session)
	}
	if len(b.Turns) != 2 || b.Turns[0].PromptID != "p1" || b.Turns[1].PromptID != "p2" {
		t.Fatalf("turns = %+v; want one per prompt", b.Turns)
	}
	want := []struct {
		id, turn, typ, decision, outcome string
		seq                              int64
	}{
		{"toolu_1", b.Turns[0].ID, store.TypeCommand, adapters.DecisionAuto, adapters.OutcomeOK, adapters.ProvisionalSeq + 3},
		{"toolu_2", b.Turns[1].ID, store.TypeOther, adapters.DecisionUnknown, adapters.OutcomeOK, adapters.ProvisionalSeq + 4},
	}
	if len(b.Steps) != len(want) {
		t.Fatalf("%d steps; want %d", len(b.Steps), len(want))
	}
	for i, w := range want {
		s := b.Steps[i]
		if s.ID != w.id || s.TurnID != w.turn || s.Type != w.typ || s.Decision != w.decision || s.Outcome != w.outcome || s.Seq != w.seq || s.ContentStatus != store.ContentReferenceOnly {
			t.Errorf("step %d = %s %s %s %s %s %d %s; want %+v", i, s.ID, s.TurnID, s.Type, s.Decision, s.Outcome, s.Seq, s.ContentStatus, w)
		}
	}
}

// A call whose step was read from a transcript before is never made
// reference-only again, even when a later read lacks it.
func TestMergeKeepsTranscriptSteps(t *testing.T) {
	ok := true
	recs := []store.TelemetryRecord{rec(kindResult, "toolu_1", 1, toolEvent{At: "2026-03-01T10:00:03Z", ToolName: "Bash", Success: &ok})}
	sess := merge(&adapters.Session{ID: "s"}, decodeTelemetry("s", recs), map[string]int64{"toolu_1": 7})
	for _, b := range sess.Batches {
		if len(b.Steps) > 0 {
			t.Errorf("steps %+v; want none", b.Steps)
		}
	}
}
