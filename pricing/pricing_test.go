package pricing

import (
	"math"
	"testing"
	"time"
)

func TestEstimate(t *testing.T) {
	tb := Default()
	if tb.Source == "" || tb.AsOf == "" {
		t.Fatalf("table has no source or date: %q %q", tb.Source, tb.AsOf)
	}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name  string
		model string
		tok   Tokens
		want  float64
		ok    bool
	}{
		// Sonnet 4.5: $3 in, $15 out, $0.30 cache read, $3.75 cache write per million.
		{"sonnet", "claude-sonnet-4-5-20250929", Tokens{Input: 1000, Output: 1000, CacheRead: 1000, CacheCreation: 1000}, (3 + 15 + 0.3 + 3.75) / 1000, true},
		{"provider prefix", "anthropic/claude-sonnet-4-5-20250929", Tokens{Input: 1000}, 0.003, true},
		// Above 200k prompt tokens the whole request costs the long-context price, $6 in.
		{"sonnet long context", "claude-sonnet-4-5", Tokens{Input: 250_000}, 250_000 * 6 / 1e6, true},
		// Opus 4.6 has a long-context tier from 200k prompt tokens: $10 in.
		{"long context tier", "claude-opus-4-6", Tokens{Input: 300_000}, 300_000 * 10 / 1e6, true},
		// A cache write of an hour costs twice the input ($6), of five minutes 1.25 times.
		{"hour's cache write", "claude-sonnet-4-5", Tokens{CacheCreation: 1000, CacheCreation1h: 600}, (400*3.75 + 600*6) / 1e6, true},
		{"hour's cache write, long context", "claude-opus-4-6", Tokens{Input: 100_000, CacheCreation: 150_000, CacheCreation1h: 150_000},
			(100_000*10 + 150_000*20) / 1e6, true},
		{"more of an hour than written", "claude-sonnet-4-5", Tokens{CacheCreation: 1000, CacheCreation1h: 5000}, 1000 * 6 / 1e6, true},
		{"unknown model", "no-such-model-xyz", Tokens{Input: 1}, 0, false},
		{"empty model", "", Tokens{Input: 1}, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := tb.Estimate(tt.model, at, tt.tok)
			if ok != tt.ok || math.Abs(got-tt.want) > 1e-9 {
				t.Errorf("Estimate(%q, %+v) = %v, %v; want %v, %v", tt.model, tt.tok, got, ok, tt.want, tt.ok)
			}
		})
	}
}
