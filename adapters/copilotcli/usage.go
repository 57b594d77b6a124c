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
func (p *parser) usage(d *data, at adapters.Time) {
	for _, model := range slices.Sorted(maps.Keys(d.ModelMetrics)) {
		m := d.ModelMetrics[model]
		p.b.AddUsage(adapters.Reported{
			ID:       "model-totals:" + model,
			At:       at,
			Model:    model,
			Requests: max(m.Requests.Count, 1),
			Tokens:   pricing.Tokens{Input: m.Usage.Input, Output: m.Usage.Output, CacheRead: m.Usage.CacheRead, CacheCreation: m.Usage.CacheWrite},
		})
	}
}
