package store

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/agentreview/service/pricing"
	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

// Usage report groups (UsageQuery.Group).
const (
	UsageByDay     = "day"
	UsageByWeek    = "week" // weeks start on Monday
	UsageByMonth   = "month"
	UsageBySession = "session"
)

// UsageQuery chooses the usage records a report adds up. Days are the
// local time's, made of whole hours (a zone half an hour off UTC counts a
// record of the half hour before midnight in the next day).
type UsageQuery struct {
	Group string
	Since time.Time // zero: from the first record
	Until time.Time // exclusive; zero: to the last
	Agent string    // only sessions of this agent kind
}

// UsageRow is one group of a usage report: a day, week (its Monday),
// month or session id, with its models, tokens and costs.
type UsageRow struct {
	Key         string         `json:"key"`
	Models      []string       `json:"models"`
	Tokens      pricing.Tokens `json:"tokens"`
	APIRequests int64          `json:"api_requests"`
	// ReportedCostUSD sums the costs the agents reported, nil when none;
	// Reported counts the requests that had one.
	ReportedCostUSD *float64 `json:"reported_cost_usd"`
	Reported        int64    `json:"reported_requests"`
	// EstimatedCostUSD estimates the requests without a reported cost, nil
	// when none of them is priced; Unpriced lists their models without a
	// price. Never added to ReportedCostUSD.
	EstimatedCostUSD *float64 `json:"estimated_cost_usd"`
	Unpriced         []string `json:"unpriced_models,omitempty"`
}

// UsageReport adds up the usage records by group, oldest group first (by
// tokens, most first, for sessions). As in a session's detail, a session
// with OpenTelemetry records counts only those.
func (s *Store) UsageReport(ctx context.Context, q UsageQuery) ([]UsageRow, error) {
	key, ok := map[string]string{
		UsageByDay:     `date(h.hour_ns / 1000000000, 'unixepoch', 'localtime')`,
		UsageByWeek:    `date(h.hour_ns / 1000000000, 'unixepoch', 'localtime', '-6 days', 'weekday 1')`,
		UsageByMonth:   `strftime('%Y-%m', h.hour_ns / 1000000000, 'unixepoch', 'localtime')`,
		UsageBySession: `s.id`,
	}[q.Group]
	if !ok {
		return nil, fmt.Errorf("store: usage report: unknown group %q", q.Group)
	}
	since, until := int64(-1<<63), int64(1<<63-1)
	if !q.Since.IsZero() {
		since = startedNS(q.Since.Truncate(time.Hour)) // records are added up per hour
	}
	if !q.Until.IsZero() {
		until = startedNS(q.Until)
	}
	// Sessions are joined only when needed: for their id or agent.
	join, agent := "", ""
	if q.Group == UsageBySession || q.Agent != "" {
		join = "JOIN sessions s ON s.pk = h.session_pk"
	}
	if q.Agent != "" {
		agent = "AND s.agent_kind = :agent"
	}
	rows := map[string]*UsageRow{}
	var order []string
	table := pricing.Default()
	err := s.read(ctx, func(conn *sqlite.Conn) error {
		return sqlitex.Execute(conn, `SELECT `+key+`, h.model, h.prompt_range,
			  sum(h.input), sum(h.output), sum(h.cache_read), sum(h.cache_creation), sum(h.requests),
			  sum(iif(h.reported, h.cost_usd, 0)), sum(iif(h.reported, h.requests, 0)),
			  sum(iif(h.reported, 0, h.input)), sum(iif(h.reported, 0, h.output)),
			  sum(iif(h.reported, 0, h.cache_read)), sum(iif(h.reported, 0, h.cache_creation)),
			  max(h.last_ns)
			FROM usage_hours h `+join+`
			WHERE h.hour_ns >= :since AND h.hour_ns < :until `+agent+`
			  AND (h.source = 'otel' OR h.session_pk NOT IN (SELECT session_pk FROM usage_hours WHERE source = 'otel'))
			GROUP BY 1, 2, 3 ORDER BY 1`, &sqlitex.ExecOptions{
			Named: namedArgs(map[string]any{":since": since, ":until": until}, ":agent", q.Agent),
			ResultFunc: func(st *sqlite.Stmt) error {
				k, model := st.ColumnText(0), st.ColumnText(1)
				r := rows[k]
				if r == nil {
					r = &UsageRow{Key: k}
					rows[k] = r
					order = append(order, k)
				}
				if !slices.Contains(r.Models, model) {
					r.Models = append(r.Models, model)
				}
				r.Tokens.Add(pricing.Tokens{Input: st.ColumnInt64(3), Output: st.ColumnInt64(4), CacheRead: st.ColumnInt64(5), CacheCreation: st.ColumnInt64(6)})
				r.APIRequests += st.ColumnInt64(7)
				if n := st.ColumnInt64(9); n > 0 {
					r.ReportedCostUSD = addCost(r.ReportedCostUSD, st.ColumnFloat(8))
					r.Reported += n
				}
				unreported := pricing.Tokens{Input: st.ColumnInt64(10), Output: st.ColumnInt64(11), CacheRead: st.ColumnInt64(12), CacheCreation: st.ColumnInt64(13)}
				if unreported.Total() == 0 {
					return nil
				}
				// Every request of the sum has its prompt in the same range of
				// the price tiers, so the sum has their price.
				usd, ok := table.EstimateSum(model, time.Unix(0, st.ColumnInt64(14)), unreported, st.ColumnInt64(2))
				if !ok {
					if !slices.Contains(r.Unpriced, model) {
						r.Unpriced = append(r.Unpriced, model)
					}
					return nil
				}
				r.EstimatedCostUSD = addCost(r.EstimatedCostUSD, usd)
				return nil
			},
		})
	})
	if err != nil {
		return nil, fmt.Errorf("store: usage report: %w", err)
	}
	out := make([]UsageRow, 0, len(order))
	for _, k := range order {
		r := rows[k]
		r.EstimatedCostUSD = roundMicros(r.EstimatedCostUSD)
		slices.Sort(r.Models)
		slices.Sort(r.Unpriced)
		out = append(out, *r)
	}
	if q.Group == UsageBySession {
		slices.SortStableFunc(out, func(a, b UsageRow) int { return cmp.Compare(b.Tokens.Total(), a.Tokens.Total()) })
	}
	return out, nil
}

// namedArgs adds the optional argument to args when it is set (a named
// argument the statement lacks is an error).
func namedArgs(args map[string]any, name, value string) map[string]any {
	if value != "" {
		args[name] = value
	}
	return args
}
