package claudecode

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/pricing"
	"github.com/agentreview/service/store"
)

// addUsage records the usage of an assistant line's API response. Claude
// Code writes one response as one line per content block, each repeating
// the message id and usage; early lines carry a partial output count, the
// last one the final counts, so the last line read wins (Builder.AddUsage).
// <synthetic> messages are Claude Code's own, not a model's.
func (p *parser) addUsage(c ctx, ln *line, at adapters.Time) {
	m := &ln.rec.Message
	if m.Usage == nil || m.Model == "<synthetic>" {
		return
	}
	p.b.AddUsage(adapters.Reported{
		ID:    cmp.Or(m.ID, ln.rec.RequestID, p.recordID(c, ln)),
		At:    at,
		Model: m.Model,
		Actor: p.actor(c),
		Tokens: pricing.Tokens{
			Input: m.Usage.InputTokens, Output: m.Usage.OutputTokens,
			CacheRead: m.Usage.CacheReadInputTokens, CacheCreation: m.Usage.CacheCreationInputTokens,
			CacheCreation1h: m.Usage.CacheCreation.Hour,
		},
	})
}

// usage are the usage records of the api_request events, authoritative
// where present (the store counts them instead of the transcript's): one
// per request, named by its arrival number, in the turn started last
// before it ("" when there is none).
func (t *telemetry) usage(turns []store.Turn) []store.UsageRecord {
	startOf := func(tr store.Turn) time.Time { tm, _ := store.ParseTimestamp(tr.StartedAt); return tm }
	turns = slices.Clone(turns)
	slices.SortStableFunc(turns, func(a, b store.Turn) int { return startOf(a).Compare(startOf(b)) })
	out := make([]store.UsageRecord, 0, len(t.requests))
	for i, q := range t.requests {
		at, ok := adapters.ParseTime(q.At)
		if !ok {
			at = t.first
		}
		turn := ""
		for _, tr := range turns {
			if startOf(tr).After(at.At) {
				break
			}
			turn = tr.ID
		}
		if turn == "" && len(turns) > 0 {
			turn = turns[0].ID
		}
		cost := q.CostUSD
		if q.CostMicros != nil {
			c := float64(*q.CostMicros) / 1e6
			cost = &c
		}
		r := adapters.Reported{
			ID: fmt.Sprintf("otel-request-%d", i+1), Model: q.Model, CostUSD: cost,
			Tokens: pricing.Tokens{Input: q.Input, Output: q.Output, CacheRead: q.CacheRead, CacheCreation: q.CacheCreation},
		}.Sane()
		out = append(out, store.UsageRecord{ID: r.ID, At: at.Text, Model: r.Model, ActorID: adapters.RootActor, TurnID: turn,
			Tokens: r.Tokens, CostUSD: r.CostUSD, Source: store.UsageFromOTel})
	}
	return out
}
