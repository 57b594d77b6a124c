package postgres

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/agentreview/service/store"
	"github.com/jackc/pgx/v5"
)

// UsageReports adds up the usage records by groups as the SQLite store
// does (store.PlanUsage, store.UsageTally): only the SQL that reads the
// hour rows is this store's.
func (s *Store) UsageReports(ctx context.Context, q store.UsageQuery, more ...string) ([][]store.UsageRow, error) {
	plan, err := store.PlanUsage(q, more...)
	if err != nil {
		return nil, fmt.Errorf("store: usage report: %w", err)
	}
	join, filter, sessions := "", "", ""
	if plan.JoinSessions {
		join = "JOIN sessions s ON s.pk = h.session_pk"
	}
	args := []any{plan.Since, plan.Until}
	// eq is the condition col = v; false for a v no stored row has.
	eq := func(col, v string) string {
		if !storable(v) {
			return " AND false"
		}
		args = append(args, v)
		return " AND " + col + " = $" + strconv.Itoa(len(args))
	}
	if q.Agent != "" {
		sessions += eq("s.agent_kind", q.Agent)
	}
	if q.Project != "" {
		sessions += eq("s.workspace_root", q.Project)
	}
	if q.Model != "" {
		filter += eq("h.model", q.Model)
	}
	if len(q.Sessions) > 0 {
		args = append(args, slices.DeleteFunc(slices.Clone(q.Sessions), func(id string) bool { return !storable(id) }))
		sessions += " AND s.id = ANY($" + strconv.Itoa(len(args)) + ")"
	}
	if q.Unrecorded != nil {
		var where string
		where, args = listFilterAfter(*q.Unrecorded, plan.Unrecorded, "", args)
		sessions += " AND s.metrics IS NULL AND " + where
	}
	totals := ""
	if plan.SessionTotals {
		// The metrics of sessions without usage records, as the SQLite
		// store's sessionTotalsQuery.
		totals = ` UNION ALL SELECT s.started_ns, '` + store.SessionTotalsModel + `', 0, true,
		  (m #>> '{tokens,input}')::bigint, (m #>> '{tokens,output}')::bigint,
		  (m #>> '{tokens,cache_read}')::bigint, (m #>> '{tokens,cache_creation}')::bigint,
		  (m ->> 'api_requests')::bigint, (m ->> 'cost_usd')::float8, s.started_ns, 0::bigint` + plan.SessionTotalsKeys() + `
		FROM sessions s CROSS JOIN LATERAL (SELECT s.metrics::jsonb AS m) j
		WHERE s.started_ns >= $1 AND s.started_ns < $2 AND s.metrics IS NOT NULL` + sessions + `
		  AND NOT EXISTS (SELECT 1 FROM usage_hours u WHERE u.session_pk = s.pk)`
	}
	// Telemetry, where a session has it, stands for its files' records.
	rows, _ := s.pool.Query(ctx, `SELECT h.hour_ns, h.model, h.prompt_range, h.reported <> 0,
		  h.input, h.output, h.cache_read, h.cache_creation, h.requests, h.cost_usd, h.last_ns, h.cache_creation_1h`+plan.KeyColumns()+`
		FROM usage_hours h `+join+`
		WHERE h.hour_ns >= $1 AND h.hour_ns < $2`+sessions+filter+`
		  AND (h.source = 'otel' OR h.session_pk NOT IN (SELECT session_pk FROM usage_hours WHERE source = 'otel'))`+totals, args...)
	tally := plan.Tally()
	h := store.UsageReportHour{Keys: make([]string, len(plan.Keys))}
	t := &h.Tokens
	scan := []any{&h.HourNS, &h.Model, &h.PromptRange, &h.Reported,
		&t.Input, &t.Output, &t.CacheRead, &t.CacheCreation, &h.Requests, &h.CostUSD, &h.LastNS, &t.CacheCreation1h}
	for i := range h.Keys {
		scan = append(scan, &h.Keys[i])
	}
	_, err = pgx.ForEachRow(rows, scan, func() error { tally.Add(h); return nil })
	if err != nil {
		return nil, fmt.Errorf("store: usage report: %w", err)
	}
	reports := tally.Rows()
	titled := plan.Titled(q, reports)
	if len(titled) == 0 {
		return reports, nil
	}
	ids := make([]string, len(titled))
	for i, r := range titled {
		ids[i] = r.Key
	}
	titles, err := sessionTitles(ctx, s.pool, ids)
	if err != nil {
		return nil, fmt.Errorf("store: usage report: %w", err)
	}
	for i := range titled {
		titled[i].Title = titles[titled[i].Key]
	}
	return reports, nil
}
