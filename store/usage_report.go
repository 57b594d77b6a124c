package store

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
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
	UsageByModel   = "model"
	UsageByAgent   = "agent"   // the session's agent kind
	UsageByProject = "project" // the session's workspace root
	// UsageByBlock is by blocks of UsageBlock, as Claude's plans count
	// their limits: a block starts at the hour of the first record after
	// the block before ended, and holds the records until UsageBlock after
	// it; its key is its start, in UTC (RFC 3339).
	UsageByBlock = "block"
)

// UsageBlock is the length of a block of UsageByBlock.
const UsageBlock = 5 * time.Hour

// UsageBlockLabel is a block's key (its start, RFC 3339) as a person reads
// it: its hours in local time, and "(now)" when it holds now.
func UsageBlockLabel(key string, now time.Time) string {
	start, err := time.Parse(time.RFC3339, key)
	if err != nil {
		return key
	}
	end := start.Add(UsageBlock)
	s := start.Local().Format("2006-01-02 15:04") + "–" + end.Local().Format("15:04")
	if !now.Before(start) && now.Before(end) {
		s += " (now)"
	}
	return s
}

// UsageBreakdowns lists every UsageQuery.Breakdown.
var UsageBreakdowns = []string{UsageByModel, UsageByAgent}

// The orders of a report's rows by session, model, agent or project
// (UsageQuery.Sort): most tokens first, or most cost first.
const (
	UsageSortTokens = "tokens"
	UsageSortCost   = "cost"
)

// UsageSorts lists every UsageQuery.Sort.
var UsageSorts = []string{UsageSortTokens, UsageSortCost}

// UsageGroups lists every UsageQuery.Group, for callers that check one.
var UsageGroups = []string{UsageByDay, UsageByWeek, UsageByMonth, UsageBySession, UsageByModel, UsageByAgent, UsageByProject, UsageByBlock}

// UsageTimeGroups lists the groups whose rows are in the order of time:
// a report of them has no UsageQuery.Sort.
var UsageTimeGroups = []string{UsageByDay, UsageByWeek, UsageByMonth, UsageByBlock}

// UsageQuery chooses the usage records a report adds up. Days are the
// local time's, made of whole hours (a zone half an hour off UTC counts a
// record of the half hour before midnight in the next day).
type UsageQuery struct {
	Group string
	Since time.Time // zero: from the first record
	Until time.Time // exclusive; zero: to the last
	Agent string    // only sessions of this agent kind
	Model string    // only this model's records
	// Project, when set, keeps only the sessions of this workspace (its
	// root, as the report by project keys its rows).
	Project string
	// Sessions, when not empty, keeps only these sessions' records (ids):
	// the list page's estimates for the sessions it shows.
	Sessions []string
	// Unrecorded, when set, keeps only the sessions its filters keep that
	// have no metrics: those whose cost the list's total (Total) has
	// only from their requests' reports, the rest to estimate. Its cursor
	// and limit are not used.
	Unrecorded *ListQuery
	// Breakdown, when set (UsageBreakdowns), splits each row of Group's
	// report by model or agent (UsageRow.Breakdown); not the reports of
	// the groups asked beside it (UsageReports).
	Breakdown string
	// Sort, when UsageSortCost, orders Group's rows (by session, model,
	// agent or project) by their cost, reported and estimated together,
	// most first; else by tokens, most first. Not the reports of the
	// groups asked beside it (UsageReports), nor the rows by time.
	Sort string
	// SortSessions orders as Sort does the rows of the group by session
	// when it is asked beside Group (UsageReports' more): the usage page's
	// top sessions by cost, from the same read as its charts by tokens.
	SortSessions string
	// Titles, for the group by session, is how many rows (the first, in
	// the report's order) carry their session's title: each costs a read,
	// and a report may have a row for every stored session.
	Titles int
}

// UsageRow is one group of a usage report: a day, week (its Monday),
// month or session id, with its models, tokens and costs.
type UsageRow struct {
	Key         string         `json:"key"`
	Title       string         `json:"title,omitempty"` // the session's (Title), in the first UsageQuery.Titles rows by session
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
	// Breakdown is the row split by UsageQuery.Breakdown, most tokens
	// first, each part keyed by its model or agent.
	Breakdown []UsageRow `json:"breakdown,omitempty"`
}

// UsageReports adds up the usage records by q.Group and by each of more,
// in one read of the hour rows: a report's rows, oldest group first (by
// tokens, most first, for sessions, models, agents and projects, or by
// cost: q.Sort), for each group in that order. As in a session's detail,
// a session with OpenTelemetry records counts only those.
func (s *Store) UsageReports(ctx context.Context, q UsageQuery, more ...string) ([][]UsageRow, error) {
	plan, err := PlanUsage(q, more...)
	if err != nil {
		return nil, fmt.Errorf("store: usage report: %w", err)
	}
	join, filter, sessions := "", "", ""
	if plan.JoinSessions {
		join = "JOIN sessions s ON s.pk = h.session_pk"
	}
	if q.Agent != "" {
		sessions = "AND s.agent_kind = :agent"
	}
	if q.Project != "" {
		sessions += " AND s.workspace_root = :project"
	}
	if q.Model != "" {
		filter = " AND h.model = :model"
	}
	named := map[string]any{":since": plan.Since, ":until": plan.Until}
	named = namedArgs(namedArgs(namedArgs(named, ":agent", q.Agent), ":model", q.Model), ":project", q.Project)
	if len(q.Sessions) > 0 {
		ids, err := json.Marshal(q.Sessions)
		if err != nil {
			return nil, fmt.Errorf("store: usage report: %w", err)
		}
		sessions += " AND s.id IN (SELECT value FROM json_each(:sessions))"
		named[":sessions"] = string(ids)
	}
	if q.Unrecorded != nil {
		where, args := listFilterAs(*q.Unrecorded, plan.Unrecorded, "", "list_")
		sessions += " AND s.metrics IS NULL AND " + where
		maps.Copy(named, args)
	}
	query := usageHoursQuery(plan.KeyColumns(), join, sessions+filter)
	if plan.SessionTotals {
		query += " UNION ALL " + sessionTotalsQuery(plan.SessionTotalsKeys(), sessions)
	}
	tally := plan.Tally()
	h := UsageReportHour{Keys: make([]string, len(plan.Keys))}
	err = s.read(ctx, func(conn *sqlite.Conn) error {
		return sqlitex.Execute(conn, query,
			&sqlitex.ExecOptions{
				Named: named,
				ResultFunc: func(st *sqlite.Stmt) error {
					h.HourNS, h.Model, h.PromptRange, h.Reported = st.ColumnInt64(0), st.ColumnText(1), st.ColumnInt64(2), st.ColumnBool(3)
					h.Tokens = pricing.Tokens{Input: st.ColumnInt64(4), Output: st.ColumnInt64(5), CacheRead: st.ColumnInt64(6), CacheCreation: st.ColumnInt64(7),
						CacheCreation1h: st.ColumnInt64(11)}
					h.Requests, h.CostUSD, h.LastNS = st.ColumnInt64(8), st.ColumnFloat(9), st.ColumnInt64(10)
					for i := range h.Keys {
						h.Keys[i] = st.ColumnText(usageKeysColumn + i)
					}
					tally.Add(h)
					return nil
				},
			})
	})
	if err != nil {
		return nil, fmt.Errorf("store: usage report: %w", err)
	}
	reports := tally.Rows()
	titled := plan.Titled(q, reports)
	if len(titled) == 0 {
		return reports, nil
	}
	err = s.read(ctx, func(conn *sqlite.Conn) error {
		for i := range titled {
			pk, err := sessionPK(conn, titled[i].Key)
			if err != nil {
				return err
			}
			if pk == 0 {
				continue // deleted since the report's read: no title
			}
			if titled[i].Title, err = sessionTitle(conn, pk); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: usage report: %w", err)
	}
	return reports, nil
}

// UsageReporter makes usage reports: a store of either backend, or a
// client of a server's.
type UsageReporter interface {
	UsageReports(ctx context.Context, q UsageQuery, more ...string) ([][]UsageRow, error)
}

// EstimateTotal sets the estimate of Total (Total.EstimatedCostUSD) of the
// sessions q keeps, from r's report of those without metrics: what List
// adds when q.Estimate.
func EstimateTotal(ctx context.Context, r UsageReporter, q ListQuery, t *Total) error {
	q.Limit, q.After, q.Estimate = 0, "", false
	rows, err := UsageReport(ctx, r, UsageQuery{Group: UsageBySession, Unrecorded: &q})
	if err != nil {
		return err
	}
	total := UsageTotal(rows)
	t.EstimatedCostUSD, t.UnpricedModels = total.EstimatedCostUSD, len(total.Unpriced)
	return nil
}

// UsageReport is the report of q.Group alone.
func UsageReport(ctx context.Context, r UsageReporter, q UsageQuery) ([]UsageRow, error) {
	reports, err := r.UsageReports(ctx, q)
	if err != nil {
		return nil, err
	}
	return reports[0], nil
}

// UsagePlan is what a usage report reads, for a backend's SQL over
// usage_hours (h) and, when JoinSessions, sessions (s): the hour rows in
// [Since, Until) (unix nanoseconds), of q.Agent's and q.Project's sessions
// and q.Model when set, with Keys as the groups' columns; telemetry, where a session
// has it, stands for its files' records (usageHoursQuery).
type UsagePlan struct {
	// Keys are the columns the groups by session, model, agent and project
	// need (s.id, h.model, s.agent_kind, s.workspace_root), each once, read
	// after the hour's own (UsageReportHour.Keys).
	Keys         []string
	JoinSessions bool
	Since, Until int64
	// SessionTotals: the report adds the metrics of the sessions that have
	// no usage records (their agents report totals alone: Crush, and
	// pushes of the v1.2 contract), as one row a session at its start,
	// of the model SessionTotalsModel; not when it is for another model.
	SessionTotals bool
	// Unrecorded is the bounds of UsageQuery.Unrecorded's filters, when
	// set: a backend keeps the sessions they keep, without metrics.
	Unrecorded ListBounds
	groups     []usageGroup
}

// usageGroup is how one group of a plan keys its hour rows: by the hour's
// time (keyOf) or by a column of the plan's Keys (key).
type usageGroup struct {
	name   string
	keyOf  func(time.Time) string
	key    int  // index in UsagePlan.Keys when keyOf is nil
	split  int  // index in UsagePlan.Keys of the breakdown's key; -1 for none
	blocks bool // the hours' rows are gathered into blocks (UsageByBlock)
	byCost bool // rows by cost, most first (UsageSortCost); else by key or tokens
}

// usageKeysColumn is the first column of the plan's Keys in the read of
// hour rows (usageHoursQuery), after the hour's own.
const usageKeysColumn = 12

// SessionTotalsModel is the model a report gives a session's totals
// (UsagePlan.SessionTotals): its agent reported no usage per response,
// so no model.
const SessionTotalsModel = "session totals"

// KeyColumns is the SQL list of the plan's Keys, each after a comma; empty
// without any.
func (p UsagePlan) KeyColumns() string {
	var b strings.Builder
	for _, k := range p.Keys {
		b.WriteString(", " + k)
	}
	return b.String()
}

// SessionTotalsKeys is KeyColumns for the rows of session totals: the
// model's column is SessionTotalsModel.
func (p UsagePlan) SessionTotalsKeys() string {
	return strings.ReplaceAll(p.KeyColumns(), "h.model", "'"+SessionTotalsModel+"'")
}

// PlanUsage checks a report's query, and the groups asked beside its own,
// and says what they read.
func PlanUsage(q UsageQuery, more ...string) (UsagePlan, error) {
	p := UsagePlan{Since: int64(-1 << 63), Until: int64(1<<63 - 1)}
	if q.SortSessions != "" && !slices.Contains(UsageSorts, q.SortSessions) {
		return UsagePlan{}, fmt.Errorf("unknown sort %q of the sessions", q.SortSessions)
	}
	// column is the index of a group's column in p.Keys, added once.
	column := func(group string) int {
		col := map[string]string{UsageBySession: "s.id", UsageByModel: "h.model", UsageByAgent: "s.agent_kind", UsageByProject: "s.workspace_root"}[group]
		// Sessions are joined only when needed: for their id, agent or
		// workspace.
		p.JoinSessions = p.JoinSessions || strings.HasPrefix(col, "s.")
		i := slices.Index(p.Keys, col)
		if i < 0 {
			i = len(p.Keys)
			p.Keys = append(p.Keys, col)
		}
		return i
	}
	for i, name := range append([]string{q.Group}, more...) {
		g := usageGroup{name: name, split: -1, blocks: name == UsageByBlock}
		var ok bool
		g.keyOf, ok = map[string]func(time.Time) string{
			UsageByDay:     func(t time.Time) string { return t.Format(time.DateOnly) },
			UsageByWeek:    func(t time.Time) string { return t.AddDate(0, 0, -(int(t.Weekday())+6)%7).Format(time.DateOnly) },
			UsageByMonth:   func(t time.Time) string { return t.Format("2006-01") },
			UsageBySession: nil,
			UsageByModel:   nil,
			UsageByAgent:   nil,
			UsageByProject: nil,
			UsageByBlock:   func(t time.Time) string { return t.UTC().Truncate(time.Hour).Format(time.RFC3339) }, // gathered by Rows
		}[name]
		if !ok {
			return UsagePlan{}, fmt.Errorf("unknown group %q", name)
		}
		if g.keyOf == nil {
			g.key = column(name)
		}
		if i == 0 && q.Breakdown != "" {
			if !slices.Contains(UsageBreakdowns, q.Breakdown) {
				return UsagePlan{}, fmt.Errorf("unknown breakdown %q", q.Breakdown)
			}
			g.split = column(q.Breakdown)
		}
		sort := q.Sort
		if i > 0 {
			sort = ""
			if name == UsageBySession {
				sort = q.SortSessions
			}
		}
		if sort != "" {
			if !slices.Contains(UsageSorts, sort) {
				return UsagePlan{}, fmt.Errorf("unknown sort %q", sort)
			}
			if slices.Contains(UsageTimeGroups, name) {
				return UsagePlan{}, fmt.Errorf("sort %q of the rows by %s: they are in the order of time", sort, name)
			}
			g.byCost = sort == UsageSortCost
		}
		p.groups = append(p.groups, g)
	}
	if !q.Since.IsZero() {
		p.Since = StartedNS(q.Since.Truncate(time.Hour)) // records are added up per hour
	}
	if !q.Until.IsZero() {
		p.Until = StartedNS(q.Until)
	}
	if q.Unrecorded != nil {
		var err error
		if p.Unrecorded, err = q.Unrecorded.Bounds(); err != nil {
			return UsagePlan{}, err
		}
	}
	p.JoinSessions = p.JoinSessions || q.Agent != "" || q.Project != "" || len(q.Sessions) > 0 || q.Unrecorded != nil
	p.SessionTotals = q.Model == "" || q.Model == SessionTotalsModel
	return p, nil
}

// Titled is the rows of reports (the plan's groups' rows) that carry a
// title (UsageQuery.Titles): the first of the group by session, none of
// the others.
func (p UsagePlan) Titled(q UsageQuery, reports [][]UsageRow) []UsageRow {
	for i, g := range p.groups {
		if g.name == UsageBySession {
			return reports[i][:max(0, min(q.Titles, len(reports[i])))]
		}
	}
	return nil
}

// UsageReportHour is one usage_hours row a report reads: its hour, model,
// price tier range, whether its cost was reported, its sums, its last
// record's time and its groups' keys (UsagePlan.Keys).
type UsageReportHour struct {
	HourNS      int64
	Model       string
	PromptRange int64
	Reported    bool
	Tokens      pricing.Tokens
	Requests    int64
	CostUSD     float64
	LastNS      int64
	Keys        []string
}

// UsageTally adds up a report's hour rows (Add) into each of its groups'
// rows (Rows): in Go, not SQL, as a local day per hour is cheaper here
// than SQLite's localtime per row, and one read feeds every group.
type UsageTally struct {
	groups []groupTally
}

// groupTally is the sums of one group of a tally, a keyTally for each of
// its keys.
type groupTally struct {
	usageGroup
	keys     map[string]*keyTally
	hourKeys map[int64]string
}

// keyTally is the sums of one key of a group (a day, a session ...), one
// for each model and tier range it has, and those of each of its parts by
// the plan's breakdown (keyed by that key). A key has a few sums, found by
// a look at each; past keyTallyWalk, by an index (at), since an agent
// names its models and a file may name a new one for every request.
type keyTally struct {
	sums  []modelSum
	at    map[modelKey]int // sums by model and tier range, past keyTallyWalk
	parts map[string]*keyTally
}

// keyTallyWalk is how many sums a keyTally finds by a look at each.
const keyTallyWalk = 8

// modelKey is a model and tier range.
type modelKey struct {
	model       string
	promptRange int64
}

// modelSum is a usageSum of one model and tier range.
type modelSum struct {
	modelKey
	usageSum
}

// Tally starts adding up the plan's rows.
func (p UsagePlan) Tally() *UsageTally {
	t := &UsageTally{}
	for _, g := range p.groups {
		t.groups = append(t.groups, groupTally{usageGroup: g, keys: map[string]*keyTally{}, hourKeys: map[int64]string{}})
	}
	return t
}

// Add adds an hour row to every group.
func (t *UsageTally) Add(h UsageReportHour) {
	for i := range t.groups {
		t.groups[i].add(h)
	}
}

func (t *groupTally) add(h UsageReportHour) {
	var k string
	if t.keyOf == nil {
		k = h.Keys[t.key]
	} else if k = t.hourKeys[h.HourNS]; k == "" {
		k = t.keyOf(time.Unix(0, h.HourNS).Local())
		t.hourKeys[h.HourNS] = k
	}
	kt := tallyOf(t.keys, k)
	kt.add(h)
	if t.split >= 0 {
		if kt.parts == nil {
			kt.parts = map[string]*keyTally{}
		}
		tallyOf(kt.parts, h.Keys[t.split]).add(h)
	}
}

// tallyOf is the tally of key in keys, added when it has none.
func tallyOf(keys map[string]*keyTally, key string) *keyTally {
	kt := keys[key]
	if kt == nil {
		kt = &keyTally{}
		keys[key] = kt
	}
	return kt
}

// add adds an hour row to the sum of its model and tier range.
func (kt *keyTally) add(h UsageReportHour) {
	mk := modelKey{h.Model, h.PromptRange}
	i, ok := kt.at[mk]
	if kt.at == nil {
		i = slices.IndexFunc(kt.sums, func(s modelSum) bool { return s.modelKey == mk })
		ok = i >= 0
	}
	if !ok {
		i = len(kt.sums)
		kt.sums = append(kt.sums, modelSum{modelKey: mk})
		if kt.at != nil {
			kt.at[mk] = i
		} else if len(kt.sums) > keyTallyWalk {
			kt.at = make(map[modelKey]int, 2*len(kt.sums))
			for j, s := range kt.sums {
				kt.at[s.modelKey] = j
			}
		}
	}
	u := &kt.sums[i].usageSum
	u.tokens.Add(h.Tokens)
	u.requests += h.Requests
	if h.Reported {
		u.reportedUSD += h.CostUSD
		u.reported += h.Requests
		u.hasReported = true // session totals may report a cost of no request (Crush)
	} else {
		u.unreported.Add(h.Tokens)
	}
	u.lastNS = max(u.lastNS, h.LastNS)
}

// Rows are the rows of each of the report's groups, in the plan's order,
// priced by the pricing table, each in the report's order (UsageReports).
func (t *UsageTally) Rows() [][]UsageRow {
	out := make([][]UsageRow, len(t.groups))
	est := pricing.Default().Estimator() // each model's price found once for all
	for i := range t.groups {
		out[i] = t.groups[i].rows(est)
	}
	return out
}

func (t *groupTally) rows(est *pricing.Estimator) []UsageRow {
	order := byTokens
	switch {
	case t.keyOf != nil:
		order = byKey
	case t.byCost:
		order = byCost
	}
	out := pricedRows(t.keys, est, order)
	if t.split >= 0 {
		for i := range out {
			out[i].Breakdown = pricedRows(t.keys[out[i].Key].parts, est, byTokens)
		}
	}
	if t.blocks {
		return usageBlocks(out)
	}
	return out
}

// rowOrder is an order of a report's rows: by key (time), by tokens or by
// cost, most first, then by key.
type rowOrder int

const (
	byKey rowOrder = iota
	byTokens
	byCost
)

// pricedRows are the rows of keys, priced by est, in order.
func pricedRows(keys map[string]*keyTally, est *pricing.Estimator, order rowOrder) []UsageRow {
	out := make([]UsageRow, 0, len(keys))
	for k, kt := range keys {
		out = append(out, kt.row(k, est))
	}
	// By key, then (stable) by tokens or cost: one sort of the three keys
	// was not faster ("A key's sums under the key", docs/performance.md).
	slices.SortFunc(out, func(a, b UsageRow) int { return cmp.Compare(a.Key, b.Key) })
	switch order {
	case byTokens:
		slices.SortStableFunc(out, func(a, b UsageRow) int { return cmp.Compare(b.Tokens.Total(), a.Tokens.Total()) })
	case byCost:
		slices.SortStableFunc(out, func(a, b UsageRow) int {
			return cmp.Or(cmp.Compare(b.CostUSD(), a.CostUSD()), cmp.Compare(b.Tokens.Total(), a.Tokens.Total()))
		})
	}
	return out
}

// CostUSD is the row's cost, reported and estimated together, as a report
// by cost orders its rows (UsageSortCost); 0 when it has neither. Shown,
// the two stay apart.
func (r UsageRow) CostUSD() float64 {
	var usd float64
	if r.ReportedCostUSD != nil {
		usd += *r.ReportedCostUSD
	}
	if r.EstimatedCostUSD != nil {
		usd += *r.EstimatedCostUSD
	}
	return usd
}

// row adds up the key's sums into its row, priced by est, its costs
// rounded. The sums are added by model and tier range, not in the order
// the hour rows came in (PostgreSQL's may differ from one read to the
// next), since the last digit of a sum of float costs depends on the
// order. (A sum's reported cost adds its hours as read; it is kept to a
// billionth of a dollar, far above that noise.)
func (kt *keyTally) row(key string, est *pricing.Estimator) UsageRow {
	slices.SortFunc(kt.sums, func(a, b modelSum) int {
		return cmp.Or(cmp.Compare(a.model, b.model), cmp.Compare(a.promptRange, b.promptRange))
	})
	kt.at = nil // its indexes are the order before
	r := UsageRow{Key: key}
	for i := range kt.sums {
		s := &kt.sums[i]
		u := &s.usageSum
		if i == 0 || kt.sums[i-1].model != s.model { // sorted: a model's sums are side by side
			r.Models = append(r.Models, s.model)
		}
		r.Tokens.Add(u.tokens)
		r.APIRequests += u.requests
		if u.hasReported {
			r.ReportedCostUSD = addCost(r.ReportedCostUSD, u.reportedUSD)
			r.Reported += u.reported
		}
		if u.unreported.Total() == 0 {
			continue
		}
		// Every request of the sum has its prompt in the same range of the
		// price tiers, so the sum has their price.
		usd, ok := est.EstimateSum(s.model, time.Unix(0, u.lastNS), u.unreported, s.promptRange)
		if !ok {
			if len(r.Unpriced) == 0 || r.Unpriced[len(r.Unpriced)-1] != s.model {
				r.Unpriced = append(r.Unpriced, s.model)
			}
			continue
		}
		r.EstimatedCostUSD = addCost(r.EstimatedCostUSD, usd)
	}
	r.EstimatedCostUSD = roundMicros(r.EstimatedCostUSD)
	roundNanos(r.ReportedCostUSD)
	slices.Sort(r.Models)
	slices.Sort(r.Unpriced)
	return r
}

// usageBlocks gathers the rows of hours, oldest first, into blocks of
// UsageBlock (UsageByBlock): each row's costs are its hour's, priced
// there, so a block's are their sums.
func usageBlocks(hours []UsageRow) []UsageRow {
	out := []UsageRow{} // no block is an empty list, as no day is
	var end time.Time
	from := 0
	gather := func(to int) {
		if to > from {
			b := UsageTotal(hours[from:to])
			b.Key = hours[from].Key
			out = append(out, b)
		}
		from = to
	}
	for i, h := range hours {
		at, err := time.Parse(time.RFC3339, h.Key)
		if err != nil {
			panic("store: an hour's key is no time: " + h.Key)
		}
		if i == 0 || !at.Before(end) {
			gather(i)
			end = at.Add(UsageBlock)
		}
	}
	gather(len(hours))
	return out
}

// totalParts adds up the rows' breakdowns by their parts' keys, most
// tokens first; nil without any.
func totalParts(rows []UsageRow) []UsageRow {
	byKey := map[string][]UsageRow{}
	for _, r := range rows {
		for _, part := range r.Breakdown {
			byKey[part.Key] = append(byKey[part.Key], part)
		}
	}
	var out []UsageRow
	for _, key := range slices.Sorted(maps.Keys(byKey)) {
		t := UsageTotal(byKey[key])
		t.Key = key
		out = append(out, t)
	}
	slices.SortStableFunc(out, func(a, b UsageRow) int { return cmp.Compare(b.Tokens.Total(), a.Tokens.Total()) })
	return out
}

// UsageTotal adds up a report's rows into one row keyed "Total", their
// breakdowns too: costs stay apart, reported and estimated, each without
// the float noise of the sum.
func UsageTotal(rows []UsageRow) UsageRow {
	t := UsageRow{Key: "Total", Models: []string{}}
	models, unpriced := map[string]bool{}, map[string]bool{}
	for _, r := range rows {
		t.Tokens.Add(r.Tokens)
		t.APIRequests += r.APIRequests
		t.Reported += r.Reported
		if r.ReportedCostUSD != nil {
			t.ReportedCostUSD = addCost(t.ReportedCostUSD, *r.ReportedCostUSD)
		}
		if r.EstimatedCostUSD != nil {
			t.EstimatedCostUSD = addCost(t.EstimatedCostUSD, *r.EstimatedCostUSD)
		}
		for _, m := range r.Models {
			if !models[m] {
				models[m] = true
				t.Models = append(t.Models, m)
			}
		}
		for _, m := range r.Unpriced {
			if !unpriced[m] {
				unpriced[m] = true
				t.Unpriced = append(t.Unpriced, m)
			}
		}
	}
	slices.Sort(t.Models)
	slices.Sort(t.Unpriced)
	roundMicros(t.EstimatedCostUSD)
	roundNanos(t.ReportedCostUSD)
	t.Breakdown = totalParts(rows)
	return t
}

// usageSum adds up the usage_hours rows of one group, model and tier range.
type usageSum struct {
	tokens, unreported pricing.Tokens
	requests, reported int64
	hasReported        bool
	reportedUSD        float64
	lastNS             int64
}

// namedArgs adds the optional argument to args when it is set (a named
// argument the statement lacks is an error).
func namedArgs(args map[string]any, name, value string) map[string]any {
	if value != "" {
		args[name] = value
	}
	return args
}

// ParseDay reads a local day as YYYY-MM-DD or YYYYMMDD, the days the usage
// report takes from its callers (the CLI, the JSON route and the page).
func ParseDay(s string) (time.Time, bool) {
	for _, layout := range []string{time.DateOnly, "20060102"} {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// sessionTotalsQuery reads, as hour rows of a report, the metrics of the
// sessions in its time range without usage records (UsagePlan.SessionTotals):
// one row at each one's start, its cost reported. sessions filters them
// (s), as usageHoursQuery's.
func sessionTotalsQuery(keys, sessions string) string {
	return `SELECT s.started_ns, '` + SessionTotalsModel + `', 0, 1,
		  json_extract(s.metrics, '$.tokens.input'), json_extract(s.metrics, '$.tokens.output'),
		  json_extract(s.metrics, '$.tokens.cache_read'), json_extract(s.metrics, '$.tokens.cache_creation'),
		  json_extract(s.metrics, '$.api_requests'), json_extract(s.metrics, '$.cost_usd'), s.started_ns, 0` + keys + `
		FROM sessions s
		WHERE s.started_ns >= :since AND s.started_ns < :until
		  AND s.pk NOT IN (SELECT session_pk FROM usage_hours)
		  AND s.metrics IS NOT NULL ` + sessions
}

// usageHoursQuery reads the hour rows of a report, with their groups' keys
// (UsagePlan.KeyColumns), in the time range, of the agent and model asked for; telemetry, where a
// session has it, stands for its files' records. It reads the covering
// index usage_hours_by_time, not the table (migration 011).
func usageHoursQuery(keys, join, filter string) string {
	return `SELECT h.hour_ns, h.model, h.prompt_range, h.reported,
		  h.input, h.output, h.cache_read, h.cache_creation, h.requests, h.cost_usd, h.last_ns, h.cache_creation_1h` + keys + `
		FROM usage_hours h ` + join + `
		WHERE h.hour_ns >= :since AND h.hour_ns < :until ` + filter + `
		  AND (h.source = 'otel' OR h.session_pk NOT IN (SELECT session_pk FROM usage_hours WHERE source = 'otel'))`
}
