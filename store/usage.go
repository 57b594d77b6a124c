package store

import (
	"cmp"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/agentreview/service/pricing"
	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"
)

// UsageRecord is the token usage one API response reported, with its final
// counts. Adapters and capture write it with a batch (Batch.Usage); it is
// no part of the v1.2 ingest contract.
type UsageRecord struct {
	// ID is the response's id (Claude Code message.id), or one the adapter
	// made that stays the same when the file is read again. A record with
	// the id of a stored one replaces it.
	ID      string
	At      string // v1.2 timestamp
	Model   string // "" when the agent did not say
	ActorID string
	TurnID  string
	Tokens  pricing.Tokens
	// Requests is the number of API requests the record stands for: 0 or 1
	// for one response; more for an agent that reports only totals per
	// model (Copilot CLI).
	Requests int64
	// CostUSD is the cost the agent reported, nil when it reported none.
	CostUSD *float64
	// Source is where the numbers come from: "file" (the agent's own
	// files) or "otel" (its OpenTelemetry events, authoritative).
	Source string
}

// Usage sources.
const (
	UsageFromFile = "file"
	UsageFromOTel = "otel"
)

// maxUsageText bounds the id, model, actor and turn of a usage record.
const maxUsageText = 512

// usage checks the batch's usage records (Batch.Usage).
func (v *validator) usage(recs []UsageRecord) {
	for i := range recs {
		r := &recs[i]
		n := v.path.push("usage")
		m := v.path.pushIndex(i)
		for _, f := range []struct{ name, msg string }{
			{"id", textRule(r.ID, true)},
			{"at", timestampRule(r.At)},
			{"model", textRule(r.Model, false)},
			{"actor_id", textRule(r.ActorID, true)},
			{"turn_id", textRule(r.TurnID, false)}, // "" in a session of telemetry alone
			{"tokens", tokensRule(r.Tokens)},
			{"source", sourceRule(r.Source)},
		} {
			if f.msg != "" {
				v.field(f.name, f.msg)
			}
		}
		if r.Requests < 0 || r.Requests > 1<<40 {
			v.field("requests", "must be from 0 to 2^40")
		}
		if r.CostUSD != nil && !(*r.CostUSD >= 0 && *r.CostUSD < 1e9) {
			v.field("cost_usd", "must be a number from 0")
		}
		v.path = v.path[:m]
		v.path = v.path[:n]
	}
}

func textRule(s string, required bool) string {
	switch {
	case required && s == "":
		return "must not be empty"
	case len(s) > maxUsageText:
		return "must be at most 512 bytes"
	}
	return ""
}

func timestampRule(s string) string {
	if _, ok := ParseTimestamp(s); !ok {
		return "must be an ISO 8601 timestamp with a zone"
	}
	return ""
}

func tokensRule(t pricing.Tokens) string {
	const most = 1 << 40 // no response reports a trillion tokens
	for _, n := range []int64{t.Input, t.Output, t.CacheRead, t.CacheCreation} {
		if n < 0 || n > most {
			return "token counts must be from 0 to 2^40"
		}
	}
	if t.CacheCreation1h < 0 || t.CacheCreation1h > t.CacheCreation {
		return "cache_creation_1h must be from 0 to cache_creation"
	}
	return ""
}

func sourceRule(s string) string {
	if s != UsageFromFile && s != UsageFromOTel {
		return "must be file or otel"
	}
	return ""
}

// writeUsage writes a batch's usage records in its transaction (Apply) and
// keeps usage_hours, their sums per session, hour (UTC), model, price-tier
// range of the prompt, source and whether a cost was reported. The sums
// change by what the batch removed and added, added up here and written
// once per hour and model: a trigger per record cost an import more than
// the records themselves (docs/performance.md).
func writeUsage(conn *sqlite.Conn, pk int64, recs []UsageRecord, stamp int64) (changed bool, err error) {
	if len(recs) == 0 {
		return false, nil
	}
	hours := UsageHours{}
	removed := false
	for i := range recs {
		rm, add, err := upsertUsage(conn, pk, &recs[i], stamp, hours)
		if err != nil {
			return false, err
		}
		removed = removed || rm
		changed = changed || rm || add
	}
	for _, k := range hours.Keys() {
		h := hours[k]
		err := sqlitex.Execute(conn, `INSERT INTO usage_hours (session_pk, hour_ns, model, prompt_range, source, reported,
			  input, output, cache_read, cache_creation, cache_creation_1h, requests, cost_usd, last_ns)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT DO UPDATE SET input = input + excluded.input, output = output + excluded.output,
			  cache_read = cache_read + excluded.cache_read, cache_creation = cache_creation + excluded.cache_creation,
			  cache_creation_1h = cache_creation_1h + excluded.cache_creation_1h,
			  requests = requests + excluded.requests, cost_usd = cost_usd + excluded.cost_usd,
			  last_ns = max(last_ns, excluded.last_ns)`, &sqlitex.ExecOptions{Args: []any{
			pk, k.HourNS, k.Model, k.PromptRange, k.Source, k.Reported,
			h.Input, h.Output, h.CacheRead, h.CacheCreation, h.CacheCreation1h, h.Requests, h.Cost, h.LastNS}})
		if err != nil {
			return false, err
		}
	}
	if removed {
		err = sqlitex.Execute(conn, `DELETE FROM usage_hours WHERE session_pk = ? AND requests <= 0`, &sqlitex.ExecOptions{Args: []any{pk}})
	}
	return changed, err
}

// UsageHourKey is a row of usage_hours within a session.
type UsageHourKey struct {
	HourNS      int64
	Model       string
	PromptRange int64
	Source      string
	Reported    int64 // 1: the records' costs were reported
}

// UsageHour is the change to one row of usage_hours.
type UsageHour struct {
	pricing.Tokens
	Requests int64
	Cost     float64
	LastNS   int64 // the latest added record's time; removals leave it
}

// UsageHours adds up, per row of usage_hours, what a batch's usage records
// take from and add to it, so every backend writes each row once.
type UsageHours map[UsageHourKey]*UsageHour

// Keys returns the rows in a fixed order (by hour, model, range, source,
// reported), so writers lock rows in the same order.
func (hours UsageHours) Keys() []UsageHourKey {
	return slices.SortedFunc(maps.Keys(hours), func(a, b UsageHourKey) int {
		return cmp.Or(cmp.Compare(a.HourNS, b.HourNS), cmp.Compare(a.Model, b.Model), cmp.Compare(a.PromptRange, b.PromptRange),
			cmp.Compare(a.Source, b.Source), cmp.Compare(a.Reported, b.Reported))
	})
}

// Normalized returns a record's time in unix nanoseconds and its request
// count (at least 1) as usage_records keeps them.
func (r *UsageRecord) Normalized() (atNS, requests int64) {
	at, _ := ParseTimestamp(r.At)
	return StartedNS(at), max(r.Requests, 1)
}

// promptRanges are where the price table's long-context tiers started
// when usage_hours was made (migration 007); a record's prompt falls in
// the range of the largest start at most its size.
var promptRanges = []int64{512000, 272000, 271999, 200000, 199999, 128000}

func promptRange(t pricing.Tokens) int64 {
	prompt := t.Input + t.CacheRead + t.CacheCreation
	for _, r := range promptRanges {
		if prompt >= r {
			return r
		}
	}
	return 0
}

// Add adds a record to (sign 1) or takes it from (sign -1) its hour.
func (hours UsageHours) Add(atNS int64, model string, t pricing.Tokens, source string, requests int64, cost *float64, sign int64) {
	k := UsageHourKey{HourNS: atNS - atNS%int64(time.Hour), Model: model, PromptRange: promptRange(t), Source: source}
	if cost != nil {
		k.Reported = 1
	}
	h := hours[k]
	if h == nil {
		h = &UsageHour{LastNS: math.MinInt64}
		hours[k] = h
	}
	h.Input += sign * t.Input
	h.Output += sign * t.Output
	h.CacheRead += sign * t.CacheRead
	h.CacheCreation += sign * t.CacheCreation
	h.CacheCreation1h += sign * t.CacheCreation1h
	h.Requests += sign * requests
	if cost != nil {
		h.Cost += float64(sign) * *cost
	}
	if sign > 0 {
		h.LastNS = max(h.LastNS, atNS)
	}
}

// upsertUsage writes one usage record. A changed record is deleted and
// inserted again with the write's stamp, never updated in place; what it
// takes from and adds to usage_hours is added up in hours.
func upsertUsage(conn *sqlite.Conn, pk int64, r *UsageRecord, stamp int64, hours UsageHours) (removed, added bool, err error) {
	var cost any
	if r.CostUSD != nil {
		cost = *r.CostUSD
	}
	atNS, requests := r.Normalized()
	args := []any{pk, r.ID, r.At, atNS, r.Model, r.ActorID, r.TurnID,
		r.Tokens.Input, r.Tokens.Output, r.Tokens.CacheRead, r.Tokens.CacheCreation, r.Tokens.CacheCreation1h, requests, cost, r.Source, stamp}
	err = sqlitex.Execute(conn, `DELETE FROM usage_records WHERE session_pk = ?1 AND id = ?2
		AND (at, model, actor_id, turn_id, input, output, cache_read, cache_creation, cache_creation_1h, requests, cost_usd, source)
		  IS NOT (?3, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)
		RETURNING at_ns, model, input, output, cache_read, cache_creation, requests, cost_usd, source, cache_creation_1h`, &sqlitex.ExecOptions{
		Args: args[:len(args)-1], // not the stamp
		ResultFunc: func(st *sqlite.Stmt) error {
			var c *float64
			if st.ColumnType(7) != sqlite.TypeNull {
				v := st.ColumnFloat(7)
				c = &v
			}
			t := pricing.Tokens{Input: st.ColumnInt64(2), Output: st.ColumnInt64(3), CacheRead: st.ColumnInt64(4), CacheCreation: st.ColumnInt64(5),
				CacheCreation1h: st.ColumnInt64(9)}
			hours.Add(st.ColumnInt64(0), st.ColumnText(1), t, st.ColumnText(8), st.ColumnInt64(6), c, -1)
			removed = true
			return nil
		},
	})
	if err != nil {
		return false, false, err
	}
	err = sqlitex.Execute(conn, `INSERT OR IGNORE INTO usage_records (session_pk, id, at, at_ns, model, actor_id, turn_id,
		  input, output, cache_read, cache_creation, cache_creation_1h, requests, cost_usd, source, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, &sqlitex.ExecOptions{Args: args})
	if err != nil {
		return false, false, err
	}
	if conn.Changes() > 0 {
		added = true
		hours.Add(atNS, r.Model, r.Tokens, r.Source, requests, r.CostUSD, 1)
	}
	return removed, added, nil
}

// Usage is a session's token usage: what its agent reported, added up,
// and a cost estimated from the pricing table, kept apart from any cost
// the agent reported.
type Usage struct {
	Tokens      pricing.Tokens `json:"tokens"`
	APIRequests int64          `json:"api_requests"`
	Models      []ModelUsage   `json:"models"`
	// Turns is the usage per turn, in the order of the turns' first response.
	Turns []TurnUsage `json:"turns,omitempty"`
	// EstimatedCostUSD is the estimate for the requests without a
	// reported cost, of priced models, as a usage report's
	// (UsageRow.EstimatedCostUSD): the two costs add up to the session's.
	// Nil when none is priced; Unpriced lists the models of such requests
	// without a price, sorted.
	EstimatedCostUSD *float64 `json:"estimated_cost_usd"`
	Unpriced         []string `json:"unpriced_models,omitempty"`
	// ReportedCostUSD adds up the costs the agent reported per request, nil
	// when it reported none; never mixed with the estimate.
	ReportedCostUSD *float64    `json:"reported_cost_usd,omitempty"`
	Pricing         PricingInfo `json:"pricing"`
	// Source is otel when the OpenTelemetry events were counted (they are
	// authoritative where present), else file.
	Source string `json:"source"`
}

// ModelUsage is the usage of one model ("" when the agent did not say).
type ModelUsage struct {
	Model       string         `json:"model"`
	Tokens      pricing.Tokens `json:"tokens"`
	APIRequests int64          `json:"api_requests"`
	// EstimatedCostUSD estimates its requests without a reported cost; nil
	// when they have no price, or there are none. ReportedCostUSD adds up
	// the costs reported, nil when none was.
	EstimatedCostUSD *float64 `json:"estimated_cost_usd"`
	ReportedCostUSD  *float64 `json:"reported_cost_usd,omitempty"`
	unpriced         bool     // a request without a reported cost has no price
}

// PricingInfo names the price table estimates come from.
type PricingInfo struct {
	Source string `json:"source"`
	AsOf   string `json:"as_of"`
}

// usageWrittenAfter reads session pk's usage records written after stamp
// after (all of them after 0), in key order (Tally.Usage sorts them). A
// model, source or turn is read once and shared by its records.
func usageWrittenAfter(conn *sqlite.Conn, pk, after int64) ([]UsageRecord, error) {
	var recs []UsageRecord
	names := map[string]string{}
	var buf []byte
	name := func(st *sqlite.Stmt, col int) string {
		buf = slices.Grow(buf[:0], st.ColumnLen(col))[:st.ColumnLen(col)]
		st.ColumnBytes(col, buf)
		s, ok := names[string(buf)]
		if !ok {
			s = string(buf)
			names[s] = s
		}
		return s
	}
	err := sqlitex.Execute(conn, `SELECT id, at, model, input, output, cache_read, cache_creation, cost_usd, source, requests, turn_id,
		  cache_creation_1h
		FROM usage_records WHERE session_pk = ? AND updated_at > ?`, &sqlitex.ExecOptions{
		Args: []any{pk, after},
		ResultFunc: func(st *sqlite.Stmt) error {
			r := UsageRecord{ID: st.ColumnText(0), At: st.ColumnText(1), Model: name(st, 2), Source: name(st, 8), Requests: st.ColumnInt64(9), TurnID: name(st, 10),
				Tokens: pricing.Tokens{Input: st.ColumnInt64(3), Output: st.ColumnInt64(4), CacheRead: st.ColumnInt64(5), CacheCreation: st.ColumnInt64(6),
					CacheCreation1h: st.ColumnInt64(11)}}
			if st.ColumnType(7) != sqlite.TypeNull {
				c := st.ColumnFloat(7)
				r.CostUSD = &c
			}
			recs = append(recs, r)
			return nil
		},
	})
	return recs, err
}

// SessionUsage sums a session's usage records (in time order, then by
// id), nil when it has none. When some came from OpenTelemetry events,
// only those are counted.
func SessionUsage(recs []UsageRecord) *Usage {
	if len(recs) == 0 {
		return nil
	}
	if slices.ContainsFunc(recs, func(r UsageRecord) bool { return r.Source == UsageFromOTel }) {
		// A copy: the records are the caller's (Tally.Usage remembers them).
		recs = slices.DeleteFunc(slices.Clone(recs), func(r UsageRecord) bool { return r.Source != UsageFromOTel })
	}
	return SumUsage(recs, pricing.Default())
}

// TurnUsage is the usage of one turn: its tokens and API requests, their
// costs as the session's (Usage), and the times of its first and last
// response.
type TurnUsage struct {
	TurnID           string         `json:"turn_id"`
	Tokens           pricing.Tokens `json:"tokens"`
	APIRequests      int64          `json:"api_requests"`
	EstimatedCostUSD *float64       `json:"estimated_cost_usd"`
	ReportedCostUSD  *float64       `json:"reported_cost_usd,omitempty"`
	First            string         `json:"first_at"`
	Last             string         `json:"last_at"`
}

// SumUsage adds up usage records (in time order) by model and by turn, in
// the order of the turns' first response (records without a turn count
// for their model alone), estimating the cost of each request without a
// reported one from the table (per request, so long-context tiers apply).
func SumUsage(recs []UsageRecord, table *pricing.Table) *Usage {
	u := &Usage{Pricing: PricingInfo{Source: table.Source, AsOf: table.AsOf}, Source: UsageFromFile}
	est := table.Estimator()
	byModel := map[string]*ModelUsage{}
	turnAt := map[string]int{}
	for _, r := range recs {
		if r.Source == UsageFromOTel {
			u.Source = UsageFromOTel
		}
		m := byModel[r.Model]
		if m == nil {
			m = &ModelUsage{Model: r.Model}
			byModel[r.Model] = m
		}
		t := &TurnUsage{} // a record without a turn counts in none
		if r.TurnID != "" {
			i, ok := turnAt[r.TurnID]
			if !ok {
				i = len(u.Turns)
				turnAt[r.TurnID] = i
				u.Turns = append(u.Turns, TurnUsage{TurnID: r.TurnID, First: r.At})
			}
			t = &u.Turns[i]
			t.Last = r.At
		}
		m.Tokens.Add(r.Tokens)
		m.APIRequests += max(r.Requests, 1)
		t.Tokens.Add(r.Tokens)
		t.APIRequests += max(r.Requests, 1)
		u.Tokens.Add(r.Tokens)
		u.APIRequests += max(r.Requests, 1)
		if r.CostUSD != nil {
			u.ReportedCostUSD = addCost(u.ReportedCostUSD, *r.CostUSD)
			t.ReportedCostUSD = addCost(t.ReportedCostUSD, *r.CostUSD)
			m.ReportedCostUSD = addCost(m.ReportedCostUSD, *r.CostUSD)
			continue
		}
		at, _ := ParseTimestamp(r.At)
		if usd, ok := est.Estimate(r.Model, at, r.Tokens); ok {
			m.EstimatedCostUSD = addCost(m.EstimatedCostUSD, usd)
			t.EstimatedCostUSD = addCost(t.EstimatedCostUSD, usd)
			u.EstimatedCostUSD = addCost(u.EstimatedCostUSD, usd)
		} else {
			m.unpriced = true
		}
	}
	for i := range u.Turns {
		roundMicros(u.Turns[i].EstimatedCostUSD)
		roundNanos(u.Turns[i].ReportedCostUSD)
	}
	u.EstimatedCostUSD = roundMicros(u.EstimatedCostUSD)
	roundNanos(u.ReportedCostUSD)
	for _, m := range byModel {
		m.EstimatedCostUSD = roundMicros(m.EstimatedCostUSD)
		roundNanos(m.ReportedCostUSD)
		if m.unpriced {
			u.Unpriced = append(u.Unpriced, m.Model)
		}
		u.Models = append(u.Models, *m)
	}
	slices.SortFunc(u.Models, func(a, b ModelUsage) int {
		return cmp.Or(cmp.Compare(b.Tokens.Total(), a.Tokens.Total()), cmp.Compare(a.Model, b.Model))
	})
	slices.Sort(u.Unpriced)
	return u
}

// roundMicros rounds an estimate to a millionth of a dollar: it is no more
// precise than that, and JSON readers need not see float noise.
func roundMicros(usd *float64) *float64 {
	if usd != nil {
		*usd = math.Round(*usd*1e6) / 1e6
	}
	return usd
}

// roundNanos takes the float noise of a sum off reported costs, kept to a
// billionth of a dollar.
func roundNanos(usd *float64) *float64 {
	if usd != nil {
		*usd = math.Round(*usd*1e9) / 1e9
	}
	return usd
}

func addCost(total *float64, usd float64) *float64 {
	if total == nil {
		return &usd
	}
	*total += usd
	return total
}
