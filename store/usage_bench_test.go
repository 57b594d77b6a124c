package store_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentreview/service/pricing"
	"github.com/agentreview/service/store"
)

// BenchmarkUsageReportDaily: the daily report over 10,000 sessions holding
// 2,000,000 usage records (200 each, over 90 days, 3 models). With
// USAGE_BENCH_DB=PATH the store is built there once and kept, for timing
// `service usage daily` and /api/usage on it (docs/performance.md).
func BenchmarkUsageReportDaily(b *testing.B) { benchUsageReport(b, store.UsageByDay) }

// BenchmarkUsageReportBlocks: the report by 5-hour block on the store of
// BenchmarkUsageReportDaily (the usage page's chart of blocks).
func BenchmarkUsageReportBlocks(b *testing.B) { benchUsageReport(b, store.UsageByBlock) }

// benchUsageReport times the report by group over the whole store of
// BenchmarkUsageReportDaily (90 days: more than 80 rows by day or block).
func benchUsageReport(b *testing.B, group string) {
	ctx := context.Background()
	s := openUsageBench(b)
	b.ResetTimer()
	for b.Loop() {
		rows, err := store.UsageReport(ctx, s, store.UsageQuery{Group: group})
		if err != nil || len(rows) < 80 {
			b.Fatalf("UsageReport = %d rows, %v", len(rows), err)
		}
	}
}

// BenchmarkUsageReportPage: the reports of the usage page at once
// (UsageReports: by day split by model, by model, agent, project, block
// and session, 20 titled), on the store of BenchmarkUsageReportDaily.
func BenchmarkUsageReportPage(b *testing.B) {
	ctx := context.Background()
	s := openUsageBench(b)
	q := store.UsageQuery{Group: store.UsageByDay, Breakdown: store.UsageByModel, Titles: 20}
	more := []string{store.UsageByModel, store.UsageByAgent, store.UsageByProject, store.UsageByBlock, store.UsageBySession}
	b.ResetTimer()
	for b.Loop() {
		reports, err := s.UsageReports(ctx, q, more...)
		if err != nil || len(reports[0]) < 80 || reports[0][0].Breakdown == nil {
			b.Fatalf("UsageReports = %d reports, %v", len(reports), err)
		}
	}
}

// BenchmarkUsageReportPageByCost: the usage page's reports with its top
// sessions by cost, on the store of BenchmarkUsageReportDaily: in one read
// (SortSessions, as the page reads them), and in two, the charts and then
// the sessions by cost (as it read them before).
func BenchmarkUsageReportPageByCost(b *testing.B) {
	ctx := context.Background()
	s := openUsageBench(b)
	q := store.UsageQuery{Group: store.UsageByDay, Breakdown: store.UsageByModel, Titles: 20}
	more := []string{store.UsageByModel, store.UsageByAgent, store.UsageByProject, store.UsageByBlock}
	b.Run("one-read", func(b *testing.B) {
		q := q
		q.SortSessions = store.UsageSortCost
		for b.Loop() {
			reports, err := s.UsageReports(ctx, q, append(more, store.UsageBySession)...)
			if err != nil || len(reports) != 6 || reports[5][0].Title == "" {
				b.Fatalf("UsageReports = %d reports, %v", len(reports), err)
			}
		}
	})
	b.Run("two-reads", func(b *testing.B) {
		for b.Loop() {
			reports, err := s.UsageReports(ctx, q, more...)
			if err != nil || len(reports) != 5 {
				b.Fatalf("UsageReports = %d reports, %v", len(reports), err)
			}
			rows, err := store.UsageReport(ctx, s, store.UsageQuery{Group: store.UsageBySession, Sort: store.UsageSortCost, Titles: 20})
			if err != nil || rows[0].Title == "" {
				b.Fatalf("UsageReport = %d rows, %v", len(rows), err)
			}
		}
	})
}

// BenchmarkUsageReportListPage: the report by session of the 100
// sessions of a list page (UsageQuery.Sessions), on the store of
// BenchmarkUsageReportDaily: what the list adds to price the usage of
// sessions without metrics.
func BenchmarkUsageReportListPage(b *testing.B) {
	ctx := context.Background()
	s := openUsageBench(b)
	var ids []string
	for i := range 100 {
		ids = append(ids, fmt.Sprintf("s%05d", 9_900+i))
	}
	b.ResetTimer()
	for b.Loop() {
		rows, err := store.UsageReport(ctx, s, store.UsageQuery{Group: store.UsageBySession, Sessions: ids})
		if err != nil || len(rows) != len(ids) {
			b.Fatalf("UsageReport = %d rows, %v", len(rows), err)
		}
	}
}

// openUsageBench opens the usage benchmarks' store: at USAGE_BENCH_DB,
// built there by the first run and kept, or in a temporary folder.
func openUsageBench(b *testing.B) *store.Store {
	path := os.Getenv("USAGE_BENCH_DB")
	if path == "" {
		path = filepath.Join(b.TempDir(), "s.db")
	}
	_, statErr := os.Stat(path)
	s, err := store.Open(context.Background(), path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	if statErr != nil { // not built by an earlier run
		buildUsageStore(b, s)
	}
	return s
}

// buildUsageStore writes the benchmark's 10,000 sessions through Apply.
func buildUsageStore(b *testing.B, s *store.Store) {
	ctx := context.Background()
	models := []string{"claude-sonnet-4-5-20250929", "claude-opus-4-6", "gpt-5.2-codex"}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 10_000 {
		sid := fmt.Sprintf("s%05d", i)
		bt := mustParse(b, newBatch(sid))
		at := start.Add(time.Duration(i) * (90 * 24 * time.Hour / 10_000))
		for j := range 200 {
			bt.Usage = append(bt.Usage, store.UsageRecord{
				ID: fmt.Sprintf("msg_%d", j), At: at.Add(time.Duration(j) * time.Second).Format(time.RFC3339), Model: models[(i+j)%3],
				ActorID: sid + "-root", TurnID: sid + "-t1", Source: store.UsageFromFile,
				Tokens: pricing.Tokens{Input: 10, Output: int64(j), CacheRead: 50_000, CacheCreation: 1000},
			})
		}
		if _, err := s.Apply(ctx, bt); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkListPageNoMetrics: a list page of 100 of 10,000 sessions that
// have no metrics and 20 usage records each, half of them with a reported
// cost: the total reads each session's requests' costs (requestsCost).
func BenchmarkListPageNoMetrics(b *testing.B) {
	ctx := context.Background()
	s := noMetricsStore(b)
	b.ResetTimer()
	for b.Loop() {
		l, err := s.List(ctx, store.ListQuery{Limit: 100})
		if err != nil || len(l.Sessions) != 100 || l.Total.Sessions != 10_000 {
			b.Fatalf("List = %d sessions of %d, %v", len(l.Sessions), l.Total.Sessions, err)
		}
	}
}

// BenchmarkListEstimateNoMetrics: the estimate of the list's sessions
// whose cost is not recorded (UsageQuery.Unrecorded, by session), on the
// store of BenchmarkListPageNoMetrics: what the list page's total loads
// after the page.
func BenchmarkListEstimateNoMetrics(b *testing.B) {
	ctx := context.Background()
	s := noMetricsStore(b)
	b.ResetTimer()
	for b.Loop() {
		rows, err := store.UsageReport(ctx, s, store.UsageQuery{Group: store.UsageBySession, Unrecorded: &store.ListQuery{}})
		if err != nil || len(rows) != 10_000 {
			b.Fatalf("UsageReport = %d rows, %v", len(rows), err)
		}
	}
}

// noMetricsStore is 10,000 sessions without metrics, 20 usage records
// each, half of them with a reported cost.
func noMetricsStore(b *testing.B) *store.Store {
	ctx := context.Background()
	s := mustOpen(b)
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 10_000 {
		sid := fmt.Sprintf("n%05d", i)
		v := newBatch(sid)
		del(v, "session.metrics")
		bt := mustParse(b, v)
		at := start.Add(time.Duration(i) * time.Minute)
		for j := range 20 {
			r := store.UsageRecord{ID: fmt.Sprintf("msg_%d", j), At: at.Add(time.Duration(j) * time.Second).Format(time.RFC3339),
				Model: "claude-sonnet-4-5", ActorID: sid + "-root", TurnID: sid + "-t1", Source: store.UsageFromFile,
				Tokens: pricing.Tokens{Input: 10, Output: int64(j)}}
			if i%2 == 0 {
				cost := 0.01
				r.CostUSD = &cost
			}
			bt.Usage = append(bt.Usage, r)
		}
		if _, err := s.Apply(ctx, bt); err != nil {
			b.Fatal(err)
		}
	}
	return s
}

// BenchmarkUsageTallyManyModels: the reports of 5,000 hour rows of one
// session on one day, each of another model (an agent writes the model's
// name, and a hostile file may name a new one for every request), by day
// split by model, by session and by model, and their totals: each sum is
// found without walking every model of its key.
func BenchmarkUsageTallyManyModels(b *testing.B) {
	plan, err := store.PlanUsage(store.UsageQuery{Group: store.UsageByDay, Breakdown: store.UsageByModel}, store.UsageBySession, store.UsageByModel)
	if err != nil {
		b.Fatal(err)
	}
	at := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC).UnixNano()
	hours := make([]store.UsageReportHour, 5000)
	for i := range hours {
		model := fmt.Sprintf("model-%05d", i)
		keys := make([]string, len(plan.Keys))
		for k, col := range plan.Keys {
			keys[k] = map[string]string{"s.id": "s", "h.model": model}[col]
		}
		hours[i] = store.UsageReportHour{HourNS: at, Model: model, Requests: 1, LastNS: at, Keys: keys, Tokens: pricing.Tokens{Input: 10, Output: 1}}
	}
	for b.Loop() {
		t := plan.Tally()
		for _, h := range hours {
			t.Add(h)
		}
		for _, rows := range t.Rows() {
			if total := store.UsageTotal(rows); len(total.Models) != len(hours) {
				b.Fatalf("total of %d models; want %d", len(total.Models), len(hours))
			}
		}
	}
}

// BenchmarkUsageReportSessionsByCost: the report the usage page adds for
// its top sessions by cost (UsageSortCost, 20 titled), on the store of
// BenchmarkUsageReportDaily.
func BenchmarkUsageReportSessionsByCost(b *testing.B) {
	ctx := context.Background()
	s := openUsageBench(b)
	q := store.UsageQuery{Group: store.UsageBySession, Sort: store.UsageSortCost, Titles: 20}
	b.ResetTimer()
	for b.Loop() {
		rows, err := store.UsageReport(ctx, s, q)
		if err != nil || len(rows) != 10_000 || rows[0].Title == "" {
			b.Fatalf("UsageReport = %d rows, %v", len(rows), err)
		}
	}
}
