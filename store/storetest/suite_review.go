package storetest

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentreview/service/pricing"
	"github.com/agentreview/service/store"
)

// usageRecord builds a usage record of session sid's root actor and turn.
func usageRecord(sid, id, at, model string, tok pricing.Tokens, requests int64, cost *float64, source string) store.UsageRecord {
	return store.UsageRecord{ID: id, At: at, Model: model, ActorID: rootID(sid), TurnID: sid + "-t1",
		Tokens: tok, Requests: requests, CostUSD: cost, Source: source}
}

// Usage records of a batch add up in the usage report by day, model,
// session, agent and 5-hour block; a session with OpenTelemetry records counts only
// those; a session without records counts its metrics, at its start, as
// the model store.SessionTotalsModel (a cost of no request, as Crush's,
// too), and one without either nothing; a deleted session's records are
// gone.
func testUsage(t *testing.T, s store.Backend) {
	half, quarter := 0.5, 0.25
	sessions := []struct {
		sid, agent string
		records    []store.UsageRecord
	}{
		{"a", "claude-code", []store.UsageRecord{
			usageRecord("a", "1", "2026-03-02T12:00:00Z", "claude-sonnet-4-5", pricing.Tokens{Input: 1000, Output: 200, CacheRead: 5000, CacheCreation: 800, CacheCreation1h: 600}, 1, nil, store.UsageFromFile),
			usageRecord("a", "2", "2026-03-02T13:30:00Z", "claude-sonnet-4-5", pricing.Tokens{Input: 30, Output: 7}, 1, &half, store.UsageFromFile),
			usageRecord("a", "3", "2026-03-03T12:00:00Z", "no-such-model", pricing.Tokens{Input: 7, CacheCreation: 3}, 1, nil, store.UsageFromFile),
		}},
		{"b", "cline", []store.UsageRecord{
			usageRecord("b", "1", "2026-03-03T11:00:00Z", "claude-sonnet-4-5", pricing.Tokens{Input: 10, Output: 1, CacheCreation: 50, CacheCreation1h: 20}, 2, &quarter, store.UsageFromFile),
		}},
		// OpenTelemetry records are authoritative: the file's are not counted.
		{"c", "claude-code", []store.UsageRecord{
			usageRecord("c", "1", "2026-03-03T12:00:00Z", "claude-opus-4-1", pricing.Tokens{Input: 999_999}, 1, nil, store.UsageFromFile),
			usageRecord("c", "otel-1", "2026-03-03T12:00:00Z", "claude-opus-4-1", pricing.Tokens{Input: 400, Output: 40}, 1, &half, store.UsageFromOTel),
		}},
		// The last second of the 5-hour block that b's record starts, the
		// first of the next, and one later in that next block.
		{"d", "codex", []store.UsageRecord{
			usageRecord("d", "1", "2026-03-03T15:59:59Z", "claude-sonnet-4-5", pricing.Tokens{Input: 3, Output: 4}, 1, nil, store.UsageFromFile),
			usageRecord("d", "2", "2026-03-03T16:00:00Z", "claude-sonnet-4-5", pricing.Tokens{Input: 5, Output: 6}, 1, nil, store.UsageFromFile),
			usageRecord("d", "3", "2026-03-03T20:30:00Z", "claude-sonnet-4-5", pricing.Tokens{Input: 7, Output: 8}, 1, &quarter, store.UsageFromFile),
		}},
	}
	agentOf := map[string]string{}
	// Two projects of two sessions each; the others in a folder of their own.
	rootOf := map[string]string{"a": "/repo/one", "c": "/repo/one", "b": "/repo/two", "d": "/repo/two"}
	counted := map[string][]store.UsageRecord{}
	for _, se := range sessions {
		b := smallBatch(se.sid)
		b.Session.Agent.Kind, b.Usage = se.agent, se.records
		b.Session.Workspace.Root = rootOf[se.sid]
		b.Steps[0].Payload.Text = genPtr("Prompt of `" + se.sid + "`\nand its second line")
		mustApply(t, s, b)
		agentOf[se.sid] = se.agent
		otel := slices.ContainsFunc(se.records, func(r store.UsageRecord) bool { return r.Source == store.UsageFromOTel })
		for _, r := range se.records {
			if !otel || r.Source == store.UsageFromOTel {
				counted[se.sid] = append(counted[se.sid], r)
			}
		}
	}
	// Sessions without usage records: the report counts their metrics as
	// one record at their start.
	for _, se := range []struct {
		sid, agent string
		metrics    *store.Metrics
	}{
		{"p", "testagent", header("p").Metrics},
		{"q", "crush", &store.Metrics{CostUSD: 0.75}},
		{"r", "testagent", nil},
	} {
		b := smallBatch(se.sid)
		b.Session.Agent.Kind, b.Session.Metrics = se.agent, se.metrics
		b.Steps[0].Payload.Text = genPtr("Prompt of `" + se.sid + "`\nand its second line")
		mustApply(t, s, b)
		agentOf[se.sid], rootOf[se.sid] = se.agent, b.Session.Workspace.Root
		if m := se.metrics; m != nil {
			counted[se.sid] = []store.UsageRecord{usageRecord(se.sid, "metrics", b.Session.StartedAt, store.SessionTotalsModel,
				pricing.Tokens{Input: m.Tokens.Input, Output: m.Tokens.Output, CacheRead: m.Tokens.CacheRead, CacheCreation: m.Tokens.CacheCreation},
				m.APIRequests, &m.CostUSD, store.UsageFromFile)}
		}
	}
	day := func(at string) string { t, _ := store.ParseTimestamp(at); return t.Local().Format(time.DateOnly) }
	keyOf := map[string]func(sid string, r store.UsageRecord) string{
		store.UsageByDay:     func(_ string, r store.UsageRecord) string { return day(r.At) },
		store.UsageByModel:   func(_ string, r store.UsageRecord) string { return r.Model },
		store.UsageBySession: func(sid string, _ store.UsageRecord) string { return sid },
		store.UsageByAgent:   func(sid string, _ store.UsageRecord) string { return agentOf[sid] },
		store.UsageByProject: func(sid string, _ store.UsageRecord) string { return rootOf[sid] },
	}
	// blockKeys are the 5-hour blocks of the counted records keep holds, by
	// session and record id: in time order, a record at or past its
	// block's end starts the next, at its hour (UTC).
	blockKeys := func(keep func(sid string, r store.UsageRecord) bool) map[string]string {
		type held struct {
			key string
			at  time.Time
		}
		var all []held
		for sid, rs := range counted {
			for _, r := range rs {
				if keep(sid, r) {
					at, _ := store.ParseTimestamp(r.At)
					all = append(all, held{sid + "/" + r.ID, at})
				}
			}
		}
		slices.SortFunc(all, func(a, b held) int { return a.at.Compare(b.at) })
		keys := map[string]string{}
		var start time.Time
		for i, h := range all {
			if i == 0 || !h.at.Before(start.Add(5*time.Hour)) {
				start = h.at.UTC().Truncate(time.Hour)
			}
			keys[h.key] = start.Format(time.RFC3339)
		}
		return keys
	}
	// want adds up the counted records keep holds, by group: rows by key,
	// then, for groups that are not times, by tokens, most first.
	keyFor := func(group string, keep func(sid string, r store.UsageRecord) bool) func(sid string, r store.UsageRecord) string {
		if group == store.UsageByBlock {
			blocks := blockKeys(keep)
			return func(sid string, r store.UsageRecord) string { return blocks[sid+"/"+r.ID] }
		}
		return keyOf[group]
	}
	want := func(group string, keep func(sid string, r store.UsageRecord) bool) []store.UsageRow {
		key := keyFor(group, keep)
		rows := map[string]*store.UsageRow{}
		for sid, rs := range counted {
			for _, r := range rs {
				if !keep(sid, r) {
					continue
				}
				k := key(sid, r)
				row := rows[k]
				if row == nil {
					row = &store.UsageRow{Key: k}
					rows[k] = row
				}
				if !slices.Contains(row.Models, r.Model) {
					row.Models = append(row.Models, r.Model)
					slices.Sort(row.Models)
				}
				row.Tokens.Add(r.Tokens)
				row.APIRequests += r.Requests
				if r.CostUSD != nil {
					row.ReportedCostUSD = genPtr(*r.CostUSD + valueOr(row.ReportedCostUSD))
					row.Reported += r.Requests
				}
			}
		}
		out := []store.UsageRow{}
		for _, r := range rows {
			out = append(out, *r)
		}
		slices.SortFunc(out, func(a, b store.UsageRow) int { return cmp.Compare(a.Key, b.Key) })
		if group != store.UsageByDay && group != store.UsageByBlock {
			slices.SortStableFunc(out, func(a, b store.UsageRow) int { return cmp.Compare(b.Tokens.Total(), a.Tokens.Total()) })
		}
		return out
	}
	all := func(string, store.UsageRecord) bool { return true }
	compare := func(q store.UsageQuery, got, want []store.UsageRow) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("UsageReport(%+v) = %+v; want %+v", q, got, want)
		}
		for i := range want {
			g, w := got[i], want[i]
			if g.Key != w.Key || !slices.Equal(g.Models, w.Models) || g.Tokens != w.Tokens || g.APIRequests != w.APIRequests ||
				g.Reported != w.Reported || (g.ReportedCostUSD == nil) != (w.ReportedCostUSD == nil) ||
				math.Abs(valueOr(g.ReportedCostUSD)-valueOr(w.ReportedCostUSD)) > 1e-9 {
				t.Errorf("UsageReport(%+v)[%d] = %+v (reported %v); want %+v (reported %v)", q, i, g, ptrText(g.ReportedCostUSD), w, ptrText(w.ReportedCostUSD))
			}
			if slices.Contains(g.Models, "no-such-model") && !slices.Contains(g.Unpriced, "no-such-model") {
				t.Errorf("UsageReport(%+v)[%d].Unpriced = %v; want no-such-model listed", q, i, g.Unpriced)
			}
			if q.Breakdown == "" && g.Breakdown != nil {
				t.Errorf("UsageReport(%+v)[%d].Breakdown = %+v; want none", q, i, g.Breakdown)
			}
		}
	}
	check := func(q store.UsageQuery, want []store.UsageRow) {
		t.Helper()
		got, err := store.UsageReport(bg, s, q)
		if err != nil {
			t.Fatalf("UsageReport(%+v) = %v", q, err)
		}
		compare(q, got, want)
	}
	groups := []string{store.UsageByDay, store.UsageByModel, store.UsageBySession, store.UsageByAgent, store.UsageByProject, store.UsageByBlock}
	for _, group := range groups {
		check(store.UsageQuery{Group: group}, want(group, all))
	}
	// Each row's breakdown is the report of its own records by model or
	// agent, and the reports asked beside it are each as if alone.
	for _, by := range store.UsageBreakdowns {
		for _, group := range groups {
			q := store.UsageQuery{Group: group, Breakdown: by}
			reports, err := s.UsageReports(bg, q, groups...)
			if err != nil || len(reports) != 1+len(groups) {
				t.Fatalf("UsageReports(%+v, %v) = %d reports, %v", q, groups, len(reports), err)
			}
			compare(q, reports[0], want(group, all))
			key := keyFor(group, all)
			for _, row := range reports[0] {
				of := func(sid string, r store.UsageRecord) bool { return key(sid, r) == row.Key }
				compare(store.UsageQuery{Group: by}, row.Breakdown, want(by, of))
			}
			for i, g := range groups {
				compare(store.UsageQuery{Group: g}, reports[1+i], want(g, all))
			}
		}
	}
	// By cost: each key's reported costs and the estimate of its requests
	// without one, priced one by one, most first.
	byCost := func(group string) []string {
		key, cost := keyOf[group], map[string]float64{}
		for sid, rs := range counted {
			for _, r := range rs {
				usd := valueOr(r.CostUSD)
				if r.CostUSD == nil {
					at, _ := store.ParseTimestamp(r.At)
					usd, _ = pricing.Default().Estimate(r.Model, at, r.Tokens)
				}
				cost[key(sid, r)] += usd
			}
		}
		keys := keysOf(want(group, all))
		slices.SortFunc(keys, func(a, b string) int {
			if math.Abs(cost[a]-cost[b]) < 1e-6 {
				t.Fatalf("%s %q and %q cost %v and %v: the records should tell every key's cost apart", group, a, b, cost[a], cost[b])
			}
			return cmp.Compare(cost[b], cost[a])
		})
		return keys
	}
	for _, group := range []string{store.UsageBySession, store.UsageByModel, store.UsageByAgent, store.UsageByProject} {
		q := store.UsageQuery{Group: group, Sort: store.UsageSortCost}
		reports, err := s.UsageReports(bg, q, group)
		if err != nil || len(reports) != 2 {
			t.Fatalf("UsageReports(%+v, %s) = %d reports, %v", q, group, len(reports), err)
		}
		got := keysOf(reports[0])
		if want := byCost(group); !slices.Equal(got, want) {
			t.Errorf("UsageReport(%+v) keys = %q; want by cost %q", q, got, want)
		}
		if slices.Equal(got, keysOf(want(group, all))) {
			t.Errorf("UsageReport(%+v): the records rank %s the same by cost and by tokens; want them apart", q, group)
		}
		// The report asked beside it keeps its order by tokens.
		compare(store.UsageQuery{Group: group}, reports[1], want(group, all))
	}
	// The usage page's read: the sessions asked beside the days by cost
	// (SortSessions), the days and the models beside them by tokens.
	for _, by := range store.UsageSorts {
		q := store.UsageQuery{Group: store.UsageByDay, SortSessions: by}
		reports, err := s.UsageReports(bg, q, store.UsageByModel, store.UsageBySession)
		if err != nil || len(reports) != 3 {
			t.Fatalf("UsageReports(%+v, model, session) = %d reports, %v", q, len(reports), err)
		}
		compare(store.UsageQuery{Group: store.UsageByDay}, reports[0], want(store.UsageByDay, all))
		compare(store.UsageQuery{Group: store.UsageByModel}, reports[1], want(store.UsageByModel, all))
		wantKeys := keysOf(want(store.UsageBySession, all))
		if by == store.UsageSortCost {
			wantKeys = byCost(store.UsageBySession)
		}
		if got := keysOf(reports[2]); !slices.Equal(got, wantKeys) {
			t.Errorf("UsageReports(%+v) sessions = %q; want by %s %q", q, got, by, wantKeys)
		}
	}
	for _, q := range []store.UsageQuery{{Group: store.UsageBySession, Sort: "price"}, {Group: store.UsageByDay, Sort: store.UsageSortCost}, {Group: store.UsageByBlock, Sort: store.UsageSortTokens},
		{Group: store.UsageByDay, SortSessions: "price"}} {
		if _, err := s.UsageReports(bg, q); err == nil {
			t.Errorf("UsageReports(%+v) = nil error; want the sort refused", q)
		}
	}
	if _, err := s.UsageReports(bg, store.UsageQuery{Group: store.UsageByDay, Breakdown: store.UsageByProject}); err == nil {
		t.Errorf("UsageReports(breakdown by project) = nil error; want it refused")
	}
	if _, err := s.UsageReports(bg, store.UsageQuery{Group: store.UsageByDay}, "fortnight"); err == nil {
		t.Errorf("UsageReports(day and fortnight) = nil error; want the group refused")
	}
	if blocks := want(store.UsageByBlock, all); len(blocks) < 4 {
		t.Fatalf("the records make %d blocks; want some of several hours and one started by a record at another's end", len(blocks))
	}
	check(store.UsageQuery{Group: store.UsageByDay, Agent: "cline"}, want(store.UsageByDay, func(sid string, _ store.UsageRecord) bool { return agentOf[sid] == "cline" }))
	for _, model := range []string{"claude-sonnet-4-5", store.SessionTotalsModel} {
		check(store.UsageQuery{Group: store.UsageBySession, Model: model}, want(store.UsageBySession, func(_ string, r store.UsageRecord) bool { return r.Model == model }))
	}
	check(store.UsageQuery{Group: store.UsageBySession, Agent: "crush"}, want(store.UsageBySession, func(sid string, _ store.UsageRecord) bool { return agentOf[sid] == "crush" }))
	// A project's sessions alone, with the other filters too; a project
	// no session has, nothing.
	for _, root := range []string{"/repo/one", "/repo/two", rootOf["q"], "/repo/none", "/repo"} {
		inProject := func(sid string, _ store.UsageRecord) bool { return rootOf[sid] == root }
		for _, group := range groups {
			check(store.UsageQuery{Group: group, Project: root}, want(group, inProject))
		}
		check(store.UsageQuery{Group: store.UsageByDay, Project: root, Agent: "claude-code", Model: "claude-sonnet-4-5"}, want(store.UsageByDay, func(sid string, r store.UsageRecord) bool {
			return inProject(sid, r) && agentOf[sid] == "claude-code" && r.Model == "claude-sonnet-4-5"
		}))
	}
	since, until := time.Date(2026, 3, 3, 0, 0, 0, 0, time.Local), time.Date(2026, 3, 4, 0, 0, 0, 0, time.Local)
	inRange := func(_ string, r store.UsageRecord) bool {
		at, _ := store.ParseTimestamp(r.At)
		return !at.Before(since) && at.Before(until)
	}
	check(store.UsageQuery{Group: store.UsageByModel, Since: since, Until: until}, want(store.UsageByModel, inRange))
	check(store.UsageQuery{Group: store.UsageByBlock, Since: since, Until: until}, want(store.UsageByBlock, inRange))
	if _, err := store.UsageReport(bg, s, store.UsageQuery{Group: "fortnight"}); err == nil {
		t.Errorf("UsageReport(group fortnight) = nil error; want the group refused")
	}

	// A session's detail carries its own usage.
	d := mustDetail(t, s, "c")
	var tok pricing.Tokens
	var requests int64
	for _, r := range counted["c"] {
		tok.Add(r.Tokens)
		requests += r.Requests
	}
	if d.Usage == nil || d.Usage.Tokens != tok || d.Usage.APIRequests != requests || d.Usage.Source != store.UsageFromOTel {
		t.Errorf("Detail(c).Usage = %+v; want %+v over %d requests from otel", d.Usage, tok, requests)
	}
	// Read (and remembered, Tally.Usage), then a record's final counts
	// pushed: the next read sums them.
	mustDetail(t, s, "b")
	final := counted["b"][0]
	final.Tokens.Output += 40
	b := smallBatch("b")
	b.Session.Agent.Kind, b.Usage = "cline", []store.UsageRecord{final}
	mustApply(t, s, b)
	counted["b"] = []store.UsageRecord{final}
	if u := mustDetail(t, s, "b").Usage; u == nil || u.Tokens != final.Tokens {
		t.Errorf("Detail(b).Usage after its record changed = %+v; want %+v", u, final.Tokens)
	}

	// The estimates price an hour's cache writes too, and only the requests
	// without a reported cost (a's first; its second reported one, its third
	// has no price), in the session's detail as in the report, so that
	// reported and estimated add up to the session's cost.
	var estimate float64
	for _, r := range counted["a"] {
		at, _ := store.ParseTimestamp(r.At)
		if usd, ok := pricing.Default().Estimate(r.Model, at, r.Tokens); ok && r.CostUSD == nil {
			estimate += usd
		}
	}
	ua := mustDetail(t, s, "a").Usage
	if ua == nil || ua.EstimatedCostUSD == nil || math.Abs(*ua.EstimatedCostUSD-estimate) > 1e-9 || valueOr(ua.ReportedCostUSD) != *counted["a"][1].CostUSD ||
		!slices.Equal(ua.Unpriced, []string{"no-such-model"}) {
		t.Errorf("Detail(a).Usage = %+v; want an estimate of %v, %v reported, no-such-model unpriced", ua, estimate, *counted["a"][1].CostUSD)
	}
	// So does each turn (a's one turn) and each model: its requests
	// without a reported cost estimated, the others' costs reported.
	if ua == nil || len(ua.Turns) != 1 || ua.Turns[0].EstimatedCostUSD == nil ||
		math.Abs(*ua.Turns[0].EstimatedCostUSD-estimate) > 1e-6 || valueOr(ua.Turns[0].ReportedCostUSD) != *counted["a"][1].CostUSD {
		t.Errorf("Detail(a).Usage.Turns = %+v; want one turn estimated at %v, %v reported", ua.Turns, estimate, *counted["a"][1].CostUSD)
	}
	for _, m := range ua.Models {
		var wantEstimate, wantReported *float64
		for _, r := range counted["a"] {
			at, _ := store.ParseTimestamp(r.At)
			if r.Model != m.Model {
				continue
			} else if r.CostUSD != nil {
				wantReported = genPtr(valueOr(wantReported) + *r.CostUSD)
			} else if usd, ok := pricing.Default().Estimate(r.Model, at, r.Tokens); ok {
				wantEstimate = genPtr(valueOr(wantEstimate) + usd)
			}
		}
		if (m.EstimatedCostUSD == nil) != (wantEstimate == nil) || math.Abs(valueOr(m.EstimatedCostUSD)-valueOr(wantEstimate)) > 1e-6 ||
			(m.ReportedCostUSD == nil) != (wantReported == nil) || valueOr(m.ReportedCostUSD) != valueOr(wantReported) {
			t.Errorf("Detail(a) model %s: estimated %v, reported %v; want %v and %v", m.Model, ptrText(m.EstimatedCostUSD), ptrText(m.ReportedCostUSD), ptrText(wantEstimate), ptrText(wantReported))
		}
	}
	rows, err := store.UsageReport(bg, s, store.UsageQuery{Group: store.UsageBySession, Sessions: []string{"a"}})
	if err != nil || len(rows) != 1 || rows[0].EstimatedCostUSD == nil || math.Abs(*rows[0].EstimatedCostUSD-estimate) > 1e-6 ||
		valueOr(rows[0].ReportedCostUSD) != valueOr(ua.ReportedCostUSD) {
		t.Errorf("UsageReport(session a) = %+v, %v; want the detail's costs, an estimate of %v", rows, err, estimate)
	}

	if err := s.Delete(bg, "a"); err != nil {
		t.Fatalf("Delete(a) = %v", err)
	}
	delete(counted, "a")
	check(store.UsageQuery{Group: store.UsageBySession}, want(store.UsageBySession, all))

	// Titles: the first rows by session carry their first prompt's first
	// line; the others, and other groups, none.
	rows, err = store.UsageReport(bg, s, store.UsageQuery{Group: store.UsageBySession, Titles: 1})
	if err != nil || len(rows) != len(counted) {
		t.Fatalf("UsageReport(by session, 1 title) = %d rows, %v; want %d", len(rows), err, len(counted))
	}
	if want := "Prompt of `" + rows[0].Key + "`"; rows[0].Title != want || rows[1].Title != "" {
		t.Errorf("titles = %q, %q; want %q and none", rows[0].Title, rows[1].Title, want)
	}
	// By cost, the first by cost.
	rows, err = store.UsageReport(bg, s, store.UsageQuery{Group: store.UsageBySession, Sort: store.UsageSortCost, Titles: 1})
	if want := byCost(store.UsageBySession)[0]; err != nil || rows[0].Key != want || rows[0].Title != "Prompt of `"+want+"`" || rows[1].Title != "" {
		t.Errorf("UsageReport(by session, by cost, 1 title) = %+v, %v; want %s's title first and no other", rows, err, want)
	}
	rows, err = store.UsageReport(bg, s, store.UsageQuery{Group: store.UsageByAgent, Titles: 5})
	if err != nil || slices.ContainsFunc(rows, func(r store.UsageRow) bool { return r.Title != "" }) {
		t.Errorf("UsageReport(by agent, 5 titles) = %+v, %v; want no title", rows, err)
	}
}

// The report of UsageQuery.Unrecorded keeps the sessions a list's filters
// keep that have no metrics (whose cost the list's total has only from
// their requests' reports): each with its row of the whole report.
func testUsageUnrecorded(t *testing.T, s store.Backend) {
	cost := 0.02
	for _, se := range []struct {
		sid, agent, started string
		metrics             bool
		records             []store.UsageRecord
	}{
		{"um", "claude-code", "2026-03-02T09:00:00Z", true, nil},
		{"un1", "claude-code", "2026-03-02T10:00:00Z", false, nil},
		{"un2", "codex", "2026-03-03T10:00:00Z", false, nil},
		{"un3", "claude-code", "2026-03-04T10:00:00Z", false, nil},
		{"un4", "claude-code", "2026-03-04T11:00:00Z", false, nil}, // no records
	} {
		b := smallBatch(se.sid)
		b.Session.Agent.Kind, b.Session.StartedAt = se.agent, se.started
		if !se.metrics {
			b.Session.Metrics = nil
		}
		if se.sid != "un4" {
			b.Usage = []store.UsageRecord{
				usageRecord(se.sid, "1", se.started, "claude-sonnet-4-5", pricing.Tokens{Input: 1000, Output: 100}, 1, nil, store.UsageFromFile),
				usageRecord(se.sid, "2", se.started, "claude-sonnet-4-5", pricing.Tokens{Input: 10, Output: 1}, 1, &cost, store.UsageFromFile),
			}
		}
		mustApply(t, s, b)
	}
	whole, err := store.UsageReport(bg, s, store.UsageQuery{Group: store.UsageBySession})
	if err != nil {
		t.Fatal(err)
	}
	for _, lq := range []store.ListQuery{{}, {Agent: "claude-code"}, {Since: "2026-03-03"}, {Agent: "codex", Until: "2026-03-03"}, {Cost: "recorded"}} {
		// The sessions of the list without metrics, with records.
		l, err := s.List(bg, lq)
		if err != nil {
			t.Fatal(err)
		}
		kept := map[string]bool{}
		for _, o := range l.Sessions {
			kept[o.ID] = o.Metrics == nil
		}
		var want []store.UsageRow
		for _, r := range whole {
			if kept[r.Key] {
				want = append(want, r)
			}
		}
		got, err := store.UsageReport(bg, s, store.UsageQuery{Group: store.UsageBySession, Unrecorded: &lq})
		if err != nil || len(got) != len(want) {
			t.Fatalf("UsageReport(unrecorded %+v) = %+v, %v; want %+v", lq, got, err, want)
		}
		for i := range want {
			if got[i].Key != want[i].Key || got[i].Tokens != want[i].Tokens || valueOr(got[i].EstimatedCostUSD) != valueOr(want[i].EstimatedCostUSD) ||
				valueOr(got[i].ReportedCostUSD) != valueOr(want[i].ReportedCostUSD) {
				t.Errorf("UsageReport(unrecorded %+v)[%d] = %+v; want %+v", lq, i, got[i], want[i])
			}
		}
		// The list's total, asked for its estimate (a page of one), adds
		// up those rows' estimates; not asked, it has none.
		wantUSD := store.UsageTotal(want).EstimatedCostUSD
		asked := lq
		asked.Estimate, asked.Limit = true, 1
		if l, err := s.List(bg, asked); err != nil || (l.Total.EstimatedCostUSD == nil) != (wantUSD == nil) || valueOr(l.Total.EstimatedCostUSD) != valueOr(wantUSD) {
			t.Errorf("List(%+v).Total = %+v (estimate %v), %v; want an estimate of %v", asked, l.Total, ptrText(l.Total.EstimatedCostUSD), err, ptrText(wantUSD))
		}
		if l.Total.EstimatedCostUSD != nil {
			t.Errorf("List(%+v).Total = %+v; want no estimate unless asked", lq, l.Total)
		}
	}
	if rows, err := store.UsageReport(bg, s, store.UsageQuery{Group: store.UsageBySession, Unrecorded: &store.ListQuery{}}); err != nil || len(rows) != 3 {
		t.Errorf("UsageReport(unrecorded) = %d rows, %v; want the 3 sessions without metrics with records", len(rows), err)
	}
	if _, err := store.UsageReport(bg, s, store.UsageQuery{Group: store.UsageBySession, Unrecorded: &store.ListQuery{Since: "yesterday"}}); !errors.Is(err, store.ErrBadFilter) {
		t.Errorf("UsageReport(unrecorded since yesterday) = %v; want ErrBadFilter", err)
	}
}

// keysOf is the keys of rows, in their order.
func keysOf(rows []store.UsageRow) []string {
	keys := make([]string, len(rows))
	for i, r := range rows {
		keys[i] = r.Key
	}
	return keys
}

// A session's usage, read after each of several writes (and so
// remembered, then brought up to date from the records written since:
// store.Tally.Usage), is the sum of every record it then holds, in time
// order: new records before and after the ones read, a record's final
// counts, a write that changes no record, OpenTelemetry records.
func testUsageFollowsWrites(t *testing.T, s store.Backend) {
	sid := "uf"
	cost := func(v float64) *float64 { return &v }
	held := map[string]store.UsageRecord{}
	rounds := [][]store.UsageRecord{
		{
			usageRecord(sid, "a1", "2026-03-02T12:00:00Z", "claude-sonnet-4-5", pricing.Tokens{Input: 1000, Output: 200, CacheRead: 5000}, 1, cost(0.1), store.UsageFromFile),
			usageRecord(sid, "a2", "2026-03-02T12:05:00Z", "claude-opus-4-1", pricing.Tokens{Input: 30, Output: 7, CacheCreation: 900}, 1, nil, store.UsageFromFile),
			usageRecord(sid, "a3", "2026-03-02T11:00:00Z", "claude-haiku-4-5", pricing.Tokens{Input: 5, Output: 3}, 1, cost(0.2), store.UsageFromFile),
		},
		{
			usageRecord(sid, "a2", "2026-03-02T12:05:00Z", "claude-opus-4-1", pricing.Tokens{Input: 30, Output: 12, CacheCreation: 900}, 1, nil, store.UsageFromFile),
			usageRecord(sid, "a4", "2026-03-02T11:30:00Z", "claude-sonnet-4-5", pricing.Tokens{Input: 70, Output: 1}, 2, cost(0.3), store.UsageFromFile),
			usageRecord(sid, "a0", "2026-03-02T12:00:00Z", "claude-sonnet-4-5", pricing.Tokens{Input: 1, Output: 1}, 1, cost(0.7), store.UsageFromFile),
			usageRecord(sid, "a5", "2026-03-02T13:00:00Z", "no-such-model", pricing.Tokens{Input: 9}, 1, nil, store.UsageFromFile),
		},
		{}, // a write of steps alone
		{usageRecord(sid, "otel-1", "2026-03-02T12:30:00Z", "claude-opus-4-1", pricing.Tokens{Input: 400, Output: 40}, 1, cost(0.5), store.UsageFromOTel)},
	}
	for i, round := range rounds {
		b := smallBatch(sid)
		b.Usage = round
		if len(round) == 0 {
			b.Steps[0].Payload.Text = genPtr("changed in round " + fmt.Sprint(i))
		}
		mustApply(t, s, b)
		for _, r := range round {
			held[r.ID] = r
		}
		all := slices.Collect(maps.Values(held))
		slices.SortFunc(all, func(a, b store.UsageRecord) int {
			an, _ := a.Normalized()
			bn, _ := b.Normalized()
			return cmp.Or(cmp.Compare(an, bn), cmp.Compare(a.ID, b.ID))
		})
		want := store.SessionUsage(all)
		if got := mustDetail(t, s, sid).Usage; !reflect.DeepEqual(got, want) {
			t.Errorf("round %d: Detail.Usage = %+v; want %+v", i, got, want)
		}
	}
}

func valueOr(f *float64) float64 {
	if f == nil {
		return 0
	}
	return *f
}

func ptrText(f *float64) any {
	if f == nil {
		return nil
	}
	return *f
}

// wantInvalid checks that err is an *InvalidError of subject with a
// problem at path saying message.
func wantInvalid(t *testing.T, call string, err error, subject, path, message string) {
	t.Helper()
	e := wantErr[*store.InvalidError](t, call, err)
	if e.Subject != subject || e.Error() != "invalid "+subject ||
		!slices.ContainsFunc(e.Problems, func(p store.Problem) bool { return p.Path == path && strings.Contains(p.Message, message) }) {
		t.Errorf("%s = %v %+v; want an invalid %s at %s saying %q", call, e, e.Problems, subject, path, message)
	}
}

// A verdict is set, replaced and cleared by its own calls only: a push
// never changes it. A verdict out of bounds and an unknown session are
// refused, and leave the store as it was.
func testVerdict(t *testing.T, s store.Backend) {
	mustApply(t, s, smallBatch("a"))
	mustApply(t, s, smallBatch("b"))
	for _, v := range []store.Verdict{
		{State: "approved", Note: "looks fine\nexcept the edit", Reviewer: "ann"},
		{State: "needs_attention"},
		{State: "any-other-word", Reviewer: "bob"},
	} {
		before := mustLatest(t, s)
		if err := s.SetVerdict(bg, "a", v); err != nil {
			t.Fatalf("SetVerdict(a, %+v) = %v", v, err)
		}
		if got := mustDetail(t, s, "a").Verdict; got == nil || *got != v {
			t.Errorf("Detail(a).Verdict = %+v; want %+v", got, v)
		}
		if cs, _ := mustChanges(t, s, before); len(cs) != 1 || cs[0].SessionID != "a" {
			t.Errorf("SetVerdict(a): changes %v; want a", cs)
		}
		if l := mustList(t, s, store.ListQuery{Verdict: v.State}); !slices.Equal(ids(l.Sessions), []string{"a"}) {
			t.Errorf("List(verdict %s) = %v; want [a]", v.State, ids(l.Sessions))
		}
	}
	last := mustDetail(t, s, "a").Verdict
	b := smallBatch("a")
	b.Steps[1].Payload.Stdout = genPtr("a new push")
	mustApply(t, s, b)
	if got := mustDetail(t, s, "a").Verdict; !reflect.DeepEqual(got, last) {
		t.Errorf("Detail(a).Verdict after a push = %+v; want %+v kept", got, last)
	}

	long := strings.Repeat("é", store.MaxNoteChars+1)
	for _, tc := range []struct {
		v             store.Verdict
		path, message string
	}{
		{store.Verdict{}, "state", "required"},
		{store.Verdict{State: "two\nlines"}, "state", "one line"},
		{store.Verdict{State: strings.Repeat("s", store.MaxStateChars+1)}, "state", "longer than"},
		{store.Verdict{State: "approved", Note: long}, "note", "longer than"},
		{store.Verdict{State: "approved", Reviewer: "ann\tbob"}, "reviewer", "one line"},
		{store.Verdict{State: "approved", Reviewer: strings.Repeat("r", store.MaxNameChars+1)}, "reviewer", "longer than"},
	} {
		before := takeSnapshot(t, s)
		wantInvalid(t, "SetVerdict", s.SetVerdict(bg, "b", tc.v), "verdict", tc.path, tc.message)
		assertUnchanged(t, s, before)
	}
	before := takeSnapshot(t, s)
	if err := s.SetVerdict(bg, "nope", store.Verdict{State: "approved"}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("SetVerdict(nope) = %v; want ErrNotFound", err)
	}
	if err := s.ClearVerdict(bg, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("ClearVerdict(nope) = %v; want ErrNotFound", err)
	}
	assertUnchanged(t, s, before)

	if err := s.ClearVerdict(bg, "a"); err != nil {
		t.Fatalf("ClearVerdict(a) = %v", err)
	}
	if got := mustDetail(t, s, "a").Verdict; got != nil {
		t.Errorf("Detail(a).Verdict after ClearVerdict = %+v; want none", got)
	}
	if err := s.ClearVerdict(bg, "b"); err != nil {
		t.Errorf("ClearVerdict(b without a verdict) = %v; want nil", err)
	}
	if l := mustList(t, s, store.ListQuery{}); len(l.Verdicts) != 0 {
		t.Errorf("List().Verdicts = %+v; want none left", l.Verdicts)
	}
}

// Notes on steps: added, listed in step order, edited and deleted; a
// note out of bounds, on no step, or of another session is refused and
// leaves the store as it was.
func testNotes(t *testing.T, s store.Backend) {
	mustApply(t, s, smallBatch("a"))
	mustApply(t, s, smallBatch("b"))
	add := func(id string, in store.NoteInput) store.Note {
		t.Helper()
		before := mustLatest(t, s)
		n, err := s.AddNote(bg, id, in)
		if err != nil {
			t.Fatalf("AddNote(%s, %+v) = %v", id, in, err)
		}
		if n.ID == 0 || n.Seq != in.Seq || n.Author != in.Author || n.Text != in.Text || n.CreatedAt == "" || n.UpdatedAt != n.CreatedAt {
			t.Errorf("AddNote(%s, %+v) = %+v; want the note as written, with an id and its time", id, in, n)
		}
		if cs, _ := mustChanges(t, s, before); len(cs) != 1 || cs[0].SessionID != id {
			t.Errorf("AddNote(%s): changes %v; want %s", id, cs, id)
		}
		return n
	}
	notes := func(id string) []store.Note {
		t.Helper()
		return mustDetail(t, s, id).Notes
	}
	// The summary counts them, in the list and in the session.
	counted := func(when string, want map[string]int) {
		t.Helper()
		for _, o := range mustList(t, s, store.ListQuery{}).Sessions {
			if d := mustDetail(t, s, o.ID); o.Summary.Notes != want[o.ID] || d.Summary.Notes != want[o.ID] {
				t.Errorf("%s: %s's summary counts %d notes in the list, %d in the session; want %d", when, o.ID, o.Summary.Notes, d.Summary.Notes, want[o.ID])
			}
		}
	}
	counted("before any note", nil)
	n1 := add("a", store.NoteInput{Seq: 2, Author: "ann", Text: "why does this run the tests?\nAsk."})
	n2 := add("a", store.NoteInput{Seq: 1, Author: "bob", Text: "good prompt"})
	n3 := add("b", store.NoteInput{Seq: 2, Author: "ann", Text: "same here"})
	if got, want := notes("a"), []store.Note{n2, n1}; !reflect.DeepEqual(got, want) {
		t.Errorf("Detail(a).Notes = %+v; want %+v (in step order)", got, want)
	}
	counted("three notes added", map[string]int{"a": 2, "b": 1})

	edited, err := s.EditNote(bg, "a", n1.ID, store.NoteInput{Author: "ann", Text: "fine after all"})
	if err != nil {
		t.Fatalf("EditNote(a, %d) = %v", n1.ID, err)
	}
	if edited.ID != n1.ID || edited.Seq != n1.Seq || edited.Text != "fine after all" || edited.CreatedAt != n1.CreatedAt || edited.UpdatedAt < n1.UpdatedAt {
		t.Errorf("EditNote(a, %d) = %+v; want %+v with the new text", n1.ID, edited, n1)
	}
	if got, want := notes("a"), []store.Note{n2, edited}; !reflect.DeepEqual(got, want) {
		t.Errorf("Detail(a).Notes after the edit = %+v; want %+v", got, want)
	}
	if err := s.DeleteNote(bg, "a", n2.ID); err != nil {
		t.Fatalf("DeleteNote(a, %d) = %v", n2.ID, err)
	}
	if got, want := notes("a"), []store.Note{edited}; !reflect.DeepEqual(got, want) {
		t.Errorf("Detail(a).Notes after the delete = %+v; want %+v", got, want)
	}
	counted("a note deleted", map[string]int{"a": 1, "b": 1})
	mustApply(t, s, smallBatch("a"))
	b := smallBatch("a")
	b.Steps[1].Payload.Stdout = genPtr("a new push")
	mustApply(t, s, b)
	if got, want := notes("a"), []store.Note{edited}; !reflect.DeepEqual(got, want) {
		t.Errorf("Detail(a).Notes after a push = %+v; want %+v kept", got, want)
	}

	long := strings.Repeat("n", store.MaxNoteChars+1)
	refused := []struct {
		name string
		call func() error
		want func(t *testing.T, err error)
	}{
		{"seq of no step", func() error {
			_, err := s.AddNote(bg, "a", store.NoteInput{Seq: 99, Author: "ann", Text: "x"})
			return err
		}, func(t *testing.T, err error) { wantInvalid(t, "AddNote(seq 99)", err, "note", "seq", "99") }},
		{"no author", func() error { _, err := s.AddNote(bg, "a", store.NoteInput{Seq: 1, Text: "x"}); return err },
			func(t *testing.T, err error) { wantInvalid(t, "AddNote(no author)", err, "note", "author", "required") }},
		{"no text", func() error { _, err := s.AddNote(bg, "a", store.NoteInput{Seq: 1, Author: "ann"}); return err },
			func(t *testing.T, err error) { wantInvalid(t, "AddNote(no text)", err, "note", "text", "required") }},
		{"text too long", func() error {
			_, err := s.AddNote(bg, "a", store.NoteInput{Seq: 1, Author: "ann", Text: long})
			return err
		}, func(t *testing.T, err error) { wantInvalid(t, "AddNote(long)", err, "note", "text", "longer than") }},
		{"author on two lines", func() error {
			_, err := s.EditNote(bg, "a", edited.ID, store.NoteInput{Author: "a\nb", Text: "x"})
			return err
		}, func(t *testing.T, err error) {
			wantInvalid(t, "EditNote(two-line author)", err, "note", "author", "one line")
		}},
		{"add to an unknown session", func() error {
			_, err := s.AddNote(bg, "nope", store.NoteInput{Seq: 1, Author: "ann", Text: "x"})
			return err
		}, notFoundCheck("AddNote(nope)")},
		{"edit a deleted note", func() error {
			_, err := s.EditNote(bg, "a", n2.ID, store.NoteInput{Author: "ann", Text: "x"})
			return err
		}, notFoundCheck("EditNote(deleted note)")},
		{"edit another session's note", func() error {
			_, err := s.EditNote(bg, "a", n3.ID, store.NoteInput{Author: "ann", Text: "x"})
			return err
		}, notFoundCheck("EditNote(a, note of b)")},
		{"delete another session's note", func() error { return s.DeleteNote(bg, "a", n3.ID) }, notFoundCheck("DeleteNote(a, note of b)")},
		{"delete a deleted note", func() error { return s.DeleteNote(bg, "a", n2.ID) }, notFoundCheck("DeleteNote(deleted note)")},
		{"delete in an unknown session", func() error { return s.DeleteNote(bg, "nope", n1.ID) }, notFoundCheck("DeleteNote(nope)")},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			before := takeSnapshot(t, s)
			tc.want(t, tc.call())
			assertUnchanged(t, s, before)
		})
	}
}

func notFoundCheck(call string) func(t *testing.T, err error) {
	return func(t *testing.T, err error) {
		t.Helper()
		if !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s = %v; want ErrNotFound", call, err)
		}
	}
}
