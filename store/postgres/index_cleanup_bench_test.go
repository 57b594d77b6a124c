package postgres

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"
)

// BenchmarkIndexCleanup200k measures the index clean-up after a delete
// (cleanIndexes) on a store of 200,000 steps (40 sessions of 5,000): the
// whole clean-up, each index's REINDEX with its size, and the latency of
// 100-step pushes of another session while it runs, against the same
// pushes without it. Run it once:
//
//	go test ./store/postgres/ -run '^$' -bench IndexCleanup200k -benchtime 1x
func BenchmarkIndexCleanup200k(b *testing.B) {
	const sessions, perSession = 40, 5000
	ctx := context.Background()
	s := mustOpen(b)
	start := time.Now()
	for i := range sessions {
		mustApply(b, s, gen(fmt.Sprintf("s%02d", i), 0, perSession))
	}
	b.Logf("applied %d steps in %v", sessions*perSession, time.Since(start))
	if _, err := s.pool.Exec(ctx, `VACUUM ANALYZE`); err != nil {
		b.Fatal(err)
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		b.Fatal(err)
	}
	_, indexes, err := textIndexes(ctx, conn.Conn())
	conn.Release()
	if err != nil {
		b.Fatal(err)
	}

	// pushes applies n pushes of 100 steps to a session of its own and
	// returns their latencies, sorted.
	next := 0
	pushes := func(n int) []time.Duration {
		var out []time.Duration
		for range n {
			t0 := time.Now()
			mustApply(b, s, gen("live", next, 100))
			out = append(out, time.Since(t0))
			next += 100
		}
		slices.Sort(out)
		return out
	}
	quiet := pushes(20)

	s.stopCleaner() // the clean-ups below are the ones measured
	victim := 0
	for b.Loop() {
		if victim == sessions {
			b.Fatal("every session is deleted")
		}
		err := s.Delete(ctx, fmt.Sprintf("s%02d", victim))
		victim++
		if err != nil {
			b.Fatal(err)
		}
		done := make(chan time.Duration)
		go func() {
			t0 := time.Now()
			if err := s.cleanIndexes(ctx); err != nil {
				b.Error(err)
			}
			done <- time.Since(t0)
		}()
		var busy []time.Duration
		var took time.Duration
	loop:
		for {
			select {
			case took = <-done:
				break loop
			default:
				busy = append(busy, pushes(1)...)
			}
		}
		slices.Sort(busy)
		b.Logf("clean-up after deleting 5,000 of %d steps: %v", sessions*perSession, took)
		b.Logf("100-step pushes: median %v, max %v quiet (%d); median %v, max %v during the clean-up (%d)",
			quiet[len(quiet)/2], quiet[len(quiet)-1], len(quiet), median(busy), last(busy), len(busy))
	}
	for _, ix := range indexes {
		var size int64
		if err := s.pool.QueryRow(ctx, `SELECT pg_relation_size($1::text::regclass)`, ix).Scan(&size); err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		if _, err := s.pool.Exec(ctx, "REINDEX INDEX CONCURRENTLY "+ix); err != nil {
			b.Fatal(err)
		}
		b.Logf("REINDEX INDEX CONCURRENTLY %s (%d KB): %v", ix, size/1024, time.Since(t0))
	}
}

func median(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	return d[len(d)/2]
}

func last(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	return d[len(d)-1]
}
