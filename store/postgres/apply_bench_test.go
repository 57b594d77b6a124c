package postgres

import (
	"context"
	"testing"

	"github.com/agentreview/service/store/storetest"
)

// BenchmarkApply5000 is a push of 5,000 new steps to a live session, as
// the team server's ingest writes it: each op is the next push of the
// same session.
func BenchmarkApply5000(b *testing.B) {
	s := mustOpen(b)
	ctx := context.Background()
	const n = 5000
	push := 0
	for b.Loop() {
		b.StopTimer()
		batch := storetest.Batch("live", push, n)
		push++
		b.StartTimer()
		if _, err := s.Apply(ctx, batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*n), "µs/step")
}

// BenchmarkTSVector5000 makes the tsvector of each step of a 5,000-step
// push (tsvectors.of), what indexWrite adds to every push.
func BenchmarkTSVector5000(b *testing.B) {
	batch := storetest.Batch("live", 0, 5000)
	texts := make([]string, len(batch.Steps))
	for i := range batch.Steps {
		texts[i] = storetest.SearchText(b, &batch.Steps[i])
	}
	b.ReportAllocs()
	for b.Loop() {
		var vs tsvectors
		for _, t := range texts {
			vs.of(t)
		}
	}
}
