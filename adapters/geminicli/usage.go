package geminicli

import (
	"cmp"
	"fmt"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/pricing"
)

// addUsage records the tokens of one gemini reply: its input counts the
// cached tokens too, so input here is the uncached rest.
func (p *parser) addUsage(m *message, at adapters.Time) {
	t := m.Tokens
	if t == nil {
		return
	}
	p.replies++
	p.b.AddUsage(adapters.Reported{
		ID:     cmp.Or(m.ID, fmt.Sprintf("reply-%d", p.replies)),
		At:     at,
		Model:  m.Model,
		Tokens: pricing.Tokens{Input: max(t.Input-t.Cached, 0), Output: t.Output, CacheRead: t.Cached},
	})
}
