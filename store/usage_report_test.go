package store_test

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentreview/service/pricing"
	"github.com/agentreview/service/store"
)

func TestUsageReport(t *testing.T) {
	s := mustOpen(t)
	ctx := context.Background()
	rec := func(id, at, model string, tok pricing.Tokens, cost *float64, source string) store.UsageRecord {
		return store.UsageRecord{ID: id, At: at, Model: model, ActorID: "r", TurnID: "t", Tokens: tok, CostUSD: cost, Source: source}
	}
	half := 0.5
	apply := func(sid, agent string, recs ...store.UsageRecord) {
		v := newBatch(sid)
		set(v, "session.agent.kind", agent)
		b := mustParse(t, v)
		b.Usage = recs
		if _, err := s.Apply(ctx, b); err != nil {
			t.Fatalf("Apply(%s) = %v", sid, err)
		}
	}
	apply("a", "claude-code",
		rec("1", "2026-03-02T12:00:00Z", "claude-sonnet-4-5", pricing.Tokens{Input: 1000, Output: 1000}, nil, store.UsageFromFile),
		// A long prompt: the whole request at the long-context price ($6 in).
		rec("2", "2026-03-02T13:00:00Z", "claude-sonnet-4-5", pricing.Tokens{Input: 250_000}, nil, store.UsageFromFile),
		rec("3", "2026-03-03T12:00:00Z", "no-such-model", pricing.Tokens{Input: 7}, nil, store.UsageFromFile),
	)
	apply("b", "cline", rec("1", "2026-03-03T12:00:00Z", "claude-sonnet-4-5", pricing.Tokens{Input: 10}, &half, store.UsageFromFile))
	// A session with OpenTelemetry records counts only those.
	apply("c", "claude-code",
		rec("1", "2026-03-03T12:00:00Z", "claude-sonnet-4-5", pricing.Tokens{Input: 999}, nil, store.UsageFromFile),
		rec("otel-1", "2026-03-03T12:00:00Z", "claude-sonnet-4-5", pricing.Tokens{Input: 1}, &half, store.UsageFromOTel),
	)

	rows, err := store.UsageReport(ctx, s, store.UsageQuery{Group: store.UsageByDay})
	if err != nil {
		t.Fatalf("UsageReport(day) = %v", err)
	}
	if len(rows) != 2 || rows[0].Key != "2026-03-02" || rows[1].Key != "2026-03-03" {
		t.Fatalf("days = %+v; want 2026-03-02 and 2026-03-03", rows)
	}
	d1, d2 := rows[0], rows[1]
	want1 := (1000*3 + 1000*15 + 250_000*6) / 1e6
	if d1.Tokens.Input != 251_000 || d1.APIRequests != 2 || d1.ReportedCostUSD != nil || d1.EstimatedCostUSD == nil || math.Abs(*d1.EstimatedCostUSD-want1) > 1e-6 {
		t.Errorf("day 1 = %+v (estimate %v); want 251000 input, 2 requests, estimate %v", d1, d1.EstimatedCostUSD, want1)
	}
	if d2.Tokens.Input != 7+10+1 || d2.APIRequests != 3 || d2.ReportedCostUSD == nil || *d2.ReportedCostUSD != 1 || d2.Reported != 2 ||
		d2.EstimatedCostUSD != nil || len(d2.Unpriced) != 1 || d2.Unpriced[0] != "no-such-model" {
		t.Errorf("day 2 = %+v; want 18 input, 3 requests, $1 reported over 2, no estimate, no-such-model unpriced", d2)
	}

	rows, err = store.UsageReport(ctx, s, store.UsageQuery{Group: store.UsageByMonth, Agent: "cline"})
	if err != nil || len(rows) != 1 || rows[0].Key != "2026-03" || rows[0].Tokens.Input != 10 {
		t.Errorf("UsageReport(month, cline) = %+v, %v; want March with cline's 10 tokens", rows, err)
	}
	since := time.Date(2026, 3, 3, 0, 0, 0, 0, time.Local)
	rows, err = store.UsageReport(ctx, s, store.UsageQuery{Group: store.UsageBySession, Since: since})
	if err != nil || len(rows) != 3 || rows[0].Key != "b" {
		t.Errorf("UsageReport(session, since 3 March) = %+v, %v; want b, then a and c with fewer tokens", rows, err)
	}
	rows, err = store.UsageReport(ctx, s, store.UsageQuery{Group: store.UsageByWeek})
	if err != nil || len(rows) != 1 || rows[0].Key != "2026-03-02" {
		t.Errorf("UsageReport(week) = %+v, %v; want the week of Monday 2026-03-02", rows, err)
	}
	// Only the sessions asked for; an id not stored adds nothing.
	rows, err = store.UsageReport(ctx, s, store.UsageQuery{Group: store.UsageBySession, Sessions: []string{"a", "c", "missing"}})
	if err != nil || len(rows) != 2 || rows[0].Key != "a" || rows[0].Tokens.Input != 251_007 || rows[1].Key != "c" || rows[1].Tokens.Input != 1 {
		t.Errorf("UsageReport(session, a c missing) = %+v, %v; want a's 251007 tokens, then c's telemetry 1", rows, err)
	}
	// The hourly sums follow a record read again with new counts, and a
	// deleted session.
	apply("b", "cline", rec("1", "2026-03-03T12:00:00Z", "claude-sonnet-4-5", pricing.Tokens{Input: 30}, nil, store.UsageFromFile))
	mustDelete(t, s, "c")
	rows, err = store.UsageReport(ctx, s, store.UsageQuery{Group: store.UsageByDay, Since: since})
	if err != nil || len(rows) != 1 || rows[0].Tokens.Input != 7+30 || rows[0].APIRequests != 2 || rows[0].ReportedCostUSD != nil {
		t.Errorf("UsageReport after a re-read and a delete = %+v, %v; want 37 input over 2 requests, none reported", rows, err)
	}
	rows, err = store.UsageReport(ctx, s, store.UsageQuery{Group: store.UsageByDay, Since: since, Model: "no-such-model"})
	if err != nil || len(rows) != 1 || rows[0].Tokens.Input != 7 {
		t.Errorf("UsageReport(day, no-such-model) = %+v, %v; want its 7 tokens alone", rows, err)
	}
	// Model, agent and project groups: most tokens first.
	for _, c := range []struct {
		group string
		want  []string
	}{
		{store.UsageByModel, []string{"claude-sonnet-4-5", "no-such-model"}},
		{store.UsageByAgent, []string{"cline", "claude-code"}},
		{store.UsageByProject, []string{"/tmp/ws-b", "/tmp/ws-a"}},
	} {
		rows, err := store.UsageReport(ctx, s, store.UsageQuery{Group: c.group, Since: since})
		var keys []string
		for _, r := range rows {
			keys = append(keys, r.Key)
		}
		if err != nil || !slices.Equal(keys, c.want) {
			t.Errorf("UsageReport(%s) = %v, %v; want %v", c.group, keys, err, c.want)
		}
		if total := store.UsageTotal(rows); err == nil && total.Tokens.Input != 37 {
			t.Errorf("UsageTotal(%s) input = %d; want 37, as by day", c.group, total.Tokens.Input)
		}
	}
	if _, err := store.UsageReport(ctx, s, store.UsageQuery{Group: "year"}); err == nil {
		t.Error("UsageReport(year) = nil error; want unknown group")
	}
}

// TestUsageReportSameEachTime: a report asked again of the same records
// is the same to the last micro-dollar. A row's estimate adds up its
// models' sums, and the sum of float costs depends on the order they are
// added in; many costs here round on a half micro-dollar, where that
// order decides the last digit.
func TestUsageReportSameEachTime(t *testing.T) {
	s := mustOpen(t)
	ctx := context.Background()
	models := []string{"claude-opus-4-6", "claude-sonnet-4-5-20250929", "gpt-5.2-codex", "claude-haiku-4-5"}
	for i := range 60 {
		b := mustParse(t, newBatch(fmt.Sprintf("s%02d", i)))
		for j := range 12 {
			b.Usage = append(b.Usage, store.UsageRecord{ID: fmt.Sprint(j), At: fmt.Sprintf("2026-03-02T%02d:00:00Z", j%3), Model: models[(i+j)%len(models)],
				ActorID: "r", TurnID: "t", Source: store.UsageFromFile,
				Tokens: pricing.Tokens{Input: int64(10 * (i + j)), Output: int64(67 * (j + 1)), CacheRead: int64(33_500 * (i%7 + 1)), CacheCreation: 670 * int64(j%5+1)}})
		}
		if _, err := s.Apply(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	q := store.UsageQuery{Group: store.UsageBySession, Breakdown: store.UsageByModel}
	first, err := s.UsageReports(ctx, q, store.UsageByDay, store.UsageByBlock)
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		again, err := s.UsageReports(ctx, q, store.UsageByDay, store.UsageByBlock)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(again, first) {
			t.Fatalf("UsageReports asked again differs:\n%+v\nagainst\n%+v", again, first)
		}
	}
}

// TestUsageTallyWhateverTheOrder: the same hour rows read in another
// order (PostgreSQL gives no order without asking for one) make the same
// rows, to the last micro-dollar; and each row adds up its hours, a key of
// a few models as one of many (past the few a tally finds by a look at
// each).
func TestUsageTallyWhateverTheOrder(t *testing.T) {
	plan, err := store.PlanUsage(store.UsageQuery{Group: store.UsageBySession, Breakdown: store.UsageByModel}, store.UsageByDay, store.UsageByModel)
	if err != nil {
		t.Fatal(err)
	}
	models := []string{"claude-opus-4-6", "claude-sonnet-4-5-20250929", "gpt-5.2-codex", "claude-haiku-4-5"}
	for i := range 9 {
		models = append(models, fmt.Sprintf("no-price-%d", i))
	}
	var hours []store.UsageReportHour
	want := map[string]map[string]pricing.Tokens{} // session -> model -> tokens
	for i := range 100 {
		sid := fmt.Sprintf("s%02d", i)
		want[sid] = map[string]pricing.Tokens{}
		// The first sessions have a few models, the others many; each
		// model's hours twice, an hour apart.
		for j, model := range models[:4+i%10] {
			for hour := range 2 {
				at := time.Date(2026, 3, 2, 10+hour, 0, 0, 0, time.UTC).UnixNano()
				keys := make([]string, len(plan.Keys))
				for k, col := range plan.Keys {
					keys[k] = map[string]string{"s.id": sid, "h.model": model}[col]
				}
				tok := pricing.Tokens{Input: int64(10 * (i + j + hour)), Output: int64(67 * (j + 1)), CacheRead: int64(33_500 * (i%7 + 1)), CacheCreation: 670 * int64(j+1)}
				var prompt int64 // some models' second hour in a price tier of its own: a sum apart
				if hour == 1 && j%3 == 0 {
					prompt = 200_000
				}
				hours = append(hours, store.UsageReportHour{HourNS: at, Model: model, PromptRange: prompt, Requests: 1, LastNS: at, Keys: keys, Tokens: tok})
				sum := want[sid][model]
				sum.Add(tok)
				want[sid][model] = sum
			}
		}
	}
	forward, backward := plan.Tally(), plan.Tally()
	for i := range hours {
		forward.Add(hours[i])
		backward.Add(hours[len(hours)-1-i])
	}
	rows := forward.Rows()
	if b := backward.Rows(); !reflect.DeepEqual(rows, b) {
		t.Errorf("Rows of the hours in one order:\n%+v\nin the other:\n%+v", rows, b)
	}
	if len(rows[0]) != len(want) {
		t.Fatalf("%d rows by session; want %d", len(rows[0]), len(want))
	}
	for _, r := range rows[0] {
		var tok pricing.Tokens
		for _, part := range r.Breakdown {
			if part.Tokens != want[r.Key][part.Key] {
				t.Errorf("session %s, model %s: %+v; its hours add up to %+v", r.Key, part.Key, part.Tokens, want[r.Key][part.Key])
			}
			tok.Add(part.Tokens)
		}
		if len(r.Models) != len(want[r.Key]) || len(r.Breakdown) != len(want[r.Key]) || r.Tokens != tok || r.APIRequests != int64(2*len(want[r.Key])) {
			t.Errorf("session %s = %d models, %+v over %d requests; want its %d models' hours", r.Key, len(r.Models), r.Tokens, r.APIRequests, len(want[r.Key]))
		}
	}
	if day := rows[1]; len(day) != 1 || len(day[0].Models) != len(models) || len(day[0].Unpriced) != 9 {
		t.Errorf("by day = %+v; want one day of %d models, 9 of them unpriced", day, len(models))
	}
}

// TestUsageTierRanges: usage_hours sums requests apart at these prompt
// sizes (migration 007); a price table with another tier start needs them
// added there, or its sums would be priced in the wrong tier.
func TestUsageTierRanges(t *testing.T) {
	known := []int64{128000, 199999, 200000, 271999, 272000, 512000}
	for _, n := range pricing.Default().TierStarts() {
		if !slices.Contains(known, n) {
			t.Errorf("the price table has a tier from %d prompt tokens; usage_hours does not sum apart there", n)
		}
	}
}

// TestUsageReportReadsOnlyAnIndex: a report walks the hour rows of its
// range in the covering index, never looking a row up in the table.
func TestUsageReportReadsOnlyAnIndex(t *testing.T) {
	s := mustOpen(t)
	plan, err := s.UsageDayPlan()
	if err != nil {
		t.Fatal(err)
	}
	if first, _, _ := strings.Cut(plan, "\n"); !strings.Contains(first, "COVERING INDEX usage_hours_by_time") {
		t.Errorf("plan of the report's read =\n%s\nwant the hour rows read from the covering index usage_hours_by_time", plan)
	}
}
