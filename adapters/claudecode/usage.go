package claudecode

import (
	"cmp"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/pricing"
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
		},
	})
}
