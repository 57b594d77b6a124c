package handlers

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/agentreview/service/pricing"
	"github.com/agentreview/service/store"
	"github.com/agentreview/service/views"
)

// usageDays is the period /usage shows when none is given.
const usageDays = 30

// usageChartBars bounds the bars of a chart by model, agent or project and
// the top sessions; the rest are counted.
const usageChartBars = 20

// usagePage is GET /usage[?since=&until=&agent=&project=&stack=&sort=]: the period's
// totals, its usage by day, model, agent and project, and the top
// sessions, from the same report as GET /api/usage. A bad parameter is
// 400 with the page saying what is wrong.
func usagePage(src store.UsageReporter, demo bool, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := r.URL.Query()
		if v.Get("since") == "" && v.Get("until") == "" {
			today := time.Now()
			v.Set("since", today.AddDate(0, 0, 1-usageDays).Format(time.DateOnly))
			v.Set("until", today.Format(time.DateOnly))
		}
		table := pricing.Default()
		p := views.UsagePage{Since: v.Get("since"), Until: v.Get("until"), Agent: v.Get("agent"), Project: v.Get("project"), Demo: demo,
			Pricing: pricingNote(table.Source, table.AsOf)}
		// The API's: the page's form has no such field (the list's rows ask
		// for sessions; the stack is the days' breakdown).
		v.Del("group")
		v.Del("session")
		v.Del("breakdown")
		p.Stack = v.Get("stack")
		if p.Stack == "" {
			p.Stack = store.UsageByModel
		}
		// sort orders the top sessions alone (the charts' bars are tokens).
		p.SessionsBy = cmp.Or(v.Get("sort"), store.UsageSortTokens)
		p.SessionsByTokens, p.SessionsByCost = usageHref(v, "sort", "")+"#usage-sessions", usageHref(v, "sort", store.UsageSortCost)+"#usage-sessions"
		days := maps.Clone(v)
		days.Del("sort")
		q, err := parseUsageQuery(days, store.UsageByDay)
		if err == nil && !slices.Contains(store.UsageBreakdowns, p.Stack) {
			err = badRequest("query parameter stack=%q is not valid: give model or agent", p.Stack)
		}
		if err == nil && !slices.Contains(store.UsageSorts, p.SessionsBy) {
			err = badRequest("query parameter sort=%q is not valid: give one of %s", p.SessionsBy, strings.Join(store.UsageSorts, ", "))
		}
		if p.Project != "" {
			all := maps.Clone(v)
			all.Del("project")
			p.AllProjectsHref = usageHref(all)
		}
		if err != nil {
			p.Problem = strings.TrimPrefix(err.Error(), "query ")
			render(w, r, log, http.StatusBadRequest, views.Usage(p))
			return
		}
		charts := []views.UsageChart{
			{ID: "day", Title: "Tokens by day", Head: "Day", Vertical: true},
			{ID: "model", Title: "Tokens by model", Head: "Model"},
			{ID: "agent", Title: "Tokens by agent", Head: "Agent"},
			{ID: "project", Title: "Tokens by project", Head: "Project"},
			{ID: "block", Title: "Tokens by 5-hour block, newest first", Head: "Block"},
			{ID: "session"},
		}
		var more []string
		for _, c := range charts[1:] {
			more = append(more, c.ID)
		}
		// One read: the days split by the chart's stack, the other charts
		// by tokens, the top sessions in the order asked, with their titles.
		q.Group, q.Breakdown, q.SortSessions, q.Titles = charts[0].ID, p.Stack, p.SessionsBy, usageChartBars
		reports, err := src.UsageReports(r.Context(), q.UsageQuery, more...)
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		rows := map[string][]store.UsageRow{}
		for i, c := range charts {
			rows[c.ID] = reports[i]
			shown := reports[i]
			if c.ID == store.UsageByBlock {
				shown = slices.Clone(shown)
				slices.Reverse(shown)
			}
			c.Bars, c.More = usageBars(shown, c.Vertical)
			switch c.ID {
			case store.UsageByDay:
				p.Total = usageBar(store.UsageTotal(rows[c.ID]), 0)
			case store.UsageByAgent:
				// Each agent's row shows the page for it alone.
				for i := range c.Bars {
					c.Bars[i].Href = usageHref(v, "agent", c.Bars[i].Label)
				}
				for _, r := range rows[c.ID] {
					p.Agents = append(p.Agents, r.Key)
				}
			case store.UsageByProject:
				// Each project's row shows the page for it alone (not the
				// sessions without a workspace: no filter finds them), and
				// the Project field offers the projects shown.
				for i, r := range rows[c.ID][:len(c.Bars)] {
					if r.Key != "" {
						c.Bars[i].Href = usageHref(v, "project", r.Key)
						p.Projects = append(p.Projects, r.Key)
					}
				}
			case store.UsageByBlock:
				for i := range c.Bars {
					c.Bars[i].Label = store.UsageBlockLabel(c.Bars[i].Label, time.Now())
				}
			case store.UsageBySession:
				for i := range c.Bars {
					c.Bars[i].Href = "/session?id=" + url.QueryEscape(c.Bars[i].Label)
				}
				p.Sessions = c.Bars
				continue
			}
			p.Charts = append(p.Charts, c)
		}
		stackDays(&p.Charts[0], rows[store.UsageByDay], rows[p.Stack])
		colourBySeries(p.Charts, p.Stack)
		p.Empty = len(rows[store.UsageByDay]) == 0
		if slices.ContainsFunc(rows[store.UsageByModel], func(r store.UsageRow) bool { return r.Key == store.SessionTotalsModel }) {
			p.SessionTotals = store.SessionTotalsModel
		}
		if p.Empty {
			// An empty period (the last 30 days, after an import of
			// older sessions) says when usage was recorded instead.
			if err := recordedDays(r.Context(), src, q, v, &p); err != nil {
				writeError(w, r, log, err)
				return
			}
		}
		render(w, r, log, http.StatusOK, views.Usage(p))
	})
}

// recordedDays sets the page's Recorded to the first and last day with
// usage at any time, for the agent, project and model of q, and
// RecordedHref to the page of those days with the form's other values
// (v); neither when there is none.
func recordedDays(ctx context.Context, src store.UsageReporter, q usageQuery, v url.Values, p *views.UsagePage) error {
	all := q.UsageQuery
	all.Group, all.Titles, all.Since, all.Until = store.UsageByDay, 0, time.Time{}, time.Time{}
	rows, err := store.UsageReport(ctx, src, all)
	if err != nil || len(rows) == 0 {
		return err
	}
	days := make([]string, len(rows))
	for i, r := range rows {
		days[i] = r.Key
	}
	p.Recorded = [2]string{slices.Min(days), slices.Max(days)}
	p.RecordedHref = usageHref(v, "since", p.Recorded[0], "until", p.Recorded[1])
	return nil
}

// usageBars turns report rows into bars; all of them for days, else the
// first usageChartBars, with how many were left out.
func usageBars(rows []store.UsageRow, all bool) ([]views.UsageBar, int) {
	more := 0
	if !all && len(rows) > usageChartBars {
		rows, more = rows[:usageChartBars], len(rows)-usageChartBars
	}
	var longest int64
	for _, r := range rows {
		longest = max(longest, r.Tokens.Total())
	}
	bars := make([]views.UsageBar, len(rows))
	for i, r := range rows {
		bars[i] = usageBar(r, longest)
	}
	return bars, more
}

// usageBar is one row as shown: reported and estimated cost apart, and
// its breakdown's parts when it has two or more (the first
// views.UsageSeriesCount, the rest counted).
func usageBar(r store.UsageRow, longest int64) views.UsageBar {
	b := views.UsageBar{Label: r.Key, Title: r.Title, Models: strings.Join(r.Models, ", "), Input: r.Tokens.Input, Output: r.Tokens.Output,
		CacheRead: r.Tokens.CacheRead, CacheCreate: r.Tokens.CacheCreation, CacheCreate1h: r.Tokens.CacheCreation1h,
		Total: r.Tokens.Total(), Requests: r.APIRequests,
		Unpriced: strings.Join(r.Unpriced, ", ")}
	if b.Label == "" {
		b.Label = "(unknown)"
	}
	if longest > 0 {
		b.Frac = float64(b.Total) / float64(longest)
	}
	if r.ReportedCostUSD != nil {
		b.Reported = fmt.Sprintf("$%.2f", *r.ReportedCostUSD)
	}
	if r.EstimatedCostUSD != nil {
		b.Estimated = fmt.Sprintf("≈ $%.2f estimated", *r.EstimatedCostUSD)
	}
	if len(r.Breakdown) > 1 {
		shown := r.Breakdown[:min(len(r.Breakdown), views.UsageSeriesCount)]
		for _, part := range shown {
			b.Parts = append(b.Parts, usageBar(part, 0))
		}
		b.MoreParts = len(r.Breakdown) - len(shown)
	}
	return b
}

// usageHref is the usage page with the form's values v (those not empty),
// changed by the name and value pairs kv (an empty value drops one).
func usageHref(v url.Values, kv ...string) string {
	v = maps.Clone(v)
	for i := 0; i+1 < len(kv); i += 2 {
		v.Set(kv[i], kv[i+1])
	}
	maps.DeleteFunc(v, func(_ string, vals []string) bool { return slices.Equal(vals, []string{""}) })
	return "/usage?" + v.Encode()
}

// pricingNote names the price table an estimate comes from (a tooltip).
func pricingNote(source, asOf string) string {
	return fmt.Sprintf("Estimated from %s, prices as of %s; %s", source, asOf, pricing.HourWriteRule)
}

// sessionUsage is a session's usage as its page shows it; nil without any.
func sessionUsage(u *store.Usage) *views.SessionUsageView {
	if u == nil {
		return nil
	}
	v := &views.SessionUsageView{Pricing: pricingNote(u.Pricing.Source, u.Pricing.AsOf)}
	for _, m := range u.Models {
		row := store.UsageRow{Key: m.Model, Tokens: m.Tokens, APIRequests: m.APIRequests, EstimatedCostUSD: m.EstimatedCostUSD, ReportedCostUSD: m.ReportedCostUSD}
		if _, unpriced := slices.BinarySearch(u.Unpriced, m.Model); unpriced { // a file may name a model a request
			row.Unpriced = []string{m.Model}
		}
		v.Rows = append(v.Rows, usageBar(row, 0))
	}
	v.Rows = append(v.Rows, usageBar(store.UsageRow{Key: "Total", Tokens: u.Tokens, APIRequests: u.APIRequests,
		ReportedCostUSD: u.ReportedCostUSD, EstimatedCostUSD: u.EstimatedCostUSD, Unpriced: u.Unpriced}, 0))
	return v
}

// colourBySeries gives the bars of the chart of the group the days are
// stacked by (model or agent) the colours of their series in the day chart
// (charts[0]), "other" to those it left out, so that a model or an agent
// has one colour on the page.
func colourBySeries(charts []views.UsageChart, by string) {
	series := charts[0].Series
	for _, c := range charts {
		if c.ID != by {
			continue
		}
		for i, b := range c.Bars {
			j := slices.Index(series[:min(len(series), views.UsageSeriesCount)], b.Label)
			if j < 0 && len(series) > 0 && series[len(series)-1] == "other" {
				j = len(series) - 1
			}
			c.Bars[i].Series = j + 1
		}
	}
}

// stackDays splits each day's bar by the first views.UsageSeriesCount
// groups (model or agent, most tokens first), from each day's breakdown
// by them, and "other" for the rest.
func stackDays(days *views.UsageChart, byDay, groups []store.UsageRow) {
	for i := range days.Bars {
		days.Bars[i].Segments = []int64{}
	}
	parts := map[string]map[string]int64{}
	for _, d := range byDay {
		parts[d.Key] = map[string]int64{}
		for _, part := range d.Breakdown {
			parts[d.Key][part.Key] = part.Tokens.Total()
		}
	}
	stacked := make([]int64, len(days.Bars))
	for _, g := range groups {
		if len(days.Series) == views.UsageSeriesCount || g.Key == "" {
			break
		}
		days.Series = append(days.Series, g.Key)
		for i, b := range days.Bars {
			n := parts[b.Label][g.Key]
			days.Bars[i].Segments = append(days.Bars[i].Segments, n)
			stacked[i] += n
		}
	}
	other := false
	for i, b := range days.Bars {
		other = other || b.Total > stacked[i]
	}
	if other {
		days.Series = append(days.Series, "other")
		for i, b := range days.Bars {
			days.Bars[i].Segments = append(days.Bars[i].Segments, b.Total-stacked[i])
		}
	}
}
