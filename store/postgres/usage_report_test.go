package postgres

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/agentreview/service/store"
	"github.com/agentreview/service/store/storetest"
)

// The usage report on PostgreSQL is SQLite's for the same records: every
// group, each filter, and a time range, on the real samples' usage.
func TestUsageReportMatchesSQLite(t *testing.T) {
	ctx := context.Background()
	lite, _ := mustOpenSQLite(t)
	pg := mustOpen(t)
	records, models, agents := 0, map[string]bool{}, map[string]bool{}
	var first, last time.Time
	// Besides the samples: reported costs, a model without a price, and
	// records across midnight.
	extra := usageBatch("usage-extra",
		usageRecord("x1", "claude-sonnet-4-5", "2026-03-01T23:30:00Z", 1200, 300, ptr(0.0123)),
		usageRecord("x2", "claude-sonnet-4-5", "2026-03-02T00:10:00Z", 800, 100, nil),
		usageRecord("x3", "no-such-model", "2026-03-02T01:00:00Z", 500, 50, nil),
		usageRecord("x4", "no-such-model", "2026-03-09T01:00:00Z", 500, 50, ptr(0.5)))
	for _, b := range append(storetest.AgentSamples(t), extra) {
		for _, u := range b.Usage {
			records++
			models[u.Model] = true
			at, _ := store.ParseTimestamp(u.At)
			if first.IsZero() || at.Before(first) {
				first = at
			}
			if at.After(last) {
				last = at
			}
		}
		agents[b.Session.Agent.Kind] = true
		mustApply(t, pg, b)
		if _, err := lite.Apply(ctx, b); err != nil {
			t.Fatalf("SQLite Apply(%s) = %v", b.Session.ID, err)
		}
	}
	if records < 50 || len(models) < 3 || len(agents) < 4 {
		t.Fatalf("the samples carry %d usage records of %d models and %d agents; too few to compare", records, len(models), len(agents))
	}
	mid := first.Add(last.Sub(first) / 2)
	var queries []store.UsageQuery
	for _, g := range store.UsageGroups {
		queries = append(queries, store.UsageQuery{Group: g}, store.UsageQuery{Group: g, Since: mid}, store.UsageQuery{Group: g, Until: mid},
			store.UsageQuery{Group: g, Since: first.Add(time.Hour), Until: last})
		for a := range agents {
			queries = append(queries, store.UsageQuery{Group: g, Agent: a})
		}
		for m := range models {
			queries = append(queries, store.UsageQuery{Group: g, Model: m})
		}
	}
	queries = append(queries, store.UsageQuery{Group: store.UsageByDay, Agent: "nobody"}, store.UsageQuery{Group: "year"},
		store.UsageQuery{Group: store.UsageBySession, Sessions: []string{"usage-extra"}},
		store.UsageQuery{Group: store.UsageByModel, Sessions: []string{"usage-extra", storetest.AgentSamples(t)[0].Session.ID, "no-such-session"}},
		store.UsageQuery{Group: store.UsageBySession, Sessions: []string{"no-such-session"}})
	rows := 0
	for _, q := range queries {
		want, wantErr := store.UsageReport(ctx, lite, q)
		got, err := store.UsageReport(ctx, pg, q)
		if (err == nil) != (wantErr == nil) || (err != nil && err.Error() != wantErr.Error()) {
			t.Errorf("UsageReport(%+v) error = %v; SQLite's is %v", q, err, wantErr)
			continue
		}
		rows += len(want)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("UsageReport(%+v) =\n %+v\nSQLite gives\n %+v", q, got, want)
		}
	}
	if rows < 100 {
		t.Errorf("the reports had %d rows in all; they prove little", rows)
	}
}
