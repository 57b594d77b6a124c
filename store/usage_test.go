package store_test

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentreview/service/pricing"
	"github.com/agentreview/service/store"
	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

func usageRecord(id, model string, in, out int64) store.UsageRecord {
	return store.UsageRecord{ID: id, At: "2026-01-01T00:00:00Z", Model: model, ActorID: "u-root", TurnID: "u-t1",
		Tokens: pricing.Tokens{Input: in, Output: out, CacheRead: 10, CacheCreation: 1}, Source: store.UsageFromFile}
}

func TestApplyUsage(t *testing.T) {
	s := mustOpen(t)
	mustApply(t, s, newBatch("n"))
	if d := mustDetail(t, s, "n"); d.Usage != nil {
		t.Errorf("Detail(no usage).Usage = %+v; want nil (left out)", d.Usage)
	}

	b := mustParse(t, newBatch("u"))
	b.Usage = []store.UsageRecord{
		usageRecord("msg_1", "claude-sonnet-4-5-20250929", 100, 20),
		usageRecord("msg_2", "no-such-model", 5, 5),
	}
	if _, err := s.Apply(context.Background(), b); err != nil {
		t.Fatalf("Apply(usage) = %v", err)
	}
	// Read, and so remembered with the session's stamp (Tallies.Usage).
	if u := mustDetail(t, s, "u").Usage; u == nil || u.Tokens != (pricing.Tokens{Input: 105, Output: 25, CacheRead: 20, CacheCreation: 2}) {
		t.Errorf("Detail.Usage before the record changed = %+v; want its two records' tokens", u)
	}
	// Read again, a response's final counts replace what was stored.
	b.Usage = []store.UsageRecord{usageRecord("msg_1", "claude-sonnet-4-5-20250929", 100, 50)}
	if _, err := s.Apply(context.Background(), b); err != nil {
		t.Fatalf("Apply(usage again) = %v", err)
	}
	u := mustDetail(t, s, "u").Usage
	if u == nil {
		t.Fatal("Detail.Usage = nil; want the usage")
	}
	want := pricing.Tokens{Input: 105, Output: 55, CacheRead: 20, CacheCreation: 2}
	if u.Tokens != want || u.APIRequests != 2 || len(u.Models) != 2 {
		t.Errorf("Usage = %+v; want tokens %+v over 2 requests of 2 models", u, want)
	}
	wantUSD := (100*3 + 50*15 + 10*0.3 + 1*3.75) / 1e6
	if u.EstimatedCostUSD == nil || math.Abs(*u.EstimatedCostUSD-wantUSD) > 0.5e-6 {
		t.Errorf("EstimatedCostUSD = %v; want %v to the micro-dollar (the priced model only)", u.EstimatedCostUSD, wantUSD)
	}
	if len(u.Unpriced) != 1 || u.Unpriced[0] != "no-such-model" || u.Models[1].EstimatedCostUSD != nil {
		t.Errorf("Unpriced = %v, models %+v; want no-such-model without a price", u.Unpriced, u.Models)
	}
	if len(u.Turns) != 1 || u.Turns[0].TurnID != "u-t1" || u.Turns[0].Tokens != want || u.Turns[0].APIRequests != 2 || u.Turns[0].Last != "2026-01-01T00:00:00Z" {
		t.Errorf("Turns = %+v; want turn u-t1 with every token over 2 requests", u.Turns)
	}
	if u.ReportedCostUSD != nil || u.Pricing.Source == "" || u.Pricing.AsOf == "" {
		t.Errorf("ReportedCostUSD = %v, Pricing = %+v; want none reported and the table named", u.ReportedCostUSD, u.Pricing)
	}
}

func TestApplyUsageOTelAuthoritative(t *testing.T) {
	s := mustOpen(t)
	b := mustParse(t, newBatch("o"))
	cost := 0.25
	otel := usageRecord("otel:1", "claude-sonnet-4-5", 1000, 1000)
	otel.Source, otel.CostUSD = store.UsageFromOTel, &cost
	b.Usage = []store.UsageRecord{usageRecord("msg_1", "claude-sonnet-4-5", 999, 999), otel}
	if _, err := s.Apply(context.Background(), b); err != nil {
		t.Fatalf("Apply = %v", err)
	}
	u := mustDetail(t, s, "o").Usage
	if u.Tokens.Input != 1000 || u.APIRequests != 1 || u.Source != store.UsageFromOTel || u.ReportedCostUSD == nil || *u.ReportedCostUSD != cost {
		t.Errorf("Usage = %+v; want the OpenTelemetry request alone, with its reported cost", u)
	}
	if len(u.Turns) != 1 || u.Turns[0].Tokens.Input != 1000 || u.Turns[0].APIRequests != 1 {
		t.Errorf("Turns = %+v; want the OpenTelemetry request alone in its turn", u.Turns)
	}
}

func TestApplyUsageInvalid(t *testing.T) {
	tests := []struct {
		name string
		edit func(*store.UsageRecord)
		path string
	}{
		{"no id", func(r *store.UsageRecord) { r.ID = "" }, "usage[0].id"},
		{"bad time", func(r *store.UsageRecord) { r.At = "yesterday" }, "usage[0].at"},
		{"negative tokens", func(r *store.UsageRecord) { r.Tokens.Output = -1 }, "usage[0].tokens"},
		{"huge model name", func(r *store.UsageRecord) { r.Model = string(make([]byte, 600)) }, "usage[0].model"},
		{"bad source", func(r *store.UsageRecord) { r.Source = "guess" }, "usage[0].source"},
		{"negative cost", func(r *store.UsageRecord) { c := -1.0; r.CostUSD = &c }, "usage[0].cost_usd"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustOpen(t)
			b := mustParse(t, newBatch("bad"))
			r := usageRecord("msg_1", "m", 1, 1)
			tt.edit(&r)
			b.Usage = []store.UsageRecord{r}
			_, err := s.Apply(context.Background(), b)
			var inv *store.InvalidError
			if !errors.As(err, &inv) || len(inv.Problems) != 1 || inv.Problems[0].Path != tt.path {
				t.Fatalf("Apply = %v; want one problem at %s", err, tt.path)
			}
			// All or nothing: neither the session nor its usage was written.
			if _, err := s.Detail(context.Background(), "bad", store.DetailQuery{}); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("Detail after a refused batch = %v; want ErrNotFound", err)
			}
		})
	}
}

// TestUsageHoursFollowRecords checks that usage_hours holds the sums of
// usage_records per session, hour, model, prompt range, source and
// reported cost after records are added, replaced by others of another
// hour, model, tier or cost, and dropped with their session; and that the
// sums are kept by Apply, not by a trigger run once per record.
func TestUsageHoursFollowRecords(t *testing.T) {
	ctx := context.Background()
	s, err := store.Open(ctx, filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	cost := 0.25
	rec := func(id, at, model string, in int64, cost *float64) store.UsageRecord {
		r := usageRecord(id, model, in, 7)
		r.At, r.CostUSD = at, cost
		return r
	}
	apply := func(sid string, recs ...store.UsageRecord) {
		t.Helper()
		b := mustParse(t, newBatch(sid))
		b.Usage = recs
		if _, err := s.Apply(ctx, b); err != nil {
			t.Fatalf("Apply(%s usage) = %v", sid, err)
		}
	}
	apply("a",
		rec("m1", "2026-01-01T10:05:00Z", "x", 100, nil),
		rec("m2", "2026-01-01T10:55:00Z", "x", 300000, nil), // another price tier
		rec("m3", "2026-01-01T11:00:00Z", "y", 5, &cost),
		rec("m4", "2026-01-01T10:30:00Z", "x", 9, &cost))
	apply("b", rec("m1", "2026-01-01T10:05:00Z", "x", 1, nil))
	// Read again: m1 moves to another hour and model, m3 loses its cost,
	// m2 stays, and m5 is new.
	apply("a",
		rec("m1", "2026-01-01T12:00:00Z", "y", 100, nil),
		rec("m2", "2026-01-01T10:55:00Z", "x", 300000, nil),
		rec("m3", "2026-01-01T11:00:00Z", "y", 5, nil),
		rec("m5", "2026-01-01T10:59:59Z", "x", 1, nil))
	if err := s.Delete(ctx, "b"); err != nil {
		t.Fatalf("Delete(b) = %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}

	conn, err := sqlite.OpenConn(s.Path(), sqlite.OpenReadOnly)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rows := func(q string) []string {
		t.Helper()
		var out []string
		err := sqlitex.Execute(conn, q, &sqlitex.ExecOptions{ResultFunc: func(st *sqlite.Stmt) error {
			var cols []string
			for i := range st.ColumnCount() {
				cols = append(cols, st.ColumnText(i))
			}
			out = append(out, strings.Join(cols, " "))
			return nil
		}})
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return out
	}
	const cols = `session_pk, hour_ns, model, prompt_range, source, reported, input, output, cache_read, cache_creation, requests, cost_usd, last_ns`
	got := rows(`SELECT ` + cols + ` FROM usage_hours ORDER BY 1, 2, 3, 4, 5, 6`)
	want := rows(`SELECT session_pk, at_ns - at_ns % 3600000000000 AS h, model,
		  CASE WHEN input + cache_read + cache_creation >= 272000 THEN 272000 ELSE 0 END AS r, source, cost_usd IS NOT NULL AS rep,
		  sum(input), sum(output), sum(cache_read), sum(cache_creation), sum(requests), sum(coalesce(cost_usd, 0.0)), max(at_ns)
		FROM usage_records GROUP BY 1, 2, 3, 4, 5, 6 ORDER BY 1, 2, 3, 4, 5, 6`)
	if len(want) != 5 || !slices.Equal(got, want) {
		t.Errorf("usage_hours =\n%s\nwant the records' sums (5 rows)\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if trig := rows(`SELECT name FROM sqlite_schema WHERE type = 'trigger' AND tbl_name = 'usage_records'`); len(trig) > 0 {
		t.Errorf("triggers on usage_records = %v; want none (Apply keeps usage_hours once per hour and model)", trig)
	}
}

// TestSessionCostsWithoutFloatNoise: a session's and a turn's reported
// costs are sums kept to a billionth of a dollar, as the reports' are:
// 0.1 and 0.2 reported read 0.3, not 0.30000000000000004.
func TestSessionCostsWithoutFloatNoise(t *testing.T) {
	costs := []float64{0.1, 0.2}
	if costs[0]+costs[1] == 0.3 {
		t.Fatal("0.1 + 0.2 is 0.3 in floats here; this test would prove nothing")
	}
	recs := []store.UsageRecord{usageRecord("r1", "claude-sonnet-4-5", 10, 1), usageRecord("r2", "claude-sonnet-4-5", 20, 2)}
	for i := range recs {
		recs[i].CostUSD = &costs[i]
	}
	u := store.SumUsage(recs, pricing.Default())
	if u.ReportedCostUSD == nil || *u.ReportedCostUSD != 0.3 || len(u.Turns) != 1 || u.Turns[0].ReportedCostUSD == nil || *u.Turns[0].ReportedCostUSD != 0.3 {
		t.Errorf("SumUsage reported %+v, turns %+v; want 0.3 for the session and its turn", u, u.Turns)
	}
}
