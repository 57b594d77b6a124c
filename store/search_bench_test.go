package store_test

import (
	"context"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/agentreview/service/store"
	"github.com/agentreview/service/store/storetest"
	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

// BenchmarkSearch runs queries on a store of SEARCH_BENCH_SESSIONS (default
// 20) sessions of 5,000 generated steps each, and reports the p50 and p99
// latency and the index's size as a share of the text it indexes.
func BenchmarkSearch(b *testing.B) {
	sessions := 20
	if n, err := strconv.Atoi(os.Getenv("SEARCH_BENCH_SESSIONS")); err == nil && n > 0 {
		sessions = n
	}
	s := benchOpen(b)
	ctx := context.Background()
	for i := range sessions {
		batch := storetest.Batch(benchSessionID(i), 0, benchSteps)
		if _, err := s.Apply(ctx, batch); err != nil {
			b.Fatalf("Apply = %v", err)
		}
	}
	b.Logf("%d steps", sessions*benchSteps)
	if err := s.CatchUpIndex(); err != nil { // the index follows in the background
		b.Fatalf("CatchUpIndex() = %v", err)
	}
	reportIndexShare(b, s.Path())
	for _, q := range []struct{ name, q string }{
		{"word", "timeout"},
		{"phrase+2filters", `"fix config" type:message agent:claude-code`},
		{"prefix", "handl*"},
		{"path", "reader.go"},
	} {
		b.Run(q.name, func(b *testing.B) {
			var times []time.Duration
			for range b.N {
				start := time.Now()
				if _, err := s.Search(ctx, store.SearchQuery{Q: q.q}); err != nil {
					b.Fatalf("Search(%q) = %v", q.q, err)
				}
				times = append(times, time.Since(start))
			}
			slices.Sort(times)
			b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(times[len(times)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}

// reportIndexShare reports the pages of the search tables (dbstat) over
// the bytes of the text they index.
func reportIndexShare(b *testing.B, path string) {
	conn, err := sqlite.OpenConn(path, sqlite.OpenReadOnly)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	var index, text float64
	err = sqlitex.ExecuteTransient(conn, `SELECT (SELECT sum(pgsize) FROM dbstat WHERE name LIKE 'search%'),
		(SELECT sum(length(CAST(body AS BLOB))) FROM search)`, &sqlitex.ExecOptions{
		ResultFunc: func(st *sqlite.Stmt) error { index, text = st.ColumnFloat(0), st.ColumnFloat(1); return nil },
	})
	if err != nil {
		b.Logf("index size: %v", err)
		return
	}
	b.Logf("index %.1f MB for %.1f MB of text: %.2fx", index/1e6, text/1e6, index/text)
}

// BenchmarkIndexLag5000 is how long after a 5,000-step Apply returns the
// background catch-up has its steps in the search index.
func BenchmarkIndexLag5000(b *testing.B) {
	s := benchOpen(b)
	batch, err := store.ParseBatch(benchBody(b, benchSessionID(0)))
	if err != nil {
		b.Fatalf("ParseBatch = %v; want no error", err)
	}
	ctx := context.Background()
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		benchRename(batch, benchSessionID(i))
		if _, err := s.Apply(ctx, batch); err != nil {
			b.Fatalf("Apply = %v; want no error", err)
		}
		b.StartTimer()
		if err := s.CatchUpIndex(); err != nil {
			b.Fatalf("CatchUpIndex() = %v", err)
		}
	}
}
