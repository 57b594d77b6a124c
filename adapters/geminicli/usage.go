package geminicli

import (
	"cmp"
	"fmt"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/pricing"
)

// addUsage records the tokens of one gemini reply as the Gemini API counts
// and bills them (Gemini CLI writes its usageMetadata: input is
// promptTokenCount, output candidatesTokenCount, thoughts
// thoughtsTokenCount, tool toolUsePromptTokenCount, and their total
// totalTokenCount). The prompt count includes the cached tokens, so input
// here is the uncached rest, with the prompt of a built-in tool's use,
// billed as input; thinking is billed as output, and Gemini counts it
// apart from the candidates, so output here is both.
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
		Tokens: pricing.Tokens{Input: max(t.Input-t.Cached, 0) + t.Tool, Output: t.Output + t.Thoughts, CacheRead: t.Cached},
	})
}
