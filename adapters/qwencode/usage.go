package qwencode

import (
	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/pricing"
)

// usageMetadata is the usage the API reported for one response, as Qwen
// Code stores it with the assistant record (Gemini's field names, for every
// provider).
type usageMetadata struct {
	PromptTokenCount        int64 `json:"promptTokenCount"`
	CandidatesTokenCount    int64 `json:"candidatesTokenCount"`
	ThoughtsTokenCount      int64 `json:"thoughtsTokenCount"`
	CachedContentTokenCount int64 `json:"cachedContentTokenCount"`
	TotalTokenCount         int64 `json:"totalTokenCount"`
}

// addUsage records the tokens of one assistant record, under its uuid (the
// response id, "chatcmpl-..." for OpenAI-compatible providers, may repeat).
// The prompt count includes the cached tokens, so input is the uncached
// rest. Output is what was billed as output: for OpenAI-compatible
// providers, which Qwen Code mostly talks to, the candidates count holds
// the reasoning tokens already (the total is prompt and candidates); from
// Gemini's API the thoughts are counted apart (the total adds them, as in
// Gemini CLI's files) and are added to the candidates (candidatesOutput).
func (p *parser) addUsage(r *record, a *adapters.Actor, at adapters.Time) {
	u := r.Usage
	if u == nil {
		return
	}
	p.b.AddUsage(adapters.Reported{
		ID:    r.UUID,
		At:    at,
		Model: r.Model,
		Actor: a,
		Tokens: pricing.Tokens{
			Input:     max(u.PromptTokenCount-u.CachedContentTokenCount, 0),
			Output:    candidatesOutput(u),
			CacheRead: u.CachedContentTokenCount,
		},
	})
}

// candidatesOutput is a response's output tokens: its candidates, and its
// thoughts when the total shows they are not among them.
func candidatesOutput(u *usageMetadata) int64 {
	if u.ThoughtsTokenCount > 0 && u.TotalTokenCount == u.PromptTokenCount+u.CandidatesTokenCount+u.ThoughtsTokenCount {
		return u.CandidatesTokenCount + u.ThoughtsTokenCount
	}
	return u.CandidatesTokenCount
}
