package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/agentreview/service/store"
)

// BenchmarkDetail100k is the session page's read of a 100,000-step
// session (5,000 turns): the last 30 turns with the first 2 KB of each
// field, and the summary and report over every step (store.Tallies), after
// a push of one step (not timed) as in a live refresh; the Changes section
// (FileChanges) and the list of the one session. "cold" is the first read
// of the session by a process, which reads every step.
func BenchmarkDetail100k(b *testing.B) {
	const pushes, perPush = 20, 5000
	s := mustOpen(b)
	ctx := context.Background()
	start := time.Now()
	for p := range pushes {
		mustApply(b, s, gen("big", p, perPush))
	}
	b.Logf("applied %d steps in %v", pushes*perPush, time.Since(start))
	if _, err := s.pool.Exec(ctx, `VACUUM ANALYZE`); err != nil {
		b.Fatal(err)
	}
	page := func(b *testing.B, s *Store) {
		if _, err := s.Detail(ctx, "big", store.DetailQuery{Turns: 30, Head: 2048}); err != nil {
			b.Fatalf("Detail = %v", err)
		}
	}
	b.Run("cold", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			fresh := mustOpenDSN(b, s.pool.Config().ConnString())
			b.StartTimer()
			page(b, fresh)
		}
	})
	next := pushes * perPush
	b.Run("page-after-change", func(b *testing.B) {
		page(b, s)
		for b.Loop() {
			b.StopTimer()
			mustApply(b, s, gen("big", next, 1))
			next++
			b.StartTimer()
			page(b, s)
		}
	})
	b.Run("file-changes", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.FileChanges(ctx, "big"); err != nil {
				b.Fatalf("FileChanges = %v", err)
			}
		}
	})
	b.Run("list", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.List(ctx, store.ListQuery{}); err != nil {
				b.Fatalf("List = %v", err)
			}
		}
	})
}
