package store_test

import (
	"context"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/agentreview/service/internal/cputime"
	"github.com/agentreview/service/store"
	"github.com/agentreview/service/store/storetest"
)

// BenchmarkSearch runs queries on a store of SEARCH_BENCH_SESSIONS (default
// 20) sessions of 5,000 generated steps each, and reports the p50 and p99
// latency and the index's size as a share of the text it indexes. With
// SEARCH_BENCH_DB the store is that file, kept for the next run (built
// when it holds no session yet).
func BenchmarkSearch(b *testing.B) {
	sessions := 20
	if n, err := strconv.Atoi(os.Getenv("SEARCH_BENCH_SESSIONS")); err == nil && n > 0 {
		sessions = n
	}
	var s *store.Store
	if path := os.Getenv("SEARCH_BENCH_DB"); path != "" {
		s = benchOpenPath(b, path)
	} else {
		s = benchOpen(b)
	}
	ctx := context.Background()
	if r, err := s.Search(ctx, store.SearchQuery{Q: "agent:claude-code", Limit: 1}); err != nil || len(r.Hits) > 0 {
		sessions = 0 // a kept store, or the error again below
	}
	for i := range sessions {
		batch := storetest.Batch(benchSessionID(i), 0, benchSteps)
		if i == 0 { // the last in page order, and the only one of its agent
			batch.Session.Agent.Kind = "codex"
		}
		if _, err := s.Apply(ctx, batch); err != nil {
			b.Fatalf("Apply = %v", err)
		}
		if i == 0 { // notes in the oldest session alone: note: walks every other
			for _, seq := range []int64{10, 2000, 4000} {
				if _, err := s.AddNote(ctx, batch.Session.ID, store.NoteInput{Seq: seq, Author: "ann", Text: "flaky here"}); err != nil {
					b.Fatalf("AddNote = %v", err)
				}
			}
		}
	}
	b.Logf("%d steps added", sessions*benchSteps)
	if err := s.CatchUpIndex(); err != nil { // the index follows in the background
		b.Fatalf("CatchUpIndex() = %v", err)
	}
	index, text := indexShare(b, s.Path())
	b.Logf("index %.1f MB for %.1f MB of text: %.2fx", index/1e6, text/1e6, index/text)
	for _, q := range []struct{ name, q string }{
		{"word", "timeout"},
		{"word+agent", "timeout agent:codex"}, // a common word in the oldest session only
		{"phrase+2filters", `"fix config" type:message agent:claude-code`},
		{"prefix", "handl*"},
		{"path", "reader.go"},
		// Filters alone: many hits, few, none (every step is read).
		{"filter", "type:command"},
		{"filter-few", "flag:dangerous_command"},
		{"filter-none", "path:no/such/dir"},
		{"filter-tool", "tool:TodoWrite"},
		{"filter-tool-none", "tool:NoSuchTool"},
		{"filter-command-none", `command:"no such command"`},
		{"filter-command-session", `command:"no such command" agent:codex`},
		// Notes: three, in the oldest session (a store built before has none).
		{"note", "note:flaky"},
		{"word+note", "timeout note:*"},
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

// BenchmarkCatchUp100 is a 100-step push (a live agent's) and the
// search index's catch-up after it, in a store that already holds stored
// steps, all indexed. cpu-ms/op is what the push and its catch-up cost the
// process; the push is the same at every size, so what grows with the
// store is the catch-up's. It should not grow.
func BenchmarkCatchUp100(b *testing.B) {
	for _, stored := range []int{0, 200_000} {
		b.Run("stored="+strconv.Itoa(stored), func(b *testing.B) {
			s := mustOpen(b) // the catch-up follows each write closely
			ctx := context.Background()
			for i := range stored / benchSteps {
				if _, err := s.Apply(ctx, storetest.Batch(benchSessionID(i), 0, benchSteps)); err != nil {
					b.Fatalf("Apply = %v", err)
				}
			}
			if err := s.CatchUpIndex(); err != nil {
				b.Fatalf("CatchUpIndex() = %v", err)
			}
			batches := make([]*store.Batch, b.N)
			for i := range batches {
				batches[i] = storetest.Batch(benchSessionID(stored+i), 0, 100)
			}
			b.ResetTimer()
			start := cputime.Used()
			for _, batch := range batches {
				if _, err := s.Apply(ctx, batch); err != nil {
					b.Fatalf("Apply = %v", err)
				}
				if err := s.CatchUpIndex(); err != nil {
					b.Fatalf("CatchUpIndex() = %v", err)
				}
			}
			cputime.Report(b, cputime.Used()-start)
		})
	}
}
