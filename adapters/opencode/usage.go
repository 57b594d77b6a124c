package opencode

import (
	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/pricing"
)

// addUsage records what one assistant message reported: its tokens (input
// already without the cache) and cost.
func (p *parser) addUsage(in *messageInfo, at adapters.Time) {
	var tok pricing.Tokens
	if t := in.Tokens; t != nil {
		tok = pricing.Tokens{Input: t.Input, Output: t.Output, CacheRead: t.Cache.Read, CacheCreation: t.Cache.Write}
	}
	p.b.AddUsage(adapters.Reported{ID: in.ID, At: at, Model: in.ModelID, Tokens: tok, CostUSD: in.Cost})
}
