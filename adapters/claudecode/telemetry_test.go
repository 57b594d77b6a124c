package claudecode

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/pricing"
	"github.com/agentreview/service/store"
)

func rec(kind, key string, ord int64, body any) store.TelemetryRecord {
	return store.TelemetryRecord{Kind: kind, Key: key, Ord: ord, Body: jsonOf(body)}
}

func jsonOf(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
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
		call := &telemetryCall{decision: &ToolEvent{Decision: c.decision, Source: c.source}}
		if got := call.stepDecision(); got != c.want {
			t.Errorf("decision %q source %q gave %q; want %q", c.decision, c.source, got, c.want)
		}
	}
	// tool_result repeats the decision under decision_type/decision_source.
	call := &telemetryCall{result: &ToolEvent{Decision: "accept", Source: "user_permanent"}}
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
		requests []APIRequest
		want     *store.Metrics
	}{
		{"none", nil, nil},
		{"costs added in arrival order", []APIRequest{
			{CostUSD: f(0.1), Input: 1, Output: 2, CacheRead: 3, CacheCreation: 4},
			{CostUSD: f(0.2), Input: 10, Output: 20, CacheRead: 30, CacheCreation: 40},
		}, &store.Metrics{CostUSD: tenth + fifth, APIRequests: 2, Tokens: store.Tokens{Input: 11, Output: 22, CacheRead: 33, CacheCreation: 44}}},
		{"micros when every request has them", []APIRequest{
			{CostUSD: f(0.1), CostMicros: i(100000)}, {CostUSD: f(0.2), CostMicros: i(200000)},
		}, &store.Metrics{CostUSD: 0.3, APIRequests: 2}},
		{"a request without cost still counts", []APIRequest{{Input: 5}}, &store.Metrics{APIRequests: 1, Tokens: store.Tokens{Input: 5}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var recs []store.TelemetryRecord
			for n, q := range c.requests {
				recs = append(recs, rec(KindAPIRequest, string(rune('a'+n)), int64(n+1), q))
			}
			got := decodeTelemetry("s", recs).metrics()
			if (got == nil) != (c.want == nil) || (got != nil && *got != *c.want) {
				t.Errorf("metrics = %+v; want %+v", got, c.want)
			}
		})
	}
}

// A session known from telemetry alone: one turn per prompt, reference-only
// steps with provisional seqs in arrival order, valid batches.
func TestMergeTelemetryOnly(t *testing.T) {
	ok := true
	recs := []store.TelemetryRecord{
		rec(KindResource, "resource", 1, Resource{Version: "2.1.40", Workspace: "/home/dev/hello"}),
		rec(KindAPIRequest, "req_1", 2, APIRequest{At: "2026-03-01T10:00:01Z", CostUSD: new(float64)}),
		rec(KindToolDecision, "toolu_1", 3, ToolEvent{At: "2026-03-01T10:00:02Z", PromptID: "p1", ToolName: "Bash", Decision: "accept", Source: "config"}),
		rec(KindToolResult, "toolu_2", 4, ToolEvent{At: "2026-03-01T10:00:05Z", PromptID: "p2", ToolName: "Read", Success: &ok}),
		rec(KindToolResult, "toolu_1", 5, ToolEvent{At: "2026-03-01T10:00:03Z", PromptID: "p1", ToolName: "Bash", Success: &ok}),
	}
	sess := &adapters.Session{ID: "s", Batches: TelemetryBatches("s", adapters.Records{}, recs, nil)}
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
	recs := []store.TelemetryRecord{rec(KindToolResult, "toolu_1", 1, ToolEvent{At: "2026-03-01T10:00:03Z", ToolName: "Bash", Success: &ok})}
	sess := &adapters.Session{ID: "s", Batches: TelemetryBatches("s", adapters.Records{}, recs, map[string]int64{"toolu_1": 7})}
	for _, b := range sess.Batches {
		if len(b.Steps) > 0 {
			t.Errorf("steps %+v; want none", b.Steps)
		}
	}
}

// TestImportJoinsTelemetry imports a transcript with the plain Claude Code
// agent, as `service import claude-code` does, into a store that keeps
// telemetry for the session: the parser's builder joins it before the
// session is split, with no wrapper around the agent. The call in both
// gets the telemetry's decision and channel; the call only in the
// telemetry is a reference-only step with a provisional seq; the metrics
// are the telemetry's; the transcript's steps keep seqs 1..n; flags follow
// the joined decision.
func TestImportJoinsTelemetry(t *testing.T) {
	for _, spill := range []bool{false, true} {
		t.Run(map[bool]string{false: "in memory", true: "spilled"}[spill], func(t *testing.T) {
			if spill {
				was := adapters.SpillAfter
				adapters.SpillAfter = 0
				t.Cleanup(func() { adapters.SpillAfter = was })
			}
			ctx := context.Background()
			st, err := store.Open(ctx, filepath.Join(t.TempDir(), "s.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			const sid = "0e26ec2f-937e-482c-b889-bc126f996913"
			cost := 0.25
			recs := []store.TelemetryRecord{
				rec(KindAPIRequest, "req_1", 1, APIRequest{At: "2026-03-01T10:00:01Z", CostUSD: &cost, Input: 10}),
				rec(KindToolDecision, "toolu_1", 2, ToolEvent{At: "2026-03-01T10:00:02Z", ToolName: "Bash", Decision: "reject", Source: "user_reject"}),
				rec(KindToolResult, "toolu_9", 3, ToolEvent{At: "2026-03-01T10:00:04Z", ToolName: "Read", Decision: "accept", Source: "config"}),
			}
			if _, err := st.Apply(ctx, &store.Batch{SchemaVersion: store.SchemaVersion, Session: TelemetryHeader(sid, recs)}); err != nil {
				t.Fatal(err)
			}
			if _, err := st.AddTelemetry(ctx, sid, recs); err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(t.TempDir(), "projects", "p")
			writeFile(t, filepath.Join(dir, sid+".jsonl"),
				`{"type":"user","uuid":"u1","sessionId":"`+sid+`","timestamp":"2026-03-01T10:00:00Z","cwd":"/w","message":{"role":"user","content":"run it"}}`,
				`{"type":"assistant","uuid":"a1","sessionId":"`+sid+`","timestamp":"2026-03-01T10:00:02Z","message":{"id":"m1","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"make"}}]}}`,
				`{"type":"assistant","uuid":"a2","sessionId":"`+sid+`","timestamp":"2026-03-01T10:00:05Z","message":{"id":"m2","content":[{"type":"text","text":"done"}]}}`)
			im := &adapters.Importer{Store: st}
			if _, err := im.Run(ctx, Agent, []string{dir}); err != nil {
				t.Fatalf("Run = %v", err)
			}
			d, err := st.Detail(ctx, sid, store.DetailQuery{})
			if err != nil {
				t.Fatal(err)
			}
			if m := d.Metrics; m == nil || m.CostUSD != cost {
				t.Errorf("metrics = %+v; want the telemetry's cost %v", m, cost)
			}
			byID := map[string]store.Step{}
			for _, s := range d.Steps {
				byID[s.ID] = s
			}
			if s := byID["toolu_1"]; s.Decision != adapters.DecisionRejected || s.Outcome != adapters.OutcomeNotRun ||
				!slices.Contains(s.Channels, "otel") || s.ContentStatus != store.ContentInline || s.Seq != 2 {
				t.Errorf("joined step = %s %s %v %s seq %d; want rejected, not_run, otel, inline, seq 2", s.Decision, s.Outcome, s.Channels, s.ContentStatus, s.Seq)
			}
			if s := byID["toolu_1"]; !slices.ContainsFunc(s.Flags, func(f store.Flag) bool { return f.Kind == adapters.FlagRejected }) {
				t.Errorf("joined step flags = %+v; want rejected (flags follow the joined decision)", s.Flags)
			}
			if s := byID["toolu_9"]; s.ContentStatus != store.ContentReferenceOnly || s.Seq != adapters.ProvisionalSeq+3 {
				t.Errorf("telemetry-only step = %s seq %d; want reference_only at a provisional seq", s.ContentStatus, s.Seq)
			}
			if s := byID["a2"]; s.Seq != 3 {
				t.Errorf("last transcript step seq %d; want 3", s.Seq)
			}
		})
	}
}

// The api_request events become usage records of their own source (otel),
// one per request with its tokens, model and reported cost, in its turn.
func TestTelemetryUsage(t *testing.T) {
	ok := true
	cost := 0.5
	recs := []store.TelemetryRecord{
		rec(KindToolResult, "toolu_1", 1, ToolEvent{At: "2026-03-01T10:00:00Z", PromptID: "p1", ToolName: "Bash", Success: &ok}),
		rec(KindAPIRequest, "req_1", 2, APIRequest{At: "2026-03-01T10:00:01Z", Model: "claude-sonnet-4-5", CostUSD: &cost, Input: 10, Output: 20, CacheRead: 30, CacheCreation: 40}),
		rec(KindAPIRequest, "req_2", 3, APIRequest{At: "2026-03-01T10:00:02Z", Model: "claude-haiku-4-5", Input: 1}),
	}
	sess := &adapters.Session{ID: "s", Batches: TelemetryBatches("s", adapters.Records{}, recs, nil)}
	mustValid(t, sess)
	b := sess.Batches[0]
	if len(b.Usage) != 2 {
		t.Fatalf("usage records = %+v; want one per api_request", b.Usage)
	}
	u := b.Usage[0]
	if u.Source != store.UsageFromOTel || u.Model != "claude-sonnet-4-5" || u.CostUSD == nil || *u.CostUSD != cost ||
		u.Tokens != (pricing.Tokens{Input: 10, Output: 20, CacheRead: 30, CacheCreation: 40}) || u.TurnID != b.Turns[0].ID || u.At != "2026-03-01T10:00:01Z" {
		t.Errorf("usage record = %+v; want the first request as reported, in turn %s", u, b.Turns[0].ID)
	}
	if b.Usage[1].ID == u.ID || b.Usage[1].CostUSD != nil {
		t.Errorf("second record = %+v; want its own id and no cost", b.Usage[1])
	}
}
