package copilotcli

import (
	"maps"
	"slices"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/pricing"
)

// usage records a shutdown's reported tokens and requests, one record per
// model: Copilot CLI writes no usage per request, only totals per model
// that it accumulates over the session, resumes included, so the last
// shutdown's replace the earlier ones (same id).
//
// Copilot's inputTokens is every input token, the cached ones included
// (its cacheReadTokens and cacheWriteTokens), as OpenAI's prompt_tokens is,
// and its outputTokens include the reasoning ones (the Copilot SDK's
// maintainers, github/copilot-sdk#1160). A usage record's input is the
// input not read from or written to the cache, as Claude Code's is, so the
// cached tokens are taken out of it (uncachedInput).
func (p *parser) usage(d *data, at adapters.Time) {
	for _, model := range slices.Sorted(maps.Keys(d.ModelMetrics)) {
		u := d.ModelMetrics[model].Usage
		p.b.AddUsage(adapters.Reported{
			ID:       "model-totals:" + model,
			At:       at,
			Model:    model,
			Requests: max(d.ModelMetrics[model].Requests.Count, 1),
			Tokens:   pricing.Tokens{Input: uncachedInput(u.Input, u.CacheRead, u.CacheWrite), Output: u.Output, CacheRead: u.CacheRead, CacheCreation: u.CacheWrite},
		})
	}
}

// uncachedInput is a shutdown's input tokens without its cached ones. An
// input smaller than the cached tokens cannot include them: it is taken as
// already without them (as a version reporting the input that way would
// write it), never made negative.
func uncachedInput(input, cacheRead, cacheWrite int64) int64 {
	if cached := cacheRead + cacheWrite; input >= cached {
		return input - cached
	}
	return input
}
