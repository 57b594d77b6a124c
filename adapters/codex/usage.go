package codex

import (
	"encoding/json"
	"fmt"

	"github.com/agentreview/service/adapters"
	"github.com/agentreview/service/pricing"
)

// tokens records the usage of one model request from a token_count event:
// last_token_usage is that request's, total_token_usage the running
// total. Codex repeats the same token_count after each turn_context, so an
// event counts only when the total differs from the previous event's. Its
// input_tokens include the cached ones; here input is the uncached rest.
func (p *parser) tokens(ln *line, raw json.RawMessage) {
	if !adapters.Present(raw) {
		return
	}
	var info struct {
		Total *counts `json:"total_token_usage"`
		Last  *counts `json:"last_token_usage"`
	}
	if json.Unmarshal(raw, &info) != nil || info.Total == nil {
		return
	}
	key := fmt.Sprint(*info.Total)
	if key == p.lastInfo {
		return
	}
	p.lastInfo = key
	last := info.Last
	if last == nil { // older Codex: the request is what the total grew by
		last = &counts{Input: info.Total.Input - p.total.Input, Cached: info.Total.Cached - p.total.Cached, Output: info.Total.Output - p.total.Output}
	}
	p.total = *info.Total
	p.b.AddUsage(adapters.Reported{
		ID:     p.lineID(ln),
		At:     ln.at,
		Model:  p.model,
		Tokens: pricing.Tokens{Input: max(last.Input-last.Cached, 0), Output: max(last.Output, 0), CacheRead: max(last.Cached, 0)},
	})
}

// counts are the token counts of a token_count event.
type counts struct {
	Input  int64 `json:"input_tokens"`
	Cached int64 `json:"cached_input_tokens"`
	Output int64 `json:"output_tokens"`
}
